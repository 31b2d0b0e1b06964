/* libzaris's RESP3 parser (zc_resp3): every type, nesting, attributes,
 * RESP2 nulls, a value cut at every byte (a prefix, never an error or a
 * read past the end), and the inputs it must refuse. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"
#include "zarisd/client/zc_resp3.h"

static struct zc_arena arena;

/* Parses S whole: the value, or NULL when it did not take all of S. */
static const struct zaris_value *parse(const char *s, size_t len)
{
	static struct zaris_value v;
	const char *why = NULL;
	ssize_t n = zc_resp3_parse(s, len, &arena, &v, &why);
	if (n != (ssize_t)len) {
		diag("parse of %zu bytes: %zd (%s)", len, n, why ? why : "");
		return NULL;
	}
	return &v;
}
#define P(lit) parse(lit, sizeof(lit) - 1)

/* Every strict prefix of S parses as "need more". */
static int prefixes_need_more(const char *s, size_t len)
{
	for (size_t cut = 0; cut < len; cut++) {
		struct zaris_value v;
		const char *why = NULL;
		/* a copy of exactly CUT bytes, so a read past it is ASan's to see */
		char *p = malloc(cut ? cut : 1);
		memcpy(p, s, cut);
		ssize_t n = zc_resp3_parse(p, cut, &arena, &v, &why);
		free(p);
		if (n != 0) {
			diag("a prefix of %zu bytes gave %zd (%s)", cut, n, why ? why : "");
			return 0;
		}
	}
	return 1;
}

static int refused(const char *s)
{
	struct zaris_value v;
	const char *why = NULL;
	ssize_t n = zc_resp3_parse(s, strlen(s), &arena, &v, &why);
	return n == -1 && why != NULL;
}

static void scalars(void)
{
	const struct zaris_value *v = P("+OK\r\n");
	ok(v && v->type == ZARIS_T_SIMPLE && v->len == 2 && !strcmp(v->str, "OK"), "simple string");
	v = P("-ERR unknown command 'x'\r\n");
	ok(v && v->type == ZARIS_T_ERROR && !strcmp(v->str, "ERR unknown command 'x'"), "error: whole text");
	v = P(":-9223372036854775808\r\n");
	ok(v && v->type == ZARIS_T_INTEGER && v->integer == INT64_MIN, "integer: INT64_MIN");
	v = P(":9223372036854775807\r\n");
	ok(v && v->integer == INT64_MAX, "integer: INT64_MAX");
	ok(refused(":9223372036854775808\r\n"), "integer past INT64_MAX refused");
	ok(refused(":12a\r\n") && refused(":\r\n"), "integer with a non-digit, empty integer refused");
	v = P("$10\r\nhel\0o\r\nwor\r\n");
	ok(v && v->type == ZARIS_T_BULK && v->len == 10 && !memcmp(v->str, "hel\0o\r\nwor", 10) &&
		   v->str[10] == 0,
	   "bulk: binary-safe (NUL and CRLF inside), NUL-terminated");
	v = P("$0\r\n\r\n");
	ok(v && v->type == ZARIS_T_BULK && v->len == 0 && v->str && !v->str[0], "empty bulk");
	v = P("_\r\n");
	ok(v && v->type == ZARIS_T_NULL, "RESP3 null");
	v = P("$-1\r\n");
	ok(v && v->type == ZARIS_T_NULL, "RESP2 null bulk");
	v = P("*-1\r\n");
	ok(v && v->type == ZARIS_T_NULL, "RESP2 null array");
	v = P(",3.25\r\n");
	ok(v && v->type == ZARIS_T_DOUBLE && v->dbl == 3.25 && !strcmp(v->str, "3.25"),
	   "double, with its text");
	v = P(",-inf\r\n");
	ok(v && isinf(v->dbl) && v->dbl < 0, "double -inf");
	v = P(",inf\r\n");
	ok(v && isinf(v->dbl) && v->dbl > 0, "double inf");
	v = P(",nan\r\n");
	ok(v && isnan(v->dbl), "double nan");
	ok(refused(",1.5x\r\n"), "bad double refused");
	v = P("#t\r\n");
	ok(v && v->type == ZARIS_T_BOOL && v->integer == 1, "boolean true");
	v = P("#f\r\n");
	ok(v && v->type == ZARIS_T_BOOL && v->integer == 0, "boolean false");
	ok(refused("#x\r\n"), "bad boolean refused");
	v = P("(3492890328409238509324850943850943825024385\r\n");
	ok(v && v->type == ZARIS_T_BIGNUM && v->len == 43, "big number");
	v = P("=15\r\ntxt:Some string\r\n");
	ok(v && v->type == ZARIS_T_VERBATIM && !strcmp(v->format, "txt") && v->len == 11 &&
		   !strcmp(v->str, "Some string"),
	   "verbatim string: format and text");
	ok(refused("=3\r\ntxt\r\n"), "verbatim shorter than its format refused");
	v = P("!21\r\nSYNTAX invalid syntax\r\n");
	ok(v && v->type == ZARIS_T_ERROR && v->len == 21, "blob error");
	ok(refused("$3\r\nabcd\r\n"), "bulk without its CRLF where its length says refused");
	ok(refused("$-2\r\n"), "negative bulk length refused");
	ok(refused("?3\r\n"), "unknown type byte refused");
	ok(refused("_x\r\n"), "null with a body refused");
}

