/* Unit tests of the journal record format (zarisd/journal/format.c): the
 * encoder and decoder round trip, checksums, a truncated tail told apart
 * from corruption in the middle, the offsets reported, jr_torn_tail, and
 * version 2's tail fields (round trip, unknown types skipped, version-1
 * payloads and headers read, a newer version refused). */
#include "zarisd/journal/format.c"

#include "tests/tap.h"
#include "zarisd/core/crc32c.h"

static size_t make_cmd(struct jbuf *b, uint64_t seq, const char *key, const char *val)
{
	size_t off = jr_cmd_begin(b, 0, 1700000000123LL, 3, 0, 1);
	const char *argv[3] = { "SET", key, val };
	size_t lens[3] = { 3, strlen(key), strlen(val) };
	jr_cmd_argv(b, 3, argv, lens);
	jr_cmd_versions_begin(b, 1);
	jr_cmd_version(b, key, strlen(key), 42 + seq);
	jr_frame_end(b, off);
	jr_frame_set_seq(b, off, seq);
	return off;
}

/* A version-1 JR_CMD payload, byte by byte as c7244ab wrote it (no tail):
 * SET k v, seq 7, db 1, versions k=9. */
static size_t v1_cmd(unsigned char *p)
{
	struct jbuf b;
	jbuf_init(&b);
	jbuf_u8(&b, JR_CMD);
	jbuf_u64(&b, 7);
	jbuf_u64(&b, 1700000000000ull);
	jbuf_u32(&b, 1);
	jbuf_u64(&b, 0);
	jbuf_u32(&b, 1);
	jbuf_varint(&b, 3);
	jbuf_bytes(&b, "SET", 3);
	jbuf_bytes(&b, "k", 1);
	jbuf_bytes(&b, "v", 1);
	jbuf_varint(&b, 1);
	jbuf_bytes(&b, "k", 1);
	jbuf_u64(&b, 9);
	memcpy(p, b.p, b.len);
	size_t n = b.len;
	jbuf_free(&b);
	return n;
}

/* Parses, into RC, a DEL record (in B) whose tail is an unknown field
 * and then a JR_TAIL_DEST field of the one byte VALUE. */
static bool parse_dest_record(struct jbuf *b, const char *value, struct jr_cmd *rc)
{
	const char *argv[2] = { "DEL", "key" };
	size_t lens[2] = { 3, 3 };
	b->len = 0;
	size_t off = jr_cmd_begin(b, 5, 1, 0, 0, 1);
	jr_cmd_argv(b, 2, argv, lens);
	jr_cmd_versions_begin(b, 0);
	jr_tail_put(b, 90000, "x", 1);
	jr_tail_put(b, JR_TAIL_DEST, value, 1);
	jr_frame_end(b, off);
	return jr_parse_cmd(b->p + off + JR_FRAME_HEADER, b->len - off - JR_FRAME_HEADER, rc);
}

