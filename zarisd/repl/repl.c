/* repl — see repl.h. This file: the state, roles, WAIT and replica-ack,
 * INFO and ROLE; primary.c is a replica's link, replica.c ours to a
 * primary. */
#include "zarisd/repl/repl.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "zarisd/core/log.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/thread.h"
#include "zarisd/core/util.h"
#include "zarisd/journal/stream.h"
#include "zarisd/proto/reply.h"
#include "zarisd/repl/repl_int.h"
#include "zarisd/server/client.h"
#include "zarisd/server/server.h"
#include "zarisd/server/settings.h"
#include "zarisd/server/textbuf.h"
#include "zarisd/store/store.h"

#define REPL_TICK_MS 100
#define BACKLOG_MIN (16u << 10) /* Redis's floor for repl-backlog-size */

void repl_new_id(char out[41])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char raw[20];
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, raw, sizeof(raw)) : -1;
	if (fd >= 0)
		close(fd);
	if (n != (ssize_t)sizeof(raw)) { /* no urandom: the clock and the pid */
		uint64_t x = (uint64_t)zr_time_ms() * 6364136223846793005ull ^ (uint64_t)getpid();
		for (size_t i = 0; i < sizeof(raw); i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			raw[i] = (unsigned char)(x >> 56);
		}
	}
	for (int i = 0; i < 20; i++) {
		out[2 * i] = hex[raw[i] >> 4];
		out[2 * i + 1] = hex[raw[i] & 15];
	}
	out[40] = 0;
}

static void clear_id2(struct repl *r)
{
	memset(r->replid2, '0', 40);
	r->replid2[40] = 0;
	r->second_off = -1;
}

/* The backlog's size from repl-backlog-size (at least Redis's 16 KiB). */
static void apply_backlog_size(struct repl *r)
{
	long long want = atomic_load_explicit(&r->srv->cfg->repl_backlog_size, memory_order_relaxed);
	stream_set_tail(r->srv->stream, want < (long long)BACKLOG_MIN ? BACKLOG_MIN : (size_t)want);
}

/* --- acknowledgements ---------------------------------------------------------------- */

static int cmp_desc(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? 1 : x > y ? -1 : 0;
}

struct wait_mail {
	long long count;
};

static void wait_reply(struct client *c, void *arg)
{
	struct wait_mail *m = arg;
	if (c && (c->flags & CLIENT_BLOCKED)) {
		c->flags &= ~CLIENT_BLOCKED;
		reply_long(&c->out, m->count);
	}
	zr_free(m);
}

/* How many online peers acknowledged SEQ (mu held). */
static long long acked_by(struct repl *r, uint64_t seq)
{
	ZR_ASSERT_MUTEX_HELD(&r->mu);
	long long n = 0;
	for (struct peer *p = r->peers; p; p = p->next)
		if (atomic_load_explicit(&p->state, memory_order_relaxed) == PEER_ONLINE &&
		    atomic_load_explicit(&p->ack_seq, memory_order_relaxed) >= seq)
			n++;
	return n;
}

