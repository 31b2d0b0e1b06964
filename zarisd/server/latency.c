/* latency — see latency.h. Events live in a small fixed table (there are a
 * handful of event names, all static strings); each holds a ring of
 * one-per-second samples where a second's sample keeps its worst value. */
#include "zarisd/server/latency.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "zarisd/server/command.h"
#include "zarisd/server/server.h"
#include "zarisd/server/settings.h"
#include "zarisd/server/textbuf.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/thread.h"
#include "zarisd/core/util.h"
#include "zarisd/proto/reply.h"

struct latency_sample {
	int64_t time;	  /* unix seconds; 0 = unused slot */
	uint32_t latency; /* ms */
};

struct latency_event {
	const char *name; /* NULL = free slot */
	int idx;	  /* next slot to write */
	uint32_t max;	  /* all-time worst, ms */
	struct latency_sample samples[LATENCY_SAMPLES];
};

static pthread_mutex_t latency_lock = PTHREAD_MUTEX_INITIALIZER; /* guards latency_events */
static struct latency_event latency_events[LATENCY_MAX_EVENTS];

/* The event named NAME, or NULL. Lock held. */
static struct latency_event *event_find_locked(const char *name, size_t len)
{
	ZR_ASSERT_MUTEX_HELD(&latency_lock);
	for (int i = 0; i < LATENCY_MAX_EVENTS; i++) {
		struct latency_event *ev = &latency_events[i];
		if (ev->name && strlen(ev->name) == len && !memcmp(ev->name, name, len))
			return ev;
	}
	return NULL;
}

static void add_sample_locked(const char *event, uint32_t ms, int64_t now)
{
	struct latency_event *ev = event_find_locked(event, strlen(event));
	if (!ev) {
		for (int i = 0; i < LATENCY_MAX_EVENTS && !ev; i++)
			if (!latency_events[i].name)
				ev = &latency_events[i];
		if (!ev)
			return; /* table full: a new kind of event is dropped, known ones still count */
		memset(ev, 0, sizeof(*ev));
		ev->name = event;
	}
	if (ms > ev->max)
		ev->max = ms;
	int prev = (ev->idx + LATENCY_SAMPLES - 1) % LATENCY_SAMPLES;
	if (ev->samples[prev].time == now) {
		if (ms > ev->samples[prev].latency)
			ev->samples[prev].latency = ms;
		return;
	}
	ev->samples[ev->idx].time = now;
	ev->samples[ev->idx].latency = ms;
	ev->idx = (ev->idx + 1) % LATENCY_SAMPLES;
}

void latency_add_sample_if_needed(struct server *srv, const char *event, int64_t latency_ms)
{
	long long threshold =
		atomic_load_explicit(&srv->cfg->latency_monitor_threshold, memory_order_relaxed);
	if (threshold <= 0 || latency_ms < threshold)
		return;
	uint32_t ms = latency_ms > UINT32_MAX ? UINT32_MAX : (uint32_t)latency_ms;
	int64_t now = (int64_t)time(NULL);
	pthread_mutex_lock(&latency_lock);
	add_sample_locked(event, ms, now);
	pthread_mutex_unlock(&latency_lock);
}

void latency_record_command(struct server *srv, const struct command *cmd, int64_t duration_us)
{
	if (!cmd)
		return;
	latency_add_sample_if_needed(srv, (cmd->flags & CMD_FAST) ? "fast-command" : "command",
				     duration_us / 1000);
}

void latency_reply_latest(struct obuf *o)
{
	pthread_mutex_lock(&latency_lock);
	long n = 0;
	for (int i = 0; i < LATENCY_MAX_EVENTS; i++)
		n += latency_events[i].name != NULL;
	reply_array(o, n);
	for (int i = 0; i < LATENCY_MAX_EVENTS; i++) {
		struct latency_event *ev = &latency_events[i];
		if (!ev->name)
			continue;
		int last = (ev->idx + LATENCY_SAMPLES - 1) % LATENCY_SAMPLES;
		reply_array(o, 4);
		reply_bulk_cstr(o, ev->name);
		reply_long(o, ev->samples[last].time);
		reply_long(o, ev->samples[last].latency);
		reply_long(o, ev->max);
	}
	pthread_mutex_unlock(&latency_lock);
}

