/* conn — see conn.h. */
#include "zarisd/net/conn.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "zarisd/core/log.h"
#include "zarisd/core/mem.h"
#include "zarisd/net/worker.h"
#include "zarisd/server/server.h"
#include "zarisd/server/settings.h"
#include "zarisd/server/stats.h"
#include "zarisd/store/store.h"

/* How long a hold may see no output progress, with requests waiting in
 * the socket, before it is taken for a client that reads nothing until it
 * has written everything (conn_check_stall). A client that reads at all
 * takes something within this; one hold per such batch costs this once. */
#define CONN_BP_STALL_MS 500

struct conn *conn_create(struct worker *w, int fd, const struct proto_ops *ops, void *arg)
{
	/* one allocation: the transport and its session */
	struct conn *c = zr_calloc(1, sizeof(*c) + ops->session_size);
	c->w = w;
	c->fd = fd;
	c->ops = ops;
	ops->open(c, arg);
	return c;
}

void conn_destroy(struct conn *c)
{
	c->ops->close(c, c->error);
	zr_free(c->qbuf);
	if (c->fd >= 0)
		close(c->fd);
	zr_free(c);
}

static bool qbuf_append(struct conn *c, const char *data, size_t len)
{
	if (c->qlen + len > c->qcap) {
		size_t cap = c->qcap ? c->qcap : 4096;
		while (cap < c->qlen + len)
			cap *= 2;
		char *nb = zr_try_realloc(c->qbuf, cap);
		if (!nb)
			return false;
		c->qbuf = nb;
		c->qcap = cap;
	}
	memcpy(c->qbuf + c->qlen, data, len);
	c->qlen += len;
	return true;
}

static bool check_qbuf_limit(struct conn *c)
{
	long long limit =
		atomic_load_explicit(&c->w->srv->cfg->client_query_buffer_limit, memory_order_relaxed);
	if ((long long)c->qlen > limit) {
		zr_log(ZR_LOG_WARNING,
		       "Closing client that reached max query buffer length: id=%llu addr=%s qbuf=%zu",
		       (unsigned long long)c->log_id, c->log_addr ? c->log_addr : "?", c->qlen);
		STAT_INC(c->w->stats, client_query_buffer_limit_disconnections);
		return false;
	}
	return true;
}

/* The normal class's hard output limit, read once per batch of requests
 * into the worker (0, no limit, as SIZE_MAX). */
static void cache_obuf_hard_limit(struct conn *c)
{
	unsigned long long hard =
		atomic_load_explicit(&c->w->srv->cfg->obuf_hard_limit, memory_order_relaxed);
	c->w->obuf_hard_cached = hard ? (size_t)hard : SIZE_MAX;
}

/* Gives the session the bytes in c->qbuf and drops what it consumed;
 * false when the conn must close (over the output limit). */
static bool run_qbuf(struct conn *c)
{
	size_t used = c->ops->consume(c, c->qbuf, c->qlen);
	if (c->obuf_overflow)
		return false;
	if (used) {
		memmove(c->qbuf, c->qbuf + used, c->qlen - used);
		c->qlen -= used;
	}
	if (c->qlen == 0 && c->qcap > 64 * 1024) {
		ZR_FREE(c->qbuf);
		c->qcap = 0;
	}
	return true;
}

bool conn_feed(struct conn *c, const char *data, size_t len)
{
	cache_obuf_hard_limit(c);
	STAT_ADD(c->w->stats, net_input_bytes, len);
	if (c->last_interaction_ms)
		atomic_store_explicit(c->last_interaction_ms, c->w->now_ms, memory_order_relaxed);
	if (c->close_after_send)
		return true; /* input after QUIT or an error is dropped */
	if (c->qlen == 0 && !c->bp_hold) {
		/* Zero-copy path: the session reads straight from the received
		 * bytes; RESP writes only inside an inline request (unescaping),
		 * so the cast is safe for the kernel-filled buffer we own. */
		size_t used = c->ops->consume(c, (char *)data, len);
		if (c->obuf_overflow)
			return false;
		if (used < len && !c->close_after_send) {
			if (!qbuf_append(c, data + used, len - used))
				return false;
			return check_qbuf_limit(c);
		}
		return true;
	}
	/* held (backpressure, or the session's own hold): bytes a receive
	 * already took are kept */
	if (!qbuf_append(c, data, len))
		return false;
	if (c->bp_hold)
		return check_qbuf_limit(c);
	if (!run_qbuf(c))
		return false;
	return check_qbuf_limit(c);
}