static void tail_tests(void)
{
	/* a record with two tail fields, one of a type no reader knows */
	struct jbuf b;
	jbuf_init(&b);
	size_t off = jr_cmd_begin(&b, 5, 1, 0, 0, 1);
	const char *argv[2] = { "DEL", "key" };
	size_t lens[2] = { 3, 3 };
	jr_cmd_argv(&b, 2, argv, lens);
	jr_cmd_versions_begin(&b, 1);
	jr_cmd_version(&b, "key", 3, 77);
	jr_tail_put(&b, 1, "meta", 4);
	jr_tail_put(&b, 90000, "\0\1\2", 3);
	jr_frame_end(&b, off);
	const unsigned char *pl = b.p + off + JR_FRAME_HEADER;
	size_t plen = b.len - off - JR_FRAME_HEADER;
	struct jr_cmd rc;
	ok(jr_parse_cmd(pl, plen, &rc), "v2 record with a tail parses");
	const char *k;
	size_t kl;
	uint64_t v;
	ok(jr_next_version(&rc.vers, &k, &kl, &v) && v == 77 && kl == 3, "its versions precede the tail");
	uint64_t type;
	const char *tp;
	size_t tn;
	ok(jr_tail_next(&rc.tail, &type, &tp, &tn) == 1 && type == 1 && tn == 4 && !memcmp(tp, "meta", 4),
	   "tail round trip: first field");
	ok(jr_tail_next(&rc.tail, &type, &tp, &tn) == 1 && type == 90000 && tn == 3,
	   "an unknown type is read past (skipped)");
	is_int(jr_tail_next(&rc.tail, &type, &tp, &tn), 0, "then the end of the tail");
	/* a field cut short is malformed */
	unsigned char bad[256];
	memcpy(bad, pl, plen);
	ok(!jr_parse_cmd(bad, plen - 1, &rc), "a tail field cut short: refused");
	rc.dest = 99;
	ok(jr_parse_cmd(pl, plen, &rc) && rc.dest == 0, "no destination field: for both");
	ok(rc.dest_at == 0, "no destination field: nothing for a replica to rewrite");

	/* JR_TAIL_DEST (redis.set_repl): parsed into dest, after other fields;
	 * a value this build does not know reads as for both; a bad varint
	 * is malformed */
	ok(parse_dest_record(&b, "\x01", &rc) && rc.dest == JR_DEST_LOG, "destination: the log only");
	ok(parse_dest_record(&b, "\x02", &rc) && rc.dest == JR_DEST_REPLICAS, "destination: replicas only");
	ok(parse_dest_record(&b, "\x07", &rc) && rc.dest == 0, "an unknown destination: for both");
	ok(!parse_dest_record(&b, "\x80", &rc), "a destination cut short: refused");
	ok(parse_dest_record(&b, "\x03", &rc) && rc.dest == JR_DEST_NONE, "destination: nobody");
	ok(parse_dest_record(&b, "\x04", &rc) && rc.dest == 0, "destination: everyone, as without it");
	/* a replica's copy: rewritten to what the replica did, in place */
	static const struct {
		const char *from;
		unsigned char to;
		unsigned dest;
	} as_replica[] = { { "\x01", JR_DEST_NONE, JR_DEST_NONE },
			   { "\x02", JR_DEST_ALL, 0 },
			   { "\x03", JR_DEST_NONE, JR_DEST_NONE },
			   { "\x04", JR_DEST_ALL, 0 } };
	for (size_t i = 0; i < sizeof(as_replica) / sizeof(as_replica[0]); i++) {
		bool parsed = parse_dest_record(&b, as_replica[i].from, &rc);
		unsigned char copy[256];
		size_t n = rc.plen;
		memcpy(copy, rc.payload, n);
		jr_cmd_dest_as_replica(copy, &rc);
		struct jr_cmd again;
		ok(parsed && n == rc.plen && copy[rc.dest_at] == as_replica[i].to &&
			   !memcmp(copy, rc.payload, rc.dest_at) &&
			   !memcmp(copy + rc.dest_at + 1, rc.payload + rc.dest_at + 1, n - rc.dest_at - 1) &&
			   jr_parse_cmd(copy, n, &again) && again.dest == as_replica[i].dest,
		   "a replica's copy of destination %u: %u, nothing else changed",
		   (unsigned)as_replica[i].from[0], (unsigned)as_replica[i].to);
	}
	struct jbuf d1, d2;
	jbuf_init(&d1);
	jbuf_init(&d2);
	jr_tail_put_dest(&d1, JR_DEST_REPLICAS);
	jr_tail_put(&d2, JR_TAIL_DEST, "\x02", 1);
	ok(d1.len == d2.len && !memcmp(d1.p, d2.p, d1.len), "jr_tail_put_dest writes that field");
	jbuf_free(&d1);
	jbuf_free(&d2);

	/* a commit and snapshot entries with tails */
	b.len = 0;
	off = jr_frame_begin(&b, JR_COMMIT);
	jbuf_u64(&b, 6);
	jbuf_u64(&b, 3);
	jr_tail_put(&b, 12, "x", 1);
	jr_frame_end(&b, off);
	uint64_t seq, txn;
	struct jreader tail;
	ok(jr_parse_commit(b.p + JR_FRAME_HEADER, b.len - JR_FRAME_HEADER, &seq, &txn, &tail) && seq == 6 &&
		   txn == 3 && jr_tail_next(&tail, &type, &tp, &tn) == 1 && type == 12,
	   "commit with a tail");
	b.len = 0;
	off = jr_frame_begin(&b, JR_SNAP_STR);
	jbuf_u32(&b, 2);
	jbuf_u64(&b, (uint64_t)-1);
	jbuf_u64(&b, 41);
	jbuf_bytes(&b, "sk", 2);
	jbuf_bytes(&b, "val", 3);
	jr_tail_put(&b, 7, "", 0);
	jr_frame_end(&b, off);
	struct jr_snap_entry e;
	ok(jr_parse_snap_entry(b.p + JR_FRAME_HEADER, b.len - JR_FRAME_HEADER, &e) && e.db == 2 &&
		   e.expire == -1 && e.version == 41 && e.vlen == 3 && !memcmp(e.val, "val", 3) &&
		   jr_tail_next(&e.tail, &type, &tp, &tn) == 1 && type == 7 && tn == 0,
	   "string entry with a tail");
	b.len = 0;
	off = jr_frame_begin(&b, JR_SNAP_OBJ);
	jbuf_u32(&b, 0);
	jbuf_u8(&b, 2);
	jbuf_u64(&b, 123);
	jbuf_u64(&b, 8);
	jbuf_bytes(&b, "h", 1);
	jbuf_u32(&b, 1);
	const char *hset[4] = { "HSET", "h", "f", "v" };
	size_t hl[4] = { 4, 1, 1, 1 };
	jr_cmd_argv(&b, 4, hset, hl);
	jr_tail_put(&b, 99, "zz", 2);
	jr_frame_end(&b, off);
	uint64_t argc;
	ok(jr_parse_snap_entry(b.p + JR_FRAME_HEADER, b.len - JR_FRAME_HEADER, &e) && e.ncmds == 1 &&
		   e.expire == 123 && jr_next_argc(&e.cmds, &argc) && argc == 4 &&
		   jr_tail_next(&e.tail, &type, &tp, &tn) == 1 && type == 99 && tn == 2,
	   "object entry: its commands, then the tail");
	/* without a tail (what the writers write now): the same fields */
	b.len = 0;
	off = jr_frame_begin(&b, JR_SNAP_STR);
	jbuf_u32(&b, 0);
	jbuf_u64(&b, 5);
	jbuf_u64(&b, 1);
	jbuf_bytes(&b, "a", 1);
	jbuf_bytes(&b, "b", 1);
	jr_frame_end(&b, off);
	ok(jr_parse_snap_entry(b.p + JR_FRAME_HEADER, b.len - JR_FRAME_HEADER, &e) && e.expire == 5 &&
		   jr_tail_next(&e.tail, &type, &tp, &tn) == 0,
	   "entry without a tail: empty tail");

	/* version 1 payloads and file headers */
	unsigned char v1[128];
	size_t n1 = v1_cmd(v1);
	ok(jr_parse_cmd(v1, n1, &rc) && rc.seq == 7 && rc.db == 1 && rc.nver == 1 &&
		   jr_tail_next(&rc.tail, &type, &tp, &tn) == 0,
	   "a version-1 record parses, with an empty tail");
	b.len = 0;
	jbuf_put(&b, JR_MAGIC_JOURNAL, 8);
	jbuf_u32(&b, 1);
	jbuf_u32(&b, crc32c(0, b.p, 12));
	is_int(jr_check_file_header(b.p, b.len, JR_MAGIC_JOURNAL), 0, "a version-1 file header is accepted");
	for (uint32_t ver = 0; ver <= 3; ver += 3) {
		b.len = 0;
		jbuf_put(&b, JR_MAGIC_SNAPSHOT, 8);
		jbuf_u32(&b, ver);
		jbuf_u32(&b, crc32c(0, b.p, 12));
		is_int(jr_check_file_header(b.p, b.len, JR_MAGIC_SNAPSHOT), -EPROTO,
		       ver ? "version 3 (newer) refused" : "version 0 refused");
	}
	b.len = 0;
	jr_file_header(&b, JR_MAGIC_SNAPSHOT);
	is_int((long long)(b.p[8] | b.p[9] << 8), 2, "writers write version 2");
	jbuf_free(&b);
}