/* Answers the WAITs that are satisfied or (TIMER) timed out (mu held). */
static void serve_waits(struct repl *r, bool timer)
{
	ZR_ASSERT_MUTEX_HELD(&r->mu);
	int64_t now = timer ? zr_time_ms() : 0;
	for (struct wait_req **pp = &r->waits; *pp;) {
		struct wait_req *w = *pp;
		long long n = acked_by(r, w->seq);
		if (n < w->needed && !(timer && w->deadline && now >= w->deadline)) {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		struct wait_mail *m = zr_malloc(sizeof(*m));
		m->count = n;
		server_post(r->srv, w->worker, w->client_id, wait_reply, m);
		zr_free(w);
	}
}

/* mu held: repl_acked and the good-replica count from the peers' acks. */
static void recompute_acks(struct repl *r)
{
	ZR_ASSERT_MUTEX_HELD(&r->mu);
	struct server *srv = r->srv;
	int need = atomic_load_explicit(&srv->cfg->replica_ack, memory_order_relaxed);
	int lag = atomic_load_explicit(&srv->cfg->min_replicas_max_lag, memory_order_relaxed);
	int64_t now = zr_time_ms();
	uint64_t seqs[64];
	unsigned n = 0;
	int good = 0;
	for (struct peer *p = r->peers; p; p = p->next) {
		if (atomic_load_explicit(&p->state, memory_order_relaxed) != PEER_ONLINE)
			continue;
		int64_t at = atomic_load_explicit(&p->ack_ms, memory_order_relaxed);
		if (at && now - at <= (int64_t)lag * 1000)
			good++;
		if (n < sizeof(seqs) / sizeof(seqs[0]))
			seqs[n++] = atomic_load_explicit(&p->ack_seq, memory_order_relaxed);
	}
	atomic_store_explicit(&srv->repl_good_replicas, good, memory_order_relaxed);
	uint64_t acked = 0;
	if (need > 0 && (unsigned)need <= n) {
		qsort(seqs, n, sizeof(seqs[0]), cmp_desc);
		acked = seqs[need - 1];
	}
	if (acked != atomic_load_explicit(&srv->repl_acked, memory_order_relaxed)) {
		atomic_store_explicit(&srv->repl_acked, acked, memory_order_release);
		if (need > 0)
			server_wake_all(srv);
	}
}

void repl_acks_changed(struct repl *r)
{
	pthread_mutex_lock(&r->mu);
	recompute_acks(r);
	if (r->waits)
		serve_waits(r, false);
	pthread_mutex_unlock(&r->mu);
}

void repl_wait(struct repl *r, struct client *c, long long numreplicas, long long timeout_ms)
{
	pthread_mutex_lock(&r->mu);
	long long n = acked_by(r, c->last_write_seq);
	if (n >= numreplicas) {
		pthread_mutex_unlock(&r->mu);
		reply_long(&c->out, n);
		return;
	}
	struct wait_req *w = zr_calloc(1, sizeof(*w));
	w->worker = c->worker;
	w->client_id = c->id;
	w->seq = c->last_write_seq;
	w->needed = numreplicas;
	w->deadline = timeout_ms > 0 ? zr_time_ms() + timeout_ms : 0;
	w->next = r->waits;
	r->waits = w;
	c->flags |= CLIENT_BLOCKED;
	pthread_mutex_unlock(&r->mu);
}

void repl_client_gone(struct repl *r, struct client *c)
{
	if (!r || !(c->flags & CLIENT_BLOCKED))
		return;
	pthread_mutex_lock(&r->mu);
	for (struct wait_req **pp = &r->waits; *pp; pp = &(*pp)->next)
		if ((*pp)->client_id == c->id) {
			struct wait_req *w = *pp;
			*pp = w->next;
			zr_free(w);
			break;
		}
	pthread_mutex_unlock(&r->mu);
}

/* --- peers -------------------------------------------------------------------------- */

int repl_attach(struct repl *r, int fd, const char *peer_ip, int listen_port, const char *replid,
		long long offset)
{
	struct peer *p = zr_calloc(1, sizeof(*p));
	p->r = r;
	p->fd = fd;
	snprintf(p->ip, sizeof(p->ip), "%s", peer_ip);
	p->port = listen_port;
	snprintf(p->replid, sizeof(p->replid), "%s", replid);
	p->offset = offset;
	pthread_mutex_lock(&r->mu);
	if (r->stopping) {
		pthread_mutex_unlock(&r->mu);
		close(fd);
		zr_free(p);
		return -ESHUTDOWN;
	}
	p->id = ++r->next_peer_id;
	p->next = r->peers;
	r->peers = p;
	r->npeers++;
	pthread_mutex_unlock(&r->mu);
	pthread_t t;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	int rc = pthread_create(&t, &attr, peer_main, p);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		repl_peer_gone(r, p);
		return -rc;
	}
	return 0;
}

