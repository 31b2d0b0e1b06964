/* conv — RESP <-> Lua values, as Redis 7.0's script_lua.c
 * (redisProtocolToLuaType, luaReplyToRedisReply). The RESP side is a
 * command's whole reply as its handler wrote it, so the parser may trust
 * its shape but still checks every length against the buffer. */
#include <lauxlib.h>
#include <lua.h>
#include <stdlib.h>
#include <string.h>

#include "zarisd/proto/reply.h"
#include "zarisd/script/script.h"
#include "zarisd/script/script_int.h"

/* The line at P (up to LEN bytes) without its CRLF: *LINE_LEN, and the
 * bytes up to after the CRLF; 0 when there is no CRLF. */
static size_t line_of(const char *p, size_t len, size_t *line_len)
{
	const char *cr = memchr(p, '\r', len);
	if (!cr || (size_t)(cr - p) + 1 >= len || cr[1] != '\n')
		return 0;
	*line_len = (size_t)(cr - p);
	return *line_len + 2;
}

static long long line_ll(const char *p, size_t n)
{
	char buf[32];
	if (n >= sizeof(buf))
		n = sizeof(buf) - 1;
	memcpy(buf, p, n);
	buf[n] = '\0';
	return strtoll(buf, NULL, 10);
}

void script_push_error(lua_State *L, const char *s, size_t len)
{
	/* luaPushErrorBuff: "-CODE msg" keeps its code, "msg" gets ERR;
	 * trailing CR/LF trimmed */
	const char *code = "ERR", *msg = s;
	size_t code_len = 3, msg_len = len;
	if (len && s[0] == '-') {
		const char *sp = memchr(s, ' ', len);
		if (sp) {
			code = s + 1;
			code_len = (size_t)(sp - s) - 1;
			msg = sp + 1;
			msg_len = len - (size_t)(msg - s);
		} else {
			msg = s + 1;
			msg_len = len - 1;
		}
	}
	while (msg_len && (msg[msg_len - 1] == '\r' || msg[msg_len - 1] == '\n'))
		msg_len--;
	while (msg_len && (msg[0] == '\r' || msg[0] == '\n')) {
		msg++;
		msg_len--;
	}
	luaL_Buffer b;
	lua_newtable(L);
	lua_pushstring(L, "err");
	luaL_buffinit(L, &b);
	luaL_addlstring(&b, code, code_len);
	luaL_addchar(&b, ' ');
	luaL_addlstring(&b, msg, msg_len);
	luaL_pushresult(&b);
	lua_settable(L, -3);
}

/* One-field table {NAME = value on top}; pops the value. */
static void wrap_field(lua_State *L, const char *name)
{
	lua_newtable(L);
	lua_pushstring(L, name);
	lua_pushvalue(L, -3);
	lua_settable(L, -3);
	lua_remove(L, -2);
}

/* Parses one reply at P[0..LEN); PUSH: push its value (false: skip it,
 * an attribute's). Returns bytes used, 0 on a malformed reply (nothing
 * left pushed). */