/* jr_frame_peek, the one frame-header reader: every cut of a frame, a
 * heartbeat, an impossible length. */
static void peek_tests(void)
{
	struct jbuf b;
	jbuf_init(&b);
	size_t off = make_cmd(&b, 7, "k", "value");
	const unsigned char *f = b.p + off;
	size_t whole = b.len - off;
	uint32_t n;
	bool cuts_wait = true;
	for (size_t cut = 0; cut < whole; cut++)
		cuts_wait &= jr_frame_peek(f, cut, &n) == 0 &&
			     n == (cut < JR_FRAME_HEADER ? 0 : whole - JR_FRAME_HEADER);
	ok(cuts_wait, "a frame cut anywhere: more bytes needed, its length known once the header is there");
	ok(jr_frame_peek(f, whole, &n) == 1 && n == whole - JR_FRAME_HEADER,
	   "the whole frame: its payload length");
	ok(jr_frame_crc_ok(f, n), "its checksum holds");
	unsigned char beat[JR_FRAME_HEADER] = { 0 };
	ok(jr_frame_peek(beat, sizeof(beat), &n) == 1 && n == 0, "a heartbeat: a whole frame of no payload");
	unsigned char huge[JR_FRAME_HEADER] = { 0xff, 0xff, 0xff, 0x7f };
	is_int((long long)jr_frame_peek(huge, sizeof(huge), &n), (long long)-EPROTO, "an impossible length");
	jbuf_free(&b);
}

