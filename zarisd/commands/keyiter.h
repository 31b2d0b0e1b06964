/* keyiter — the key arguments of one command, read from its table row:
 * the fixed first..last/step keys, then those a count argument names
 * (server/command.h keynum_*: ZUNIONSTORE's sources, LMPOP, ZMPOP, BLMPOP,
 * BZMPOP, SINTERCARD, ZINTERCARD ...). The one reading of a row's key spec,
 * used by the dispatcher's shard locks, COMMAND GETKEYS, the journal's key
 * versions and (next) the cluster slot check. Reads the row and ARGV only;
 * any thread. An iterator is a plain value: copy it to walk twice.
 *
 *	struct keyiter it;
 *	keyiter_init(&it, cmd, argv, argc);
 *	for (int i; (i = keyiter_next(&it)) >= 0;)
 *		... argv[i] is a key ...
 */
#ifndef ZR_KEYITER_H
#define ZR_KEYITER_H

#include <stdbool.h>

#include "zarisd/proto/resp.h"
#include "zarisd/server/command.h"

struct keyiter {
	int pos, last, step;	  /* the range being walked: pos..last */
	int kfirst, klast, kstep; /* the counted keys, still to come (kfirst > klast: none) */
	/* Every spec of the row fits ARGV: the fixed range holds at least its
	 * first key, the count is valid (table.h command_keynum_range). When
	 * not, the keys yielded are those that fit (the dispatcher locks those;
	 * the handler replies the error), and COMMAND GETKEYS answers as Redis
	 * does when a key spec does not fit. */
	bool fits;
};

/* Whether the dispatcher locks CMD's keys (and the journal records their
 * versions): the row has a key spec and is neither KEYLESS (the shard
 * channels of SSUBSCRIBE/SPUBLISH) nor WHOLEDB. */
static inline bool keyiter_locks(const struct command *cmd)
{
	return (cmd->first_key > 0 || cmd->keynum_index > 0) && !(cmd->flags & (CMD_KEYLESS | CMD_WHOLEDB));
}

/* Starts IT over CMD's keys in ARGV[0..ARGC). CMD is a resolved row (a
 * subcommand's own row for a container). Whatever the row's flags. */
void keyiter_init(struct keyiter *it, const struct command *cmd, const struct resp_arg *argv, int argc);

/* keyiter_init() when keyiter_locks(CMD), else an iterator of no key:
 * the keys the dispatcher locks. */
void keyiter_init_locked_keys(struct keyiter *it, const struct command *cmd, const struct resp_arg *argv,
			      int argc);

/* The next key's index into argv, or -1 when every key was yielded. */
static inline int keyiter_next(struct keyiter *it)
{
	if (it->pos > it->last) {
		if (it->kfirst > it->klast)
			return -1;
		it->pos = it->kfirst;
		it->last = it->klast;
		it->step = it->kstep;
		it->kfirst = 1;
		it->klast = 0;
	}
	int i = it->pos;
	it->pos += it->step;
	return i;
}

/* How many indexes keyiter_next() would still yield. */
int keyiter_count(const struct keyiter *it);

/* For the common row of exactly one key (GET, SET, INCR ...): the key's
 * index when ARGC has it, what keyiter_init would yield alone; else 0 (ask
 * the iterator). */
static inline int keyiter_single(const struct command *cmd, int argc)
{
	if (cmd->first_key > 0 && cmd->last_key == cmd->first_key && cmd->keynum_index <= 0 &&
	    cmd->first_key < argc)
		return cmd->first_key;
	return 0;
}

#endif