static size_t parse(lua_State *L, const char *p, size_t len, bool push, int depth)
{
	size_t n, used;
	if (len < 3 || depth > 1000 || !lua_checkstack(L, 6))
		return 0;
	used = line_of(p + 1, len - 1, &n);
	if (!used)
		return 0;
	used += 1;
	const char *s = p + 1;
	switch (p[0]) {
	case '+':
		if (push) {
			lua_pushlstring(L, s, n);
			wrap_field(L, "ok");
		}
		return used;
	case '-':
		if (push) {
			char *e = malloc(n + 1);
			e[0] = '-';
			memcpy(e + 1, s, n);
			script_push_error(L, e, n + 1);
			free(e);
			lua_pushstring(L, "ignore_error_stats_update");
			lua_pushboolean(L, 1);
			lua_settable(L, -3);
		}
		return used;
	case ':':
		if (push)
			lua_pushnumber(L, (lua_Number)line_ll(s, n));
		return used;
	case '_':
		if (push)
			lua_pushnil(L);
		return used;
	case '#':
		if (push)
			lua_pushboolean(L, n && s[0] == 't');
		return used;
	case ',': {
		char buf[64];
		size_t k = n < sizeof(buf) - 1 ? n : sizeof(buf) - 1;
		memcpy(buf, s, k);
		buf[k] = '\0';
		if (push) {
			lua_pushnumber(L, strtod(buf, NULL));
			wrap_field(L, "double");
		}
		return used;
	}
	case '(':
		if (push) {
			lua_pushlstring(L, s, n);
			wrap_field(L, "big_number");
		}
		return used;
	case '$':
	case '=':
	case '!': {
		long long bl = line_ll(s, n);
		if (bl < 0) {
			if (push)
				lua_pushboolean(L, 0);
			return used;
		}
		if ((size_t)bl + 2 > len - used)
			return 0;
		const char *b = p + used;
		if (push) {
			if (p[0] == '$') {
				lua_pushlstring(L, b, (size_t)bl);
			} else if (p[0] == '!') {
				char *e = malloc((size_t)bl + 1);
				e[0] = '-';
				memcpy(e + 1, b, (size_t)bl);
				script_push_error(L, e, (size_t)bl + 1);
				free(e);
			} else if (bl >= 4) {
				lua_newtable(L);
				lua_pushstring(L, "verbatim_string");
				lua_newtable(L);
				lua_pushstring(L, "string");
				lua_pushlstring(L, b + 4, (size_t)bl - 4);
				lua_settable(L, -3);
				lua_pushstring(L, "format");
				lua_pushlstring(L, b, 3);
				lua_settable(L, -3);
				lua_settable(L, -3);
			} else {
				lua_pushlstring(L, b, (size_t)bl);
			}
		}
		return used + (size_t)bl + 2;
	}
	case '*':
	case '>':
	case '%':
	case '~':
	case '|': {
		long long cnt = line_ll(s, n);
		if (cnt < 0) {
			if (push)
				lua_pushboolean(L, 0);
			return used;
		}
		char t = p[0];
		if (t == '|') {
			/* an attribute: skipped, then the reply it annotates */
			for (long long j = 0; j < 2 * cnt; j++) {
				size_t k = parse(L, p + used, len - used, false, depth + 1);
				if (!k)
					return 0;
				used += k;
			}
			size_t k = parse(L, p + used, len - used, push, depth + 1);
			return k ? used + k : 0;
		}
		if (push) {
			lua_newtable(L);
			if (t == '%' || t == '~') {
				lua_pushstring(L, t == '%' ? "map" : "set");
				lua_newtable(L);
			}
		}
		for (long long j = 0; j < cnt; j++) {
			if (push && (t == '*' || t == '>'))
				lua_pushnumber(L, (lua_Number)(j + 1));
			size_t k = parse(L, p + used, len - used, push, depth + 1);
			if (!k)
				goto bad;
			used += k;
			if (t == '%') {
				k = parse(L, p + used, len - used, push, depth + 1);
				if (!k) {
					if (push)
						lua_pop(L, 1);
					goto bad;
				}
				used += k;
			} else if (t == '~' && push) {
				lua_pushboolean(L, 1);
			}
			if (push)
				lua_settable(L, -3);
		}
		if (push && (t == '%' || t == '~'))
			lua_settable(L, -3);
		return used;
bad:
		if (push)
			lua_pop(L, (t == '%' || t == '~') ? 3 : ((t == '*' || t == '>') ? 2 : 1));
		return 0;
	}
	default:
		return 0;
	}
}

size_t script_resp_to_lua(lua_State *L, const char *p, size_t len)
{
	int top = lua_gettop(L);
	size_t n = parse(L, p, len, true, 0);
	if (!n)
		lua_settop(L, top);
	return n;
}

/* A copy of the string on top with CR and LF made spaces (Redis's
 * sdsmapchars for status and big-number replies); caller frees. */
static char *no_crlf(lua_State *L, int idx, size_t *len)
{
	const char *s = lua_tolstring(L, idx, len);
	char *c = malloc(*len + 1);
	for (size_t i = 0; i < *len; i++)
		c[i] = (s[i] == '\r' || s[i] == '\n') ? ' ' : s[i];
	c[*len] = '\0';
	return c;
}

/* The field NAME of the table at the top, pushed (rawget). */
static int field(lua_State *L, const char *name)
{
	lua_pushstring(L, name);
	lua_rawget(L, -2);
	return lua_type(L, -1);
}

bool script_error_counted(lua_State *L)
{
	lua_getfield(L, -1, "ignore_error_stats_update");
	bool ignore = lua_isboolean(L, -1) && lua_toboolean(L, -1);
	lua_pop(L, 1);
	return !ignore;
}

