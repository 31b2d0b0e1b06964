/* keygen — which key index the next request uses.
 *
 * Three distributions over [0, keyspace): uniform random, sequential
 * (each generator walks its own slice [lo, hi) in order and wraps — the
 * prefill uses one slice per thread so every key is written exactly once),
 * and Zipf (rank 1 = key 0 is the hottest) drawn by rejection-inversion,
 * which needs no table and costs O(1) per draw at any keyspace size.
 * One generator per thread; no shared state.
 */
#ifndef ZB_KEYGEN_H
#define ZB_KEYGEN_H

#include <stdint.h>

enum keygen_dist {
	KEYGEN_UNIFORM,
	KEYGEN_SEQ,
	KEYGEN_ZIPF,
};

struct keygen {
	enum keygen_dist dist;
	uint64_t n;	 /* keyspace size, >= 1 */
	uint64_t rng;	 /* splitmix64 state */
	uint64_t lo, hi; /* KEYGEN_SEQ: this generator's slice, lo < hi <= n */
	uint64_t next;	 /* KEYGEN_SEQ: next index, in [lo, hi) */
	/* KEYGEN_ZIPF constants (see keygen.c) */
	double s, h_x1, h_n, s_const;
};

/* Parses "uniform", "seq"/"sequential", "zipf"; -EINVAL otherwise. */
int keygen_parse_dist(const char *name);
/* Name of DIST for reports. */
const char *keygen_dist_name(enum keygen_dist dist);

/* Sets K up. N is the keyspace; [LO, HI) the slice for KEYGEN_SEQ (ignored
 * otherwise); ZIPF_S the exponent (> 0) for KEYGEN_ZIPF; SEED makes random
 * draws reproducible. Returns 0 or -EINVAL. */
int keygen_init(struct keygen *k, enum keygen_dist dist, uint64_t n, uint64_t lo, uint64_t hi, double zipf_s,
		uint64_t seed);

/* A 64-bit pseudo-random number (splitmix64: fast and good enough here). */
static inline uint64_t keygen_rand(struct keygen *k)
{
	uint64_t z = (k->rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

uint64_t keygen_zipf(struct keygen *k);

/* The next key index, in [0, n). */
static inline uint64_t keygen_next(struct keygen *k)
{
	uint64_t v;

	switch (k->dist) {
	case KEYGEN_SEQ:
		v = k->next++;
		if (k->next == k->hi)
			k->next = k->lo;
		return v;
	case KEYGEN_ZIPF:
		return keygen_zipf(k);
	case KEYGEN_UNIFORM:
	default:
		/* Lemire's multiply-shift: no division, bias below 2^-40 here. */
		return (uint64_t)(((unsigned __int128)keygen_rand(k) * k->n) >> 64);
	}
}

#endif