static void aggregates(void)
{
	const struct zaris_value *v = P("*3\r\n:1\r\n$1\r\na\r\n_\r\n");
	ok(v && v->type == ZARIS_T_ARRAY && v->n == 3 && v->elements[0].integer == 1 &&
		   v->elements[1].type == ZARIS_T_BULK && v->elements[2].type == ZARIS_T_NULL,
	   "array of integer, bulk, null");
	v = P("*0\r\n");
	ok(v && v->type == ZARIS_T_ARRAY && v->n == 0, "empty array");
	v = P("%2\r\n+epoch\r\n:7\r\n$5\r\nnodes\r\n*1\r\n%1\r\n+id\r\n$0\r\n\r\n");
	ok(v && v->type == ZARIS_T_MAP && v->n == 4, "map: 2 pairs as 4 elements");
	ok(zaris_map_get(v, "epoch") && zaris_map_get(v, "epoch")->integer == 7,
	   "map_get a simple-string key");
	const struct zaris_value *nodes = zaris_map_get(v, "nodes");
	ok(nodes && nodes->type == ZARIS_T_ARRAY && nodes->n == 1 && zaris_map_get(&nodes->elements[0], "id"),
	   "map_get a bulk key; nested map inside an array");
	ok(!zaris_map_get(v, "missing") && !zaris_map_get(nodes, "id"), "map_get: absent key, not a map");
	v = P("~2\r\n+a\r\n+b\r\n");
	ok(v && v->type == ZARIS_T_SET && v->n == 2, "set");
	v = P(">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n");
	ok(v && v->type == ZARIS_T_PUSH && v->n == 3, "push");
	v = P("|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.19\r\n*1\r\n:5\r\n");
	ok(v && v->type == ZARIS_T_ARRAY && v->n == 1 && v->elements[0].integer == 5,
	   "attribute dropped, the value after it returned");
	v = P("*2\r\n*2\r\n*1\r\n:1\r\n%0\r\n~0\r\n");
	ok(v && v->elements[0].n == 2 && v->elements[0].elements[0].elements[0].integer == 1 &&
		   v->elements[0].elements[1].type == ZARIS_T_MAP && v->elements[1].type == ZARIS_T_SET,
	   "nested aggregates");
	ok(refused("*-2\r\n") && refused("%-1\r\n"), "negative counts refused");
	/* a count the bytes cannot hold yet is a prefix; one no memory could
	 * hold is refused without allocating it */
	struct zaris_value w;
	const char *why;
	ok(zc_resp3_parse("*1000000\r\n:1\r\n", 14, &arena, &w, &why) == 0,
	   "a large count with few bytes: need more");
	ok(refused("*9223372036854775807\r\n"), "a count past memory refused");
	char deep[4 * (ZC_RESP3_MAX_DEPTH + 2) + 8];
	size_t n = 0;
	for (int i = 0; i < ZC_RESP3_MAX_DEPTH + 2; i++)
		n += (size_t)sprintf(deep + n, "*1\r\n");
	n += (size_t)sprintf(deep + n, ":1\r\n");
	ok(zc_resp3_parse(deep, n, &arena, &w, &why) == -1, "nesting past the depth limit refused");
}

static void cuts(void)
{
	static const char *const samples[] = {
		"+OK\r\n",
		"-MOVED 3999 127.0.0.1:7001\r\n",
		":123\r\n",
		"$5\r\nhello\r\n",
		"$0\r\n\r\n",
		"_\r\n",
		",1.5\r\n",
		"#t\r\n",
		"(12345\r\n",
		"=8\r\ntxt:abcd\r\n",
		"*2\r\n$1\r\na\r\n*1\r\n:2\r\n",
		"%1\r\n+k\r\n~1\r\n,2\r\n",
		"|1\r\n+a\r\n+b\r\n:3\r\n",
		">2\r\n+x\r\n_\r\n",
	};
	for (size_t i = 0; i < sizeof(samples) / sizeof(samples[0]); i++) {
		const char *s = samples[i];
		ok(prefixes_need_more(s, strlen(s)) && parse(s, strlen(s)),
		   "every cut of sample %zu needs more; whole parses", i);
	}
	/* what follows a value is not its: the parser stops at its end */
	struct zaris_value v;
	const char *why;
	ok(zc_resp3_parse(":1\r\n:2\r\n", 8, &arena, &v, &why) == 4 && v.integer == 1,
	   "stops at the value's end");
}

int main(void)
{
	scalars();
	aggregates();
	cuts();
	zc_arena_free(&arena);
	return done_testing();
}
