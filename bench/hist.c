/* hist — see hist.h. Percentiles walk the bucket array once; nothing here
 * is on the load generator's hot path except the inline hist_record(). */
#include "bench/hist.h"

#include <string.h>

void hist_init(struct hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

void hist_merge(struct hist *dst, const struct hist *src)
{
	unsigned i;

	for (i = 0; i < HIST_BUCKETS; i++)
		dst->b[i] += src->b[i];
	dst->count += src->count;
	dst->sum += src->sum;
	if (src->max > dst->max)
		dst->max = src->max;
	if (src->min < dst->min)
		dst->min = src->min;
}

uint64_t hist_bucket_high(unsigned idx)
{
	unsigned octave, shift;
	uint64_t low;

	if (idx < 2 * HIST_SUB)
		return idx;
	octave = idx / HIST_SUB; /* >= 2 */
	shift = octave - 1;
	low = (uint64_t)(HIST_SUB + idx % HIST_SUB) << shift;
	return low + ((uint64_t)1 << shift) - 1;
}

uint64_t hist_percentile(const struct hist *h, double p)
{
	uint64_t want, seen = 0, v;
	unsigned i;

	if (h->count == 0)
		return 0;
	if (p <= 0)
		return h->min;
	if (p >= 100)
		return h->max;
	/* The rank of the P-th value, rounded up so p99 of 100 values is the
	 * 99th, never the 98th. */
	want = (uint64_t)((p / 100.0) * (double)h->count + 0.999999);
	if (want < 1)
		want = 1;
	for (i = 0; i < HIST_BUCKETS; i++) {
		seen += h->b[i];
		if (seen >= want)
			break;
	}
	v = hist_bucket_high(i < HIST_BUCKETS ? i : HIST_BUCKETS - 1);
	return v < h->max ? v : h->max;
}

double hist_mean(const struct hist *h)
{
	return h->count ? (double)h->sum / (double)h->count : 0.0;
}