void repl_peer_gone(struct repl *r, struct peer *p)
{
	pthread_mutex_lock(&r->mu);
	for (struct peer **pp = &r->peers; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	r->npeers--;
	recompute_acks(r);
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	close(p->fd);
	zr_free(p);
}

void repl_drop_peers(struct repl *r)
{
	pthread_mutex_lock(&r->mu);
	for (struct peer *p = r->peers; p; p = p->next) {
		atomic_store_explicit(&p->stop, true, memory_order_relaxed);
		shutdown(p->fd, SHUT_RDWR);
	}
	pthread_mutex_unlock(&r->mu);
}

/* --- roles ---------------------------------------------------------------------------- */

void repl_take_id(struct repl *r, const char *replid)
{
	pthread_mutex_lock(&r->mu);
	snprintf(r->replid, sizeof(r->replid), "%s", replid);
	clear_id2(r);
	stream_set_id(r->srv->stream, r->replid);
	r->fresh = false;
	pthread_mutex_unlock(&r->mu);
}

void repl_forget_history(struct repl *r)
{
	pthread_mutex_lock(&r->mu);
	r->fresh = true;
	pthread_mutex_unlock(&r->mu);
}

bool repl_fresh(struct repl *r)
{
	pthread_mutex_lock(&r->mu);
	bool f = r->fresh;
	pthread_mutex_unlock(&r->mu);
	return f;
}

void repl_replid(struct repl *r, char out[41])
{
	pthread_mutex_lock(&r->mu);
	memcpy(out, r->replid, 41);
	pthread_mutex_unlock(&r->mu);
}

/* Whether HOST:PORT is this server (a replica of itself would wait for
 * itself for ever): the port is ours and the host one of our addresses
 * or a loopback one. */
static bool is_self(struct repl *r, const char *host, int port)
{
	struct settings *cfg = r->srv->cfg;
	if (port != cfg->port)
		return false;
	if (!strcmp(host, "localhost") || !strncmp(host, "127.", 4) || !strcmp(host, "::1"))
		return true;
	const char *b = cfg->bind ? cfg->bind : "";
	size_t hl = strlen(host);
	for (const char *q = b; (q = strstr(q, host)); q += hl)
		if ((q == b || q[-1] == ' ') && (q[hl] == 0 || q[hl] == ' '))
			return true;
	return !strcmp(host, "0.0.0.0");
}

int repl_replicaof(struct repl *r, const char *host, int port, char *err, size_t errlen)
{
	struct server *srv = r->srv;
	if (host && is_self(r, host, port)) {
		snprintf(err, errlen, "ERR Can't replicate from myself: %s:%d is this server", host, port);
		return -EINVAL;
	}
	pthread_mutex_lock(&r->mu);
	struct link *old = r->link;
	if (host && old && !strcmp(old->host, host) && old->port == port) {
		pthread_mutex_unlock(&r->mu);
		return 1;
	}
	r->link = NULL;
	/* a primary turned replica continues its own history (Redis: the
	 * master cached from itself): it asks for a partial resync */
	if (host && !old && r->started)
		r->fresh = false;
	if (!host && old) {
		/* PSYNC2: our siblings were at our offsets under our primary's
		 * id; they continue from us with it as the second id */
		uint64_t seq;
		uint64_t end = stream_position(srv->stream, &seq);
		memcpy(r->replid2, r->replid, 41);
		r->second_off = (long long)end + 1;
		repl_new_id(r->replid);
		stream_set_id(srv->stream, r->replid);
	}
	pthread_mutex_unlock(&r->mu);
	if (old) {
		link_stop(old);
		link_join(old);
	}
	if (!host) {
		if (old)
			zr_log(ZR_LOG_NOTICE, "MASTER MODE enabled (user request from REPLICAOF NO ONE)");
		atomic_store_explicit(&srv->repl_link_up, 0, memory_order_relaxed);
		atomic_store_explicit(&srv->repl_replica, 0, memory_order_relaxed);
		store_set_replica_mode(srv->store, false);
		return 0;
	}
	/* a primary turned replica: its replicas must follow the new history */
	repl_drop_peers(r);
	atomic_store_explicit(&srv->repl_replica, 1, memory_order_relaxed);
	store_set_replica_mode(srv->store, true);
	stream_set_backlog(srv->stream, true);
	zr_log(ZR_LOG_NOTICE, "REPLICAOF %s:%d enabled", host, port);
	struct link *l = link_start(r, host, port);
	pthread_mutex_lock(&r->mu);
	r->link = l;
	pthread_mutex_unlock(&r->mu);
	return 0;
}

/* --- timer ---------------------------------------------------------------------------- */

static void *timer_main(void *arg)
{
	struct repl *r = arg;
	pthread_mutex_lock(&r->mu);
	while (!r->stopping) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += REPL_TICK_MS * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&r->cv, &r->mu, &ts);
		recompute_acks(r);
		if (r->waits)
			serve_waits(r, true);
		pthread_mutex_unlock(&r->mu);
		apply_backlog_size(r);
		pthread_mutex_lock(&r->mu);
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

/* `replicaof host port` of the start-up settings, or NULL. */
struct start_primary {
	char host[256];
	int port;
	bool set;
};

static void read_replicaof(const char *name, const char *value, void *ctx)
{
	struct start_primary *sp = ctx;
	if (strcasecmp(name, "replicaof") || !value[0])
		return;
	char host[256];
	int port;
	if (sscanf(value, "%255s %d", host, &port) == 2 && strcasecmp(host, "no")) {
		snprintf(sp->host, sizeof(sp->host), "%s", host);
		sp->port = port;
		sp->set = true;
	}
}

struct repl *repl_create(struct server *srv, const struct load_apply *apply, unsigned load_threads)
{
	struct repl *r = zr_calloc(1, sizeof(*r));
	r->srv = srv;
	r->apply = *apply;
	r->load_threads = load_threads ? load_threads : 1;
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	/* the history this server's data belongs to (a snapshot's origin,
	 * persist.h), or a new one */
	stream_origin(srv->stream, r->replid);
	r->fresh = !r->replid[0];
	if (!r->replid[0]) {
		repl_new_id(r->replid);
		stream_set_id(srv->stream, r->replid);
	}
	clear_id2(r);
	apply_backlog_size(r);
	return r;
}

void repl_start(struct repl *r)
{
	struct server *srv = r->srv;
	if (pthread_create(&r->timer, NULL, timer_main, r) != 0) {
		zr_log(ZR_LOG_WARNING, "replication: no timer thread (WAIT timeouts will not fire)");
		r->no_timer = true;
	}
	struct start_primary sp = { .set = false };
	settings_get(srv->cfg, "replicaof", read_replicaof, &sp);
	if (sp.set) {
		char err[256];
		if (repl_replicaof(r, sp.host, sp.port, err, sizeof(err)) < 0)
			zr_log(ZR_LOG_WARNING, "replicaof %s %d: %s", sp.host, sp.port, err);
	}
	r->started = true;
}

void repl_destroy(struct repl *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->mu);
	r->stopping = true;
	struct link *l = r->link;
	r->link = NULL;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	if (r->started && !r->no_timer)
		pthread_join(r->timer, NULL);
	if (l) {
		link_stop(l);
		link_join(l);
	}
	repl_drop_peers(r);
	pthread_mutex_lock(&r->mu);
	while (r->npeers)
		pthread_cond_wait(&r->cv, &r->mu);
	while (r->waits) {
		struct wait_req *w = r->waits;
		r->waits = w->next;
		zr_free(w);
	}
	pthread_mutex_unlock(&r->mu);
	pthread_cond_destroy(&r->cv);
	pthread_mutex_destroy(&r->mu);
	zr_free(r);
}

