/* tpl — see tpl.h. Compilation runs once at start-up; only tpl_render()
 * (inline in the header) runs per request. */
#include "bench/tpl.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_MARK "__key__"
#define DATA_MARK "__data__"

struct word {
	const char *p;
	size_t len;
};

/* Splits TEXT into words; double quotes group blanks into one word.
 * Returns the count or -EINVAL. */
static int split_words(const char *text, struct word *w, int max)
{
	const char *p = text;
	int n = 0;

	for (;;) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '\0')
			return n;
		if (n == max)
			return -EINVAL;
		if (*p == '"') {
			const char *end = strchr(p + 1, '"');

			if (!end)
				return -EINVAL;
			w[n].p = p + 1;
			w[n].len = (size_t)(end - p - 1);
			p = end + 1;
		} else {
			w[n].p = p;
			while (*p && *p != ' ' && *p != '\t')
				p++;
			w[n].len = (size_t)(p - w[n].p);
		}
		n++;
	}
}

/* Expands the placeholders of word W into OUT (NULL = only measure).
 * Records key digit offsets relative to OUT_BASE into T when OUT is set.
 * Returns the expanded length, or -EINVAL past TPL_MAX_KEYS keys. */
static long expand_word(struct tpl *t, const struct word *w, char *out, const char *out_base,
			const char *prefix, size_t value_size)
{
	size_t plen = strlen(prefix), klen = sizeof(KEY_MARK) - 1, dlen = sizeof(DATA_MARK) - 1;
	size_t i = 0, n = 0;

	while (i < w->len) {
		if (w->len - i >= klen && memcmp(w->p + i, KEY_MARK, klen) == 0) {
			if (out) {
				if (t->nkeys == TPL_MAX_KEYS)
					return -EINVAL;
				memcpy(out + n, prefix, plen);
				memset(out + n + plen, '0', TPL_KEY_DIGITS);
				t->key_off[t->nkeys++] = (size_t)(out + n + plen - out_base);
			}
			n += plen + TPL_KEY_DIGITS;
			i += klen;
		} else if (w->len - i >= dlen && memcmp(w->p + i, DATA_MARK, dlen) == 0) {
			if (out)
				memset(out + n, 'x', value_size);
			n += value_size;
			i += dlen;
		} else {
			if (out)
				out[n] = w->p[i];
			n++;
			i++;
		}
	}
	return (long)n;
}

/* Compiles one template TEXT into T. */
static int tpl_compile(struct tpl *t, const char *text, const char *prefix, size_t value_size, char *err,
		       size_t errlen)
{
	struct word w[TPL_MAX_WORDS];
	long wlen[TPL_MAX_WORDS];
	size_t total;
	char *p;
	int n, i;

	memset(t, 0, sizeof(*t));
	n = split_words(text, w, TPL_MAX_WORDS);
	if (n <= 0) {
		snprintf(err, errlen, "bad command template '%s' (empty, unbalanced quote or over %d words)",
			 text, TPL_MAX_WORDS);
		return -EINVAL;
	}
	total = (size_t)snprintf(NULL, 0, "*%d\r\n", n);
	for (i = 0; i < n; i++) {
		wlen[i] = expand_word(t, &w[i], NULL, NULL, prefix, value_size);
		total += (size_t)snprintf(NULL, 0, "$%ld\r\n", wlen[i]) + (size_t)wlen[i] + 2;
	}
	t->buf = malloc(total + 1);
	if (!t->buf) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	p = t->buf + sprintf(t->buf, "*%d\r\n", n);
	for (i = 0; i < n; i++) {
		unsigned keys_before = t->nkeys;

		p += sprintf(p, "$%ld\r\n", wlen[i]);
		if (keys_before == 0) {
			t->arg_off = (size_t)(p - t->buf);
			t->arg_len = (size_t)wlen[i];
		}
		if (expand_word(t, &w[i], p, t->buf, prefix, value_size) < 0) {
			snprintf(err, errlen, "template '%s' has more than %d __key__", text, TPL_MAX_KEYS);
			free(t->buf);
			t->buf = NULL;
			return -EINVAL;
		}
		p += wlen[i];
		*p++ = '\r';
		*p++ = '\n';
	}
	t->len = (size_t)(p - t->buf);
	snprintf(t->name, sizeof(t->name), "%.*s", (int)(w[0].len < 23 ? w[0].len : 23), w[0].p);
	return 0;
}

int tpl_mix_init(struct tpl_mix *mix, const char *const *texts, const unsigned *weights, unsigned n,
		 const char *key_prefix, size_t value_size, char *err, size_t errlen)
{
	long cur[TPL_MAX] = { 0 };
	unsigned i, slot;
	int rc;

	memset(mix, 0, sizeof(*mix));
	if (n == 0 || n > TPL_MAX) {
		snprintf(err, errlen, "need 1..%d command templates", TPL_MAX);
		return -EINVAL;
	}
	for (i = 0; i < n; i++) {
		unsigned wgt = weights ? weights[i] : 1;

		if (wgt == 0)
			continue;
		rc = tpl_compile(&mix->t[mix->n], texts[i], key_prefix, value_size, err, errlen);
		if (rc < 0)
			goto out_free;
		mix->t[mix->n].weight = wgt;
		mix->cycle += wgt;
		if (mix->t[mix->n].len > mix->max_len)
			mix->max_len = mix->t[mix->n].len;
		mix->n++;
	}
	if (mix->n == 0 || mix->cycle > TPL_MAX_CYCLE) {
		snprintf(err, errlen, "weights must sum to 1..%d", TPL_MAX_CYCLE);
		rc = -EINVAL;
		goto out_free;
	}
	/* Smooth weighted round-robin: each slot, every template gains its
	 * weight, the richest is picked and pays the whole cycle. */
	for (slot = 0; slot < mix->cycle; slot++) {
		unsigned best = 0;

		for (i = 0; i < mix->n; i++) {
			cur[i] += mix->t[i].weight;
			if (cur[i] > cur[best])
				best = i;
		}
		cur[best] -= mix->cycle;
		mix->order[slot] = (uint8_t)best;
	}
	return 0;

out_free:
	tpl_mix_free(mix);
	return rc;
}

void tpl_mix_free(struct tpl_mix *mix)
{
	unsigned i;

	for (i = 0; i < TPL_MAX; i++) {
		free(mix->t[i].buf);
		mix->t[i].buf = NULL;
	}
	mix->n = 0;
}
