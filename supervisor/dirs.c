/* dirs — see dirs.h. */
#include "supervisor/dirs.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

int sv_mkdir_parents(const char *dir)
{
	char path[4096];

	if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (char *slash = strchr(path + 1, '/');; slash = strchr(slash + 1, '/')) {
		if (slash)
			*slash = '\0';
		if (mkdir(path, 0750) < 0 && errno != EEXIST)
			return -1;
		if (!slash)
			return 0;
		*slash = '/';
	}
}
