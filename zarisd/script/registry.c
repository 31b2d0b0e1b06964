/* registry — script bodies by SHA1, server-wide (script.h), and the
 * shebang parser. One mutex guards the table; it is a leaf lock (nothing
 * else is taken while it is held). */
#include "zarisd/script/script.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "zarisd/core/mem.h"
#include "zarisd/core/thread.h"
#include "zarisd/script/script_int.h"

struct body {
	struct body *next;
	char sha[ZR_SHA1_HEX_LEN + 1];
	size_t len;
	char *text;
};

/* Invariant: nbuckets is a power of two; count <= 2 * nbuckets. */
static struct {
	pthread_mutex_t mu;
	struct body **buckets;
	size_t nbuckets;
	uint64_t count, bytes;
} reg = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* Read without the mutex by every engine before a script runs: acquire
 * pairs with the flush's release, so an engine that sees the new
 * generation also sees the emptied table. */
static _Atomic uint64_t generation = 1;

uint64_t script_registry_generation(void)
{
	return atomic_load_explicit(&generation, memory_order_acquire);
}

static void lower_sha(const char *sha, size_t len, char out[ZR_SHA1_HEX_LEN + 1])
{
	for (size_t i = 0; i < ZR_SHA1_HEX_LEN; i++)
		out[i] = i < len ? (char)tolower((unsigned char)sha[i]) : 0;
	out[ZR_SHA1_HEX_LEN] = '\0';
}

static size_t bucket_of(const char *sha, size_t nbuckets)
{
	uint64_t h = 1469598103934665603ull;
	for (int i = 0; i < 16; i++)
		h = (h ^ (unsigned char)sha[i]) * 1099511628211ull;
	return (size_t)(h & (nbuckets - 1));
}

/* The entry for (lower-case) SHA; reg.mu held. */
static struct body *find_locked(const char *sha)
{
	ZR_ASSERT_MUTEX_HELD(&reg.mu);
	if (!reg.nbuckets)
		return NULL;
	for (struct body *b = reg.buckets[bucket_of(sha, reg.nbuckets)]; b; b = b->next)
		if (!memcmp(b->sha, sha, ZR_SHA1_HEX_LEN))
			return b;
	return NULL;
}

static void grow_locked(void)
{
	ZR_ASSERT_MUTEX_HELD(&reg.mu);
	size_t n = reg.nbuckets ? reg.nbuckets * 2 : 64;
	struct body **nb = zr_calloc(n, sizeof(*nb));
	for (size_t i = 0; i < reg.nbuckets; i++) {
		for (struct body *b = reg.buckets[i], *next; b; b = next) {
			next = b->next;
			size_t k = bucket_of(b->sha, n);
			b->next = nb[k];
			nb[k] = b;
		}
	}
	zr_free(reg.buckets);
	reg.buckets = nb;
	reg.nbuckets = n;
}

void script_registry_add(const char *body, size_t len, char sha[ZR_SHA1_HEX_LEN + 1])
{
	zr_sha1_hex(body, len, sha);
	pthread_mutex_lock(&reg.mu);
	if (!find_locked(sha)) {
		if (reg.count >= 2 * reg.nbuckets)
			grow_locked();
		struct body *b = zr_malloc(sizeof(*b));
		memcpy(b->sha, sha, sizeof(b->sha));
		b->len = len;
		b->text = zr_malloc(len + 1);
		memcpy(b->text, body, len);
		b->text[len] = '\0';
		size_t k = bucket_of(sha, reg.nbuckets);
		b->next = reg.buckets[k];
		reg.buckets[k] = b;
		reg.count++;
		reg.bytes += len;
	}
	pthread_mutex_unlock(&reg.mu);
}

bool script_registry_exists(const char *sha, size_t len)
{
	if (len != ZR_SHA1_HEX_LEN)
		return false;
	char low[ZR_SHA1_HEX_LEN + 1];
	lower_sha(sha, len, low);
	pthread_mutex_lock(&reg.mu);
	bool found = find_locked(low) != NULL;
	pthread_mutex_unlock(&reg.mu);
	return found;
}

char *script_registry_get(const char *sha, size_t len, size_t *blen)
{
	if (len != ZR_SHA1_HEX_LEN)
		return NULL;
	char low[ZR_SHA1_HEX_LEN + 1];
	lower_sha(sha, len, low);
	char *copy = NULL;
	pthread_mutex_lock(&reg.mu);
	struct body *b = find_locked(low);
	if (b) {
		copy = zr_malloc(b->len + 1);
		memcpy(copy, b->text, b->len + 1);
		*blen = b->len;
	}
	pthread_mutex_unlock(&reg.mu);
	return copy;
}

