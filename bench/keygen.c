/* keygen — see keygen.h.
 *
 * Zipf by rejection-inversion (W. Hörmann and G. Derflinger, "Rejection-
 * inversion to generate variates from monotone discrete distributions",
 * 1996): draw from the continuous hat function H(x) = integral of x^-s,
 * round to the nearest integer k, and accept k when it falls under the
 * histogram of the true probabilities. The acceptance rate is high for
 * every s > 0, so a draw costs a handful of exp/log calls.
 */
#include "bench/keygen.h"

#include <errno.h>
#include <math.h>
#include <string.h>

int keygen_parse_dist(const char *name)
{
	if (strcmp(name, "uniform") == 0 || strcmp(name, "random") == 0)
		return KEYGEN_UNIFORM;
	if (strcmp(name, "seq") == 0 || strcmp(name, "sequential") == 0)
		return KEYGEN_SEQ;
	if (strcmp(name, "zipf") == 0)
		return KEYGEN_ZIPF;
	return -EINVAL;
}

const char *keygen_dist_name(enum keygen_dist dist)
{
	switch (dist) {
	case KEYGEN_SEQ:
		return "seq";
	case KEYGEN_ZIPF:
		return "zipf";
	case KEYGEN_UNIFORM:
	default:
		return "uniform";
	}
}

/* log1p(x)/x, continuous at 0 (series below 1e-8 where the quotient
 * loses all precision). */
static double log1p_over_x(double x)
{
	if (fabs(x) > 1e-8)
		return log1p(x) / x;
	return 1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x));
}

/* expm1(x)/x, continuous at 0. */
static double expm1_over_x(double x)
{
	if (fabs(x) > 1e-8)
		return expm1(x) / x;
	return 1.0 + x * 0.5 * (1.0 + x * (1.0 / 3.0) * (1.0 + 0.25 * x));
}

/* H(x) = (x^(1-s) - 1) / (1-s), which tends to log(x) as s -> 1. */
static double zipf_h_int(const struct keygen *k, double x)
{
	double lx = log(x);

	return expm1_over_x((1.0 - k->s) * lx) * lx;
}

/* h(x) = x^-s, the hat's density. */
static double zipf_h(const struct keygen *k, double x)
{
	return exp(-k->s * log(x));
}

/* The inverse of H. */
static double zipf_h_int_inv(const struct keygen *k, double x)
{
	double t = x * (1.0 - k->s);

	if (t < -1.0)
		t = -1.0; /* rounding at the left end; H's range stops there */
	return exp(log1p_over_x(t) * x);
}

int keygen_init(struct keygen *k, enum keygen_dist dist, uint64_t n, uint64_t lo, uint64_t hi, double zipf_s,
		uint64_t seed)
{
	memset(k, 0, sizeof(*k));
	if (n == 0)
		return -EINVAL;
	k->dist = dist;
	k->n = n;
	k->rng = seed;
	if (dist == KEYGEN_SEQ) {
		if (lo >= hi || hi > n)
			return -EINVAL;
		k->lo = lo;
		k->hi = hi;
		k->next = lo;
	}
	if (dist == KEYGEN_ZIPF) {
		if (!(zipf_s > 0))
			return -EINVAL;
		k->s = zipf_s;
		k->h_x1 = zipf_h_int(k, 1.5) - 1.0;
		k->h_n = zipf_h_int(k, (double)n + 0.5);
		k->s_const = 2.0 - zipf_h_int_inv(k, zipf_h_int(k, 2.5) - zipf_h(k, 2.0));
	}
	return 0;
}

uint64_t keygen_zipf(struct keygen *k)
{
	for (;;) {
		/* A uniform double in [0, 1) from the top 53 bits. */
		double u01 = (double)(keygen_rand(k) >> 11) * 0x1.0p-53;
		double u = k->h_n + u01 * (k->h_x1 - k->h_n);
		double x = zipf_h_int_inv(k, u);
		double kd = floor(x + 0.5);

		if (kd < 1.0)
			kd = 1.0;
		else if (kd > (double)k->n)
			kd = (double)k->n;
		/* Accept at once when k is close to x (the squeeze), else
		 * compare against the exact bar of rank k. */
		if (kd - x <= k->s_const || u >= zipf_h_int(k, kd + 0.5) - zipf_h(k, kd))
			return (uint64_t)kd - 1;
	}
}
