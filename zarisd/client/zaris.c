/* zaris — libzaris's client object: options, connect and close, the
 * accessors, and running batches (send, wait, exec) over the engine
 * (zc_engine.c). zaris.h is the contract. */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zarisd/client/zc_int.h"
#include "zarisd/client/zc_keyslot.h"
#include "zarisd/proto/native_wire.h"

void zc_set_err(struct zaris *z, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(z->err, sizeof(z->err), fmt, ap);
	va_end(ap);
}

const char *zaris_strerror(int code)
{
	switch (code) {
	case 0:
		return "OK";
	case ZARIS_E_IO:
		return "I/O error or connection lost";
	case ZARIS_E_TIMEOUT:
		return "timed out";
	case ZARIS_E_PROTO:
		return "protocol error";
	case ZARIS_E_AUTH:
		return "authentication refused";
	case ZARIS_E_NOMEM:
		return "out of memory";
	case ZARIS_E_INVAL:
		return "invalid argument";
	case ZARIS_E_SERVER:
		return "server error";
	case ZARIS_E_BUSY:
		return "batch in flight (or not sent)";
	case ZARIS_E_NOROUTE:
		return "no node owns the key's slot";
	case ZARIS_S_ERR:
		return "ERR";
	case ZARIS_S_WRONGTYPE:
		return "WRONGTYPE";
	case ZARIS_S_MOVED:
		return "MOVED";
	case ZARIS_S_ASK:
		return "ASK";
	case ZARIS_S_OOM:
		return "OOM";
	case ZARIS_S_NOAUTH:
		return "NOAUTH";
	case ZARIS_S_BUSY:
		return "BUSY";
	case ZARIS_S_READONLY:
		return "READONLY";
	case ZARIS_S_NOREPLICAS:
		return "NOREPLICAS";
	case ZARIS_S_CROSSSLOT:
		return "CROSSSLOT";
	case ZARIS_S_TRYAGAIN:
		return "TRYAGAIN";
	case ZARIS_S_CLUSTERDOWN:
		return "CLUSTERDOWN";
	case ZARIS_S_LOADING:
		return "LOADING";
	default:
		return code > 0 ? "server error" : "unknown error";
	}
}

