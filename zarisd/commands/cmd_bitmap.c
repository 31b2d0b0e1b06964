/* cmd_bitmap — the bit commands on string values, Redis 7.0's bitops.c
 * semantics: SETBIT, GETBIT, BITCOUNT and BITPOS (byte or bit ranges),
 * BITOP (AND OR XOR NOT), BITFIELD and BITFIELD_RO.
 *
 * Bitmaps are plain strings in the store, bit 0 being the most significant
 * bit of byte 0; a missing key reads as an endless run of zero bits. The
 * dispatcher holds the shard locks of every key of the row (BITOP: the
 * destination and every source), so only *_locked store calls here.
 * Writers get a writable value through store_string_resize_locked(), which
 * also stamps the entry's new version, and only when something changes: a
 * SETBIT that leaves the bit as it was writes nothing, like Redis.
 *
 * Argument order, error texts and the order in which they are checked are
 * Redis 7.0's (the key is looked up before BITCOUNT/BITPOS parse their
 * range, so a missing key answers 0 / -1 even for a bad range).
 */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "zarisd/server/client.h"
#include "zarisd/commands/cmdutil.h"
#include "zarisd/server/command.h"
#include "zarisd/commands/handlers.h"
#include "zarisd/commands/notify.h"
#include "zarisd/server/server.h"
#include "zarisd/server/settings.h"
#include "zarisd/core/bits.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"
#include "zarisd/proto/reply.h"
#include "zarisd/store/store.h"
#include "zarisd/store/write.h"

#define ERR_BIT_OFFSET "ERR bit offset is not an integer or out of range"
#define ERR_BIT_VALUE "ERR bit is not an integer or out of range"
#define ERR_BITFIELD_TYPE \
	"ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is."

/* --- helpers ------------------------------------------------------------------ */

/* getBitOffsetFromArgument: argv[I] as a bit offset, below 8 ×
 * proto-max-bulk-len. With HASH (BITFIELD) "#N" means N × BITS. false after
 * replying. */
static bool bit_offset_or_reply(struct client *c, int i, bool hash, unsigned bits, uint64_t *out)
{
	size_t len;
	const char *p = cmd_arg(c, i, &len);
	bool usehash = hash && bits > 0 && len > 0 && p[0] == '#';
	long long off;
	if (!zr_str_to_ll(p + usehash, len - usehash, &off))
		goto bad;
	if (usehash) /* Redis multiplies with wrap-around, then range-checks */
		off = (long long)((unsigned long long)off * bits);
	long long max = atomic_load_explicit(&c->srv->cfg->proto_max_bulk_len, memory_order_relaxed);
	if (off < 0 || (off >> 3) >= max)
		goto bad;
	*out = (uint64_t)off;
	return true;
bad:
	reply_error(&c->out, ERR_BIT_OFFSET);
	return false;
}

/* lookupStringForBitCommand: argv[1] as a string at least MAXBIT bits long,
 * created (zero bytes) or grown as needed; returns its writable bytes and
 * sets *E, *LEN (and *GREW when it was created or grown). NULL after
 * replying WRONGTYPE or -OOM. */
static uint8_t *bit_string_or_reply(struct client *c, uint64_t maxbit, struct entry **ep, size_t *len,
				    bool *grew)
{
	struct store *s = c->srv->store;
	size_t need = (size_t)(maxbit >> 3) + 1;
	struct entry *e = cmd_lookup_write(c, 1);
	bool created = false;
	size_t olen = 0;
	if (e) {
		if (!cmd_is_string_or_reply(c, e))
			return NULL;
		entry_str(e, &olen);
	} else {
		if (store_set_string_locked(s, c->db, c->argv[1].ptr, c->argv[1].len, "", 0, -1, 0, &e) < 0)
			goto oom;
		created = true;
	}
	size_t nlen = need > olen ? need : olen;
	uint8_t *p = (uint8_t *)store_string_resize_locked(s, c->db, &e, nlen);
	if (!p) {
		if (created)
			store_delete_entry_locked(s, c->db, e);
		goto oom;
	}
	*ep = e;
	*len = nlen;
	if (grew)
		*grew = nlen != olen || created;
	return p;
oom:
	reply_error(&c->out, ERR_OOM);
	return NULL;
}