static void free_all_locked(void)
{
	ZR_ASSERT_MUTEX_HELD(&reg.mu);
	for (size_t i = 0; i < reg.nbuckets; i++) {
		for (struct body *b = reg.buckets[i], *next; b; b = next) {
			next = b->next;
			zr_free(b->text);
			zr_free(b);
		}
		reg.buckets[i] = NULL;
	}
	reg.count = reg.bytes = 0;
}

void script_registry_flush(void)
{
	pthread_mutex_lock(&reg.mu);
	free_all_locked();
	atomic_fetch_add_explicit(&generation, 1, memory_order_release);
	pthread_mutex_unlock(&reg.mu);
}

void script_registry_stats(uint64_t *count, uint64_t *bytes)
{
	pthread_mutex_lock(&reg.mu);
	*count = reg.count;
	*bytes = reg.bytes;
	pthread_mutex_unlock(&reg.mu);
}

void script_registry_free(void)
{
	pthread_mutex_lock(&reg.mu);
	free_all_locked();
	ZR_FREE(reg.buckets);
	reg.nbuckets = 0;
	pthread_mutex_unlock(&reg.mu);
}

/* relaxed: a statistic, ordered with nothing */
static _Atomic uint64_t all_locked_runs;

void script_count_all_locked(void)
{
	atomic_fetch_add_explicit(&all_locked_runs, 1, memory_order_relaxed);
}

uint64_t script_all_locked_runs(void)
{
	return atomic_load_explicit(&all_locked_runs, memory_order_relaxed);
}

/* --- shebang ------------------------------------------------------------- */

const struct script_flag_name script_flag_names[SCRIPT_FLAG_NAMES] = {
	{ "no-writes", SCRIPT_FLAG_NO_WRITES },
	{ "allow-oom", SCRIPT_FLAG_ALLOW_OOM },
	{ "allow-stale", SCRIPT_FLAG_ALLOW_STALE },
	{ "no-cluster", SCRIPT_FLAG_NO_CLUSTER },
	{ "allow-cross-slot-keys", SCRIPT_FLAG_ALLOW_CROSS_SLOT },
	{ "allow-undeclared-keys", SCRIPT_FLAG_ALLOW_UNDECLARED },
};

/* Checks one "flags=a,b" value of LEN bytes at P. */
static int parse_flag_list(const char *p, size_t len, uint32_t *flags, char *err, size_t errsize)
{
	size_t i = 0;
	/* Redis splits with sdssplitlen: "flags=" alone is one empty flag */
	for (;;) {
		size_t j = i;
		while (j < len && p[j] != ',')
			j++;
		bool known = false;
		for (size_t f = 0; f < SCRIPT_FLAG_NAMES; f++) {
			if (strlen(script_flag_names[f].name) == j - i &&
			    !memcmp(script_flag_names[f].name, p + i, j - i)) {
				*flags |= script_flag_names[f].flag;
				known = true;
			}
		}
		if (!known && len > 0) {
			snprintf(err, errsize, "Unexpected flag in script shebang: %.*s", (int)(j - i),
				 p + i);
			return -EINVAL;
		}
		if (j >= len)
			return 0;
		i = j + 1;
	}
}

int script_parse_shebang(const char *body, size_t len, uint32_t *flags, size_t *skip, char *err,
			 size_t errsize)
{
	*flags = SCRIPT_FLAG_COMPAT;
	*skip = 0;
	if (len < 2 || body[0] != '#' || body[1] != '!')
		return 0;
	const char *nl = memchr(body, '\n', len);
	if (!nl) {
		snprintf(err, errsize, "Invalid script shebang");
		return -EINVAL;
	}
	size_t line = (size_t)(nl - body);
	/* the line's words, split on spaces as sdssplitargs does for plain words */
	size_t i = 0, word = 0;
	*flags = 0;
	while (i < line) {
		while (i < line && isspace((unsigned char)body[i]))
			i++;
		if (i >= line)
			break;
		size_t j = i;
		while (j < line && !isspace((unsigned char)body[j]))
			j++;
		const char *w = body + i;
		size_t wl = j - i;
		if (word == 0) {
			if (wl != 5 || memcmp(w, "#!lua", 5)) {
				snprintf(err, errsize, "Unexpected engine in script shebang: %.*s", (int)wl,
					 w);
				return -EINVAL;
			}
		} else if (wl >= 6 && !memcmp(w, "flags=", 6)) {
			int r = parse_flag_list(w + 6, wl - 6, flags, err, errsize);
			if (r < 0)
				return r;
		} else {
			snprintf(err, errsize, "Unknown lua shebang option: %.*s", (int)wl, w);
			return -EINVAL;
		}
		word++;
		i = j;
	}
	*skip = line;
	return 0;
}
