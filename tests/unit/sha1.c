/* SHA-1 (core/sha1): the FIPS 180-4 example vectors (one block, two
 * blocks, a million 'a' fed in odd chunks), then seeded random inputs of
 * every length around the padding boundaries against the digest
 * coreutils' sha1sum prints for the same bytes, fed whole and in random
 * pieces.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/tap.h"
#include "zarisd/core/sha1.h"

static void hex_of(const unsigned char *d, char *out)
{
	for (int i = 0; i < ZR_SHA1_LEN; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

static void test_fips(void)
{
	static const struct {
		const char *in, *want;
	} v[] = {
		{ "", "da39a3ee5e6b4b0d3255bfef95601890afd80709" },
		{ "abc", "a9993e364706816aba3e25717850c26c9cd0d89d" },
		{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		  "84983e441c3bd26ebaae4aa1f95129e5e54670f1" },
		{ "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmn"
		  "opqrstnopqrstu",
		  "a49b2446a02c645bf419f995b67091253a04a259" },
	};
	char hex[ZR_SHA1_HEX_LEN + 1];

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		zr_sha1_hex(v[i].in, strlen(v[i].in), hex);
		is_str(hex, v[i].want, "FIPS vector %zu (%zu bytes)", i + 1, strlen(v[i].in));
	}

	struct zr_sha1 ctx;
	unsigned char d[ZR_SHA1_LEN], a[997];

	memset(a, 'a', sizeof(a));
	zr_sha1_init(&ctx);
	for (size_t left = 1000000; left;) {
		size_t n = left < sizeof(a) ? left : sizeof(a);

		zr_sha1_update(&ctx, a, n);
		left -= n;
	}
	zr_sha1_final(&ctx, d);
	hex_of(d, hex);
	is_str(hex, "34aa973cd4c4daa4f61eeb2bdbad27316534016f", "a million 'a' in 997-byte pieces");
}

/* sha1sum's digest of LEN bytes at P, or "" when it cannot run. */
static void sha1sum_of(const unsigned char *p, size_t len, char out[ZR_SHA1_HEX_LEN + 1])
{
	char path[] = "/tmp/zr-sha1-XXXXXX", cmd[64];
	int fd = mkstemp(path);
	FILE *f;

	out[0] = '\0';
	if (fd < 0)
		return;
	if (write(fd, p, len) != (ssize_t)len) {
		close(fd);
		unlink(path);
		return;
	}
	close(fd);
	snprintf(cmd, sizeof(cmd), "sha1sum %s", path);
	f = popen(cmd, "r");
	if (f) {
		if (fscanf(f, "%40s", out) != 1)
			out[0] = '\0';
		pclose(f);
	}
	unlink(path);
}

static void test_against_sha1sum(void)
{
	static const size_t lens[] = { 1,   54,	 55,  56,  57,	63,   64,   65,
				       119, 120, 127, 128, 129, 1000, 4096, 65537 };
	unsigned char *buf = malloc(65537);
	int bad_whole = 0, bad_pieces = 0, runs = 0;

	srand(16);
	for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
		for (int rep = 0; rep < 3; rep++, runs++) {
			size_t len = lens[li];
			char want[ZR_SHA1_HEX_LEN + 1], got[ZR_SHA1_HEX_LEN + 1];
			unsigned char d[ZR_SHA1_LEN];
			struct zr_sha1 ctx;

			for (size_t i = 0; i < len; i++)
				buf[i] = (unsigned char)rand();
			sha1sum_of(buf, len, want);
			if (!want[0])
				skip_all("sha1sum did not run");
			zr_sha1_hex(buf, len, got);
			if (strcmp(got, want) != 0) {
				bad_whole++;
				diag("%zu bytes: got %s, sha1sum %s", len, got, want);
			}
			zr_sha1_init(&ctx);
			for (size_t off = 0; off < len;) {
				size_t n = (size_t)rand() % 70;

				n = n > len - off ? len - off : n;
				zr_sha1_update(&ctx, buf + off, n);
				off += n;
			}
			zr_sha1_final(&ctx, d);
			hex_of(d, got);
			if (strcmp(got, want) != 0) {
				bad_pieces++;
				diag("%zu bytes in pieces: got %s, sha1sum %s", len, got, want);
			}
		}
	}
	free(buf);
	ok(bad_whole == 0, "%d random inputs (1 to 65537 bytes) match sha1sum", runs);
	ok(bad_pieces == 0, "the same fed in random pieces of 0-69 bytes match");
}

int main(void)
{
	test_fips();
	test_against_sha1sum();
	return done_testing();
}