void script_reply_error_table(lua_State *L, struct obuf *out)
{
	/* luaExtractErrorInformation: the err field; "-%s" of it, not
	 * counted again when redis.call's error counted it (Redis's
	 * ERR_REPLY_FLAG_NO_STATS_UPDATE) */
	bool counted = script_error_counted(L);
	lua_getfield(L, -1, "err");
	size_t n = 0;
	const char *msg = lua_tolstring(L, -1, &n);
	char *e = malloc(n + 2);
	e[0] = '-';
	if (msg)
		memcpy(e + 1, msg, n);
	e[n + 1] = '\0';
	if (counted)
		reply_error(out, e);
	else
		reply_error_nostats(out, e);
	free(e);
	lua_pop(L, 1);
}

void script_lua_to_resp(lua_State *L, struct obuf *out, bool resp2_script)
{
	if (!lua_checkstack(L, 4)) {
		reply_error(out, "ERR reached lua stack limit");
		lua_pop(L, 1);
		return;
	}
	size_t len;
	switch (lua_type(L, -1)) {
	case LUA_TSTRING: {
		const char *s = lua_tolstring(L, -1, &len);
		reply_bulk(out, s, len);
		break;
	}
	case LUA_TBOOLEAN:
		if (resp2_script) {
			if (lua_toboolean(L, -1))
				reply_long(out, 1);
			else
				reply_null(out);
		} else {
			reply_bool(out, lua_toboolean(L, -1));
		}
		break;
	case LUA_TNUMBER:
		reply_long(out, (long long)lua_tonumber(L, -1));
		break;
	case LUA_TTABLE: {
		if (field(L, "err") == LUA_TSTRING) {
			lua_pop(L, 1);
			script_reply_error_table(L, out);
			break;
		}
		lua_pop(L, 1);
		if (field(L, "ok") == LUA_TSTRING) {
			char *s = no_crlf(L, -1, &len);
			reply_simple_len(out, s, len);
			free(s);
			lua_pop(L, 2);
			return;
		}
		lua_pop(L, 1);
		if (field(L, "double") == LUA_TNUMBER) {
			reply_double(out, lua_tonumber(L, -1));
			lua_pop(L, 2);
			return;
		}
		lua_pop(L, 1);
		if (field(L, "big_number") == LUA_TSTRING) {
			char *s = no_crlf(L, -1, &len);
			reply_bignum_str(out, s);
			free(s);
			lua_pop(L, 2);
			return;
		}
		lua_pop(L, 1);
		if (field(L, "verbatim_string") == LUA_TTABLE) {
			if (field(L, "format") == LUA_TSTRING) {
				const char *fmt = lua_tostring(L, -1);
				lua_pushstring(L, "string");
				lua_rawget(L, -3);
				if (lua_type(L, -1) == LUA_TSTRING) {
					const char *s = lua_tolstring(L, -1, &len);
					reply_verbatim(out, s, len, fmt);
					lua_pop(L, 4);
					return;
				}
				lua_pop(L, 1);
			}
			lua_pop(L, 1);
		}
		lua_pop(L, 1);
		if (field(L, "map") == LUA_TTABLE) {
			struct reply_deferred d;
			long n = 0;
			reply_deferred(out, &d);
			lua_pushnil(L);
			while (lua_next(L, -2)) {
				lua_pushvalue(L, -2);
				script_lua_to_resp(L, out, resp2_script); /* key */
				script_lua_to_resp(L, out, resp2_script); /* value */
				n++;
			}
			reply_set_deferred(out, &d, REPLY_AGG_MAP, n);
			lua_pop(L, 2);
			return;
		}
		lua_pop(L, 1);
		if (field(L, "set") == LUA_TTABLE) {
			struct reply_deferred d;
			long n = 0;
			reply_deferred(out, &d);
			lua_pushnil(L);
			while (lua_next(L, -2)) {
				lua_pop(L, 1);
				lua_pushvalue(L, -1);
				script_lua_to_resp(L, out, resp2_script);
				n++;
			}
			reply_set_deferred(out, &d, REPLY_AGG_SET, n);
			lua_pop(L, 2);
			return;
		}
		lua_pop(L, 1);
		/* an array, cut at the first nil */
		struct reply_deferred d;
		long n = 0;
		reply_deferred(out, &d);
		for (int j = 1;; j++) {
			lua_pushnumber(L, j);
			lua_rawget(L, -2);
			if (lua_type(L, -1) == LUA_TNIL) {
				lua_pop(L, 1);
				break;
			}
			script_lua_to_resp(L, out, resp2_script);
			n++;
		}
		reply_set_deferred(out, &d, REPLY_AGG_ARRAY, n);
		break;
	}
	default:
		reply_null(out);
	}
	lua_pop(L, 1);
}
