/* cmd_hll — the HyperLogLog commands, Redis 7.0's hyperloglog.c semantics:
 * PFADD, PFCOUNT (one key, or the union of several), PFMERGE, and the
 * internal PFDEBUG and PFSELFTEST.
 *
 * An HLL is a string value in Redis's exact byte format (store/hll.h), so
 * GET / SET move HLLs between Zaris and Redis unchanged. The dispatcher
 * holds the shard locks of every key of the row. A dense value is edited
 * in place (12 KB, and PFADD usually changes a register or two); a sparse
 * one, small by definition (hll-sparse-max-bytes), is edited in a working
 * copy that is written back only when something changed. PFCOUNT of one
 * key stores the cardinality it computed in the value's header, which is
 * a write of the string exactly as in Redis (the bytes GET returns show it).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "zarisd/server/client.h"
#include "zarisd/commands/cmdutil.h"
#include "zarisd/commands/notify.h"
#include "zarisd/server/command.h"
#include "zarisd/commands/handlers.h"
#include "zarisd/server/server.h"
#include "zarisd/server/settings.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"
#include "zarisd/proto/reply.h"
#include "zarisd/store/hll.h"
#include "zarisd/store/store.h"
#include "zarisd/store/write.h"

#define ERR_HLL_WRONGTYPE "WRONGTYPE Key is not a valid HyperLogLog string value."
#define ERR_HLL_CORRUPT "INVALIDOBJ Corrupted HLL object detected"

/* --- helpers ------------------------------------------------------------------ */

static size_t sparse_max(const struct client *c)
{
	long long v = atomic_load_explicit(&c->srv->cfg->hll_sparse_max_bytes, memory_order_relaxed);
	return v < 0 ? 0 : (size_t)v;
}

/* isHLLObjectOrReply: the bytes of E when it is a valid HLL; NULL after
 * replying (the generic WRONGTYPE for other types, the HLL one for
 * strings that are not HLLs). */
static const uint8_t *hll_bytes_or_reply(struct client *c, const struct entry *e, size_t *len)
{
	if (entry_type(e) != STORE_TYPE_STRING) {
		reply_error(&c->out, ERR_WRONGTYPE);
		return NULL;
	}
	const uint8_t *p = (const uint8_t *)entry_str(e, len);
	if (!hll_is_valid(p, *len)) {
		reply_error(&c->out, ERR_HLL_WRONGTYPE);
		return NULL;
	}
	return p;
}

/* Replaces the value of the existing entry *E with H's bytes (TTL kept).
 * false after replying -OOM. */
static bool write_back_or_reply(struct client *c, struct entry **e, const struct hll *h)
{
	uint8_t *p = (uint8_t *)store_string_resize_locked(c->srv->store, c->db, e, h->len);
	if (!p) {
		reply_error(&c->out, ERR_OOM);
		return false;
	}
	memcpy(p, h->p, h->len);
	return true;
}

/* Creates argv[KEYI] holding H's bytes (raw, as Redis's createHLLObject);
 * false after replying -OOM. */
static bool create_or_reply(struct client *c, int keyi, const struct hll *h)
{
	if (store_set_string_locked(c->srv->store, c->db, c->argv[keyi].ptr, c->argv[keyi].len,
				    (const char *)h->p, h->len, -1, STORE_SET_RAW, NULL) < 0) {
		reply_error(&c->out, ERR_OOM);
		return false;
	}
	return true;
}

/* --- PFADD ----------------------------------------------------------------------- */

/* PFADD on a dense value: registers are raised in place; the writable
 * value is taken (and the version stamped) only when one rises. */
static void pfadd_dense(struct client *c, struct entry *e, const uint8_t *v)
{
	uint8_t *w = NULL;
	uint64_t updated = 0;
	for (int j = 2; j < c->argc; j++) {
		unsigned index, count = hll_pattern(c->argv[j].ptr, c->argv[j].len, &index);
		const uint8_t *regs = (w ? w : v) + HLL_HDR_SIZE;
		if (hll_dense_get(regs, index) >= count)
			continue;
		if (!w) {
			w = (uint8_t *)store_string_resize_locked(c->srv->store, c->db, &e, HLL_DENSE_SIZE);
			if (!w) { /* same size: cannot fail, but stay safe */
				reply_error(&c->out, ERR_OOM);
				return;
			}
		}
		hll_dense_set(w + HLL_HDR_SIZE, index, count);
		updated++;
	}
	if (w) {
		hll_cache_invalidate(w);
		store_write_changes_are(updated); /* Redis counts each raised register */
		notify_arg(c, NOTIFY_STRING, "pfadd", 1);
	}
	reply_long(&c->out, w ? 1 : 0);
}

