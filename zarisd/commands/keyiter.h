/* keyiter — the key arguments of one command, read from its row's key
 * specs (server/command.h struct key_spec: a begin index or keyword, then a
 * range or a count), spec by spec in the row's order, as Redis 7.0's
 * getKeysUsingKeySpecs. The one reading of a row's key specs, used by the
 * dispatcher's shard locks, COMMAND GETKEYS, the journal's key versions,
 * scripts' declared-keys check and the cluster slot check. Reads the row
 * and ARGV only; any thread. An iterator is a plain value: copy it to walk
 * twice.
 *
 *	struct keyiter it;
 *	keyiter_init(&it, cmd, argv, argc);
 *	for (int i; (i = keyiter_next(&it)) >= 0;)
 *		... argv[i] is a key (its spec's flags: keyiter_flags(&it)) ...
 */
#ifndef ZR_KEYITER_H
#define ZR_KEYITER_H

#include <stdbool.h>

#include "zarisd/proto/resp.h"
#include "zarisd/server/command.h"

/* Redis 7.0's most key specs of one command (GEORADIUS has 3). */
#define KEYITER_MAX_SPECS 4

/* The keys of one spec in ARGV: first..last, every step-th. */
struct keyiter_range {
	int first, last, step;
	uint32_t flags; /* the spec's (enum key_spec_flag) */
};

/* Invariant: cur <= n; while cur < n, pos is the next candidate of
 * r[cur] (past r[cur].last: that range is done). */
struct keyiter {
	int pos;
	int cur, n;
	struct keyiter_range r[KEYITER_MAX_SPECS];
	/* Every spec of the row fits ARGV (its begin is inside, its count a
	 * number whose keys are all there) and none is INCOMPLETE. When not,
	 * the keys yielded are those of the specs that fit (the dispatcher
	 * locks those; the handler replies the error), and COMMAND GETKEYS
	 * asks the row's getkeys, as Redis. A keyword that is absent (SORT
	 * without STORE) is no key and no misfit. */
	bool fits;
};

/* Whether the dispatcher locks CMD's keys (and the journal records their
 * versions): the row has key specs and is neither KEYLESS (the shard
 * channels of SSUBSCRIBE/SPUBLISH) nor WHOLEDB. */
static inline bool keyiter_locks(const struct command *cmd)
{
	return cmd->key_specs_num > 0 && !(cmd->flags & (CMD_KEYLESS | CMD_WHOLEDB));
}

/* Starts IT over CMD's keys in ARGV[0..ARGC), skipping the specs whose
 * flags have any of SKIP (KS_NOT_KEY: COMMAND GETKEYS's view; 0: every
 * spec, shard channels included, for routing). CMD is a resolved row (a
 * subcommand's own row for a container). Whatever the row's flags. */
void keyiter_init_skip(struct keyiter *it, const struct command *cmd, const struct resp_arg *argv, int argc,
		       uint32_t skip);

/* keyiter_init_skip(..., 0): every spec. */
static inline void keyiter_init(struct keyiter *it, const struct command *cmd, const struct resp_arg *argv,
				int argc)
{
	keyiter_init_skip(it, cmd, argv, argc, 0);
}

/* keyiter_init() when keyiter_locks(CMD), else an iterator of no key:
 * the keys the dispatcher locks. */
void keyiter_init_locked_keys(struct keyiter *it, const struct command *cmd, const struct resp_arg *argv,
			      int argc);

/* The next key's index into argv, or -1 when every key was yielded. */
static inline int keyiter_next(struct keyiter *it)
{
	while (it->cur < it->n) {
		const struct keyiter_range *r = &it->r[it->cur];
		if (it->pos <= r->last) {
			int i = it->pos;
			it->pos += r->step;
			return i;
		}
		if (++it->cur < it->n)
			it->pos = it->r[it->cur].first;
	}
	return -1;
}

/* The key spec flags of the key keyiter_next() has just yielded (it
 * stays on that key's range until the next call). */
static inline uint32_t keyiter_flags(const struct keyiter *it)
{
	return it->r[it->cur].flags;
}

/* How many indexes keyiter_next() would still yield. */
int keyiter_count(const struct keyiter *it);

/* For the common row of exactly one key (GET, SET, INCR ...): the key's
 * index when ARGC has it, what keyiter_init would yield alone; else 0 (ask
 * the iterator). Two compares: single_key is worked out at start-up. */
static inline int keyiter_single(const struct command *cmd, int argc)
{
	return cmd->single_key > 0 && cmd->single_key < argc ? cmd->single_key : 0;
}

/* The getkeys (command.h cmd_getkeys_fn) of a row with a count spec
 * (ZUNIONSTORE, LMPOP, EVAL ...): Redis's reading when the spec does not
 * fit, the count by atoi ("2abc" and " 2" count 2); the counted keys,
 * then the row's fixed destination if it has one; no flags. */
int keyiter_getkeys_counted(const struct command *cmd, const struct resp_arg *argv, int argc,
			    struct cmd_key *out);

#endif
