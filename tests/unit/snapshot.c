/* Unit test of snapshot_write_sink (zarisd/persist/snapshot.c): the image
 * a memory sink receives is the file snapshot_write leaves, byte for byte
 * but for the creation time in the header frame (each write reads the
 * clock); a sink's error ends the write and leaves no file behind. */
#include "zarisd/persist/snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/tap.h"
#include "zarisd/journal/format.h"
#include "zarisd/store/set.h"
#include "zarisd/store/store.h"
#include "zarisd/store/write.h"

/* file header, frame header, kind byte, u64 journal seq: then created_ms */
#define CREATED_AT (JR_FILE_HEADER + JR_FRAME_HEADER + 1 + 8)

struct mem {
	struct jbuf b;
	size_t calls;
	size_t fail_after; /* 0: never */
};

static int mem_write(void *ctx, const void *p, size_t n)
{
	struct mem *m = ctx;
	if (m->fail_after && m->calls >= m->fail_after)
		return -EPIPE;
	m->calls++;
	jbuf_put(&m->b, p, n);
	return 0;
}

static uint64_t instant(void *ctx, struct snapshot_origin *origin)
{
	return *(uint64_t *)ctx;
}

int main(void)
{
	/* the program writes as one command would (store/write.h) */
	struct store_write unit_bracket;
	store_write_begin(&unit_bracket, STORE_WRITE_CLIENT, "a unit test", true, 0);
	plan(8);
	struct store *s = store_create(4, 4);
	char k[32], v[64];
	for (int i = 0; i < 3000; i++) {
		int kl = snprintf(k, sizeof(k), "key:%d", i);
		int vl = snprintf(v, sizeof(v), "value %d", i * 7);
		unsigned shard = store_shard_of(s, k, (size_t)kl);
		store_lock(s, shard);
		store_set_string_locked(s, (unsigned)i % 3, k, (size_t)kl, v, (size_t)vl,
					i % 5 ? -1 : 4102444800000LL + i, 0, NULL);
		store_unlock(s, shard);
		if (i % 10 == 0) {
			kl = snprintf(k, sizeof(k), "set:%d", i);
			struct set *set = set_create("a", 1);
			set_add(set, "member", 6, 512);
			shard = store_shard_of(s, k, (size_t)kl); /* its own shard's lock */
			store_lock(s, shard);
			store_set_object_locked(s, 0, k, (size_t)kl, STORE_TYPE_SET, set, -1, 0, NULL);
			store_unlock(s, shard);
		}
	}
	char dir[] = "/tmp/zaris-unit-snapshot-XXXXXX";
	ok(mkdtemp(dir) != NULL, "temp dir");
	char path[128];
	snprintf(path, sizeof(path), "%s/dump.zdb", dir);
	uint64_t seq = 41;
	struct snapshot_result fr, mr;
	is_int(snapshot_write(s, path, instant, &seq, NULL, NULL, &fr), 0, "file sink");
	struct mem m = { .fail_after = 0 };
	jbuf_init(&m.b);
	struct snapshot_sink sink = { mem_write, &m };
	is_int(snapshot_write_sink(s, &sink, instant, &seq, NULL, NULL, &mr), 0, "memory sink");

	struct jbuf f;
	jbuf_init(&f);
	FILE *fp = fopen(path, "rb");
	char buf[65536];
	size_t n;
	while (fp && (n = fread(buf, 1, sizeof(buf), fp)) > 0)
		jbuf_put(&f, buf, n);
	if (fp)
		fclose(fp);
	ok(f.len == m.b.len && f.len == fr.bytes && mr.bytes == fr.bytes && mr.keys == fr.keys &&
		   fr.keys == 3300 && mr.journal_seq == 41,
	   "same size and counts (%zu bytes, %llu keys)", f.len, (unsigned long long)fr.keys);
	/* the creation times differ, and so the header frame's checksum;
	 * everything else is the same image */
	if (f.len > CREATED_AT + 8 && m.b.len == f.len) {
		memcpy(m.b.p + CREATED_AT, f.p + CREATED_AT, 8);
		memcpy(m.b.p + JR_FILE_HEADER + 4, f.p + JR_FILE_HEADER + 4, 4);
	}
	ok(m.b.len == f.len && !memcmp(m.b.p, f.p, f.len), "the sink's bytes are the file's");
	size_t off = JR_FILE_HEADER, frames = 0;
	const unsigned char *pl;
	size_t plen;
	while (jr_next_frame(f.p, f.len, &off, &pl, &plen, NULL) == JR_OK)
		frames++;
	is_int((long long)frames, 3300 + 2, "the file: header, one frame per key, end");

	/* a sink that fails: the error comes back, no file is left */
	m.b.len = 0;
	m.calls = 0;
	m.fail_after = 1;
	is_int(snapshot_write_sink(s, &sink, instant, &seq, NULL, NULL, &mr), -EPIPE,
	       "a sink's error ends it");
	ok(mr.bytes == 0 && mr.keys == 0, "and nothing is reported written");
	unlink(path);
	rmdir(dir);
	jbuf_free(&f);
	jbuf_free(&m.b);
	store_destroy(s);
	return 0;
}
