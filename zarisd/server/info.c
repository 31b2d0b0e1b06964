/* info — see info.h. The per-worker counters (stats.h) have one writer
 * each; everything here reads them through their relaxed atomics.
 */
#include "zarisd/server/info.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "zarisd/core/log.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/thread.h"
#include "zarisd/core/util.h"
#include "zarisd/server/server.h"
#include "zarisd/server/stats.h"
#include "zarisd/server/textbuf.h"
#include "zarisd/store/store.h"

/* --- per-worker counters by index -------------------------------------------- */

const char *const info_stat_name[INFO_STAT_COUNT] = {
#define STAT_NAME(name) #name,
	WORKER_STATS_FIELDS(STAT_NAME)
#undef STAT_NAME
};

static const size_t stat_field_off[INFO_STAT_COUNT] = {
#define STAT_OFF(name) offsetof(struct worker_stats, name),
	WORKER_STATS_FIELDS(STAT_OFF)
#undef STAT_OFF
};

static uint64_t stat_read(const struct worker_stats *ws, int f)
{
	return atomic_load_explicit((_Atomic uint64_t *)((char *)ws + stat_field_off[f]),
				    memory_order_relaxed);
}

/* The replayed commands' errors (info_count_replayed_error), any thread:
 * added to the workers' sums; RESETSTAT zeroes them. */
static _Atomic uint64_t replayed_total, replayed_unexpected;

/* --- RESETSTAT baselines -------------------------------------------------------- */

static pthread_mutex_t base_lock = PTHREAD_MUTEX_INITIALIZER; /* guards the two arrays below */
static uint64_t *base_fields;		  /* [nworkers * INFO_STAT_COUNT], NULL = never reset */
static struct info_cmd_counts *base_cmds; /* [base_ncmds], summed over workers */
static unsigned base_ncmds;

/* Worker W's counter F minus its baseline (gauges are never rebased). */
void info_worker_counters(struct server *srv, unsigned w, uint64_t out[INFO_STAT_COUNT])
{
	for (int f = 0; f < INFO_STAT_COUNT; f++)
		out[f] = stat_read(srv->wstats[w], f);
	pthread_mutex_lock(&base_lock);
	if (base_fields)
		for (int f = 0; f < INFO_STAT_COUNT; f++)
			if (f != INFO_STAT_connected_clients) {
				uint64_t b = base_fields[w * INFO_STAT_COUNT + f];
				out[f] = out[f] > b ? out[f] - b : 0;
			}
	pthread_mutex_unlock(&base_lock);
}

void info_total_counters(struct server *srv, uint64_t out[INFO_STAT_COUNT])
{
	memset(out, 0, sizeof(uint64_t) * INFO_STAT_COUNT);
	for (unsigned w = 0; w < srv->nworkers; w++) {
		uint64_t one[INFO_STAT_COUNT];
		info_worker_counters(srv, w, one);
		for (int f = 0; f < INFO_STAT_COUNT; f++)
			out[f] += one[f];
	}
	out[INFO_STAT_errorstat_total] += atomic_load_explicit(&replayed_total, memory_order_relaxed);
	out[INFO_STAT_unexpected_error_replies] +=
		atomic_load_explicit(&replayed_unexpected, memory_order_relaxed);
}

static void cmd_counters_raw(struct server *srv, unsigned id, struct info_cmd_counts *out)
{
	memset(out, 0, sizeof(*out));
	for (unsigned w = 0; w < srv->nworkers; w++) {
		const struct cmd_stat *cs = srv->wstats[w]->cmd ? &srv->wstats[w]->cmd[id] : NULL;
		if (!cs)
			continue;
		out->calls += atomic_load_explicit(&cs->calls, memory_order_relaxed);
		out->usec += atomic_load_explicit(&cs->usec, memory_order_relaxed);
		out->rejected_calls += atomic_load_explicit(&cs->rejected_calls, memory_order_relaxed);
		out->failed_calls += atomic_load_explicit(&cs->failed_calls, memory_order_relaxed);
	}
}

