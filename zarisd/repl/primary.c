/* repl/primary — one replica's link on its primary: the sync (partial
 * from the ring, or full: a snapshot straight to the socket, no file),
 * then the stream; a reader thread takes its acknowledgements. The sender
 * is the thread repl_attach started; it starts the reader once the stream
 * flows, and when either ends (the replica went, an error, repl-timeout
 * without an ack, REPLICAOF) it ends both and lets go of the peer. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "zarisd/core/log.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"
#include "zarisd/journal/format.h"
#include "zarisd/journal/stream.h"
#include "zarisd/persist/persist.h"
#include "zarisd/persist/snapshot.h"
#include "zarisd/proto/resp_reader.h"
#include "zarisd/repl/repl.h"
#include "zarisd/repl/repl_int.h"
#include "zarisd/repl/sock.h"
#include "zarisd/server/server.h"
#include "zarisd/server/settings.h"

#define SEND_TIMEOUT_MS(r) (atomic_load_explicit(&(r)->srv->cfg->repl_timeout, memory_order_relaxed) * 1000)
/* What a sender takes from the stream at once: the rest waits in the
 * ring, where the replica limits below see how far behind it is. */
#define SEND_CHUNK (1u << 20)

/* client-output-buffer-limit replica <hard> <soft> <seconds>, as Redis
 * applies it to a replica's output buffer: a replica more than <hard>
 * bytes behind the stream, or more than <soft> for <seconds> in a row, is
 * dropped (it resyncs); the stream's writers never wait for a replica.
 * <hard> 0: no hard limit (the ring then keeps all it is behind). */
static size_t hard_limit(const struct repl *r)
{
	unsigned long long v =
		atomic_load_explicit(&r->srv->cfg->obuf_replica_hard_limit, memory_order_relaxed);
	return v ? (size_t)v : SIZE_MAX;
}

struct full_sync {
	struct peer *p;
	struct stream_consumer *cons;
	uint64_t offset, seq;
	bool announced;
};

/* At the snapshot's instant, every shard lock held: the stream's end is
 * the sync's offset and the replica's cursor starts there. */
static uint64_t sync_instant(void *arg, struct snapshot_origin *origin)
{
	struct full_sync *fs = arg;
	struct stream *s = fs->p->r->srv->stream;
	stream_set_backlog(s, true);
	fs->cons = stream_consumer_open(s, false, &fs->seq);
	stream_consumer_set_drop(fs->cons, hard_limit(fs->p->r));
	fs->offset = stream_origin(s, origin->id);
	origin->offset = fs->offset;
	return fs->seq;
}

static int sync_write(void *arg, const void *p, size_t n)
{
	struct full_sync *fs = arg;
	struct peer *peer = fs->p;
	if (atomic_load_explicit(&peer->stop, memory_order_relaxed))
		return -ECANCELED;
	if (!fs->announced) {
		char line[128];
		char id[41];
		repl_replid(peer->r, id);
		int len = snprintf(line, sizeof(line), "+FULLRESYNC %s %" PRIu64 "\r\n", id, fs->offset);
		int r = sock_send_all(peer->fd, line, (size_t)len, SEND_TIMEOUT_MS(peer->r));
		if (r < 0)
			return r;
		fs->announced = true;
	}
	return sock_send_all(peer->fd, p, n, SEND_TIMEOUT_MS(peer->r));
}

/* Whether the replica's (id, offset) can continue from the ring: opens
 * its consumer there. OFFSET is PSYNC's: the first byte it wants, 1-based
 * as in Redis. */
static struct stream_consumer *try_partial(struct peer *p)
{
	struct repl *r = p->r;
	if (p->offset < 1)
		return NULL;
	uint64_t at = (uint64_t)p->offset - 1;
	pthread_mutex_lock(&r->mu);
	bool ours = !strcmp(p->replid, r->replid) ||
		    (!strcmp(p->replid, r->replid2) && r->second_off >= 0 && p->offset <= r->second_off);
	pthread_mutex_unlock(&r->mu);
	if (!ours)
		return NULL;
	uint64_t seq;
	struct stream_consumer *c = stream_consumer_open_at(r->srv->stream, at, false, &seq);
	if (c)
		stream_consumer_set_drop(c, hard_limit(r));
	return c;
}

