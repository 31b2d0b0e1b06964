/* sha1 — FIPS 180-4 §6.1, the 80-round compression over 64-byte blocks
 * with the 16-word rolling message schedule. See sha1.h.
 */
#include "zarisd/core/sha1.h"

#include <string.h>

static uint32_t rol32(uint32_t x, unsigned n)
{
	return (x << n) | (x >> (32 - n));
}

static uint32_t load_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static void store_be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static void compress(uint32_t h[5], const unsigned char block[64])
{
	uint32_t w[16], a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];

	for (int t = 0; t < 16; t++)
		w[t] = load_be32(block + 4 * t);
	for (int t = 0; t < 80; t++) {
		uint32_t f, k, tmp;

		if (t >= 16)
			w[t & 15] =
				rol32(w[(t + 13) & 15] ^ w[(t + 8) & 15] ^ w[(t + 2) & 15] ^ w[t & 15], 1);
		if (t < 20)
			f = (b & c) | (~b & d), k = 0x5a827999;
		else if (t < 40)
			f = b ^ c ^ d, k = 0x6ed9eba1;
		else if (t < 60)
			f = (b & c) | (b & d) | (c & d), k = 0x8f1bbcdc;
		else
			f = b ^ c ^ d, k = 0xca62c1d6;
		tmp = rol32(a, 5) + f + e + k + w[t & 15];
		e = d;
		d = c;
		c = rol32(b, 30);
		b = a;
		a = tmp;
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
	h[4] += e;
}

void zr_sha1_init(struct zr_sha1 *ctx)
{
	static const uint32_t iv[5] = { 0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0 };

	memcpy(ctx->h, iv, sizeof(iv));
	ctx->len = 0;
}

void zr_sha1_update(struct zr_sha1 *ctx, const void *p, size_t len)
{
	const unsigned char *in = p;
	size_t have = (size_t)(ctx->len % 64);

	ctx->len += len;
	if (have) {
		size_t take = 64 - have < len ? 64 - have : len;

		memcpy(ctx->buf + have, in, take);
		in += take;
		len -= take;
		if (have + take < 64)
			return;
		compress(ctx->h, ctx->buf);
	}
	for (; len >= 64; in += 64, len -= 64)
		compress(ctx->h, in);
	memcpy(ctx->buf, in, len);
}

void zr_sha1_final(struct zr_sha1 *ctx, unsigned char out[ZR_SHA1_LEN])
{
	uint64_t bits = ctx->len * 8;
	size_t have = (size_t)(ctx->len % 64);

	/* 0x80, zeros up to 56 mod 64, then the bit length big-endian */
	ctx->buf[have++] = 0x80;
	if (have > 56) {
		memset(ctx->buf + have, 0, 64 - have);
		compress(ctx->h, ctx->buf);
		have = 0;
	}
	memset(ctx->buf + have, 0, 56 - have);
	store_be32(ctx->buf + 56, (uint32_t)(bits >> 32));
	store_be32(ctx->buf + 60, (uint32_t)bits);
	compress(ctx->h, ctx->buf);
	for (int i = 0; i < 5; i++)
		store_be32(out + 4 * i, ctx->h[i]);
}

void zr_sha1_hex(const void *p, size_t len, char out[ZR_SHA1_HEX_LEN + 1])
{
	static const char digits[] = "0123456789abcdef";
	unsigned char d[ZR_SHA1_LEN];
	struct zr_sha1 ctx;

	zr_sha1_init(&ctx);
	zr_sha1_update(&ctx, p, len);
	zr_sha1_final(&ctx, d);
	for (int i = 0; i < ZR_SHA1_LEN; i++) {
		out[2 * i] = digits[d[i] >> 4];
		out[2 * i + 1] = digits[d[i] & 15];
	}
	out[ZR_SHA1_HEX_LEN] = '\0';
}
