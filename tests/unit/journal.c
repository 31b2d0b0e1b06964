/* Unit tests of the journal record format (zarisd/journal/format.c): the
 * encoder and decoder round trip, checksums, a truncated tail told apart
 * from corruption in the middle, the offsets reported, and jr_torn_tail. */
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

int main(void)
{
	plan(28);
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
