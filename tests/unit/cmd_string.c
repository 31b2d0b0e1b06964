/* Unit tests of the string command handlers (zarisd/commands/cmd_string.c),
 * run against a real store and real reply encoding, without the network or
 * the dispatcher: each command locks every shard (more than the dispatcher
 * would, never less), runs the handler and compares the raw reply bytes.
 *
 * This covers what the redis-server comparison (tests/integration/cases/
 * strings*.txt) cannot yet: WRONGTYPE against a non-string entry (no other
 * type's commands exist yet), lowered proto-max-bulk-len limits, resizes
 * across the entry's length-field classes, and the store state after each
 * command (TTL kept or dropped, nothing set after an error).
 */
/* The module is compiled into this test, which then sees its statics; the
 * linker takes no second copy from libzarisd.a. */
#include "zarisd/commands/cmd_string.c"

#include <stdarg.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/uio.h>

#include "tests/tap.h"
#include "zarisd/server/client.h"
#include "zarisd/server/command.h"
#include "zarisd/server/server.h"
#include "zarisd/server/settings.h"
#include "zarisd/commands/table.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"
#include "zarisd/proto/reply.h"
#include "zarisd/store/store.h"
#include "zarisd/store/write.h"

#define WRONGTYPE "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"

static struct settings cfg;
static struct server srv;
static struct client cl;
static char outbuf[1 << 20];
static size_t outlen;

/* A stand-in non-string type: a heap block with nothing inside. */
static void dummy_free(void *o)
{
	zr_free(o);
}
static void *dummy_dup(const void *o)
{
	(void)o;
	return zr_malloc(8);
}
static size_t dummy_memory(const void *o)
{
	return zr_usable(o);
}
static const char *dummy_encoding(const void *o)
{
	(void)o;
	return "quicklist";
}
static const struct store_type_ops dummy_ops = {
	.free = dummy_free, .dup = dummy_dup, .memory = dummy_memory, .encoding = dummy_encoding
};

static void lock_all(bool lock)
{
	unsigned n = store_shard_count(srv.store);
	for (unsigned i = 0; i < n; i++) {
		if (lock)
			store_lock(srv.store, i);
		else
			store_unlock(srv.store, n - 1 - i);
	}
}

/* Runs ARGV[0..ARGC) with explicit lengths; returns the raw reply. */
static const char *run_v(int argc, const char **argv, const size_t *lens)
{
	static struct resp_arg args[64];
	static char store_bytes[64][4096];
	for (int i = 0; i < argc; i++) {
		memcpy(store_bytes[i], argv[i], lens[i]);
		args[i].ptr = store_bytes[i];
		args[i].len = lens[i];
	}
	cl.argv = args;
	cl.argc = argc;
	cl.cmd = command_lookup(argv[0], lens[0]);
	cl.now_ms = zr_time_ms();
	if (!cl.cmd || !cl.cmd->handler) {
		snprintf(outbuf, sizeof(outbuf), "(no handler for %s)", argv[0]);
		return outbuf;
	}
	lock_all(true);
	cl.cmd->handler(&cl);
	lock_all(false);

	struct iovec iov[64];
	outlen = 0;
	int n = obuf_iov(&cl.out, iov, 64);
	for (int i = 0; i < n; i++) {
		size_t take = iov[i].iov_len < sizeof(outbuf) - 1 - outlen ? iov[i].iov_len
									   : sizeof(outbuf) - 1 - outlen;
		memcpy(outbuf + outlen, iov[i].iov_base, take);
		outlen += take;
	}
	obuf_consume(&cl.out, cl.out.bytes);
	outbuf[outlen] = '\0';
	return outbuf;
}

/* Runs a command given as space-separated words (no binary, no quoting). */
static const char *run(const char *line)
{
	static char buf[4096];
	const char *argv[64];
	size_t lens[64];
	int argc = 0;
	snprintf(buf, sizeof(buf), "%s", line);
	for (char *save = NULL, *w = strtok_r(buf, " ", &save); w && argc < 64;
	     w = strtok_r(NULL, " ", &save)) {
		argv[argc] = w;
		lens[argc] = strlen(w);
		argc++;
	}
	return run_v(argc, argv, lens);
}

#define RUN(line, want) is_str(run(line), want, "%s", line)

static void make_dummy(const char *key)
{
	lock_all(true);
	int rc = store_set_object_locked(srv.store, 0, key, strlen(key), STORE_TYPE_LIST, zr_malloc(8), -1, 0,
					 NULL);
	lock_all(false);
	ok(rc == 0, "made non-string key %s", key);
}

