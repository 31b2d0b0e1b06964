/* fileio — the few file-system steps the append-only log and the snapshot
 * share: writing a whole buffer through short writes and EINTR, and making
 * a new or renamed file's directory entry durable. Blocking I/O: call from
 * the persistence threads (or start-up), never from a worker's loop.
 */
#ifndef ZR_FILEIO_H
#define ZR_FILEIO_H

#include <stddef.h>

/* Writes all N bytes of P to FD. 0, or -errno of the failed write(2)
 * (bytes before it may have been written). */
int fileio_write_all(int fd, const void *p, size_t n);
/* fileio_write_all that also says, in *DONE, how many bytes went in (all
 * of them on success): the append-only log keeps the rest for a retry. */
int fileio_write_counted(int fd, const void *p, size_t n, size_t *done);

/* fsync(2)s directory DIR so that files created or renamed in it survive a
 * crash. Best effort: a directory that cannot be opened is skipped (the
 * data itself was already fsynced by the caller). */
void fileio_fsync_dir(const char *dir);

/* fileio_fsync_dir() of the directory that holds PATH. */
void fileio_fsync_parent(const char *path);

#endif