static uint64_t sub0(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

void info_cmd_counters(struct server *srv, unsigned id, struct info_cmd_counts *out)
{
	cmd_counters_raw(srv, id, out);
	pthread_mutex_lock(&base_lock);
	if (base_cmds && id < base_ncmds) {
		out->calls = sub0(out->calls, base_cmds[id].calls);
		out->usec = sub0(out->usec, base_cmds[id].usec);
		out->rejected_calls = sub0(out->rejected_calls, base_cmds[id].rejected_calls);
		out->failed_calls = sub0(out->failed_calls, base_cmds[id].failed_calls);
	}
	pthread_mutex_unlock(&base_lock);
}

/* --- error codes ----------------------------------------------------------------- */

#define ERRORSTAT_MAX 128     /* distinct codes between two RESETSTATs (Redis 7.4's) */
#define ERRORSTAT_CODE_MAX 32 /* reply_error_code's codes are at most 30 bytes */

struct errorstat {
	char code[ERRORSTAT_CODE_MAX];
	uint8_t len;
	uint64_t count;
};

/* One worker's counts (or the replayed commands'). Invariant: each code is
 * in the registry (entries are added under registry_lock, which RESETSTAT
 * holds while it empties both). */
struct info_errtable {
	pthread_mutex_t lock; /* the counting thread against INFO and RESETSTAT */
	int n;
	struct errorstat e[ERRORSTAT_MAX];
};

/* The registry. Lock order: registry_lock before any table's lock. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct errorstat registry[ERRORSTAT_MAX]; /* count unused */
static int registry_n;
/* Set (under registry_lock) by the 129th code, cleared by RESETSTAT. Read
 * without the lock by the counting path first, relaxed: a worker that
 * reads it stale takes the lock and reads it again there. */
static _Atomic bool errorstats_disabled;

/* The errors of replayed commands (info_count_replayed_error): any
 * thread adds, under registry_lock and its own lock (the code paths that
 * read every table take both in that order). */
static struct info_errtable replayed = { .lock = PTHREAD_MUTEX_INITIALIZER };

struct info_errtable *info_errtable_new(void)
{
	struct info_errtable *t = zr_calloc(1, sizeof(*t));
	pthread_mutex_init(&t->lock, NULL);
	return t;
}

void info_errtable_free(struct info_errtable *t)
{
	if (!t)
		return;
	pthread_mutex_destroy(&t->lock);
	zr_free(t);
}

static int errorstat_find(const struct errorstat *e, int n, const char *code, size_t len)
{
	for (int i = 0; i < n; i++)
		if (e[i].len == len && !memcmp(e[i].code, code, len))
			return i;
	return -1;
}

/* Logs the registry's codes and disables the section (Redis's
 * incrementErrorCount at its limit). registry_lock held. */
static void disable_locked(void)
{
	ZR_ASSERT_MUTEX_HELD(&registry_lock);
	char list[ERRORSTAT_MAX * (ERRORSTAT_CODE_MAX + 2)];
	size_t used = 0;
	for (int i = 0; i < registry_n; i++) {
		memcpy(list + used, registry[i].code, registry[i].len);
		used += registry[i].len;
		if (i + 1 < registry_n) {
			memcpy(list + used, ", ", 2);
			used += 2;
		}
	}
	list[used] = '\0';
	zr_log(ZR_LOG_WARNING, "Errorstats stopped adding new errors because the number of errors reached "
			       "the limit, may be misuse of lua error_reply, please check INFO ERRORSTATS, "
			       "this can be re-enabled via CONFIG RESETSTAT.");
	zr_log(ZR_LOG_WARNING, "Current errors code list: %s", list);
	atomic_store_explicit(&errorstats_disabled, true, memory_order_relaxed);
}

/* Counts CODE in T, registering it first (or disabling the section when
 * it is one code too many). registry_lock held. */
static void count_locked(struct info_errtable *t, const char *code, size_t len)
{
	ZR_ASSERT_MUTEX_HELD(&registry_lock);
	if (atomic_load_explicit(&errorstats_disabled, memory_order_relaxed))
		return;
	if (errorstat_find(registry, registry_n, code, len) < 0) {
		if (registry_n == ERRORSTAT_MAX) {
			disable_locked();
			return;
		}
		memcpy(registry[registry_n].code, code, len);
		registry[registry_n++].len = (uint8_t)len;
	}
	pthread_mutex_lock(&t->lock);
	/* a worker's table: only its thread adds to it, but a RESETSTAT may
	 * have emptied it since it looked */
	int i = errorstat_find(t->e, t->n, code, len);
	if (i < 0) {
		i = t->n++;
		memcpy(t->e[i].code, code, len);
		t->e[i].len = (uint8_t)len;
		t->e[i].count = 0;
	}
	t->e[i].count++;
	pthread_mutex_unlock(&t->lock);
}

void info_count_error(struct worker_stats *ws, const char *code, size_t len)
{
	struct info_errtable *t = ws->errors;
	if (!t || atomic_load_explicit(&errorstats_disabled, memory_order_relaxed))
		return;
	if (len >= ERRORSTAT_CODE_MAX)
		len = ERRORSTAT_CODE_MAX - 1;
	pthread_mutex_lock(&t->lock);
	int i = errorstat_find(t->e, t->n, code, len);
	if (i >= 0)
		t->e[i].count++;
	pthread_mutex_unlock(&t->lock);
	if (i >= 0)
		return;
	/* new to this worker: the registry first (the lock order) */
	pthread_mutex_lock(&registry_lock);
	count_locked(t, code, len);
	pthread_mutex_unlock(&registry_lock);
}

void info_count_replayed_error(const char *code, size_t len)
{
	atomic_fetch_add_explicit(&replayed_total, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&replayed_unexpected, 1, memory_order_relaxed);
	if (len >= ERRORSTAT_CODE_MAX)
		len = ERRORSTAT_CODE_MAX - 1;
	pthread_mutex_lock(&registry_lock);
	count_locked(&replayed, code, len);
	pthread_mutex_unlock(&registry_lock);
}

/* Empties the registry and every table and enables the section. */
static void errorstats_reset(struct server *srv)
{
	pthread_mutex_lock(&registry_lock);
	registry_n = 0;
	for (unsigned w = 0; w < srv->nworkers; w++) {
		struct info_errtable *t = srv->wstats[w]->errors;
		if (!t)
			continue;
		pthread_mutex_lock(&t->lock);
		t->n = 0;
		pthread_mutex_unlock(&t->lock);
	}
	pthread_mutex_lock(&replayed.lock);
	replayed.n = 0;
	pthread_mutex_unlock(&replayed.lock);
	atomic_store_explicit(&replayed_total, 0, memory_order_relaxed);
	atomic_store_explicit(&replayed_unexpected, 0, memory_order_relaxed);
	atomic_store_explicit(&errorstats_disabled, false, memory_order_relaxed);
	pthread_mutex_unlock(&registry_lock);
}

/* rax order: byte-wise, a prefix first */
static int errorstat_cmp(const void *a, const void *b)
{
	const struct errorstat *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int r = memcmp(x->code, y->code, n);
	return r ? r : (int)x->len - (int)y->len;
}

void info_reset_stats(struct server *srv, unsigned ncmds)
{
	uint64_t *fields = zr_calloc((size_t)srv->nworkers * INFO_STAT_COUNT, sizeof(uint64_t));
	struct info_cmd_counts *cmds = zr_calloc(ncmds ? ncmds : 1, sizeof(*cmds));
	for (unsigned w = 0; w < srv->nworkers; w++)
		for (int f = 0; f < INFO_STAT_COUNT; f++)
			fields[w * INFO_STAT_COUNT + f] = stat_read(srv->wstats[w], f);
	for (unsigned id = 0; id < ncmds; id++)
		cmd_counters_raw(srv, id, &cmds[id]);
	pthread_mutex_lock(&base_lock);
	uint64_t *old_fields = base_fields;
	struct info_cmd_counts *old_cmds = base_cmds;
	base_fields = fields;
	base_cmds = cmds;
	base_ncmds = ncmds;
	pthread_mutex_unlock(&base_lock);
	zr_free(old_fields);
	zr_free(old_cmds);

	errorstats_reset(srv);
	store_reset_stats(srv->store);
	atomic_store_explicit(&srv->stat_reset_ms, (uint64_t)zr_time_ms(), memory_order_relaxed);
}

/* --- instantaneous rates ------------------------------------------------------------ */

#define RATE_SAMPLES 16
#define RATE_PERIOD_MS 100

/* One metric's recent per-second rates; written by the sampling thread only,
 * the average published through a relaxed atomic for INFO readers. */
struct rate {
	uint64_t last_value;
	uint64_t samples[RATE_SAMPLES];
	int idx;
	_Atomic uint64_t avg; /* per second */
};

struct sampler {
	int64_t last_ms;
	unsigned nworkers;
	struct rate total[INFO_RATE_COUNT];
	struct rate *per_worker; /* [nworkers], ops only */
};

/* Published once by the sampling thread (release) and read by INFO on any
 * worker (acquire), so the readers see the initialised structure. */
static _Atomic(struct sampler *) sampler;

static void rate_add(struct rate *r, uint64_t value, int64_t dt_ms)
{
	uint64_t delta = value >= r->last_value ? value - r->last_value : 0;
	r->last_value = value;
	r->samples[r->idx] = delta * 1000 / (uint64_t)dt_ms;
	r->idx = (r->idx + 1) % RATE_SAMPLES;
	uint64_t sum = 0;
	for (int i = 0; i < RATE_SAMPLES; i++)
		sum += r->samples[i];
	atomic_store_explicit(&r->avg, sum / RATE_SAMPLES, memory_order_relaxed);
}

void info_sample(struct server *srv)
{
	struct sampler *s = atomic_load_explicit(&sampler, memory_order_relaxed);
	int64_t now = zr_mono_us() / 1000;
	uint64_t ops = 0, in = 0, out = 0;
	for (unsigned w = 0; w < srv->nworkers; w++) {
		ops += stat_read(srv->wstats[w], INFO_STAT_commands_processed);
		in += stat_read(srv->wstats[w], INFO_STAT_net_input_bytes);
		out += stat_read(srv->wstats[w], INFO_STAT_net_output_bytes);
	}
	if (!s) {
		s = zr_calloc(1, sizeof(*s));
		s->nworkers = srv->nworkers;
		s->per_worker = zr_calloc(srv->nworkers ? srv->nworkers : 1, sizeof(*s->per_worker));
		s->last_ms = now;
		s->total[INFO_RATE_OPS].last_value = ops;
		s->total[INFO_RATE_NET_IN].last_value = in;
		s->total[INFO_RATE_NET_OUT].last_value = out;
		for (unsigned w = 0; w < s->nworkers; w++)
			s->per_worker[w].last_value = stat_read(srv->wstats[w], INFO_STAT_commands_processed);
		atomic_store_explicit(&sampler, s, memory_order_release);
		return;
	}
	int64_t dt = now - s->last_ms;
	if (dt < RATE_PERIOD_MS)
		return;
	s->last_ms = now;
	rate_add(&s->total[INFO_RATE_OPS], ops, dt);
	rate_add(&s->total[INFO_RATE_NET_IN], in, dt);
	rate_add(&s->total[INFO_RATE_NET_OUT], out, dt);
	for (unsigned w = 0; w < s->nworkers; w++)
		rate_add(&s->per_worker[w], stat_read(srv->wstats[w], INFO_STAT_commands_processed), dt);
}

uint64_t info_rate_total(enum info_rate metric)
{
	struct sampler *s = atomic_load_explicit(&sampler, memory_order_acquire);
	return s ? atomic_load_explicit(&s->total[metric].avg, memory_order_relaxed) : 0;
}

uint64_t info_rate_worker(unsigned w)
{
	struct sampler *s = atomic_load_explicit(&sampler, memory_order_acquire);
	return s && w < s->nworkers ? atomic_load_explicit(&s->per_worker[w].avg, memory_order_relaxed) : 0;
}

/* --- the Errorstats section -------------------------------------------------------- */

void info_errorstats_write(struct server *srv, struct textbuf *t)
{
	struct errorstat sum[ERRORSTAT_MAX];
	int n = 0;
	pthread_mutex_lock(&registry_lock);
	if (atomic_load_explicit(&errorstats_disabled, memory_order_relaxed)) {
		pthread_mutex_unlock(&registry_lock);
		textbuf_printf(t, "errorstat_ERRORSTATS_DISABLED:count=1\r\n");
		return;
	}
	n = registry_n;
	memcpy(sum, registry, sizeof(sum[0]) * (size_t)n);
	for (int i = 0; i < n; i++)
		sum[i].count = 0;
	for (unsigned w = 0; w <= srv->nworkers; w++) {
		struct info_errtable *et = w < srv->nworkers ? srv->wstats[w]->errors : &replayed;
		if (!et)
			continue;
		pthread_mutex_lock(&et->lock);
		for (int j = 0; j < et->n; j++) {
			int i = errorstat_find(sum, n, et->e[j].code, et->e[j].len);
			if (i >= 0)
				sum[i].count += et->e[j].count;
		}
		pthread_mutex_unlock(&et->lock);
	}
	pthread_mutex_unlock(&registry_lock);
	qsort(sum, (size_t)n, sizeof(sum[0]), errorstat_cmp);
	for (int i = 0; i < n; i++) {
		char code[ERRORSTAT_CODE_MAX];
		for (int k = 0; k < sum[i].len; k++) {
			char ch = sum[i].code[k];
			code[k] = (ch == '#' || ch == ':' || ch == '\r' || ch == '\n') ? '_' : ch;
		}
		textbuf_printf(t, "errorstat_%.*s:count=%llu\r\n", (int)sum[i].len, code,
			       (unsigned long long)sum[i].count);
	}
}