static int key_type(const char *key)
{
	lock_all(true);
	struct entry *e =
		store_find_locked(srv.store, 0, key, strlen(key), zr_time_ms(), STORE_LOOKUP_NOSTATS);
	int t = e ? (int)entry_type(e) : -1;
	lock_all(false);
	return t;
}

static int64_t key_expire(const char *key)
{
	lock_all(true);
	struct entry *e =
		store_find_locked(srv.store, 0, key, strlen(key), zr_time_ms(), STORE_LOOKUP_NOSTATS);
	int64_t t = e ? entry_expire(e) : -2;
	lock_all(false);
	return t;
}

static void test_wrongtype(void)
{
	make_dummy("l");
	RUN("GET l", WRONGTYPE);
	RUN("SET l v GET", WRONGTYPE);
	RUN("SET l v NX GET", WRONGTYPE);
	RUN("GETSET l v", WRONGTYPE);
	RUN("GETDEL l", WRONGTYPE);
	RUN("GETEX l", WRONGTYPE);
	RUN("GETEX l EX 0", WRONGTYPE); /* the type is checked before the expiry */
	RUN("GETEX l PERSIST", WRONGTYPE);
	RUN("INCR l", WRONGTYPE);
	RUN("DECR l", WRONGTYPE);
	RUN("INCRBY l 5", WRONGTYPE);
	RUN("DECRBY l 5", WRONGTYPE);
	RUN("INCRBY l abc", "-ERR value is not an integer or out of range\r\n");
	RUN("INCRBYFLOAT l 1.5", WRONGTYPE);
	RUN("INCRBYFLOAT l abc", WRONGTYPE);
	RUN("APPEND l x", WRONGTYPE);
	RUN("STRLEN l", WRONGTYPE);
	RUN("GETRANGE l 0 -1", WRONGTYPE);
	RUN("GETRANGE l a 1", "-ERR value is not an integer or out of range\r\n");
	RUN("SUBSTR l 0 -1", WRONGTYPE);
	RUN("SETRANGE l 0 x", WRONGTYPE);
	{
		const char *av[4] = { "SETRANGE", "l", "0", "" };
		size_t al[4] = { 8, 1, 1, 0 };
		is_str(run_v(4, av, al), WRONGTYPE, "SETRANGE l 0 \"\"");
	}
	RUN("SETRANGE l -1 x", "-ERR offset is out of range\r\n");
	RUN("SET s str", "+OK\r\n");
	RUN("MGET s l nokey", "*3\r\n$3\r\nstr\r\n$-1\r\n$-1\r\n");
	RUN("MSETNX l v other w", ":0\r\n");
	RUN("SETNX l v", ":0\r\n");
	RUN("SET l v NX", "$-1\r\n");
	RUN("LCS l s", "-ERR The specified keys must contain string values\r\n");
	RUN("LCS s l LEN", "-ERR The specified keys must contain string values\r\n");
	RUN("LCS s l BADOPT", "-ERR The specified keys must contain string values\r\n");
	ok(key_type("l") == STORE_TYPE_LIST, "the non-string key survived every refused command");
	RUN("SET l v XX", "+OK\r\n");
	ok(key_type("l") == STORE_TYPE_STRING, "SET XX replaces a non-string key");
	make_dummy("l2");
	RUN("SET l2 v", "+OK\r\n");
	ok(key_type("l2") == STORE_TYPE_STRING, "plain SET replaces a non-string key");
	make_dummy("l3");
	RUN("MSET l3 v", "+OK\r\n");
	RUN("GET l3", "$1\r\nv\r\n");
	make_dummy("l4");
	RUN("SETEX l4 100 v", "+OK\r\n");
	RUN("GET l4", "$1\r\nv\r\n");
}

/* Compares the last reply with a byte literal (binary-safe). */
#define IS_REPLY(lit, ...) is_mem(outbuf, outlen, lit, sizeof(lit) - 1, __VA_ARGS__)