void cmd_pfadd(struct client *c)
{
	struct entry *e = cmd_lookup_write(c, 1);
	const uint8_t *v = NULL;
	size_t vlen = 0;
	if (e) {
		v = hll_bytes_or_reply(c, e, &vlen);
		if (!v)
			return;
		if (v[4] == HLL_DENSE) {
			pfadd_dense(c, e, v);
			return;
		}
	}

	struct hll h;
	int updated = 0;
	if (e) {
		hll_load(&h, v, vlen);
	} else {
		hll_init_empty(&h);
		updated = 1; /* creating the key is a change */
	}
	size_t max = sparse_max(c);
	for (int j = 2; j < c->argc; j++) {
		int rc = hll_add(&h, c->argv[j].ptr, c->argv[j].len, max);
		if (rc < 0) {
			reply_error(&c->out, ERR_HLL_CORRUPT);
			goto out;
		}
		updated += rc;
	}
	if (updated) {
		hll_cache_invalidate(h.p);
		if (!(e ? write_back_or_reply(c, &e, &h) : create_or_reply(c, 1, &h)))
			goto out;
		store_write_changes_are((uint64_t)updated); /* Redis counts each raised register */
		notify_arg(c, NOTIFY_STRING, "pfadd", 1);
	}
	reply_long(&c->out, updated ? 1 : 0);
out:
	hll_release(&h);
}

/* --- PFCOUNT ------------------------------------------------------------------------ */

/* The union of the HLLs at argv[FROM..argc), into MAX (one byte per
 * register, zeroed by the caller). Missing keys are empty HLLs. *DENSE is
 * set when one of them is dense. false after replying. */
static bool union_or_reply(struct client *c, int from, uint8_t *max, bool *dense)
{
	for (int j = from; j < c->argc; j++) {
		struct entry *e = cmd_lookup_read(c, j);
		if (!e)
			continue;
		size_t len;
		const uint8_t *p = hll_bytes_or_reply(c, e, &len);
		if (!p)
			return false;
		if (p[4] == HLL_DENSE && dense)
			*dense = true;
		if (hll_merge_max(max, p, len) < 0) {
			reply_error(&c->out, ERR_HLL_CORRUPT);
			return false;
		}
	}
	return true;
}

void cmd_pfcount(struct client *c)
{
	if (c->argc > 2) {
		uint8_t *max = zr_calloc(1, HLL_REGISTERS);
		if (union_or_reply(c, 1, max, NULL))
			reply_long(&c->out, (long long)hll_count_registers(max));
		zr_free(max);
		return;
	}

	struct entry *e = cmd_lookup_read(c, 1);
	if (!e) {
		reply_long(&c->out, 0);
		return;
	}
	size_t len;
	const uint8_t *p = hll_bytes_or_reply(c, e, &len);
	if (!p)
		return;
	uint64_t card;
	if (hll_cache_get(p, &card)) {
		reply_long(&c->out, (long long)card);
		return;
	}
	if (hll_count(p, len, &card) < 0) {
		reply_error(&c->out, ERR_HLL_CORRUPT);
		return;
	}
	/* Cache it in the header: a write, as in Redis (same length, so the
	 * resize only hands out the writable bytes and stamps the version). */
	uint8_t *w = (uint8_t *)store_string_resize_locked(c->srv->store, c->db, &e, len);
	if (w)
		hll_cache_set(w, card);
	reply_long(&c->out, (long long)card);
}

/* --- PFMERGE ------------------------------------------------------------------------ */

void cmd_pfmerge(struct client *c)
{
	/* The destination is also a source (argv[1]), as in Redis. */
	uint8_t *max = zr_calloc(1, HLL_REGISTERS);
	bool dense = false;
	struct hll h = { 0 };
	if (!union_or_reply(c, 1, max, &dense))
		goto out;

	struct entry *e = cmd_lookup_write(c, 1);
	if (e) {
		size_t len;
		const uint8_t *p = (const uint8_t *)entry_str(e, &len); /* checked valid above */
		hll_load(&h, p, len);
	} else {
		hll_init_empty(&h);
	}
	if (dense && hll_to_dense(&h) < 0) {
		reply_error(&c->out, ERR_HLL_CORRUPT);
		goto out;
	}
	size_t smax = sparse_max(c);
	for (unsigned j = 0; j < HLL_REGISTERS; j++)
		if (max[j])
			hll_set(&h, j, max[j], smax);
	hll_cache_invalidate(h.p);
	if (e ? write_back_or_reply(c, &e, &h) : create_or_reply(c, 1, &h)) {
		/* Redis sends "pfadd" for a merge too (a mass add), before the reply */
		notify_arg(c, NOTIFY_STRING, "pfadd", 1);
		store_write_changes_are(1);
		reply_ok(&c->out);
	}
out:
	hll_release(&h);
	zr_free(max);
}

