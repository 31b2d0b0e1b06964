/* tpl — the requests zaris-bench sends, compiled once from text templates.
 *
 * A template is a command line such as "SET __key__ __data__": words split
 * on blanks (double quotes group a word). __key__ anywhere in a word
 * becomes the key name — the prefix plus TPL_KEY_DIGITS zero-padded
 * decimal digits, so every key has the same length — and __data__ becomes
 * value_size bytes of payload. A template compiles to its RESP bytes with
 * the key digits left as zeros; sending a request is one memcpy plus
 * writing the digits at known offsets (no formatting, no allocation).
 *
 * A mix is a set of templates with integer weights, issued in a fixed
 * smooth round-robin order (1:1 gives S G S G ..., 1:3 gives G G S G ...),
 * so the ratio holds exactly over every cycle. Compiled mixes are
 * read-only and shared by all threads.
 */
#ifndef ZB_TPL_H
#define ZB_TPL_H

#include <stddef.h>
#include <stdint.h>

#define TPL_KEY_DIGITS 12
#define TPL_MAX_KEYS 8 /* __key__ occurrences per template */
#define TPL_MAX_WORDS 64
#define TPL_MAX 16	   /* templates per mix */
#define TPL_MAX_CYCLE 4096 /* sum of weights */

struct tpl {
	char *buf;		      /* RESP request, key digits zeroed */
	size_t len;		      /* bytes in buf */
	unsigned nkeys;		      /* key digit runs in buf */
	size_t key_off[TPL_MAX_KEYS]; /* offset of each run's first digit */
	size_t arg_off, arg_len;      /* the argument holding the first key run
				       * (what decides a cluster slot) */
	unsigned weight;	      /* share of the mix, >= 1 */
	char name[24];		      /* first word, for reports */
};

struct tpl_mix {
	struct tpl t[TPL_MAX];
	unsigned n;		      /* templates in t */
	unsigned cycle;		      /* sum of weights */
	uint8_t order[TPL_MAX_CYCLE]; /* template index per cycle slot */
	size_t max_len;		      /* longest template's len */
};

/* Compiles TEXTS[0..N) with WEIGHTS (NULL = all 1; a 0 weight drops the
 * template) into MIX. Keys are KEY_PREFIX + digits; __data__ is VALUE_SIZE
 * bytes of 'x'. Returns 0, or -EINVAL with a message in ERR (ERRLEN bytes).
 * MIX owns its buffers until tpl_mix_free(). */
int tpl_mix_init(struct tpl_mix *mix, const char *const *texts, const unsigned *weights, unsigned n,
		 const char *key_prefix, size_t value_size, char *err, size_t errlen);
void tpl_mix_free(struct tpl_mix *mix);

/* Writes T's request for key index KEY (< 10^TPL_KEY_DIGITS) at DST, which
 * must hold T->len bytes; returns T->len. */
static inline size_t tpl_render(const struct tpl *t, char *dst, uint64_t key)
{
	char digits[TPL_KEY_DIGITS];
	unsigned i;
	int d;

	__builtin_memcpy(dst, t->buf, t->len);
	if (t->nkeys == 0)
		return t->len;
	for (d = TPL_KEY_DIGITS - 1; d >= 0; d--) {
		digits[d] = (char)('0' + key % 10);
		key /= 10;
	}
	for (i = 0; i < t->nkeys; i++)
		__builtin_memcpy(dst + t->key_off[i], digits, TPL_KEY_DIGITS);
	return t->len;
}

/* The bytes of T's first key argument for key index KEY, written at DST
 * (T->arg_len bytes): what a cluster client hashes to route the request.
 * T must have a key (nkeys > 0). */
static inline void tpl_key_arg(const struct tpl *t, char *dst, uint64_t key)
{
	char digits[TPL_KEY_DIGITS];
	unsigned i;
	int d;

	__builtin_memcpy(dst, t->buf + t->arg_off, t->arg_len);
	for (d = TPL_KEY_DIGITS - 1; d >= 0; d--) {
		digits[d] = (char)('0' + key % 10);
		key /= 10;
	}
	for (i = 0; i < t->nkeys; i++)
		if (t->key_off[i] >= t->arg_off && t->key_off[i] < t->arg_off + t->arg_len)
			__builtin_memcpy(dst + t->key_off[i] - t->arg_off, digits, TPL_KEY_DIGITS);
}

#endif