/* --- SETBIT / GETBIT ------------------------------------------------------------ */

void cmd_setbit(struct client *c)
{
	uint64_t off;
	long long on;
	if (!bit_offset_or_reply(c, 2, false, 0, &off) || !cmd_arg_ll(c, 3, &on, ERR_BIT_VALUE))
		return;
	if (on & ~1LL) {
		reply_error(&c->out, ERR_BIT_VALUE);
		return;
	}
	size_t byte = (size_t)(off >> 3);
	unsigned shift = 7 - (unsigned)(off & 7);

	/* Nothing to write when the bit is already there. */
	struct entry *e = cmd_lookup_write(c, 1);
	if (e) {
		if (!cmd_is_string_or_reply(c, e))
			return;
		size_t len;
		const uint8_t *v = (const uint8_t *)entry_str(e, &len);
		if (byte < len && ((v[byte] >> shift) & 1) == on) {
			reply_long(&c->out, on);
			return;
		}
	}
	size_t len;
	uint8_t *p = bit_string_or_reply(c, off, &e, &len, NULL);
	if (!p)
		return;
	int old = (p[byte] >> shift) & 1;
	p[byte] = (uint8_t)((p[byte] & ~(1u << shift)) | ((unsigned)on << shift));
	store_write_changes_are(1); /* creating the key stamped too: one change for Redis */
	notify_arg(c, NOTIFY_STRING, "setbit", 1);
	reply_long(&c->out, old);
}

void cmd_getbit(struct client *c)
{
	uint64_t off;
	if (!bit_offset_or_reply(c, 2, false, 0, &off))
		return;
	struct entry *e = cmd_lookup_read(c, 1);
	if (!e) {
		reply_long(&c->out, 0);
		return;
	}
	if (!cmd_is_string_or_reply(c, e))
		return;
	size_t len;
	const uint8_t *v = (const uint8_t *)entry_str(e, &len);
	size_t byte = (size_t)(off >> 3);
	reply_long(&c->out, byte < len ? (v[byte] >> (7 - (off & 7))) & 1 : 0);
}

/* --- BITCOUNT / BITPOS ------------------------------------------------------------ */

/* Parses the BYTE|BIT word at argv[I]; false after a syntax error. */
static bool range_unit_or_reply(struct client *c, int i, bool *isbit)
{
	if (cmd_opt_is(c, i, "bit"))
		*isbit = true;
	else if (cmd_opt_is(c, i, "byte"))
		*isbit = false;
	else {
		reply_error(&c->out, ERR_SYNTAX);
		return false;
	}
	return true;
}

/* Turns a START..END range in units of TOTLEN (negative = from the end) into
 * a clamped one; START > END afterwards means empty. */
static void clamp_range(long long *start, long long *end, long long totlen)
{
	if (*start < 0)
		*start += totlen;
	if (*end < 0)
		*end += totlen;
	if (*start < 0)
		*start = 0;
	if (*end < 0)
		*end = 0;
	if (*end >= totlen)
		*end = totlen - 1;
}

