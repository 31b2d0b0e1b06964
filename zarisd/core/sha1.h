/* sha1 — SHA-1 (FIPS 180-4) for names, not for security: the supervisor's
 * cluster node ids (the hex digest of "<cluster name>/<node name>") and,
 * later, the script digests of EVALSHA. Plain computation on caller-owned
 * state; any thread, no allocation.
 */
#ifndef ZR_SHA1_H
#define ZR_SHA1_H

#include <stddef.h>
#include <stdint.h>

#define ZR_SHA1_LEN 20
#define ZR_SHA1_HEX_LEN 40

/* Incremental state. Invariant: buf holds len % 64 bytes not yet compressed. */
struct zr_sha1 {
	uint32_t h[5];
	uint64_t len; /* bytes fed so far */
	unsigned char buf[64];
};

/* Starts a digest in CTX. */
void zr_sha1_init(struct zr_sha1 *ctx);
/* Feeds LEN bytes at P (LEN may be 0). */
void zr_sha1_update(struct zr_sha1 *ctx, const void *p, size_t len);
/* Pads, writes the 20-byte digest into OUT; CTX must be re-initialised
 * before reuse. */
void zr_sha1_final(struct zr_sha1 *ctx, unsigned char out[ZR_SHA1_LEN]);

/* The digest of LEN bytes at P as 40 lowercase hex digits plus NUL. */
void zr_sha1_hex(const void *p, size_t len, char out[ZR_SHA1_HEX_LEN + 1]);

#endif
