/* Unit tests for script/: RESP -> Lua -> RESP (conv.c, Redis's
 * redisProtocolToLuaType and luaReplyToRedisReply) byte for byte, a reply
 * cut short or malformed, the shebang parser's flags and errors, and the
 * registry (add, get by any-case SHA, exists, flush). */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"
#include "zarisd/core/mem.h"
#include "zarisd/proto/reply.h"
#include "zarisd/script/script.h"

static char *flat(const struct obuf *o, size_t *len)
{
	struct iovec iov[256];
	int n = obuf_iov(o, iov, 256);
	size_t total = 0;
	for (int i = 0; i < n; i++)
		total += iov[i].iov_len;
	char *s = malloc(total + 1);
	size_t at = 0;
	for (int i = 0; i < n; i++) {
		memcpy(s + at, iov[i].iov_base, iov[i].iov_len);
		at += iov[i].iov_len;
	}
	s[total] = '\0';
	*len = total;
	return s;
}

/* S with CR and LF shown as \r \n, for test names (static buffer). */
static const char *esc(const char *s, int which)
{
	static char buf[2][256];
	size_t at = 0;
	for (; *s && at + 3 < sizeof(buf[0]); s++) {
		if (*s == '\r' || *s == '\n') {
			buf[which][at++] = '\\';
			buf[which][at++] = *s == '\r' ? 'r' : 'n';
		} else {
			buf[which][at++] = *s;
		}
	}
	buf[which][at] = '\0';
	return buf[which];
}

/* IN parsed into Lua, written back to a client of protocol RESP from a
 * script of protocol SCRIPT_RESP: WANT. */
static void round_trip(lua_State *L, const char *in, int resp, int script_resp, const char *want)
{
	size_t n = script_resp_to_lua(L, in, strlen(in));
	if (!ok(n == strlen(in), "parsed all of %s", esc(in, 0))) {
		diag("read %zu of %zu", n, strlen(in));
		return;
	}
	struct obuf o;
	obuf_init(&o);
	o.resp = (uint8_t)resp;
	int top = lua_gettop(L);
	script_lua_to_resp(L, &o, script_resp == 2);
	ok(lua_gettop(L) == top - 1, "the value was popped");
	size_t len;
	char *got = flat(&o, &len);
	is_mem(got, len, want, strlen(want), "RESP%d client, RESP%d script: %s -> %s", resp, script_resp,
	       esc(in, 0), esc(want, 1));
	free(got);
	obuf_free(&o);
}

static void conversions(void)
{
	lua_State *L = luaL_newstate();
	round_trip(L, ":42\r\n", 2, 2, ":42\r\n");
	round_trip(L, "$3\r\nabc\r\n", 2, 2, "$3\r\nabc\r\n");
	round_trip(L, "$0\r\n\r\n", 2, 2, "$0\r\n\r\n");
	round_trip(L, "+OK\r\n", 2, 2, "+OK\r\n");
	round_trip(L, "-WRONGTYPE bad kind\r\n", 2, 2, "-WRONGTYPE bad kind\r\n");
	round_trip(L, "-NOCODE\r\n", 2, 2, "-ERR NOCODE\r\n");
	round_trip(L, "$-1\r\n", 2, 2, "$-1\r\n");
	round_trip(L, "$-1\r\n", 3, 2, "_\r\n");
	round_trip(L, "*-1\r\n", 2, 2, "$-1\r\n");
	round_trip(L, "*3\r\n:1\r\n$-1\r\n:2\r\n", 2, 2,
		   "*3\r\n:1\r\n$-1\r\n:2\r\n"); /* a nil bulk is false: no cut */
	round_trip(L, "*2\r\n*1\r\n:1\r\n$1\r\nx\r\n", 2, 2, "*2\r\n*1\r\n:1\r\n$1\r\nx\r\n");
	round_trip(L, "*0\r\n", 2, 2, "*0\r\n");
	/* RESP3 replies a script sees after redis.setresp(3) */
	round_trip(L, "%1\r\n$1\r\na\r\n:1\r\n", 3, 3, "%1\r\n$1\r\na\r\n:1\r\n");
	round_trip(L, "%1\r\n$1\r\na\r\n:1\r\n", 2, 3, "*2\r\n$1\r\na\r\n:1\r\n");
	round_trip(L, "~1\r\n$1\r\nm\r\n", 3, 3, "~1\r\n$1\r\nm\r\n");
	round_trip(L, ",1.5\r\n", 3, 3, ",1.5\r\n");
	round_trip(L, ",1.5\r\n", 2, 3, "$3\r\n1.5\r\n");
	round_trip(L, "#t\r\n", 3, 3, "#t\r\n");
	round_trip(L, "#f\r\n", 2, 3, ":0\r\n");
	round_trip(L, "#t\r\n", 2, 2, ":1\r\n");
	round_trip(L, "#f\r\n", 2, 2, "$-1\r\n");
	round_trip(L, "_\r\n", 3, 3, "_\r\n");
	round_trip(L, "(12345678901234567890\r\n", 3, 3, "(12345678901234567890\r\n");
	round_trip(L, "=7\r\ntxt:abc\r\n", 3, 3, "=7\r\ntxt:abc\r\n");
	round_trip(L, "=7\r\ntxt:abc\r\n", 2, 3, "$3\r\nabc\r\n");
	round_trip(L, "|1\r\n+key\r\n:1\r\n:5\r\n", 2, 3, ":5\r\n"); /* the attribute is dropped */
	round_trip(L, ">2\r\n$1\r\na\r\n:1\r\n", 2, 3, "*2\r\n$1\r\na\r\n:1\r\n");

	/* a reply cut short or malformed: nothing read, nothing left pushed */
	static const char *const bad[] = {
		":1", "$3\r\nab",    "*2\r\n:1\r\n", "%1\r\n:1\r\n", "?x\r\n", "$5\r\nabc\r\n",
		"",   "*1\r\n~1\r\n"
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int top = lua_gettop(L);
		size_t n = script_resp_to_lua(L, bad[i], strlen(bad[i]));
		ok(n == 0 && lua_gettop(L) == top, "malformed reply %zu: refused, stack unchanged", i);
	}

	/* Lua values the engine builds: an array cut at the first nil */
	lua_newtable(L);
	lua_pushnumber(L, 1);
	lua_rawseti(L, -2, 1);
	lua_pushnumber(L, 3);
	lua_rawseti(L, -2, 3);
	struct obuf o;
	obuf_init(&o);
	script_lua_to_resp(L, &o, true);
	size_t len;
	char *got = flat(&o, &len);
	ok(!strcmp(got, "*1\r\n:1\r\n"), "an array stops at its first nil");
	free(got);
	obuf_free(&o);
	lua_close(L);
}