void cmd_bitcount(struct client *c)
{
	struct entry *e = cmd_lookup_read(c, 1);
	if (!e) {
		reply_long(&c->out, 0);
		return;
	}
	if (!cmd_is_string_or_reply(c, e))
		return;
	size_t len;
	const uint8_t *v = (const uint8_t *)entry_str(e, &len);

	long long start = 0, end = (long long)len - 1;
	bool isbit = false;
	if (c->argc == 4 || c->argc == 5) {
		if (!cmd_arg_ll(c, 2, &start, NULL) || !cmd_arg_ll(c, 3, &end, NULL))
			return;
		if (start < 0 && end < 0 && start > end) {
			reply_long(&c->out, 0);
			return;
		}
		if (c->argc == 5 && !range_unit_or_reply(c, 4, &isbit))
			return;
		clamp_range(&start, &end, isbit ? (long long)len * 8 : (long long)len);
	} else if (c->argc != 2) {
		reply_error(&c->out, ERR_SYNTAX);
		return;
	}
	if (start > end) {
		reply_long(&c->out, 0);
		return;
	}
	if (isbit)
		reply_long(&c->out, (long long)zr_bitcount_range(v, (uint64_t)start, (uint64_t)end));
	else
		reply_long(&c->out, (long long)zr_popcount(v + start, (size_t)(end - start + 1)));
}

void cmd_bitpos(struct client *c)
{
	long long bit;
	if (!cmd_arg_ll(c, 2, &bit, NULL))
		return;
	if (bit != 0 && bit != 1) {
		reply_error(&c->out, "ERR The bit argument must be 1 or 0.");
		return;
	}
	/* A missing key is an endless run of zeros. */
	struct entry *e = cmd_lookup_read(c, 1);
	if (!e) {
		reply_long(&c->out, bit ? -1 : 0);
		return;
	}
	if (!cmd_is_string_or_reply(c, e))
		return;
	size_t len;
	const uint8_t *v = (const uint8_t *)entry_str(e, &len);

	long long start = 0, end = (long long)len - 1;
	bool isbit = false, end_given = false;
	if (c->argc >= 4 && c->argc <= 6) {
		if (!cmd_arg_ll(c, 3, &start, NULL))
			return;
		if (c->argc == 6 && !range_unit_or_reply(c, 5, &isbit))
			return;
		if (c->argc >= 5) {
			if (!cmd_arg_ll(c, 4, &end, NULL))
				return;
			end_given = true;
		} else {
			end = isbit ? (long long)len * 8 + 7 : (long long)len - 1;
		}
		clamp_range(&start, &end, isbit ? (long long)len * 8 : (long long)len);
	} else if (c->argc != 3) {
		reply_error(&c->out, ERR_SYNTAX);
		return;
	}
	if (start > end) { /* an empty range holds neither a 0 nor a 1 */
		reply_long(&c->out, -1);
		return;
	}
	uint64_t first = isbit ? (uint64_t)start : (uint64_t)start * 8;
	uint64_t last = isbit ? (uint64_t)end : (uint64_t)end * 8 + 7;
	int64_t pos = zr_bitpos(v, first, last, (int)bit);
	/* Looking for a 0 past a run of 1s up to the end of the string finds
	 * the first (zero) bit after it — unless the caller bounded the range. */
	if (pos < 0 && bit == 0 && !end_given)
		pos = (int64_t)(last + 1);
	reply_long(&c->out, pos);
}

/* --- BITOP -------------------------------------------------------------------------- */

enum bitop {
	BITOP_AND,
	BITOP_OR,
	BITOP_XOR,
	BITOP_NOT,
};

/* RES (MAXLEN bytes) op= SRC (LEN bytes, zero-padded to MAXLEN). */
static void bitop_apply(enum bitop op, uint8_t *res, size_t maxlen, const uint8_t *src, size_t len)
{
	size_t i;
	switch (op) {
	case BITOP_AND:
		for (i = 0; i < len; i++)
			res[i] &= src[i];
		memset(res + len, 0, maxlen - len);
		break;
	case BITOP_OR:
		for (i = 0; i < len; i++)
			res[i] |= src[i];
		break;
	case BITOP_XOR:
		for (i = 0; i < len; i++)
			res[i] ^= src[i];
		break;
	case BITOP_NOT:
		for (i = 0; i < len; i++)
			res[i] = (uint8_t)~src[i];
		break;
	}
}

