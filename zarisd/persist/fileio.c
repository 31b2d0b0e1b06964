/* fileio — see fileio.h. */
#include "zarisd/persist/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <unistd.h>

#include "zarisd/core/mem.h"

int fileio_write_counted(int fd, const void *p, size_t n, size_t *done)
{
	const unsigned char *b = p;
	*done = 0;
	while (*done < n) {
		ssize_t w = write(fd, b + *done, n - *done);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		*done += (size_t)w;
	}
	return 0;
}

int fileio_write_all(int fd, const void *p, size_t n)
{
	size_t done;
	return fileio_write_counted(fd, p, n, &done);
}

void fileio_fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

void fileio_fsync_parent(const char *path)
{
	char *d = zr_strdup(path); /* dirname() may modify its argument */
	fileio_fsync_dir(dirname(d));
	zr_free(d);
}