static void test_ttl_state(void)
{
	RUN("SET t v PXAT 4102444800123", "+OK\r\n");
	is_int(key_expire("t"), 4102444800123LL, "PXAT stored");
	RUN("SET t v2 KEEPTTL", "+OK\r\n");
	is_int(key_expire("t"), 4102444800123LL, "KEEPTTL kept it");
	RUN("INCRBYFLOAT t 1", "-ERR value is not a valid float\r\n");
	RUN("SET t 5 KEEPTTL", "+OK\r\n");
	RUN("INCRBYFLOAT t 1.25", "$4\r\n6.25\r\n");
	RUN("INCR t", "-ERR value is not an integer or out of range\r\n");
	RUN("APPEND t 0", ":5\r\n");
	RUN("SETRANGE t 300 x", ":301\r\n");
	is_int(key_expire("t"), 4102444800123LL, "INCRBYFLOAT, APPEND, SETRANGE keep the TTL");
	RUN("SET t 7 KEEPTTL", "+OK\r\n");
	RUN("INCRBY t 100", ":107\r\n");
	RUN("DECR t", ":106\r\n");
	is_int(key_expire("t"), 4102444800123LL, "INCRBY and DECR keep the TTL");
	RUN("GETSET t v", "$3\r\n106\r\n");
	is_int(key_expire("t"), -1, "GETSET drops the TTL");
	RUN("GETEX t EXAT 4102444800", "$1\r\nv\r\n");
	is_int(key_expire("t"), 4102444800000LL, "GETEX EXAT");
	RUN("GETEX t", "$1\r\nv\r\n");
	is_int(key_expire("t"), 4102444800000LL, "plain GETEX leaves the TTL");
	RUN("GETEX t PERSIST", "$1\r\nv\r\n");
	is_int(key_expire("t"), -1, "GETEX PERSIST");
	int64_t before = zr_time_ms();
	RUN("GETEX t EX 100", "$1\r\nv\r\n");
	int64_t at = key_expire("t");
	ok(at >= before + 100000 && at <= zr_time_ms() + 100000, "GETEX EX is relative (%lld)",
	   (long long)at);
	RUN("GETEX t PXAT 1", "$1\r\nv\r\n");
	is_int(key_expire("t"), -2, "GETEX with a past PXAT deletes");
	RUN("SET t v EX 100", "+OK\r\n");
	RUN("SET t w", "+OK\r\n");
	is_int(key_expire("t"), -1, "SET drops the TTL");
	RUN("SETEX t 100 v", "+OK\r\n");
	RUN("MSET t v", "+OK\r\n");
	is_int(key_expire("t"), -1, "MSET drops the TTL");
	RUN("PSETEX t 100000 v", "+OK\r\n");
	RUN("SET t w GET", "$1\r\nv\r\n");
	is_int(key_expire("t"), -1, "SET GET drops the TTL");
	RUN("GETDEL t", "$1\r\nw\r\n");
	is_int(key_expire("t"), -2, "GETDEL deletes");
	RUN("SET t v EX 0 GET", "-ERR invalid expire time in 'set' command\r\n");
	is_int(key_expire("t"), -2, "nothing set after an expiry error");
	RUN("SETEX t 0 v", "-ERR invalid expire time in 'setex' command\r\n");
	RUN("PSETEX t 0 v", "-ERR invalid expire time in 'psetex' command\r\n");
	RUN("SET t v GET", "$-1\r\n");
	RUN("GETEX t EX 0", "-ERR invalid expire time in 'getex' command\r\n");
	RUN("SET past v PXAT 1", "+OK\r\n");
	RUN("GET past", "$-1\r\n");
}

/* Values whose length crosses the entry's 1/2/4-byte length classes, built
 * by APPEND and SETRANGE in place, with NUL bytes inside. */
static void test_resize(void)
{
	static char big[70001];
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)(i % 251);
	const char *av[4] = { "SET", "r", big, NULL };
	size_t al[4] = { 3, 1, 255, 0 };
	run_v(3, av, al);
	IS_REPLY("+OK\r\n", "SET 255 bytes");
	size_t len = 255;
	while (len < 70000) {
		size_t add = len + 3000 > 70000 ? 70000 - len : 3000;
		const char *ap[3] = { "APPEND", "r", big + len };
		size_t apl[3] = { 6, 1, add };
		run_v(3, ap, apl);
		len += add;
		char want[32];
		snprintf(want, sizeof(want), ":%zu\r\n", len);
		if (strcmp(outbuf, want) != 0)
			break;
	}
	is_int(len, 70000, "APPEND in 3000-byte steps up to 70000 bytes");
	RUN("STRLEN r", ":70000\r\n");
	const char *gv[2] = { "GET", "r" };
	size_t gl[2] = { 3, 1 };
	run_v(2, gv, gl);
	ok(outlen == 70000 + 10 && memcmp(outbuf, "$70000\r\n", 8) == 0 &&
		   memcmp(outbuf + 8, big, 70000) == 0,
	   "GET returns all 70000 bytes intact");

	RUN("SETRANGE r2 65534 ab", ":65536\r\n");
	run("GETRANGE r2 65533 -1");
	IS_REPLY("$3\r\n\0ab\r\n", "zero fill before a SETRANGE offset");
	RUN("SETRANGE r2 0 xyz", ":65536\r\n");
	run("GETRANGE r2 0 4");
	IS_REPLY("$5\r\nxyz\0\0\r\n", "SETRANGE inside the value keeps its length");
	RUN("SET small 99", "+OK\r\n");
	RUN("INCR small", ":100\r\n");
	RUN("INCRBY small 9223372036854775707", ":9223372036854775807\r\n");
	RUN("GET small", "$19\r\n9223372036854775807\r\n");
	RUN("SET small 255", "+OK\r\n");
	RUN("SETRANGE small 255 x", ":256\r\n");
	RUN("GETRANGE small 0 2", "$3\r\n255\r\n");
}