void cmd_bitop(struct client *c)
{
	enum bitop op;
	if (cmd_opt_is(c, 1, "and"))
		op = BITOP_AND;
	else if (cmd_opt_is(c, 1, "or"))
		op = BITOP_OR;
	else if (cmd_opt_is(c, 1, "xor"))
		op = BITOP_XOR;
	else if (cmd_opt_is(c, 1, "not"))
		op = BITOP_NOT;
	else {
		reply_error(&c->out, ERR_SYNTAX);
		return;
	}
	if (op == BITOP_NOT && c->argc != 4) {
		reply_error(&c->out, "ERR BITOP NOT must be called with a single source key.");
		return;
	}

	/* Every source is checked before anything is computed; the entries
	 * stay valid as nothing changes the keyspace until the result is set. */
	int nsrc = c->argc - 3;
	const uint8_t **src = zr_malloc(sizeof(*src) * (size_t)nsrc);
	size_t *lens = zr_malloc(sizeof(*lens) * (size_t)nsrc);
	size_t maxlen = 0;
	for (int j = 0; j < nsrc; j++) {
		struct entry *e = cmd_lookup_read(c, 3 + j);
		src[j] = (const uint8_t *)"";
		lens[j] = 0;
		if (!e)
			continue;
		if (!cmd_is_string_or_reply(c, e))
			goto out;
		src[j] = (const uint8_t *)entry_str(e, &lens[j]);
		if (lens[j] > maxlen)
			maxlen = lens[j];
	}

	struct store *s = c->srv->store;
	if (maxlen == 0) { /* every source empty: the result is no key at all */
		if (store_delete_locked(s, c->db, c->argv[2].ptr, c->argv[2].len, c->now_ms))
			notify_arg(c, NOTIFY_GENERIC, "del", 2);
		reply_long(&c->out, 0);
		goto out;
	}
	uint8_t *res = zr_try_malloc(maxlen);
	if (!res) {
		reply_error(&c->out, ERR_OOM);
		goto out;
	}
	memset(res, 0, maxlen);
	memcpy(res, src[0], lens[0]);
	if (op == BITOP_NOT)
		bitop_apply(op, res, maxlen, src[0], lens[0]);
	else
		for (int j = 1; j < nsrc; j++)
			bitop_apply(op, res, maxlen, src[j], lens[j]);
	/* Redis stores the result as a raw string (createObject) */
	if (store_set_string_locked(s, c->db, c->argv[2].ptr, c->argv[2].len, (const char *)res, maxlen, -1,
				    STORE_SET_RAW, NULL) < 0) {
		reply_error(&c->out, ERR_OOM);
	} else {
		notify_arg(c, NOTIFY_STRING, "set", 2);
		reply_long(&c->out, (long long)maxlen);
	}
	zr_free(res);
out:
	zr_free(src);
	zr_free(lens);
}

/* --- BITFIELD --------------------------------------------------------------------------- */

enum bf_opcode {
	BF_GET,
	BF_SET,
	BF_INCRBY,
};

struct bf_op {
	uint64_t offset;
	int64_t value; /* SET value or INCRBY increment */
	enum bf_opcode opcode;
	enum zr_overflow overflow;
	unsigned bits;
	bool sign;
};

/* getBitfieldTypeFromArgument: "i1".."i64" or "u1".."u63" (lower case
 * only, like Redis). false after replying. */
static bool bf_type_or_reply(struct client *c, int i, bool *sign, unsigned *bits)
{
	size_t len;
	const char *p = cmd_arg(c, i, &len);
	const char *nul = memchr(p, '\0', len); /* Redis reads the number with strlen() */
	if (nul)
		len = (size_t)(nul - p);
	long long n;
	if (len < 1 || (p[0] != 'i' && p[0] != 'u'))
		goto bad;
	*sign = p[0] == 'i';
	if (!zr_str_to_ll(p + 1, len - 1, &n) || n < 1 || n > (*sign ? 64 : 63))
		goto bad;
	*bits = (unsigned)n;
	return true;
bad:
	reply_error(&c->out, ERR_BITFIELD_TYPE);
	return false;
}