void zaris_options_init(struct zaris_options *o)
{
	memset(o, 0, sizeof(*o));
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static void copy_options(struct zaris_options *d, const struct zaris_options *o)
{
	*d = *o;
	d->host = dup_or_null(o->host ? o->host : "127.0.0.1");
	d->username = dup_or_null(o->username);
	d->password = dup_or_null(o->password);
	if (!d->connect_timeout_ms)
		d->connect_timeout_ms = 2000;
	if (!d->request_timeout_ms)
		d->request_timeout_ms = 5000;
	if (d->reconnect_min_ms <= 0)
		d->reconnect_min_ms = 100;
	if (d->reconnect_max_ms <= 0)
		d->reconnect_max_ms = 5000;
	if (d->reconnect_max_ms < d->reconnect_min_ms)
		d->reconnect_max_ms = d->reconnect_min_ms;
	if (d->max_redirects <= 0)
		d->max_redirects = 5;
	if (d->max_redirects > 100)
		d->max_redirects = 100;
	if (d->topology_interval_ms <= 0)
		d->topology_interval_ms = 100;
}

void zc_client_free(struct zaris *z)
{
	zc_engine_free(z);
	zaris_batch_free(z->topo);
	zaris_batch_free(z->sync);
	free((char *)z->opts.host);
	free((char *)z->opts.username);
	free((char *)z->opts.password);
	free(z);
}

struct zaris *zc_client_new(const struct zaris_options *o)
{
	struct zaris *z = calloc(1, sizeof(*z));
	if (!z)
		return NULL;
	copy_options(&z->opts, o);
	z->topo = zaris_batch_new();
	z->sync = zaris_batch_new();
	for (unsigned s = 0; s < 16384; s++)
		z->slot_node[s] = -1;
	if (!z->opts.host || (o->username && !z->opts.username) || (o->password && !z->opts.password) ||
	    !z->topo || !z->sync || zc_node_find(z, z->opts.host, strlen(z->opts.host), o->port) != 0) {
		zc_client_free(z);
		return NULL;
	}
	return z;
}

int zaris_connect(const struct zaris_options *o, struct zaris **out, char *err, size_t errlen)
{
	*out = NULL;
	if (err && errlen)
		err[0] = '\0';
	if (!o || !o->port || o->cluster > ZARIS_CLUSTER_ON) {
		if (err && errlen)
			snprintf(err, errlen, "options: a native port is required");
		return ZARIS_E_INVAL;
	}
	struct zaris *z = zc_client_new(o);
	if (!z) {
		if (err && errlen)
			snprintf(err, errlen, "out of memory");
		return ZARIS_E_NOMEM;
	}
	unsigned flags = 0;
	int rc = zc_node_connect(z, z->nodes[0], &flags);
	if (rc)
		goto out_fail;
	z->server_flags = flags;
	z->cluster = o->cluster == ZARIS_CLUSTER_ON ||
		     (o->cluster == ZARIS_CLUSTER_AUTO && (flags & NW_HELLO_CLUSTER));
	if (o->cluster == ZARIS_CLUSTER_ON && !(flags & NW_HELLO_CLUSTER)) {
		zc_set_err(z, "%s:%u: not in cluster mode", z->opts.host, o->port);
		rc = ZARIS_E_INVAL;
		goto out_fail;
	}
	if (!z->cluster) {
		memset(z->slot_node, 0, sizeof(z->slot_node));
	} else if ((rc = zaris_refresh_topology(z))) {
		goto out_fail;
	}
	*out = z;
	return 0;
out_fail:
	if (err && errlen)
		snprintf(err, errlen, "%s", z->err);
	zc_client_free(z);
	return rc;
}

void zaris_close(struct zaris *z)
{
	if (z)
		zc_client_free(z);
}

const char *zaris_errstr(const struct zaris *z)
{
	return z->err;
}

int zaris_is_cluster(const struct zaris *z)
{
	return z->cluster;
}

uint64_t zaris_client_id(const struct zaris *z)
{
	return z->client_id;
}

unsigned zaris_server_flags(const struct zaris *z)
{
	return z->server_flags;
}

int zaris_refresh_topology(struct zaris *z)
{
	if (!z->cluster)
		return 0;
	if (!z->topo_busy)
		zc_topo_start(z);
	while (z->topo_busy)
		if (!zc_pump(z, -1) && z->topo_busy) {
			assert(!"a TOPOLOGY read in flight with nothing to wait on");
			return ZARIS_E_IO;
		}
	return z->topo_rc;
}

int zaris_node_count(const struct zaris *z)
{
	return (int)z->nnodes;
}

unsigned zaris_key_slot(const void *key, size_t klen)
{
	return zr_key_slot(key, klen);
}

int zaris_key_node(const struct zaris *z, const void *key, size_t klen)
{
	if (!z->cluster)
		return 0;
	int n = z->slot_node[zr_key_slot(key, klen)];
	return n < 0 ? ZARIS_E_NOROUTE : n;
}

void zaris_get_stats(const struct zaris *z, struct zaris_stats *s)
{
	*s = z->stats;
}

size_t zaris_in_flight(const struct zaris *z)
{
	return z->in_flight;
}

/* --- running ------------------------------------------------------------------- */

#define ZC_WRITE_BACKLOG (8u << 20)

static size_t write_backlog(const struct zaris *z)
{
	size_t most = 0;
	for (size_t i = 0; i < z->nnodes; i++) {
		const struct zc_node *n = z->nodes[i];
		if (n->fd >= 0 && n->wlen - n->woff > most)
			most = n->wlen - n->woff;
	}
	return most;
}

int zaris_send(struct zaris *z, struct zaris_batch *b)
{
	if (b->state == ZC_INFLIGHT || b->state == ZC_DONE)
		return ZARIS_E_BUSY;
	zc_batch_prepare(b);
	b->state = ZC_INFLIGHT;
	b->owner = z;
	b->on_done = NULL;
	b->seq = ++z->next_seq;
	z->in_flight++;
	if (!b->nops) {
		b->state = ZC_DONE;
		b->next_done = NULL;
		if (z->done_tail)
			z->done_tail->next_done = b;
		else
			z->done_head = b;
		z->done_tail = b;
		return 0;
	}
	zc_submit(z, b);
	zc_flush(z);
	/* a caller sending without waiting must not grow the write buffers
	 * without bound while the server, its answers unread, stops reading:
	 * past the mark, run the loop (it reads answers too) until they drain */
	while (write_backlog(z) > ZC_WRITE_BACKLOG)
		if (!zc_pump(z, -1))
			break;
	return 0;
}

/* Takes B (done) out of the completed queue and returns it to the caller. */
static int take_done(struct zaris *z, struct zaris_batch *b)
{
	struct zaris_batch **pp = &z->done_head, *prev = NULL;
	while (*pp && *pp != b) {
		prev = *pp;
		pp = &(*pp)->next_done;
	}
	assert(*pp == b);
	*pp = b->next_done;
	if (z->done_tail == b)
		z->done_tail = prev;
	b->next_done = NULL;
	b->state = ZC_RETURNED;
	b->owner = NULL;
	z->in_flight--;
	return b->rc;
}

int zaris_wait(struct zaris *z, struct zaris_batch *b)
{
	if (b->owner != z || (b->state != ZC_INFLIGHT && b->state != ZC_DONE))
		return ZARIS_E_BUSY;
	while (b->state == ZC_INFLIGHT)
		if (!zc_pump(z, -1) && b->state == ZC_INFLIGHT) {
			assert(!"a batch in flight with nothing to wait on");
			return ZARIS_E_IO;
		}
	return take_done(z, b);
}

int zaris_wait_any(struct zaris *z, int timeout_ms, struct zaris_batch **done, int *rc)
{
	*done = NULL;
	uint64_t deadline = timeout_ms >= 0 ? zc_now_ms() + (uint64_t)timeout_ms : 0;
	for (;;) {
		if (z->done_head) {
			struct zaris_batch *b = z->done_head;
			int r = take_done(z, b);
			if (rc)
				*rc = r;
			*done = b;
			return 1;
		}
		if (!z->in_flight)
			return 0;
		int left = -1;
		if (deadline) {
			uint64_t now = zc_now_ms();
			if (now >= deadline && timeout_ms > 0)
				return 0;
			left = now >= deadline ? 0 : (int)(deadline - now);
		}
		int waited = zc_pump(z, left);
		if (timeout_ms == 0 && !z->done_head)
			return 0;
		if (!waited && !z->done_head) {
			assert(!"batches in flight with nothing to wait on");
			return ZARIS_E_IO;
		}
	}
}

int zaris_exec(struct zaris *z, struct zaris_batch *b)
{
	int rc = zaris_send(z, b);
	return rc ? rc : zaris_wait(z, b);
}
