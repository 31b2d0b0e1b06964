/* hll — see hll.h for the format. Every byte this module writes must be the
 * byte Redis writes for the same operations (PFADD then GET is compared
 * with redis-server byte for byte), so the sparse editing below follows
 * Redis's steps exactly: which opcode is split and how, and the bounded
 * merge of equal neighbouring VAL opcodes afterwards. */
#include "zarisd/store/hll.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "zarisd/core/bits.h"
#include "zarisd/core/mem.h"

#define HLL_Q (64 - HLL_P) /* hash bits left after the register index */
#define HLL_HASH_SEED 0xadc83b19ULL
#define HLL_ALPHA_INF 0.721347520444481703680 /* 1 / (2 ln 2) */

/* Sparse opcodes. */
#define XZERO_BIT 0x40
#define VAL_BIT 0x80
#define ZERO_MAX_LEN 64
#define XZERO_MAX_LEN 16384
#define VAL_MAX_LEN 4

static inline bool op_is_zero(const uint8_t *p)
{
	return (*p & 0xc0) == 0;
}
static inline bool op_is_xzero(const uint8_t *p)
{
	return (*p & 0xc0) == XZERO_BIT;
}
static inline bool op_is_val(const uint8_t *p)
{
	return (*p & VAL_BIT) != 0;
}
static inline unsigned zero_len(const uint8_t *p)
{
	return (*p & 0x3fu) + 1;
}
/* END bounds the read: a truncated XZERO at the very end reads its second
 * byte as zero (Redis reads the string's NUL terminator there). */
static inline unsigned xzero_len(const uint8_t *p, const uint8_t *end)
{
	unsigned lo = p + 1 < end ? p[1] : 0;
	return (((*p & 0x3fu) << 8) | lo) + 1;
}
static inline unsigned val_value(const uint8_t *p)
{
	return ((*p >> 2) & 0x1fu) + 1;
}
static inline unsigned val_len(const uint8_t *p)
{
	return (*p & 0x3u) + 1;
}
static inline void set_val(uint8_t *p, unsigned val, unsigned len)
{
	*p = (uint8_t)(((val - 1) << 2) | (len - 1) | VAL_BIT);
}
static inline void set_zero(uint8_t *p, unsigned len)
{
	*p = (uint8_t)(len - 1);
}
static inline void set_xzero(uint8_t *p, unsigned len)
{
	p[0] = (uint8_t)(((len - 1) >> 8) | XZERO_BIT);
	p[1] = (uint8_t)((len - 1) & 0xff);
}

/* --- header ------------------------------------------------------------------------ */

bool hll_is_valid(const uint8_t *p, size_t len)
{
	if (len < HLL_HDR_SIZE || memcmp(p, "HYLL", 4) != 0)
		return false;
	if (p[4] > HLL_SPARSE)
		return false;
	return p[4] != HLL_DENSE || len == HLL_DENSE_SIZE;
}

bool hll_cache_get(const uint8_t *p, uint64_t *card)
{
	if (p[15] & 0x80)
		return false;
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[8 + i];
	*card = v;
	return true;
}

void hll_cache_set(uint8_t *p, uint64_t card)
{
	for (int i = 0; i < 8; i++)
		p[8 + i] = (uint8_t)(card >> (8 * i));
}

void hll_cache_invalidate(uint8_t *p)
{
	p[15] |= 0x80;
}

/* --- working copies ------------------------------------------------------------------ */

static void reserve(struct hll *h, size_t need)
{
	if (h->cap >= need)
		return;
	size_t cap = need < 64 ? 64 : need + need / 4;
	h->p = zr_realloc(h->p, cap);
	h->cap = cap;
}

void hll_init_empty(struct hll *h)
{
	h->p = NULL;
	h->len = h->cap = 0;
	reserve(h, HLL_SPARSE_EMPTY_SIZE);
	memset(h->p, 0, HLL_HDR_SIZE);
	memcpy(h->p, "HYLL", 4);
	h->p[4] = HLL_SPARSE;
	set_xzero(h->p + HLL_HDR_SIZE, HLL_REGISTERS);
	h->len = HLL_SPARSE_EMPTY_SIZE;
}

void hll_load(struct hll *h, const uint8_t *p, size_t len)
{
	h->p = NULL;
	h->len = h->cap = 0;
	reserve(h, len);
	memcpy(h->p, p, len);
	h->len = len;
}