/* Reads "REPLCONF ACK <offset> [SEQ <seq>]" requests until the link ends. */
static void *reader_main(void *arg)
{
	struct peer *p = arg;
	struct sockbuf b = { 0 };
	while (!atomic_load_explicit(&p->stop, memory_order_relaxed)) {
		ssize_t n = sockbuf_fill(&b, p->fd, 4096, 500);
		if (n == -ETIMEDOUT)
			continue;
		if (n < 0)
			break;
		size_t off = 0;
		bool acked = false;
		for (;;) {
			struct resp_reply req;
			long used = resp_reader_next(b.p + off, b.len - off, &req);
			if (used == 0)
				break;
			if (used < 0 || req.type != RESP_REPLY_ARRAY) {
				atomic_store_explicit(&p->stop, true, memory_order_relaxed);
				break;
			}
			const char *e = req.elems;
			const char *end = b.p + off + used;
			char words[5][32];
			int nw = 0;
			for (long long i = 0; i < req.count && e < end; i++) {
				struct resp_reply w;
				long wl = resp_reader_next(e, (size_t)(end - e), &w);
				if (wl <= 0)
					break;
				if (nw < 5 && w.type == RESP_REPLY_BULK) {
					size_t l = w.len < 31 ? w.len : 31;
					memcpy(words[nw], w.str, l);
					words[nw++][l] = 0;
				}
				e += wl;
			}
			if (nw >= 3 && !strcasecmp(words[0], "replconf") && !strcasecmp(words[1], "ack")) {
				atomic_store_explicit(&p->ack_off, strtoull(words[2], NULL, 10),
						      memory_order_relaxed);
				if (nw >= 5 && !strcasecmp(words[3], "seq"))
					atomic_store_explicit(&p->ack_seq, strtoull(words[4], NULL, 10),
							      memory_order_relaxed);
				atomic_store_explicit(&p->ack_ms, zr_time_ms(), memory_order_relaxed);
				acked = true;
			}
			off += (size_t)used;
		}
		sockbuf_consume(&b, off);
		if (acked)
			repl_acks_changed(p->r);
	}
	sockbuf_free(&b);
	atomic_store_explicit(&p->stop, true, memory_order_relaxed);
	return NULL;
}

/* A sender's view of its replica's limits (hard_limit above). */
struct sender {
	struct peer *p;
	struct stream_consumer *c;
	size_t hard;
	int64_t over_soft_since; /* 0: not over the soft limit */
};

/* Whether the replica went over a limit (logged once, here): checked
 * between sends and every 100 ms while a send waits for a replica that
 * does not read. */
static bool over_limit(void *arg)
{
	struct sender *sd = arg;
	struct peer *p = sd->p;
	struct settings *cfg = p->r->srv->cfg;
	if (atomic_load_explicit(&p->stop, memory_order_relaxed))
		return true;
	size_t h = hard_limit(p->r); /* CONFIG SET applies to linked replicas too */
	if (h != sd->hard)
		stream_consumer_set_drop(sd->c, sd->hard = h);
	if (stream_consumer_dropped(sd->c)) {
		zr_log(ZR_LOG_WARNING,
		       "Replica %s:%d fell more than %zu bytes behind the stream "
		       "(client-output-buffer-limit replica): link dropped, it will resync",
		       p->ip, p->port, sd->hard);
		return true;
	}
	unsigned long long soft = atomic_load_explicit(&cfg->obuf_replica_soft_limit, memory_order_relaxed);
	long long secs = atomic_load_explicit(&cfg->obuf_replica_soft_seconds, memory_order_relaxed);
	if (!soft || stream_consumer_behind(sd->c) <= soft) {
		sd->over_soft_since = 0;
		return false;
	}
	int64_t now = zr_time_ms();
	if (!sd->over_soft_since)
		sd->over_soft_since = now;
	if (now - sd->over_soft_since < secs * 1000)
		return false;
	zr_log(ZR_LOG_WARNING,
	       "Replica %s:%d stayed more than %llu bytes behind the stream for %lld s "
	       "(client-output-buffer-limit replica): link dropped, it will resync",
	       p->ip, p->port, soft, secs);
	return true;
}

