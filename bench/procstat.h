/* procstat — reads another process's CPU time and resident memory from
 * /proc, the way the comparison charges each server for its work. Any
 * thread may call these; they only open and read files.
 */
#ifndef ZB_PROCSTAT_H
#define ZB_PROCSTAT_H

#include <stdint.h>
#include <sys/types.h>

/* User + system CPU time of every thread of PID (live and exited), in
 * microseconds, from fields 14 and 15 of /proc/PID/stat. The kernel keeps
 * these in clock ticks (usually 10 ms), so measure over seconds. Returns 0
 * or -errno (-ESRCH when the process is gone). */
int procstat_cpu_us(pid_t pid, uint64_t *out);

/* This process's own user + system CPU time in microseconds. */
uint64_t procstat_self_cpu_us(void);

#endif