/* Parses every operation from argv[2] into OPS (room for argc entries).
 * Returns how many, or -1 after replying an error. *WRITES is set when
 * one is a SET or INCRBY, *MAXBIT to the last bit such a write touches. */
static int bf_parse(struct client *c, struct bf_op *ops, bool *writes, uint64_t *maxbit)
{
	enum zr_overflow overflow = ZR_OVERFLOW_WRAP;
	int n = 0;
	for (int j = 2; j < c->argc; j++) {
		int rest = c->argc - j - 1;
		enum bf_opcode opcode;
		if (cmd_opt_is(c, j, "get") && rest >= 2) {
			opcode = BF_GET;
		} else if (cmd_opt_is(c, j, "set") && rest >= 3) {
			opcode = BF_SET;
		} else if (cmd_opt_is(c, j, "incrby") && rest >= 3) {
			opcode = BF_INCRBY;
		} else if (cmd_opt_is(c, j, "overflow") && rest >= 1) {
			j++;
			if (cmd_opt_is(c, j, "wrap"))
				overflow = ZR_OVERFLOW_WRAP;
			else if (cmd_opt_is(c, j, "sat"))
				overflow = ZR_OVERFLOW_SAT;
			else if (cmd_opt_is(c, j, "fail"))
				overflow = ZR_OVERFLOW_FAIL;
			else {
				reply_error(&c->out, "ERR Invalid OVERFLOW type specified");
				return -1;
			}
			continue;
		} else {
			reply_error(&c->out, ERR_SYNTAX);
			return -1;
		}
		struct bf_op *op = &ops[n];
		if (!bf_type_or_reply(c, j + 1, &op->sign, &op->bits) ||
		    !bit_offset_or_reply(c, j + 2, true, op->bits, &op->offset))
			return -1;
		op->value = 0;
		if (opcode != BF_GET) {
			*writes = true;
			if (*maxbit < op->offset + op->bits - 1)
				*maxbit = op->offset + op->bits - 1;
			long long v;
			if (!cmd_arg_ll(c, j + 3, &v, NULL))
				return -1;
			op->value = v;
		}
		op->opcode = opcode;
		op->overflow = overflow;
		n++;
		j += opcode == BF_GET ? 2 : 3;
	}
	return n;
}

/* Replies one SET or INCRBY on the writable string P (long enough); true
 * when that counts as a change for Redis: the field now holds another value,
 * or the string was created or grown (GREW). false when it wrote nothing
 * (OVERFLOW FAIL) or wrote the value that was there. */
static bool bf_write(struct client *c, uint8_t *p, const struct bf_op *op, bool grew)
{
	int ovf;
	if (op->sign) {
		int64_t old = zr_bitfield_get_i(p, op->offset, op->bits), nv = 0;
		if (op->opcode == BF_INCRBY)
			ovf = zr_overflow_i(old, op->value, op->bits, op->overflow, &nv);
		else
			ovf = zr_overflow_i(op->value, 0, op->bits, op->overflow, &nv);
		if (ovf && op->overflow == ZR_OVERFLOW_FAIL) {
			reply_null(&c->out);
			return false;
		}
		reply_long(&c->out, op->opcode == BF_INCRBY ? nv : old);
		zr_bitfield_set(p, op->offset, op->bits, (uint64_t)nv);
		return grew || old != nv;
	} else {
		uint64_t old = zr_bitfield_get_u(p, op->offset, op->bits), nv = 0;
		if (op->opcode == BF_INCRBY)
			ovf = zr_overflow_u(old, op->value, op->bits, op->overflow, &nv);
		else
			ovf = zr_overflow_u((uint64_t)op->value, 0, op->bits, op->overflow, &nv);
		if (ovf && op->overflow == ZR_OVERFLOW_FAIL) {
			reply_null(&c->out);
			return false;
		}
		reply_long(&c->out, (long long)(op->opcode == BF_INCRBY ? nv : old));
		zr_bitfield_set(p, op->offset, op->bits, nv);
		return grew || old != nv;
	}
}