/* --- PFDEBUG / PFSELFTEST ----------------------------------------------------------- */

/* PFDEBUG GETREG|DECODE|ENCODING|TODENSE key. GETREG and TODENSE turn a
 * sparse value dense, as in Redis. */
void cmd_pfdebug(struct client *c)
{
	struct entry *e = cmd_lookup_write(c, 2);
	if (!e) {
		reply_error(&c->out, "ERR The specified key does not exist");
		return;
	}
	size_t len;
	const uint8_t *p = hll_bytes_or_reply(c, e, &len);
	if (!p)
		return;
	size_t sublen;
	const char *sub = cmd_arg(c, 1, &sublen);
	bool getreg = cmd_arg_is(c, 1, "getreg"), todense = cmd_arg_is(c, 1, "todense");

	if (getreg || todense) {
		bool converted = false;
		if (p[4] == HLL_SPARSE) {
			struct hll h;
			hll_load(&h, p, len);
			int rc = hll_to_dense(&h);
			bool ok = rc == 0 && write_back_or_reply(c, &e, &h);
			if (rc < 0)
				reply_error(&c->out, ERR_HLL_CORRUPT);
			hll_release(&h);
			if (!ok)
				return;
			p = (const uint8_t *)entry_str(e, &len);
			converted = true;
		}
		if (todense) {
			reply_long(&c->out, converted ? 1 : 0);
			return;
		}
		reply_array(&c->out, HLL_REGISTERS);
		for (unsigned j = 0; j < HLL_REGISTERS; j++)
			reply_long(&c->out, hll_dense_get(p + HLL_HDR_SIZE, j));
	} else if (cmd_arg_is(c, 1, "decode")) {
		if (p[4] != HLL_SPARSE) {
			reply_error(&c->out, "ERR HLL encoding is not sparse");
			return;
		}
		size_t size = (len - HLL_HDR_SIZE) * 16 + 16;
		char *buf = zr_malloc(size);
		size_t n = hll_sparse_decode(p, len, buf, size);
		reply_bulk(&c->out, buf, n);
		zr_free(buf);
	} else if (cmd_arg_is(c, 1, "encoding")) {
		reply_simple(&c->out, p[4] == HLL_DENSE ? "dense" : "sparse");
	} else {
		reply_errorf(&c->out, "ERR Unknown PFDEBUG subcommand '%.*s'", (int)sublen, sub);
	}
}

/* A quick self-check of the register and estimator code on this build:
 * dense register round trips over every register, and a sparse HLL and a
 * dense one fed the same elements must hold the same registers and count.
 * Replies +OK, or an error naming what failed. */
void cmd_pfselftest(struct client *c)
{
	uint8_t *regs = zr_calloc(1, HLL_DENSE_SIZE);
	struct hll sp, dn;
	hll_init_empty(&sp);
	hll_init_empty(&dn);
	const char *err = NULL;

	for (unsigned pass = 0; pass < 2 && !err; pass++) {
		for (unsigned j = 0; j < HLL_REGISTERS; j++)
			hll_dense_set(regs, j, (j * 7 + pass) % 64);
		for (unsigned j = 0; j < HLL_REGISTERS; j++)
			if (hll_dense_get(regs, j) != (j * 7 + pass) % 64)
				err = "ERR TESTFAILED Register error";
	}
	if (!err && hll_to_dense(&dn) < 0)
		err = "ERR TESTFAILED conversion error";
	for (unsigned i = 0; i < 20000 && !err; i++) {
		char ele[16];
		size_t n = zr_ll_to_str(ele, i);
		hll_add(&sp, ele, n, 3000);
		hll_add(&dn, ele, n, 3000);
	}
	uint64_t a = 0, b = 0;
	if (!err && (hll_count(sp.p, sp.len, &a) < 0 || hll_count(dn.p, dn.len, &b) < 0 || a != b))
		err = "ERR TESTFAILED sparse and dense disagree";
	if (!err && (a < 20000 * 0.95 || a > 20000 * 1.05))
		err = "ERR TESTFAILED estimate off";
	if (err)
		reply_error(&c->out, err);
	else
		reply_ok(&c->out);
	hll_release(&sp);
	hll_release(&dn);
	zr_free(regs);
}