static void test_limits(void)
{
	atomic_store_explicit(&cfg.proto_max_bulk_len, 1000, memory_order_relaxed);
	RUN("SETRANGE lim 999 x", ":1000\r\n");
	RUN("SETRANGE lim 1000 x", "-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n");
	RUN("SETRANGE new 1000 x", "-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n");
	is_int(key_expire("new"), -2, "no key made by a refused SETRANGE");
	RUN("APPEND lim x", "-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n");
	RUN("STRLEN lim", ":1000\r\n");
	RUN("SET a 123456789012345", "+OK\r\n");
	RUN("SET b 123456789012345", "+OK\r\n");
	RUN("LCS a b LEN",
	    "-ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len\r\n");
	RUN("SET a 12345678901234", "+OK\r\n");
	RUN("SET b 12345678901234", "+OK\r\n");
	RUN("LCS a b LEN", ":14\r\n");
	atomic_store_explicit(&cfg.proto_max_bulk_len, 512LL * 1024 * 1024, memory_order_relaxed);
	RUN("APPEND lim x", ":1001\r\n");
}

static void test_resp3_and_stats(void)
{
	cl.resp = 3;
	cl.out.resp = 3;
	RUN("GET nokey", "_\r\n");
	RUN("SET k v", "+OK\r\n");
	RUN("SET k v NX", "_\r\n");
	RUN("MGET k nokey", "*2\r\n$1\r\nv\r\n_\r\n");
	RUN("INCRBYFLOAT f 10.5", "$4\r\n10.5\r\n");
	RUN("SET a ohmytext", "+OK\r\n");
	RUN("SET b mynewtext", "+OK\r\n");
	RUN("LCS a b IDX MINMATCHLEN 4 WITHMATCHLEN",
	    "%2\r\n$7\r\nmatches\r\n*1\r\n*3\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n:4\r\n$3\r\nlen\r\n:6\r\n");
	RUN("LCS a b", "$6\r\nmytext\r\n");
	cl.resp = 2;
	cl.out.resp = 2;
	RUN("LCS a b IDX",
	    "*4\r\n$7\r\nmatches\r\n*2\r\n*2\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n*2\r\n*2\r\n:2\r\n:3\r\n*2\r\n"
	    ":0\r\n:1\r\n$3\r\nlen\r\n:6\r\n");

	/* Redis counts keyspace hits/misses on read lookups only. */
	struct store_stats s0, s1;
	store_stats(srv.store, &s0);
	run("GET k");
	run("GET nokey");
	run("SET k v NX");
	run("INCR cnt");
	run("APPEND k x");
	run("SET k v GET");
	run("MGET k nokey");
	store_stats(srv.store, &s1);
	is_int(s1.keyspace_hits - s0.keyspace_hits, 3, "hits: GET, SET GET, MGET");
	is_int(s1.keyspace_misses - s0.keyspace_misses, 2, "misses: GET, MGET");
}

int main(void)
{
	/* the program writes as one command would (store/write.h) */
	struct store_write unit_bracket;
	store_write_begin(&unit_bracket, STORE_WRITE_CLIENT, "a unit test", true, 0);
	zr_hash_init();
	command_table_init();
	settings_init(&cfg);
	srv.store = store_create(2, 4);
	srv.cfg = &cfg;
	store_register_type(srv.store, STORE_TYPE_LIST, &dummy_ops);
	memset(&cl, 0, sizeof(cl));
	cl.srv = &srv;
	obuf_init(&cl.out);
	cl.resp = 2;

	test_wrongtype();
	test_ttl_state();
	test_resize();
	test_limits();
	test_resp3_and_stats();

	obuf_free(&cl.out);
	store_destroy(srv.store);
	settings_free(&cfg);
	return done_testing();
}