bool conn_retry(struct conn *c)
{
	if (c->qlen == 0 || c->bp_hold || c->close_after_send)
		return true;
	cache_obuf_hard_limit(c);
	return run_qbuf(c);
}

bool conn_release(struct conn *c)
{
	c->bp_release = false;
	return conn_retry(c);
}

bool conn_check_stall(struct conn *c, int64_t now_ms)
{
	/* replies held for fsync wait for the disk, not for the client */
	if (!c->bp_hold || c->durable_waiting || now_ms - c->bp_progress_ms < CONN_BP_STALL_MS)
		return false;
	int waiting = 0;
	if (ioctl(c->fd, FIONREAD, &waiting) < 0 || waiting <= 0)
		return false; /* all it sent is read: holding cannot block it */
	zr_log(ZR_LOG_VERBOSE,
	       "Client id=%llu addr=%s reads no replies while it sends requests: backpressure given up (omem=%zu)",
	       (unsigned long long)c->log_id, c->log_addr ? c->log_addr : "?", c->out->bytes);
	c->bp_hold = false;
	c->bp_lifted = true;
	c->bp_release = true;
	return true;
}

bool conn_output_over(struct conn *c, int64_t now_ms, unsigned long long hard, unsigned long long soft,
		      long long secs)
{
	size_t used = c->out->bytes;
	bool over = hard && used > hard;
	if (!over && soft && used > soft) {
		if (!c->obuf_soft_since_ms)
			c->obuf_soft_since_ms = now_ms;
		else if (now_ms / 1000 - c->obuf_soft_since_ms / 1000 > secs)
			over = true; /* in whole seconds, as Redis (server.unixtime) */
	} else if (!over) {
		c->obuf_soft_since_ms = 0;
	}
	if (over) {
		zr_log(ZR_LOG_WARNING,
		       "Client id=%llu addr=%s scheduled to be closed ASAP for overcoming of output buffer limits (omem=%zu).",
		       (unsigned long long)c->log_id, c->log_addr ? c->log_addr : "?", used);
		STAT_INC(c->w->stats, client_output_buffer_limit_disconnections);
		return false;
	}
	return true;
}

void conn_sent(struct conn *c, size_t n)
{
	obuf_consume(c->out, n);
	STAT_ADD(c->w->stats, net_output_bytes, n);
	if (c->last_interaction_ms)
		atomic_store_explicit(c->last_interaction_ms, c->w->now_ms, memory_order_relaxed);
	if (!c->bp_hold && !c->bp_lifted)
		return;
	c->bp_progress_ms = c->w->now_ms;
	if (c->out->bytes <= CONN_BP_LOW) {
		c->bp_release = c->bp_hold;
		c->bp_hold = c->bp_lifted = false;
	}
}

/* (Software-pipelining the steps a few keys apart measured the same: the
 * misses are bounded by how many the core keeps in flight, not by their
 * order.) */
void conn_prefetch_keys(struct store *s, const struct conn_prefetch_key *k, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		store_prefetch_bucket(s, k[i].db, k[i].hash);
	for (unsigned i = 0; i < n; i++)
		store_prefetch_entry(s, k[i].db, k[i].hash);
	for (unsigned i = 0; i < n; i++)
		store_prefetch_next(s, k[i].db, k[i].hash, k[i].key, k[i].klen);
}

void conn_group_add(struct conn_group *g, const struct conn *c, char *data, size_t len)
{
	/* only where conn_feed will give the session these very bytes first:
	 * nothing waiting in qbuf, nothing held */
	if (g->n == CONN_GROUP_MAX || c->state != CONN_OPEN || c->close_after_send || c->qlen || c->bp_hold ||
	    !c->ops->group_add)
		return;
	c->ops->group_add(g, c, data, len);
}

void conn_group_prefetch(const struct conn_group *g)
{
	/* a lone key: the session's own store_prefetch is all there is to do */
	if (g->n < 2)
		return;
	conn_prefetch_keys(g->store, g->key, g->n);
}

void conn_final_error(struct conn *c, const char *error)
{
	if (c->ops->final_error) {
		c->ops->final_error(c, error);
	} else {
		obuf_consume(c->out, c->out->bytes);
		reply_error(c->out, error);
	}
	c->close_after_send = true;
}
