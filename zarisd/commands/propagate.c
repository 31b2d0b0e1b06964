/* propagate — see propagate.h. */
#include "zarisd/commands/propagate.h"

#include <stdatomic.h>
#include <stdbool.h>

#include "zarisd/core/util.h"
#include "zarisd/journal/format.h"
#include "zarisd/journal/stream.h"
#include "zarisd/server/client.h"
#include "zarisd/server/command.h"
#include "zarisd/server/server.h"
#include "zarisd/store/store.h"

static _Atomic uint64_t txn_ids;

static _Thread_local uint64_t tl_txn; /* this thread's EXEC's txn id, once it made a record */
static _Thread_local struct jbuf tl_rec;

void propagate_thread_exit(void)
{
	jbuf_free(&tl_rec);
}

struct effect_ctx {
	struct jbuf *b;
	unsigned n;
};

static int effect_emit(int argc, const char *const *argv, const size_t *lens, void *arg)
{
	struct effect_ctx *ec = arg;
	jr_cmd_argv(ec->b, argc, argv, lens);
	ec->n++;
	return 0;
}

/* Encodes the state of KEY after the command as commands (DEL, then the
 * rebuild, then its TTL): for commands whose outcome is random. */
static unsigned encode_effect(struct client *c, const char *key, size_t klen)
{
	struct store *s = c->srv->store;
	struct effect_ctx ec = { &tl_rec, 0 };
	const char *del[2] = { "DEL", key };
	size_t dl[2] = { 3, klen };
	effect_emit(2, del, dl, &ec);
	struct entry *e = store_find_locked(s, c->db, key, klen, c->now_ms,
					    STORE_LOOKUP_NOTOUCH | STORE_LOOKUP_NOSTATS);
	if (!e)
		return ec.n;
	if (entry_type(e) == STORE_TYPE_STRING) {
		size_t vlen;
		const char *v = entry_str(e, &vlen);
		const char *set[3] = { "SET", key, v };
		size_t sl[3] = { 3, klen, vlen };
		effect_emit(3, set, sl, &ec);
	} else {
		const struct store_type_ops *ops = store_type_ops_of(s, entry_type(e));
		if (ops && ops->rewrite)
			ops->rewrite(entry_obj(e), key, klen, effect_emit, &ec);
	}
	if (entry_expire(e) >= 0) {
		char ms[24];
		size_t n = zr_ll_to_str(ms, entry_expire(e));
		const char *px[3] = { "PEXPIREAT", key, ms };
		size_t pl[3] = { 9, klen, n };
		effect_emit(3, px, pl, &ec);
	}
	return ec.n;
}

/* The key argument indexes of CMD for c->argv, as the dispatcher locks them. */
static void key_range(const struct client *c, const struct command *cmd, int *first, int *last, int *step)
{
	*first = *last = 0;
	*step = cmd->key_step > 0 ? cmd->key_step : 1;
	if (cmd->first_key <= 0 || (cmd->flags & (CMD_KEYLESS | CMD_WHOLEDB))) {
		*last = -1;
		return;
	}
	*first = cmd->first_key;
	*last = cmd->last_key < 0 ? c->argc + cmd->last_key : cmd->last_key;
	if (*last >= c->argc)
		*last = c->argc - 1;
}

/* Appends the version each named key has now (those that exist). */
static void encode_versions(struct client *c, int first, int last, int step)
{
	unsigned nver = 0;
	for (int i = first; i <= last; i += step)
		nver++;
	size_t count_at = tl_rec.len;
	jr_cmd_versions_begin(&tl_rec, nver);
	unsigned found = 0;
	for (int i = first; i <= last; i += step) {
		struct entry *e = store_find_locked(c->srv->store, c->db, c->argv[i].ptr, c->argv[i].len,
						    c->now_ms, STORE_LOOKUP_NOTOUCH | STORE_LOOKUP_NOSTATS);
		if (e) {
			jr_cmd_version(&tl_rec, c->argv[i].ptr, c->argv[i].len, entry_version(e));
			found++;
		}
	}
	if (found == nver)
		return;
	/* rewrite the count: varints are variable length, so re-encode the tail */
	struct jbuf tail;
	jbuf_init(&tail);
	uint64_t tmp;
	struct jreader r = { tl_rec.p + count_at, tl_rec.p + tl_rec.len };
	jrd_varint(&r, &tmp);
	size_t after = (size_t)(r.p - tl_rec.p);
	jbuf_put(&tail, tl_rec.p + after, tl_rec.len - after);
	tl_rec.len = count_at;
	jr_cmd_versions_begin(&tl_rec, found);
	jbuf_put(&tl_rec, tail.p, tail.len);
	jbuf_free(&tail);
}

/* An upper bound of the record of C's argv, before it is built. */
static size_t argv_record_size(const struct client *c)
{
	size_t n = 64;
	for (int i = 0; i < c->argc; i++)
		n += 2 * (c->argv[i].len + 10); /* the argument, and maybe its key's version */
	return n;
}

void propagate_command(struct client *c, const struct command *cmd, uint64_t dirty_before)
{
	struct stream *s = c->srv->stream;
	if (!s || store_thread_dirty() == dirty_before)
		return;
	/* the lookups below are not the command's: no snapshot pre-images */
	store_thread_write_intent(false);
	bool held = false;
	uint64_t seq;
	if ((cmd->flags & CMD_EXEC) && !(c->flags & CLIENT_IN_EXEC)) {
		/* the queued commands made their records one by one: close them */
		if (tl_txn) {
			seq = stream_commit(s, tl_txn, &held);
			tl_txn = 0;
			if (held && seq > c->journal_seq)
				c->journal_seq = seq;
		}
		return;
	}
	uint64_t txn = 0;
	if (c->flags & CLIENT_IN_EXEC) {
		if (!tl_txn)
			tl_txn = atomic_fetch_add_explicit(&txn_ids, 1, memory_order_relaxed) + 1;
		txn = tl_txn;
	}
	int first, last, step;
	key_range(c, cmd, &first, &last, &step);
	bool effect = (cmd->flags & CMD_RANDOM_EFFECT) && last >= first;
	/* a record nothing would read and the ring could not keep is only
	 * numbered: a big value is not copied once more */
	if (!effect && stream_skip_large(s, argv_record_size(c), txn))
		return;
	tl_rec.len = 0;
	size_t off = jr_cmd_begin(&tl_rec, 0, c->now_ms, c->db, txn, 1);
	if (effect) {
		jr_cmd_set_ncmds(&tl_rec, off, encode_effect(c, c->argv[first].ptr, c->argv[first].len));
	} else {
		jbuf_varint(&tl_rec, (uint64_t)c->argc);
		for (int i = 0; i < c->argc; i++)
			jbuf_bytes(&tl_rec, c->argv[i].ptr, c->argv[i].len);
	}
	encode_versions(c, first, last, step);
	/* no jr_frame_end: the stream numbers the frame and then fills in
	 * its length and checksum, once */
	seq = stream_append(s, &tl_rec, txn, &held);
	if (tl_rec.cap > (1u << 20)) /* do not keep a huge record's buffer */
		jbuf_free(&tl_rec);
	if (held && !txn && seq > c->journal_seq)
		c->journal_seq = seq;
}