void hll_release(struct hll *h)
{
	ZR_FREE(h->p);
	h->len = h->cap = 0;
}

/* --- hashing and dense registers ------------------------------------------------------- */

unsigned hll_pattern(const void *ele, size_t len, unsigned *index)
{
	uint64_t hash = zr_murmur64a(ele, len, HLL_HASH_SEED);
	*index = (unsigned)(hash & (HLL_REGISTERS - 1));
	hash >>= HLL_P;
	hash |= 1ULL << HLL_Q; /* bounds the run: at most HLL_Q + 1 */
	return (unsigned)__builtin_ctzll(hash) + 1;
}

/* Register i occupies bits 6i..6i+5, counted from bit 0 of byte 0: its low
 * bits sit in the high part of one byte and, when it straddles, its high
 * bits in the low part of the next. Only registers starting past bit 2 of
 * a byte straddle, so the last register (bit 2 of the last byte) never
 * touches a byte past the end. */
unsigned hll_dense_get(const uint8_t *regs, unsigned index)
{
	unsigned bit = index * HLL_BITS, byte = bit >> 3, fb = bit & 7;
	unsigned v = regs[byte] >> fb;
	if (fb > 8 - HLL_BITS)
		v |= (unsigned)regs[byte + 1] << (8 - fb);
	return v & HLL_REGISTER_MAX;
}

void hll_dense_set(uint8_t *regs, unsigned index, unsigned val)
{
	unsigned bit = index * HLL_BITS, byte = bit >> 3, fb = bit & 7;
	regs[byte] = (uint8_t)((regs[byte] & ~(HLL_REGISTER_MAX << fb)) | (val << fb));
	if (fb > 8 - HLL_BITS) {
		unsigned hi = 8 - fb;
		regs[byte + 1] = (uint8_t)((regs[byte + 1] & ~(HLL_REGISTER_MAX >> hi)) |
					   ((val & HLL_REGISTER_MAX) >> hi));
	}
}

static int dense_raise(uint8_t *regs, unsigned index, unsigned count)
{
	if (hll_dense_get(regs, index) >= count)
		return 0;
	hll_dense_set(regs, index, count);
	return 1;
}

/* --- sparse ---------------------------------------------------------------------------- */

int hll_to_dense(struct hll *h)
{
	if (h->p[4] == HLL_DENSE)
		return 0;
	uint8_t *dense = zr_calloc(1, HLL_DENSE_SIZE);
	memcpy(dense, h->p, HLL_HDR_SIZE); /* magic, padding and cached value, as Redis copies them */
	dense[4] = HLL_DENSE;
	uint8_t *regs = dense + HLL_HDR_SIZE;
	const uint8_t *p = h->p + HLL_HDR_SIZE, *end = h->p + h->len;
	unsigned idx = 0;
	while (p < end) {
		if (op_is_zero(p)) {
			idx += zero_len(p);
			p++;
		} else if (op_is_xzero(p)) {
			idx += xzero_len(p, end);
			p += 2;
		} else {
			unsigned run = val_len(p), val = val_value(p);
			if (idx + run > HLL_REGISTERS)
				break;
			while (run--)
				hll_dense_set(regs, idx++, val);
			p++;
		}
	}
	if (idx != HLL_REGISTERS) {
		zr_free(dense);
		return -EINVAL;
	}
	zr_free(h->p);
	h->p = dense;
	h->len = h->cap = HLL_DENSE_SIZE;
	return 0;
}

/* Writes the opcodes replacing the one at [first, last] (which covers
 * INDEX) with a run where INDEX holds COUNT; returns their byte count. */
static unsigned split_seq(uint8_t *seq, const uint8_t *op, bool is_val, unsigned first, unsigned last,
			  unsigned index, unsigned count)
{
	uint8_t *n = seq;
	if (!is_val) {
		if (index != first) {
			unsigned len = index - first;
			if (len > ZERO_MAX_LEN) {
				set_xzero(n, len);
				n += 2;
			} else {
				set_zero(n++, len);
			}
		}
		set_val(n++, count, 1);
		if (index != last) {
			unsigned len = last - index;
			if (len > ZERO_MAX_LEN) {
				set_xzero(n, len);
				n += 2;
			} else {
				set_zero(n++, len);
			}
		}
	} else {
		unsigned cur = val_value(op);
		if (index != first)
			set_val(n++, cur, index - first);
		set_val(n++, count, 1);
		if (index != last)
			set_val(n++, cur, last - index);
	}
	return (unsigned)(n - seq);
}

