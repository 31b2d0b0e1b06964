/* function_payload — FUNCTION DUMP's payload, as Redis 7.0 writes it
 * (script.h's function_dump, script_int.h's function_payload_each): each
 * library as an RDB record (opcode and its code as an RDB string), then
 * the RDB version (2 bytes, little-endian) and the CRC64 of all before it
 * (8 bytes, little-endian). Reading takes what Redis writes: plain,
 * integer-encoded and LZF-compressed strings, and 7.0-rc1/rc2's records
 * (name, engine, description, code).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "zarisd/core/crc64.h"
#include "zarisd/core/mem.h"
#include "zarisd/script/script.h"
#include "zarisd/script/script_int.h"

#define RDB_VERSION 10		 /* Redis 7.0's */
#define RDB_OPCODE_FUNCTION2 245 /* a library: its code as one string */
#define RDB_OPCODE_FUNCTION 246	 /* 7.0-rc1/rc2's: name, engine, description, code */

static void buf_put(char **b, size_t *len, size_t *cap, const void *p, size_t n)
{
	if (*len + n > *cap) {
		*cap = (*len + n) * 2 + 64;
		*b = zr_realloc(*b, *cap);
	}
	memcpy(*b + *len, p, n);
	*len += n;
}

/* rdbSaveLen: 6-bit, 14-bit, 32-bit or 64-bit big-endian lengths. */
static void put_len(char **b, size_t *len, size_t *cap, uint64_t v)
{
	unsigned char t[9];
	size_t n;
	if (v < (1 << 6)) {
		t[0] = (unsigned char)v;
		n = 1;
	} else if (v < (1 << 14)) {
		t[0] = (unsigned char)(0x40 | (v >> 8));
		t[1] = (unsigned char)(v & 0xff);
		n = 2;
	} else if (v <= UINT32_MAX) {
		t[0] = 0x80;
		for (int i = 0; i < 4; i++)
			t[1 + i] = (unsigned char)(v >> (24 - 8 * i));
		n = 5;
	} else {
		t[0] = 0x81;
		for (int i = 0; i < 8; i++)
			t[1 + i] = (unsigned char)(v >> (56 - 8 * i));
		n = 9;
	}
	buf_put(b, len, cap, t, n);
}

static void dump_one(void *ctx, const char *code, size_t n)
{
	void **a = ctx;
	char **b = a[0];
	size_t *len = a[1], *cap = a[2];
	unsigned char op = RDB_OPCODE_FUNCTION2;
	buf_put(b, len, cap, &op, 1);
	/* uncompressed: Redis's rdbcompression would LZF it; both forms load */
	put_len(b, len, cap, n);
	buf_put(b, len, cap, code, n);
}

char *function_dump(size_t *out_len)
{
	char *b = NULL;
	size_t len = 0, cap = 0;
	void *a[3] = { &b, &len, &cap };
	function_foreach_code(dump_one, a);
	unsigned char ver[2] = { RDB_VERSION & 0xff, (RDB_VERSION >> 8) & 0xff };
	buf_put(&b, &len, &cap, ver, 2);
	uint64_t crc = zr_crc64(0, b, len);
	unsigned char c[8];
	for (int i = 0; i < 8; i++)
		c[i] = (unsigned char)(crc >> (8 * i));
	buf_put(&b, &len, &cap, c, 8);
	*out_len = len;
	return b;
}

struct rdb_reader {
	const unsigned char *p, *end;
};

/* rdbLoadLen: false when cut short. *ENC: the value is an encoding. */
static bool get_len(struct rdb_reader *r, uint64_t *v, bool *enc)
{
	*enc = false;
	if (r->p >= r->end)
		return false;
	unsigned char b = *r->p++;
	int type = (b & 0xc0) >> 6;
	if (type == 3) {
		*enc = true;
		*v = b & 0x3f;
	} else if (type == 0) {
		*v = b & 0x3f;
	} else if (type == 1) {
		if (r->p >= r->end)
			return false;
		*v = ((uint64_t)(b & 0x3f) << 8) | *r->p++;
	} else if (b == 0x80 || b == 0x81) {
		int n = b == 0x80 ? 4 : 8;
		if (r->end - r->p < n)
			return false;
		*v = 0;
		for (int i = 0; i < n; i++)
			*v = (*v << 8) | *r->p++;
	} else {
		return false;
	}
	return true;
}

/* lzf_decompress: OUT gets exactly OLEN bytes; false on a bad stream. */
static bool lzf_inflate(const unsigned char *in, size_t ilen, unsigned char *out, size_t olen)
{
	const unsigned char *ip = in, *iend = in + ilen;
	unsigned char *op = out, *oend = out + olen;
	while (ip < iend) {
		unsigned ctrl = *ip++;
		if (ctrl < 32) { /* a literal run of ctrl + 1 bytes */
			size_t n = ctrl + 1;
			if ((size_t)(oend - op) < n || (size_t)(iend - ip) < n)
				return false;
			memcpy(op, ip, n);
			op += n;
			ip += n;
		} else { /* a back reference */
			size_t n = ctrl >> 5;
			if (n == 7) {
				if (ip >= iend)
					return false;
				n += *ip++;
			}
			if (ip >= iend)
				return false;
			size_t back = ((ctrl & 0x1f) << 8) + *ip++ + 1;
			n += 2;
			if ((size_t)(op - out) < back || (size_t)(oend - op) < n)
				return false;
			const unsigned char *ref = op - back;
			for (size_t i = 0; i < n; i++) /* may overlap: byte by byte */
				*op++ = *ref++;
		}
	}
	return op == oend;
}

