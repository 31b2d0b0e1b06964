/* hist — a log-linear latency histogram in the manner of HdrHistogram.
 *
 * Values (nanoseconds here) below 2^HIST_SUB_BITS are counted exactly;
 * above that, each power of two is split into 2^HIST_SUB_BITS linear
 * sub-buckets, so any recorded value is known to within 1/128 (0.8 %) of
 * itself whatever its magnitude, in a fixed array with no allocation.
 * A histogram belongs to one thread while it records; hist_merge() adds
 * finished ones together. Nothing here locks.
 */
#ifndef ZB_HIST_H
#define ZB_HIST_H

#include <stdint.h>

#define HIST_SUB_BITS 7
#define HIST_SUB (1u << HIST_SUB_BITS)
/* Largest power of two kept apart: 2^42 ns is 73 minutes; longer values
 * land in the last bucket (max still records them exactly). */
#define HIST_MAX_MSB 42
#define HIST_BUCKETS ((HIST_MAX_MSB - HIST_SUB_BITS + 2) * HIST_SUB)

struct hist {
	uint64_t count;		  /* values recorded */
	uint64_t min;		  /* smallest value (UINT64_MAX when empty) */
	uint64_t max;		  /* largest value */
	uint64_t sum;		  /* for the mean; ns sums fit for years */
	uint64_t b[HIST_BUCKETS]; /* counts per bucket, see hist_index() */
};

/* Bucket of V: exact below 2*HIST_SUB, then (octave, top bits). */
static inline unsigned hist_index(uint64_t v)
{
	unsigned msb, idx;

	if (v < 2 * HIST_SUB)
		return (unsigned)v;
	msb = 63 - (unsigned)__builtin_clzll(v);
	if (msb > HIST_MAX_MSB)
		return HIST_BUCKETS - 1;
	/* The top HIST_SUB_BITS+1 bits of V lie in [HIST_SUB, 2*HIST_SUB). */
	idx = (msb - HIST_SUB_BITS + 1) * HIST_SUB + (unsigned)(v >> (msb - HIST_SUB_BITS)) - HIST_SUB;
	return idx;
}

/* Records one value. */
static inline void hist_record(struct hist *h, uint64_t v)
{
	h->b[hist_index(v)]++;
	h->count++;
	h->sum += v;
	if (v > h->max)
		h->max = v;
	if (v < h->min)
		h->min = v;
}

/* Empties H. */
void hist_init(struct hist *h);
/* Adds every count of SRC into DST. */
void hist_merge(struct hist *dst, const struct hist *src);
/* The value at percentile P (0..100): the highest value that falls in the
 * same bucket as the P-th recorded value (HdrHistogram's convention),
 * capped at max. 0 when empty. */
uint64_t hist_percentile(const struct hist *h, double p);
/* Arithmetic mean, 0 when empty. */
double hist_mean(const struct hist *h);
/* The highest value that maps to bucket IDX (exposed for the unit test). */
uint64_t hist_bucket_high(unsigned idx);

#endif
