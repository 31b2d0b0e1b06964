/* dirs — directories the supervisor creates: the nodes' data directories
 * and the one its cluster epoch state lives in. Any thread, no state.
 */
#ifndef SV_DIRS_H
#define SV_DIRS_H

/* mkdir -p DIR, 0750 for what it creates. Returns 0, or -1 with errno set
 * (a component that exists but is not a directory: ENOTDIR from mkdir's
 * EEXIST is not told apart; the later open fails with it). */
int sv_mkdir_parents(const char *dir);

#endif
