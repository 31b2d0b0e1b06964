/* slowlog — see slowlog.h. Entries form a doubly linked list, newest at
 * the head, so that trimming to slowlog-max-len drops from the tail. Entry
 * copies are made and freed outside the mutex; only linking is inside. */
#include "zarisd/server/slowlog.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "zarisd/server/client.h"
#include "zarisd/server/command.h"
#include "zarisd/server/latency.h"
#include "zarisd/server/server.h"
#include "zarisd/server/settings.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/thread.h"
#include "zarisd/core/util.h"
#include "zarisd/proto/reply.h"

struct slowlog_arg {
	char *ptr;
	size_t len;
};

struct slowlog_entry {
	struct slowlog_entry *next, *prev;
	uint64_t id;
	int64_t time; /* unix seconds */
	int64_t duration_us;
	int argc;
	struct slowlog_arg *argv;
	char *addr;
	char *name;
};

struct slowlog {
	pthread_mutex_t lock; /* guards everything below */
	struct slowlog_entry *head, *tail;
	unsigned long len;
	uint64_t next_id;
};

struct slowlog *slowlog_create(void)
{
	struct slowlog *sl = zr_calloc(1, sizeof(*sl));
	pthread_mutex_init(&sl->lock, NULL);
	return sl;
}

static void entry_free(struct slowlog_entry *e)
{
	for (int i = 0; i < e->argc; i++)
		zr_free(e->argv[i].ptr);
	zr_free(e->argv);
	zr_free(e->addr);
	zr_free(e->name);
	zr_free(e);
}

static void entries_free(struct slowlog_entry *e)
{
	while (e) {
		struct slowlog_entry *next = e->next;
		entry_free(e);
		e = next;
	}
}

void slowlog_destroy(struct slowlog *sl)
{
	if (!sl)
		return;
	entries_free(sl->head);
	pthread_mutex_destroy(&sl->lock);
	zr_free(sl);
}

static void arg_set(struct slowlog_arg *a, const char *p, size_t len)
{
	a->ptr = zr_malloc(len + 1);
	memcpy(a->ptr, p, len);
	a->ptr[len] = '\0';
	a->len = len;
}

/* Whether argument I of C must not be kept: secrets, like Redis's
 * redactClientCommandArgument() calls. */
static bool arg_is_secret(const struct client *c, int i)
{
	const struct command *cmd = c->cmd;
	if (!cmd || i == 0)
		return false;
	const char *top = cmd->parent ? cmd->parent->name : cmd->name;
	if (!strcmp(top, "auth"))
		return true;
	if (!strcmp(top, "hello")) {
		/* HELLO [protover [AUTH username password] [SETNAME name]] */
		for (int j = 2; j + 2 < c->argc; j++)
			if (zr_eq_nocase(c->argv[j].ptr, c->argv[j].len, "auth") &&
			    (i == j + 1 || i == j + 2))
				return true;
		return false;
	}
	if (cmd->parent && !strcmp(top, "config") && !strcmp(cmd->name, "set")) {
		/* CONFIG SET name value [name value ...]: the value after requirepass */
		return i >= 3 && (i % 2) == 1 &&
		       zr_eq_nocase(c->argv[i - 1].ptr, c->argv[i - 1].len, "requirepass");
	}
	return false;
}

/* Copies C's command the way Redis's slowlogCreateEntry does: at most
 * SLOWLOG_ENTRY_MAX_ARGC arguments (the last saying how many more there
 * were), each cut to SLOWLOG_ENTRY_MAX_STRING bytes plus how many more. */