/* --- INFO and ROLE -------------------------------------------------------------------- */

void repl_info(struct repl *r, struct textbuf *t)
{
	struct server *srv = r->srv;
	struct stream_stats st;
	stream_stats(srv->stream, &st);
	pthread_mutex_lock(&r->mu);
	struct link *l = r->link;
	int64_t now = zr_time_ms();
	if (l) {
		int up = atomic_load_explicit(&l->up, memory_order_relaxed);
		int64_t io = atomic_load_explicit(&l->last_io_ms, memory_order_relaxed);
		int syncing = atomic_load_explicit(&l->syncing, memory_order_relaxed);
		textbuf_printf(t,
			       "role:slave\r\nmaster_host:%s\r\nmaster_port:%d\r\nmaster_link_status:%s\r\n"
			       "master_last_io_seconds_ago:%lld\r\nmaster_sync_in_progress:%d\r\n"
			       "slave_read_repl_offset:%" PRIu64 "\r\nslave_repl_offset:%" PRIu64 "\r\n",
			       l->host, l->port, up ? "up" : "down",
			       io ? (long long)((now - io) / 1000) : -1LL, syncing, st.end_offset,
			       st.end_offset);
		if (syncing)
			textbuf_printf(t,
				       "master_sync_total_bytes:-1\r\nmaster_sync_read_bytes:%" PRIu64
				       "\r\nmaster_sync_left_bytes:-1\r\nmaster_sync_perc:0.00\r\n"
				       "master_sync_last_io_seconds_ago:%lld\r\n",
				       atomic_load_explicit(&l->sync_bytes, memory_order_relaxed),
				       io ? (long long)((now - io) / 1000) : -1LL);
		if (!up) {
			int64_t since = atomic_load_explicit(&l->down_since_ms, memory_order_relaxed);
			textbuf_printf(t, "master_link_down_since_seconds:%lld\r\n",
				       since ? (long long)((now - since) / 1000) : -1LL);
		}
		textbuf_printf(t, "slave_priority:100\r\nslave_read_only:%d\r\nreplica_announced:1\r\n",
			       atomic_load_explicit(&srv->cfg->replica_read_only, memory_order_relaxed));
		/* zarisd's own: how the stream's records were applied (by
		 * shard in parallel batches, or alone: apply_pool.h) */
		textbuf_printf(t,
			       "replica_apply_threads:%u\r\nreplica_applied_parallel:%" PRIu64
			       "\r\nreplica_applied_alone:%" PRIu64 "\r\n",
			       atomic_load_explicit(&r->apply_threads, memory_order_relaxed),
			       atomic_load_explicit(&r->applied_batched, memory_order_relaxed),
			       atomic_load_explicit(&r->applied_alone, memory_order_relaxed));
	} else {
		textbuf_printf(t, "role:master\r\n");
	}
	unsigned online = 0;
	for (struct peer *p = r->peers; p; p = p->next)
		online++;
	textbuf_printf(t, "connected_slaves:%u\r\n", online);
	if (!l) {
		int minr = atomic_load_explicit(&srv->cfg->min_replicas_to_write, memory_order_relaxed);
		if (minr)
			textbuf_printf(t, "min_slaves_good_slaves:%d\r\n",
				       atomic_load_explicit(&srv->repl_good_replicas, memory_order_relaxed));
	}
	unsigned i = 0;
	for (struct peer *p = r->peers; p; p = p->next, i++) {
		int64_t at = atomic_load_explicit(&p->ack_ms, memory_order_relaxed);
		textbuf_printf(t, "slave%u:ip=%s,port=%d,state=%s,offset=%" PRIu64 ",lag=%lld\r\n", i, p->ip,
			       p->port,
			       atomic_load_explicit(&p->state, memory_order_relaxed) == PEER_ONLINE
				       ? "online"
				       : "wait_bgsave",
			       atomic_load_explicit(&p->ack_off, memory_order_relaxed),
			       at ? (long long)((now - at) / 1000) : -1LL);
	}
	textbuf_printf(t,
		       "master_failover_state:no-failover\r\nmaster_replid:%s\r\nmaster_replid2:%s\r\n"
		       "master_repl_offset:%" PRIu64 "\r\nsecond_repl_offset:%lld\r\n"
		       "repl_backlog_active:%d\r\nrepl_backlog_size:%" PRIu64 "\r\n"
		       "repl_backlog_first_byte_offset:%" PRIu64 "\r\nrepl_backlog_histlen:%" PRIu64 "\r\n",
		       r->replid, r->replid2, st.end_offset, r->second_off, st.backlog ? 1 : 0, st.tail,
		       st.backlog ? st.first_offset + 1 : 0, st.backlog ? st.ring_bytes : 0);
	pthread_mutex_unlock(&r->mu);
}

