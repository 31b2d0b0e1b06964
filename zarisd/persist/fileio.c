/* fileio — see fileio.h. */
#include "zarisd/persist/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <unistd.h>

#include "zarisd/core/mem.h"

int fileio_write_all(int fd, const void *p, size_t n)
{
	const unsigned char *b = p;
	while (n) {
		ssize_t w = write(fd, b, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		b += w;
		n -= (size_t)w;
	}
	return 0;
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