static struct slowlog_entry *entry_create(const struct client *c, int64_t duration_us)
{
	struct slowlog_entry *e = zr_calloc(1, sizeof(*e));
	int argc = c->argc < SLOWLOG_ENTRY_MAX_ARGC ? c->argc : SLOWLOG_ENTRY_MAX_ARGC;
	e->argc = argc;
	e->argv = zr_calloc((size_t)argc, sizeof(*e->argv));
	char buf[SLOWLOG_ENTRY_MAX_STRING + 64];
	for (int i = 0; i < argc; i++) {
		const char *p = c->argv[i].ptr;
		size_t len = c->argv[i].len;
		if (argc != c->argc && i == argc - 1) {
			int n = snprintf(buf, sizeof(buf), "... (%d more arguments)", c->argc - argc + 1);
			arg_set(&e->argv[i], buf, (size_t)n);
		} else if (arg_is_secret(c, i)) {
			arg_set(&e->argv[i], "(redacted)", 10);
		} else if (len > SLOWLOG_ENTRY_MAX_STRING) {
			memcpy(buf, p, SLOWLOG_ENTRY_MAX_STRING);
			int n = snprintf(buf + SLOWLOG_ENTRY_MAX_STRING,
					 sizeof(buf) - SLOWLOG_ENTRY_MAX_STRING, "... (%zu more bytes)",
					 len - SLOWLOG_ENTRY_MAX_STRING);
			arg_set(&e->argv[i], buf, SLOWLOG_ENTRY_MAX_STRING + (size_t)n);
		} else {
			arg_set(&e->argv[i], p, len);
		}
	}
	e->time = (int64_t)time(NULL);
	e->duration_us = duration_us;
	e->addr = zr_strdup(c->addr);
	/* the owning worker is the only writer of c->name: no lock needed here */
	e->name = zr_strdup(c->name ? c->name : "");
	return e;
}

/* Unlinks entries past MAX; returns them as a chain for freeing. Lock held. */
static struct slowlog_entry *trim_locked(struct slowlog *sl, unsigned long max)
{
	ZR_ASSERT_MUTEX_HELD(&sl->lock);
	struct slowlog_entry *cut = NULL;
	while (sl->len > max) {
		struct slowlog_entry *e = sl->tail;
		sl->tail = e->prev;
		if (sl->tail)
			sl->tail->next = NULL;
		else
			sl->head = NULL;
		e->prev = NULL;
		e->next = cut;
		cut = e;
		sl->len--;
	}
	return cut;
}

void slowlog_record(struct slowlog *sl, struct server *srv, const struct client *c, int64_t duration_us)
{
	long long slower = atomic_load_explicit(&srv->cfg->slowlog_log_slower_than, memory_order_relaxed);
	if (slower < 0 || duration_us < slower || c->argc <= 0)
		return;
	long long max = atomic_load_explicit(&srv->cfg->slowlog_max_len, memory_order_relaxed);
	struct slowlog_entry *e = entry_create(c, duration_us);
	pthread_mutex_lock(&sl->lock);
	e->id = sl->next_id++;
	e->next = sl->head;
	if (sl->head)
		sl->head->prev = e;
	else
		sl->tail = e;
	sl->head = e;
	sl->len++;
	struct slowlog_entry *cut = trim_locked(sl, max < 0 ? 0 : (unsigned long)max);
	pthread_mutex_unlock(&sl->lock);
	entries_free(cut);
}

void slowlog_reply(struct slowlog *sl, struct obuf *o, long count)
{
	pthread_mutex_lock(&sl->lock);
	unsigned long n = sl->len;
	if (count >= 0 && (unsigned long)count < n)
		n = (unsigned long)count;
	reply_array(o, (long)n);
	struct slowlog_entry *e = sl->head;
	for (unsigned long i = 0; i < n; i++, e = e->next) {
		reply_array(o, 6);
		reply_long(o, (long long)e->id);
		reply_long(o, e->time);
		reply_long(o, e->duration_us);
		reply_array(o, e->argc);
		for (int j = 0; j < e->argc; j++)
			reply_bulk(o, e->argv[j].ptr, e->argv[j].len);
		reply_bulk_cstr(o, e->addr);
		reply_bulk_cstr(o, e->name);
	}
	pthread_mutex_unlock(&sl->lock);
}

unsigned long slowlog_len(struct slowlog *sl)
{
	pthread_mutex_lock(&sl->lock);
	unsigned long n = sl->len;
	pthread_mutex_unlock(&sl->lock);
	return n;
}

void slowlog_reset(struct slowlog *sl)
{
	pthread_mutex_lock(&sl->lock);
	struct slowlog_entry *all = sl->head;
	sl->head = sl->tail = NULL;
	sl->len = 0;
	pthread_mutex_unlock(&sl->lock);
	entries_free(all);
}