void repl_sync_counts(struct repl *r, uint64_t out[3])
{
	out[0] = r ? atomic_load_explicit(&r->sync_full, memory_order_relaxed) : 0;
	out[1] = r ? atomic_load_explicit(&r->sync_partial_ok, memory_order_relaxed) : 0;
	out[2] = r ? atomic_load_explicit(&r->sync_partial_err, memory_order_relaxed) : 0;
}

void repl_role(struct repl *r, struct obuf *out)
{
	struct server *srv = r->srv;
	uint64_t seq;
	uint64_t end = stream_position(srv->stream, &seq);
	pthread_mutex_lock(&r->mu);
	struct link *l = r->link;
	if (l) {
		int up = atomic_load_explicit(&l->up, memory_order_relaxed);
		int syncing = atomic_load_explicit(&l->syncing, memory_order_relaxed);
		reply_array(out, 5);
		reply_bulk_cstr(out, "slave");
		reply_bulk_cstr(out, l->host);
		reply_long(out, l->port);
		reply_bulk_cstr(out, up ? "connected" : syncing ? "sync" : "connect");
		reply_long(out, (long long)end);
	} else {
		unsigned n = 0;
		for (struct peer *p = r->peers; p; p = p->next)
			n++;
		reply_array(out, 3);
		reply_bulk_cstr(out, "master");
		reply_long(out, (long long)end);
		reply_array(out, n);
		for (struct peer *p = r->peers; p; p = p->next) {
			char port[16];
			snprintf(port, sizeof(port), "%d", p->port);
			reply_array(out, 3);
			reply_bulk_cstr(out, p->ip);
			reply_bulk_cstr(out, port);
			reply_bulk_ll(out,
				      (long long)atomic_load_explicit(&p->ack_off, memory_order_relaxed));
		}
	}
	pthread_mutex_unlock(&r->mu);
}