/* Replies one GET from the LEN bytes at P (NULL for a missing key), which
 * read as zeros past their end. */
static void bf_get(struct client *c, const uint8_t *p, size_t len, const struct bf_op *op)
{
	uint8_t buf[9] = { 0 }; /* a 64-bit field at any bit offset spans at most 9 bytes */
	uint64_t byte = op->offset >> 3;
	for (unsigned i = 0; i < 9 && p && byte + i < len; i++)
		buf[i] = p[byte + i];
	uint64_t off = op->offset & 7;
	if (op->sign)
		reply_long(&c->out, zr_bitfield_get_i(buf, off, op->bits));
	else
		reply_long(&c->out, (long long)zr_bitfield_get_u(buf, off, op->bits));
}

static void bitfield_generic(struct client *c, bool readonly_cmd)
{
	struct bf_op *ops = zr_malloc(sizeof(*ops) * (size_t)c->argc);
	bool writes = false, grew = false;
	uint64_t maxbit = 0;
	int n = bf_parse(c, ops, &writes, &maxbit);
	if (n < 0)
		goto out;

	const uint8_t *rp = NULL;
	uint8_t *wp = NULL;
	size_t len = 0;
	if (!writes) {
		struct entry *e = cmd_lookup_read(c, 1);
		if (e) {
			if (!cmd_is_string_or_reply(c, e))
				goto out;
			rp = (const uint8_t *)entry_str(e, &len);
		}
	} else {
		if (readonly_cmd) {
			reply_error(&c->out, "ERR BITFIELD_RO only supports the GET subcommand");
			goto out;
		}
		/* Created or grown to the farthest written bit even when every
		 * write then fails (OVERFLOW FAIL), as in Redis. */
		struct entry *e;
		wp = bit_string_or_reply(c, maxbit, &e, &len, &grew);
		if (!wp)
			goto out;
		rp = wp;
	}

	reply_array(&c->out, n);
	uint64_t changes = 0;
	for (int j = 0; j < n; j++) {
		if (ops[j].opcode == BF_GET)
			bf_get(c, rp, len, &ops[j]);
		else
			changes += bf_write(c, wp, &ops[j], grew);
	}
	if (writes) {
		/* Redis counts each write that changed the field (all of them
		 * when the string was created or grown) */
		store_write_changes_are(changes);
		/* after the reply, as Redis's bitfieldGeneric */
		if (changes)
			notify_arg(c, NOTIFY_STRING, "setbit", 1);
	}
out:
	zr_free(ops);
}

int cmd_bitfield_getkeys(const struct command *cmd, const struct resp_arg *argv, int argc,
			 struct cmd_key *out)
{
	(void)cmd;
	/* GETs and OVERFLOWs only read the key; a SET, an INCRBY or what does
	 * not parse (the command will refuse it) may write it */
	bool readonly = true;
	for (int i = 2; i < argc && readonly; i++) {
		int more = argc - i - 1;
		if (zr_eq_nocase(argv[i].ptr, argv[i].len, "get") && more >= 2)
			i += 2;
		else if (zr_eq_nocase(argv[i].ptr, argv[i].len, "overflow") && more >= 1)
			i += 1;
		else
			readonly = false;
	}
	out[0] = (struct cmd_key){ .pos = 1,
				   .flags = readonly ? KS_RO | KS_ACCESS : KS_RW | KS_ACCESS | KS_UPDATE };
	return 1;
}

void cmd_bitfield(struct client *c)
{
	bitfield_generic(c, false);
}

void cmd_bitfield_ro(struct client *c)
{
	bitfield_generic(c, true);
}