/* Merges equal neighbouring VAL opcodes, scanning at most five opcodes
 * from FROM — exactly Redis's bounded pass, so the bytes match. */
static void sparse_merge(struct hll *h, size_t from)
{
	uint8_t *p = h->p + from, *end = h->p + h->len;
	int scan = 5;
	while (p < end && scan--) {
		if (op_is_xzero(p)) {
			p += 2;
			continue;
		}
		if (op_is_zero(p)) {
			p++;
			continue;
		}
		if (p + 1 < end && op_is_val(p + 1) && val_value(p) == val_value(p + 1)) {
			unsigned len = val_len(p) + val_len(p + 1);
			if (len <= VAL_MAX_LEN) {
				set_val(p + 1, val_value(p), len);
				memmove(p, p + 1, (size_t)(end - p - 1));
				h->len--;
				end--;
				continue; /* try the merged opcode with its right neighbour */
			}
		}
		p++;
	}
}

/* hllSparseSet. */
static int sparse_set(struct hll *h, unsigned index, unsigned count, size_t sparse_max)
{
	if (count > HLL_SPARSE_VAL_MAX_VALUE)
		goto promote;
	reserve(h, h->len + 3); /* the worst split, XZERO -> XZERO VAL XZERO, adds 3 bytes */

	/* Step 1: find the opcode covering INDEX. */
	uint8_t *sparse = h->p + HLL_HDR_SIZE, *p = sparse, *end = h->p + h->len;
	uint8_t *prev = NULL;
	unsigned first = 0, span = 0;
	while (p < end) {
		unsigned oplen = 1;
		if (op_is_zero(p)) {
			span = zero_len(p);
		} else if (op_is_val(p)) {
			span = val_len(p);
		} else {
			span = xzero_len(p, end);
			oplen = 2;
		}
		if (index <= first + span - 1)
			break;
		prev = p;
		p += oplen;
		first += span;
	}
	if (span == 0 || p >= end)
		return -EINVAL;

	bool is_zero = op_is_zero(p), is_xzero = op_is_xzero(p), is_val = op_is_val(p);
	uint8_t *next = is_xzero ? p + 2 : p + 1;
	if (next >= end)
		next = NULL;
	unsigned runlen = is_zero ? zero_len(p) : is_xzero ? xzero_len(p, end) : val_len(p);

	/* Step 2: the trivial cases edit one opcode in place. */
	if (is_val) {
		if (val_value(p) >= count)
			return 0;
		if (runlen == 1) {
			set_val(p, count, 1);
			goto updated;
		}
	}
	if (is_zero && runlen == 1) {
		set_val(p, count, 1);
		goto updated;
	}

	/* Step 3: split the opcode, moving the tail if the sequence grew. */
	uint8_t seq[5];
	unsigned seqlen = split_seq(seq, p, is_val, first, first + span - 1, index, count);
	int oldlen = is_xzero ? 2 : 1;
	int delta = (int)seqlen - oldlen;
	if (delta > 0 && h->len + (size_t)delta > sparse_max)
		goto promote;
	if (delta && next)
		memmove(next + delta, next, (size_t)(end - next));
	h->len = (size_t)((long)h->len + delta);
	memcpy(p, seq, seqlen);

updated:
	sparse_merge(h, (size_t)((prev ? prev : sparse) - h->p));
	hll_cache_invalidate(h->p);
	return 1;

promote:
	if (hll_to_dense(h) < 0)
		return -EINVAL;
	/* Only a register that must rise gets here, so this is a change. */
	dense_raise(h->p + HLL_HDR_SIZE, index, count);
	return 1;
}

int hll_set(struct hll *h, unsigned index, unsigned count, size_t sparse_max)
{
	if (h->p[4] == HLL_DENSE)
		return dense_raise(h->p + HLL_HDR_SIZE, index, count);
	return sparse_set(h, index, count, sparse_max);
}

int hll_add(struct hll *h, const void *ele, size_t len, size_t sparse_max)
{
	unsigned index, count = hll_pattern(ele, len, &index);
	return hll_set(h, index, count, sparse_max);
}

/* --- merge and estimate ------------------------------------------------------------------- */