static void shebang(void)
{
	uint32_t flags;
	size_t skip;
	char err[128];
	const char *b = "return 1";
	ok(script_parse_shebang(b, strlen(b), &flags, &skip, err, sizeof(err)) == 0 &&
		   flags == SCRIPT_FLAG_COMPAT && skip == 0,
	   "no shebang: compat mode");
	b = "#!lua flags=no-writes,allow-oom\nreturn 1";
	ok(script_parse_shebang(b, strlen(b), &flags, &skip, err, sizeof(err)) == 0 &&
		   flags == (SCRIPT_FLAG_NO_WRITES | SCRIPT_FLAG_ALLOW_OOM) && skip == 31,
	   "flags parsed, the line skipped but for its newline");
	b = "#!lua flags=allow-undeclared-keys\n";
	ok(script_parse_shebang(b, strlen(b), &flags, &skip, err, sizeof(err)) == 0 &&
		   flags == SCRIPT_FLAG_ALLOW_UNDECLARED,
	   "our own flag allow-undeclared-keys");
	static const struct {
		const char *body, *err;
	} bad[] = {
		{ "#!lua", "Invalid script shebang" },
		{ "#!py\n", "Unexpected engine in script shebang: #!py" },
		{ "#!lua flags=no-writes,bad\n", "Unexpected flag in script shebang: bad" },
		{ "#!lua x=1\n", "Unknown lua shebang option: x=1" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		int r = script_parse_shebang(bad[i].body, strlen(bad[i].body), &flags, &skip, err,
					     sizeof(err));
		ok(r < 0, "refused: %s", esc(bad[i].body, 0));
		is_str(err, bad[i].err, "Redis's text");
	}
}

static void registry(void)
{
	char sha[ZR_SHA1_HEX_LEN + 1];
	script_registry_add("return 1", 8, sha);
	is_str(sha, "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "the SHA1 of the body");
	char upper[ZR_SHA1_HEX_LEN + 1];
	for (int i = 0; i < ZR_SHA1_HEX_LEN; i++)
		upper[i] = (char)(sha[i] >= 'a' && sha[i] <= 'f' ? sha[i] - 32 : sha[i]);
	ok(script_registry_exists(upper, ZR_SHA1_HEX_LEN), "found by its SHA in upper case");
	ok(!script_registry_exists(sha, 39), "not by a shorter one");
	size_t len = 0;
	char *body = script_registry_get(sha, ZR_SHA1_HEX_LEN, &len);
	ok(body && len == 8 && !memcmp(body, "return 1", 8), "its body comes back");
	zr_free(body);
	for (int i = 0; i < 500; i++) {
		char b[32], s[ZR_SHA1_HEX_LEN + 1];
		int n = snprintf(b, sizeof(b), "return %d", i);
		script_registry_add(b, (size_t)n, s);
	}
	uint64_t count, bytes;
	script_registry_stats(&count, &bytes);
	is_int(count, 500, "500 distinct bodies (return 1 twice is one)");
	ok(script_registry_exists(sha, ZR_SHA1_HEX_LEN), "still found after the table grew");
	script_registry_flush();
	script_registry_stats(&count, &bytes);
	ok(count == 0 && bytes == 0 && !script_registry_exists(sha, ZR_SHA1_HEX_LEN), "FLUSH empties it");
	script_registry_free();
}

int main(void)
{
	conversions();
	shebang();
	registry();
	return done_testing();
}
