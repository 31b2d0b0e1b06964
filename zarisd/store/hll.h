/* hll — HyperLogLog values in Redis's own byte format, so that a value
 * written here reads the same in Redis and back (GET / SET / DUMP of a
 * PFADD key are interchangeable).
 *
 * Format (Redis's hyperloglog.c, documented there): a 16-byte header —
 * "HYLL", the encoding byte (0 dense, 1 sparse), three zero bytes, and the
 * cached cardinality as 8 little-endian bytes whose top bit set means "not
 * valid" — followed by 16384 registers of 6 bits. Dense: the registers
 * packed little-endian-bitwise, 12288 bytes. Sparse: run-length opcodes,
 * ZERO 00xxxxxx (1..64 zero registers), XZERO 01xxxxxx yyyyyyyy (1..16384
 * zero registers), VAL 1vvvvvxx (1..4 registers of value 1..32). A sparse
 * value turns dense when a register exceeds 32 or when growing it would
 * pass hll-sparse-max-bytes. Elements are hashed with MurmurHash64A (seed
 * 0xadc83b19): the low 14 bits pick the register, the run of zero bits
 * above them (plus one) is the register's candidate value. The estimate is
 * Ertl's improved estimator ("New cardinality estimation algorithms for
 * HyperLogLog sketches", 2017), as in Redis 7.
 *
 * Pure functions over bytes: no store, no clients; any thread, with the
 * caller owning the buffers.
 */
#ifndef ZR_HLL_H
#define ZR_HLL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HLL_P 14
#define HLL_REGISTERS (1u << HLL_P) /* 16384 */
#define HLL_BITS 6
#define HLL_REGISTER_MAX 63
#define HLL_HDR_SIZE 16
#define HLL_DENSE_SIZE (HLL_HDR_SIZE + (HLL_REGISTERS * HLL_BITS + 7) / 8)
#define HLL_SPARSE_EMPTY_SIZE (HLL_HDR_SIZE + 2) /* one XZERO covering every register */
#define HLL_SPARSE_VAL_MAX_VALUE 32

enum hll_encoding {
	HLL_DENSE = 0,
	HLL_SPARSE = 1,
};

/* A working copy of an HLL value that may grow (sparse edits, promotion).
 * Invariant: p holds len bytes of a value and has room for cap >= len. */
struct hll {
	uint8_t *p;
	size_t len;
	size_t cap;
};

/* Whether the LEN bytes at P are an HLL Redis accepts (its
 * isHLLObjectOrReply): at least a header, "HYLL", a known encoding, and
 * exactly HLL_DENSE_SIZE bytes when dense. */
bool hll_is_valid(const uint8_t *p, size_t len);

/* Makes H an empty sparse HLL (18 bytes, cached cardinality 0 and valid,
 * like Redis's createHLLObject). The caller releases H. */
void hll_init_empty(struct hll *h);
/* Makes H a copy of the LEN bytes at P. The caller releases H. */
void hll_load(struct hll *h, const uint8_t *p, size_t len);
void hll_release(struct hll *h);

/* The register (*INDEX) and candidate value (1..51) of an element. */
unsigned hll_pattern(const void *ele, size_t len, unsigned *index);

/* Raises register INDEX of H to COUNT if it is lower, in H's encoding
 * (promoting a sparse H to dense when needed, see above). Returns 1 when
 * a register changed (the cached cardinality is then marked invalid for a
 * sparse H; the caller invalidates a dense one), 0 when not, -EINVAL when
 * H's sparse data is corrupt. */
int hll_set(struct hll *h, unsigned index, unsigned count, size_t sparse_max);
/* hll_set() for an element's pattern. */
int hll_add(struct hll *h, const void *ele, size_t len, size_t sparse_max);
/* Converts a sparse H to dense (nothing for a dense one). 0, or -EINVAL
 * when the sparse data does not cover exactly HLL_REGISTERS registers. */
int hll_to_dense(struct hll *h);

/* Dense register access on the register bytes (value + HLL_HDR_SIZE). */
unsigned hll_dense_get(const uint8_t *regs, unsigned index);
void hll_dense_set(uint8_t *regs, unsigned index, unsigned val);

/* MAX[i] = max(MAX[i], register i of the valid HLL value P/LEN). 0, or
 * -EINVAL for corrupt sparse data (MAX is then partly updated). */
int hll_merge_max(uint8_t *max, const uint8_t *p, size_t len);

/* Estimated cardinality of the valid HLL value P/LEN (ignoring its cache).
 * 0, or -EINVAL when sparse data does not cover exactly HLL_REGISTERS. */
int hll_count(const uint8_t *p, size_t len, uint64_t *card);
/* Estimated cardinality of HLL_REGISTERS one-byte registers. */
uint64_t hll_count_registers(const uint8_t *regs);

/* The header's cached cardinality: hll_cache_get() is false when it is
 * marked invalid. */
bool hll_cache_get(const uint8_t *p, uint64_t *card);
void hll_cache_set(uint8_t *p, uint64_t card);
void hll_cache_invalidate(uint8_t *p);

/* Writes PFDEBUG DECODE's text for the sparse opcodes at P/LEN ("Z:n",
 * "z:n", "v:val,len" separated by spaces) into BUF (caller's, SIZE bytes,
 * 12 bytes per opcode suffice). Returns the text length. */
size_t hll_sparse_decode(const uint8_t *p, size_t len, char *buf, size_t size);

#endif