int hll_merge_max(uint8_t *max, const uint8_t *p, size_t len)
{
	if (p[4] == HLL_DENSE) {
		const uint8_t *regs = p + HLL_HDR_SIZE;
		for (unsigned i = 0; i < HLL_REGISTERS; i++) {
			unsigned v = hll_dense_get(regs, i);
			if (v > max[i])
				max[i] = (uint8_t)v;
		}
		return 0;
	}
	const uint8_t *q = p + HLL_HDR_SIZE, *end = p + len;
	unsigned i = 0;
	while (q < end) {
		if (op_is_zero(q)) {
			i += zero_len(q);
			q++;
		} else if (op_is_xzero(q)) {
			i += xzero_len(q, end);
			q += 2;
		} else {
			unsigned run = val_len(q), val = val_value(q);
			if (i + run > HLL_REGISTERS)
				break;
			for (; run; run--, i++)
				if (val > max[i])
					max[i] = (uint8_t)val;
			q++;
		}
	}
	return i == HLL_REGISTERS ? 0 : -EINVAL;
}

/* sigma(x) = x + sum_{k>=1} x^(2^k) 2^(k-1), summed until it stops changing
 * (Ertl, eq. for the small-range correction). */
static double hll_sigma(double x)
{
	if (x == 1.)
		return INFINITY;
	double y = 1, z = x, prev;
	do {
		x *= x;
		prev = z;
		z += x * y;
		y += y;
	} while (prev != z);
	return z;
}

/* tau(x) = (1 - x - sum_{k>=1} (1 - x^(2^-k))^2 2^-k) / 3 (the large-range
 * correction). */
static double hll_tau(double x)
{
	if (x == 0. || x == 1.)
		return 0.;
	double y = 1.0, z = 1 - x, prev;
	do {
		x = sqrt(x);
		prev = z;
		y *= 0.5;
		z -= pow(1 - x, 2) * y;
	} while (prev != z);
	return z / 3;
}

/* The estimate from the histogram of register values (HISTO[v] = number of
 * registers holding v). */
static uint64_t estimate(const unsigned *histo)
{
	double m = HLL_REGISTERS;
	double z = m * hll_tau((m - histo[HLL_Q + 1]) / m);
	for (int j = HLL_Q; j >= 1; j--) {
		z += histo[j];
		z *= 0.5;
	}
	z += m * hll_sigma(histo[0] / m);
	return (uint64_t)llround(HLL_ALPHA_INF * m * m / z);
}

int hll_count(const uint8_t *p, size_t len, uint64_t *card)
{
	unsigned histo[64] = { 0 };
	if (p[4] == HLL_DENSE) {
		const uint8_t *regs = p + HLL_HDR_SIZE;
		for (unsigned i = 0; i < HLL_REGISTERS; i++)
			histo[hll_dense_get(regs, i)]++;
	} else {
		const uint8_t *q = p + HLL_HDR_SIZE, *end = p + len;
		unsigned idx = 0;
		while (q < end) {
			unsigned run;
			if (op_is_zero(q)) {
				run = zero_len(q);
				histo[0] += run;
				q++;
			} else if (op_is_xzero(q)) {
				run = xzero_len(q, end);
				histo[0] += run;
				q += 2;
			} else {
				run = val_len(q);
				histo[val_value(q)] += run;
				q++;
			}
			idx += run;
		}
		if (idx != HLL_REGISTERS)
			return -EINVAL;
	}
	*card = estimate(histo);
	return 0;
}

uint64_t hll_count_registers(const uint8_t *regs)
{
	unsigned histo[64] = { 0 };
	for (unsigned i = 0; i < HLL_REGISTERS; i++)
		histo[regs[i] & 63]++;
	return estimate(histo);
}

size_t hll_sparse_decode(const uint8_t *p, size_t len, char *buf, size_t size)
{
	const uint8_t *q = p + HLL_HDR_SIZE, *end = p + len;
	size_t n = 0;
	buf[0] = '\0';
	while (q < end && n + 16 < size) {
		int w;
		if (op_is_zero(q)) {
			w = snprintf(buf + n, size - n, "z:%u ", zero_len(q));
			q++;
		} else if (op_is_xzero(q)) {
			w = snprintf(buf + n, size - n, "Z:%u ", xzero_len(q, end));
			q += 2;
		} else {
			w = snprintf(buf + n, size - n, "v:%u,%u ", val_value(q), val_len(q));
			q++;
		}
		n += (size_t)w;
	}
	while (n > 0 && buf[n - 1] == ' ') /* Redis trims the trailing space */
		n--;
	return n;
}