void latency_reply_history(struct obuf *o, const char *event, size_t len)
{
	pthread_mutex_lock(&latency_lock);
	struct latency_event *ev = event_find_locked(event, len);
	long n = 0;
	if (ev)
		for (int i = 0; i < LATENCY_SAMPLES; i++)
			n += ev->samples[i].time != 0;
	reply_array(o, n);
	for (int k = 0; ev && k < LATENCY_SAMPLES; k++) {
		const struct latency_sample *s = &ev->samples[(ev->idx + k) % LATENCY_SAMPLES];
		if (!s->time)
			continue;
		reply_array(o, 2);
		reply_long(o, s->time);
		reply_long(o, s->latency);
	}
	pthread_mutex_unlock(&latency_lock);
}

int latency_reset(const char *event, size_t len)
{
	int n = 0;
	pthread_mutex_lock(&latency_lock);
	for (int i = 0; i < LATENCY_MAX_EVENTS; i++) {
		struct latency_event *ev = &latency_events[i];
		if (!ev->name)
			continue;
		if (event && !(strlen(ev->name) == len && !memcmp(ev->name, event, len)))
			continue;
		memset(ev, 0, sizeof(*ev));
		n++;
	}
	pthread_mutex_unlock(&latency_lock);
	return n;
}

void latency_reply_doctor(struct server *srv, struct obuf *o)
{
	struct textbuf t = TEXTBUF_INIT;
	long long threshold =
		atomic_load_explicit(&srv->cfg->latency_monitor_threshold, memory_order_relaxed);
	pthread_mutex_lock(&latency_lock);
	int events = 0;
	bool severe = false;
	for (int i = 0; i < LATENCY_MAX_EVENTS; i++) {
		struct latency_event *ev = &latency_events[i];
		if (!ev->name)
			continue;
		/* mean, mean absolute deviation and spacing of the samples held */
		uint64_t sum = 0, mad = 0;
		int64_t first = 0, last = 0;
		int samples = 0;
		for (int k = 0; k < LATENCY_SAMPLES; k++) {
			const struct latency_sample *s = &ev->samples[(ev->idx + k) % LATENCY_SAMPLES];
			if (!s->time)
				continue;
			if (!samples)
				first = s->time;
			last = s->time;
			sum += s->latency;
			samples++;
		}
		if (!samples)
			continue;
		uint64_t avg = sum / (uint64_t)samples;
		for (int k = 0; k < LATENCY_SAMPLES; k++) {
			const struct latency_sample *s = &ev->samples[k];
			if (s->time)
				mad += s->latency > avg ? s->latency - avg : avg - s->latency;
		}
		mad /= (uint64_t)samples;
		if (!events++)
			textbuf_printf(&t, "Latency spikes were observed in this zarisd instance.\n\n");
		textbuf_printf(
			&t,
			"%d. %s: %d latency spikes (average %llums, mean deviation %llums, period %.2f sec). "
			"Worst all time event %ums.\n",
			events, ev->name, samples, (unsigned long long)avg, (unsigned long long)mad,
			samples > 1 ? (double)(last - first) / (samples - 1) : 1.0, ev->max);
		severe |= ev->max > 500;
	}
	pthread_mutex_unlock(&latency_lock);
	if (!events && threshold == 0) {
		textbuf_printf(&t, "Latency monitoring is disabled in this zarisd instance. Enable it with "
				   "\"CONFIG SET latency-monitor-threshold <milliseconds>.\" and see "
				   "https://redis.io/topics/latency-monitor for how to read the results.\n");
	} else if (!events) {
		textbuf_printf(
			&t,
			"No latency spike at or above %lld ms was observed during the lifetime of this "
			"zarisd instance.\n",
			threshold);
	} else {
		textbuf_printf(
			&t,
			"\nAdvice:\n\n- Check the slow log (SLOWLOG GET) for the commands that ran "
			"slowly; commands walking many keys (KEYS, FLUSHALL, large DEL) block their worker.\n");
		if (severe)
			textbuf_printf(
				&t,
				"- Some events exceeded 500 ms: check for swapping, CPU contention on the "
				"pinned cores (cores setting) and transparent huge pages.\n");
	}
	reply_verbatim(o, t.p ? t.p : "", t.len, "txt");
	textbuf_free(&t);
}