int main(void)
{
	plan(61);
	tail_tests();
	peek_tests();
	/* CRC-32C check value of "123456789" */
	is_int((long long)crc32c(0, "123456789", 9), (long long)0xE3069283u, "crc32c check value");
	is_int((long long)crc32c(crc32c(0, "1234", 4), "56789", 5), (long long)0xE3069283u,
	       "crc32c is incremental");

	struct jbuf b;
	jbuf_init(&b);
	jr_file_header(&b, JR_MAGIC_JOURNAL);
	is_int((long long)jr_check_file_header(b.p, b.len, JR_MAGIC_JOURNAL), (long long)0,
	       "file header accepted");
	is_int((long long)jr_check_file_header(b.p, b.len, JR_MAGIC_SNAPSHOT), (long long)-EINVAL,
	       "wrong magic refused");
	size_t offs[3];
	for (int i = 0; i < 3; i++)
		offs[i] = make_cmd(&b, (uint64_t)i + 1, i == 1 ? "key:1" : "k", "value");

	size_t off = JR_FILE_HEADER;
	const unsigned char *pl;
	size_t plen;
	struct jr_cmd rc;
	is_int((long long)jr_next_frame(b.p, b.len, &off, &pl, &plen, NULL), (long long)JR_OK, "first frame");
	ok(jr_parse_cmd(pl, plen, &rc), "record parses");
	is_int((long long)rc.seq, (long long)1u, "seq patched in");
	is_int((long long)rc.db, (long long)3u, "db");
	is_int((long long)rc.now_ms, (long long)1700000000123LL, "wall clock");
	uint64_t argc;
	ok(jr_next_argc(&rc.cmds, &argc) && argc == 3, "argc");
	const char *a;
	size_t al;
	ok(jrd_bytes(&rc.cmds, &a, &al) && al == 3 && !memcmp(a, "SET", 3), "argv[0]");
	const char *k;
	size_t kl;
	uint64_t v;
	ok(jr_next_version(&rc.vers, &k, &kl, &v) && v == 43 && kl == 1, "version pair");
	is_int((long long)jr_next_frame(b.p, b.len, &off, &pl, &plen, NULL), (long long)JR_OK,
	       "second frame");
	is_int((long long)jr_next_frame(b.p, b.len, &off, &pl, &plen, NULL), (long long)JR_OK, "third frame");
	is_int((long long)jr_next_frame(b.p, b.len, &off, &pl, &plen, NULL), (long long)JR_EOF, "clean end");

	/* truncation: every cut inside the last frame is a truncated tail */
	int bad = 0;
	for (size_t cut = offs[2] + 1; cut < b.len; cut++) {
		size_t o = JR_FILE_HEADER;
		enum jr_status st;
		while ((st = jr_next_frame(b.p, cut, &o, &pl, &plen, NULL)) == JR_OK)
			;
		if (st != JR_TRUNCATED || o != offs[2])
			bad++;
	}
	is_int((long long)bad, (long long)0,
	       "every cut of the last record: truncated, at the record's offset");

	/* a flipped payload byte of the middle record: corruption at its offset */
	b.p[offs[1] + JR_FRAME_HEADER + 5] ^= 1;
	off = JR_FILE_HEADER;
	const char *why = NULL;
	jr_next_frame(b.p, b.len, &off, &pl, &plen, &why);
	size_t at = off;
	is_int((long long)jr_next_frame(b.p, b.len, &off, &pl, &plen, &why), (long long)JR_CORRUPT,
	       "middle damage: corrupt");
	is_int((long long)off, (long long)offs[1], "reported at the damaged record");
	ok(at == offs[1] && why && strstr(why, "checksum"), "reason names the checksum");
	b.p[offs[1] + JR_FRAME_HEADER + 5] ^= 1;
	/* the same damage in the last record reads as a torn final write */
	b.p[offs[2] + JR_FRAME_HEADER + 5] ^= 1;
	off = offs[2];
	is_int((long long)jr_next_frame(b.p, b.len, &off, &pl, &plen, NULL), (long long)JR_TRUNCATED,
	       "last-record damage: torn tail");
	/* an impossible length is corruption, not a short file */
	b.p[offs[1] + 3] = 0x7f;
	off = offs[1];
	is_int((long long)jr_next_frame(b.p, b.len, &off, &pl, &plen, NULL), (long long)JR_CORRUPT,
	       "huge length: corrupt");
	b.p[offs[1] + 3] = 0;
	b.p[offs[2] + JR_FRAME_HEADER + 5] ^= 1; /* the "torn tail" damage above, undone */

	/* jr_torn_tail: damage in the middle has a record after it */
	b.p[offs[1] + JR_FRAME_HEADER + 5] ^= 1;
	ok(!jr_torn_tail(b.p, b.len, offs[1], 1), "middle damage: a later record checks, not torn");
	b.p[offs[1] + JR_FRAME_HEADER + 5] ^= 1;
	/* what a failed writeback leaves: the last frame's header on disk, its
	 * payload and the blocks after it zeros, the file longer than the frame */
	struct jbuf t;
	jbuf_init(&t);
	jbuf_put(&t, b.p, b.len);
	size_t full = t.len;
	memset(t.p + offs[2] + JR_FRAME_HEADER + 2, 0, full - offs[2] - JR_FRAME_HEADER - 2);
	jbuf_put(&t, (unsigned char[4096]){ 0 }, 4096);
	off = offs[2];
	is_int((long long)jr_next_frame(t.p, t.len, &off, &pl, &plen, NULL), (long long)JR_CORRUPT,
	       "zeroed payload with zeros after it: corrupt to jr_next_frame");
	ok(jr_torn_tail(t.p, t.len, offs[2], 2), "... and a torn tail to jr_torn_tail");
	/* a stale copy of an applied record after the damage (an old block)
	 * is not a later record; an unapplied one is */
	t.len = full;
	jbuf_put(&t, b.p + offs[1], offs[2] - offs[1]);
	ok(jr_torn_tail(t.p, t.len, offs[2], 2), "an old record after the damage: still torn");
	ok(!jr_torn_tail(t.p, t.len, offs[2], 1), "a record numbered after the last applied: not torn");
	/* the scan is linear: no record in a long run of look-alike bytes */
	t.len = full;
	unsigned char junk4k[4096];
	for (size_t i = 0; i < sizeof(junk4k); i++)
		junk4k[i] = (unsigned char)(i * 2654435761u >> 13);
	for (int i = 0; i < 256; i++)
		jbuf_put(&t, junk4k, sizeof(junk4k));
	ok(jr_torn_tail(t.p, t.len, offs[2], 2), "a megabyte of junk after the damage: torn");
	jbuf_free(&t);

	/* malformed payloads are refused, never overrun */
	unsigned char junk[] = { JR_CMD, 1, 2, 3 };
	ok(!jr_parse_cmd(junk, sizeof(junk), &rc), "short payload refused");
	jbuf_free(&b);
	return 0;
}