/* rdbGenericLoadStringObject: a heap copy (caller frees) of the string at
 * R, plain, integer-encoded or LZF-compressed; NULL when malformed. */
static char *get_string(struct rdb_reader *r, size_t *n)
{
	uint64_t v;
	bool enc;
	if (!get_len(r, &v, &enc))
		return NULL;
	if (enc) {
		long long iv;
		if (v <= 2) {
			int bytes = 1 << v;
			if (r->end - r->p < bytes)
				return NULL;
			uint32_t u = 0;
			for (int i = 0; i < bytes; i++)
				u |= (uint32_t)r->p[i] << (8 * i);
			r->p += bytes;
			iv = bytes == 1 ? (int8_t)u : bytes == 2 ? (int16_t)u : (int32_t)u;
			char *s = zr_malloc(24);
			*n = (size_t)snprintf(s, 24, "%lld", iv);
			return s;
		}
		if (v != 3)
			return NULL;
		uint64_t clen, len;
		bool e2;
		if (!get_len(r, &clen, &e2) || e2 || !get_len(r, &len, &e2) || e2)
			return NULL;
		if ((uint64_t)(r->end - r->p) < clen || len > (1ull << 32))
			return NULL;
		char *s = zr_malloc(len + 1);
		if (!lzf_inflate(r->p, clen, (unsigned char *)s, len)) {
			zr_free(s);
			return NULL;
		}
		r->p += clen;
		s[len] = '\0';
		*n = len;
		return s;
	}
	if ((uint64_t)(r->end - r->p) < v)
		return NULL;
	char *s = zr_malloc(v + 1);
	memcpy(s, r->p, v);
	s[v] = '\0';
	r->p += v;
	*n = v;
	return s;
}

/* One library record of a payload (after its opcode) as its code: a
 * 7.0-rc record's name, engine and code become "#!<engine> name=<name>\n". */
static char *get_library(struct rdb_reader *r, int type, size_t *n, char *err, size_t errsize)
{
	if (type == RDB_OPCODE_FUNCTION2) {
		char *s = get_string(r, n);
		if (!s)
			snprintf(err, errsize, "ERR Failed loading library payload");
		return s;
	}
	size_t nl, el, dl, bl;
	char *name = NULL, *engine = NULL, *desc = NULL, *blob = NULL, *code = NULL;
	uint64_t has_desc;
	bool enc;
	if (!(name = get_string(r, &nl))) {
		snprintf(err, errsize, "ERR Failed loading library name");
		goto out;
	}
	if (!(engine = get_string(r, &el))) {
		snprintf(err, errsize, "ERR Failed loading engine name");
		goto out;
	}
	if (!get_len(r, &has_desc, &enc) || enc) {
		snprintf(err, errsize, "ERR Failed loading library description indicator");
		goto out;
	}
	if (has_desc && !(desc = get_string(r, &dl))) {
		snprintf(err, errsize, "ERR Failed loading library description");
		goto out;
	}
	if (!(blob = get_string(r, &bl))) {
		snprintf(err, errsize, "ERR Failed loading library blob");
		goto out;
	}
	*n = 2 + el + 6 + nl + 1 + bl;
	code = zr_malloc(*n + 1);
	snprintf(code, *n + 1, "#!%s name=%s\n", engine, name);
	memcpy(code + 2 + el + 6 + nl + 1, blob, bl);
	code[*n] = '\0';
out:
	zr_free(name);
	zr_free(engine);
	zr_free(desc);
	zr_free(blob);
	return code;
}

int function_payload_each(const char *payload, size_t len, function_payload_fn fn, void *ctx, char *err,
			  size_t errsize)
{
	const unsigned char *p = (const unsigned char *)payload;
	/* verifyDumpPayload: the RDB version we read and the CRC64 */
	bool good = len >= 10;
	if (good) {
		unsigned ver = (unsigned)p[len - 10] | ((unsigned)p[len - 9] << 8);
		uint64_t crc = zr_crc64(0, p, len - 8), want = 0;
		for (int i = 0; i < 8; i++)
			want |= (uint64_t)p[len - 8 + i] << (8 * i);
		good = ver <= RDB_VERSION && crc == want;
	}
	if (!good) {
		snprintf(err, errsize, "ERR DUMP payload version or checksum are wrong");
		return -EINVAL;
	}
	struct rdb_reader r = { p, p + len - 10 };
	while (r.p < r.end) {
		int type = *r.p++;
		if (type != RDB_OPCODE_FUNCTION && type != RDB_OPCODE_FUNCTION2) {
			snprintf(err, errsize, "ERR given type is not a function");
			return -EINVAL;
		}
		size_t n;
		char *code = get_library(&r, type, &n, err, errsize);
		if (!code)
			return -EINVAL;
		int k = fn(ctx, code, n, err, errsize);
		zr_free(code);
		if (k < 0)
			return k;
	}
	return 0;
}