/* Sends the stream from C's cursor until the link ends. */
static void stream_to(struct peer *p, struct stream_consumer *c)
{
	struct repl *r = p->r;
	struct jbuf out;
	jbuf_init(&out);
	int64_t last_send = zr_time_ms();
	struct sender sd = { .p = p, .c = c, .hard = hard_limit(r) };
	while (!over_limit(&sd)) {
		int64_t now = zr_time_ms();
		out.len = 0;
		uint64_t from, seq;
		size_t n = stream_take_max(c, &out, SEND_CHUNK, &from, &seq);
		if (n) {
			if (sock_send_all_or(p->fd, out.p, out.len, SEND_TIMEOUT_MS(r), over_limit, &sd) < 0)
				break;
			last_send = now;
			continue;
		}
		int period = atomic_load_explicit(&r->srv->cfg->repl_timeout, memory_order_relaxed);
		int64_t at = atomic_load_explicit(&p->ack_ms, memory_order_relaxed);
		if (at && now - at > (int64_t)period * 1000) {
			zr_log(ZR_LOG_WARNING, "Disconnecting timedout replica %s:%d", p->ip, p->port);
			break;
		}
		if (now - last_send >= 1000) { /* heartbeat: an empty frame header */
			static const unsigned char beat[JR_FRAME_HEADER];
			if (sock_send_all_or(p->fd, beat, sizeof(beat), SEND_TIMEOUT_MS(r), over_limit, &sd) <
			    0)
				break;
			last_send = now;
		}
		stream_wait(c, 100);
	}
	jbuf_free(&out);
}

void *peer_main(void *arg)
{
	struct peer *p = arg;
	struct repl *r = p->r;
	struct stream_consumer *c = try_partial(p);
	if (c) {
		atomic_fetch_add_explicit(&r->sync_partial_ok, 1, memory_order_relaxed);
		char line[96], id[41];
		repl_replid(r, id);
		int len = snprintf(line, sizeof(line), "+CONTINUE %s\r\n", id);
		zr_log(ZR_LOG_NOTICE,
		       "Replica %s:%d asks for synchronization: partial resync accepted from offset %lld",
		       p->ip, p->port, p->offset);
		if (sock_send_all(p->fd, line, (size_t)len, SEND_TIMEOUT_MS(r)) < 0)
			atomic_store_explicit(&p->stop, true, memory_order_relaxed);
	} else {
		if (strcmp(p->replid, "?"))
			atomic_fetch_add_explicit(&r->sync_partial_err, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&r->sync_full, 1, memory_order_relaxed);
		zr_log(ZR_LOG_NOTICE,
		       "Replica %s:%d asks for synchronization: full resync, snapshot to its socket", p->ip,
		       p->port);
		struct full_sync fs = { .p = p };
		struct snapshot_sink sink = { sync_write, &fs };
		struct snapshot_result res;
		int rc = persist_snapshot_to(r->srv->persist, &sink, sync_instant, &fs, &res);
		c = fs.cons;
		if (rc < 0) {
			zr_log(ZR_LOG_WARNING, "Full sync of replica %s:%d failed: %s", p->ip, p->port,
			       strerror(-rc));
			atomic_store_explicit(&p->stop, true, memory_order_relaxed);
		} else {
			zr_log(ZR_LOG_NOTICE,
			       "Synchronization with replica %s:%d: %" PRIu64 " keys, %" PRIu64
			       " bytes sent, offset %" PRIu64,
			       p->ip, p->port, res.keys, res.bytes, fs.offset);
		}
	}
	if (c && !atomic_load_explicit(&p->stop, memory_order_relaxed)) {
		atomic_store_explicit(&p->state, PEER_ONLINE, memory_order_relaxed);
		atomic_store_explicit(&p->ack_ms, zr_time_ms(), memory_order_relaxed);
		if (pthread_create(&p->reader, NULL, reader_main, p) == 0) {
			p->reader_started = true;
			stream_to(p, c);
		}
	}
	atomic_store_explicit(&p->stop, true, memory_order_relaxed);
	shutdown(p->fd, SHUT_RDWR);
	if (p->reader_started)
		pthread_join(p->reader, NULL);
	stream_consumer_free(c);
	zr_log(ZR_LOG_NOTICE, "Connection with replica %s:%d lost", p->ip, p->port);
	repl_peer_gone(r, p);
	return NULL;
}
