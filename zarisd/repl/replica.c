/* repl/replica — this server's link to its primary: one thread that
 * connects, shakes hands, syncs (full: the snapshot received into a file,
 * then loaded in place of the keyspace; partial: nothing to load), then
 * applies the stream's records and acknowledges them, and on any failure
 * reconnects with a backoff (100 ms doubling to 5 s) and resyncs, partially
 * when its offset is still in the primary's ring.
 *
 * Each record is applied through the dispatcher's locked path (the applier
 * of persist/load.h) and, still under its locks, appended as it came to
 * this server's own stream (replay_applied_fn): so the replica's stream,
 * offsets and seqs are its primary's, its own replicas, log and snapshots
 * see each record applied and in the stream or neither. A record that
 * cannot be applied closes the link (logged with its offset), never
 * skipped: the next sync asks for it again.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "zarisd/core/log.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"
#include "zarisd/journal/format.h"
#include "zarisd/journal/replay.h"
#include "zarisd/journal/stream.h"
#include "zarisd/persist/fileio.h"
#include "zarisd/persist/load.h"
#include "zarisd/persist/persist.h"
#include "zarisd/repl/apply_pool.h"
#include "zarisd/repl/repl.h"
#include "zarisd/repl/repl_int.h"
#include "zarisd/repl/sock.h"
#include "zarisd/server/server.h"
#include "zarisd/server/settings.h"
#include "zarisd/store/store.h"
#include "zarisd/store/write.h"

#define HANDSHAKE_TIMEOUT_MS 5000
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
#define ACK_EVERY_MS 1000

static int timeout_ms(struct link *l)
{
	return atomic_load_explicit(&l->r->srv->cfg->repl_timeout, memory_order_relaxed) * 1000;
}

static bool stopping(struct link *l)
{
	return atomic_load_explicit(&l->stop, memory_order_relaxed);
}

/* One request of L's handshake, its one-line reply in LINE. The reply is
 * waited for up to repl-timeout, as Redis's replica waits in every
 * handshake state: a primary answers PSYNC once a snapshot of its own is
 * done (a BGSAVE that runs), which can take longer than a connect. */
static int ask(struct link *l, int fd, struct sockbuf *b, char *line, size_t cap, int argc,
	       const char *const *argv)
{
	int r = sock_command(fd, timeout_ms(l), argc, argv);
	return r < 0 ? r : sockbuf_line(b, fd, timeout_ms(l), line, cap);
}

static int handshake(struct link *l, int fd, struct sockbuf *b)
{
	struct server *srv = l->r->srv;
	char line[512];
	int r = ask(l, fd, b, line, sizeof(line), 1, (const char *[]){ "PING" });
	if (r < 0)
		return r;
	if (line[0] == '-' && strncmp(line, "-NOAUTH", 7)) {
		zr_log(ZR_LOG_WARNING, "Error reply to PING from master: '%s'", line + 1);
		return -EPROTO;
	}
	pthread_mutex_lock(&srv->cfg->lock);
	char *pw = srv->cfg->masterauth && srv->cfg->masterauth[0] ? zr_strdup(srv->cfg->masterauth) : NULL;
	pthread_mutex_unlock(&srv->cfg->lock);
	if (pw) {
		r = ask(l, fd, b, line, sizeof(line), 2, (const char *[]){ "AUTH", pw });
		zr_free(pw);
		if (r < 0)
			return r;
		if (line[0] == '-') {
			zr_log(ZR_LOG_WARNING, "Unable to AUTH to MASTER: %s", line + 1);
			return -EACCES;
		}
	}
	char port[16];
	snprintf(port, sizeof(port), "%d", srv->cfg->port);
	r = ask(l, fd, b, line, sizeof(line), 3, (const char *[]){ "REPLCONF", "listening-port", port });
	if (r < 0)
		return r;
	r = ask(l, fd, b, line, sizeof(line), 5,
		(const char *[]){ "REPLCONF", "capa", "eof", "capa", "psync2" });
	return r < 0 ? r : 0;
}

static int send_ack(struct link *l, int fd)
{
	uint64_t seq;
	uint64_t off = stream_position(l->r->srv->stream, &seq);
	char o[32], s[32];
	snprintf(o, sizeof(o), "%" PRIu64, off);
	snprintf(s, sizeof(s), "%" PRIu64, seq);
	return sock_command(fd, timeout_ms(l), 5, (const char *[]){ "REPLCONF", "ACK", o, "SEQ", s });
}

/* --- full sync --------------------------------------------------------------------------------- */

/* Receives the snapshot that follows +FULLRESYNC into PATH (what of the
 * stream came with it stays in B). 0 once its JR_SNAP_END frame is in
 * and the file is fsynced, or -errno. */
static int receive_snapshot(struct link *l, int fd, struct sockbuf *b, const char *path)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -errno;
	size_t need_hdr = JR_FILE_HEADER;
	bool ended = false;
	int rc = 0;
	uint64_t total = 0;
	while (!ended && !stopping(l)) {
		size_t off = 0;
		if (need_hdr) {
			if (b->len >= need_hdr) {
				if (fwrite(b->p, 1, need_hdr, f) != need_hdr) {
					rc = -EIO;
					break;
				}
				off = need_hdr;
				need_hdr = 0;
			}
		}
		while (!need_hdr && b->len - off >= JR_FRAME_HEADER) {
			uint32_t plen;
			int whole = jr_frame_peek((unsigned char *)b->p + off, b->len - off, &plen);
			if (whole < 0 || plen == 0) { /* a snapshot has no heartbeats */
				rc = -EPROTO;
				break;
			}
			if (!whole)
				break;
			unsigned char kind = (unsigned char)b->p[off + JR_FRAME_HEADER];
			if (fwrite(b->p + off, 1, JR_FRAME_HEADER + plen, f) != JR_FRAME_HEADER + plen) {
				rc = -EIO;
				break;
			}
			off += JR_FRAME_HEADER + plen;
			if (kind == JR_SNAP_END) {
				ended = true;
				break;
			}
		}
		total += off;
		atomic_store_explicit(&l->sync_bytes, total, memory_order_relaxed);
		sockbuf_consume(b, off);
		if (rc < 0 || ended)
			break;
		ssize_t n = sockbuf_fill(b, fd, 1u << 20, timeout_ms(l));
		if (n < 0) {
			rc = (int)n;
			break;
		}
		atomic_store_explicit(&l->last_io_ms, zr_time_ms(), memory_order_relaxed);
	}
	if (!ended && !rc)
		rc = -ECANCELED;
	if (fflush(f) != 0 || fsync(fileno(f)) != 0)
		rc = rc ? rc : -EIO;
	fclose(f);
	if (rc < 0)
		unlink(path);
	return rc;
}

/* Replaces the keyspace with the snapshot at PATH; the stream continues
 * at (its seq, OFFSET). Clients get -LOADING meanwhile. */
static int load_synced(struct link *l, const char *path, uint64_t offset)
{
	struct server *srv = l->r->srv;
	atomic_store_explicit(&srv->repl_loading, 1, memory_order_seq_cst);
	/* a command that passed the dispatcher's check before the flag was
	 * set is done once it let go of its shard locks */
	store_lock_all(srv->store);
	store_unlock_all(srv->store);
	persist_replace_begin(srv->persist);
	/* the flush is the load's write (load_snapshot's threads open their
	 * own brackets) */
	struct store_write w;
	store_write_begin(&w, STORE_WRITE_LOAD, "a full sync", true, 0);
	store_flushall(srv->store);
	struct load_result res = { 0 };
	char err[512];
	int rc = load_snapshot(srv->store, path, l->r->load_threads, &res, err, sizeof(err));
	if (rc < 0) {
		zr_log(ZR_LOG_WARNING, "Failed loading the snapshot received from the master: %s", err);
		store_flushall(srv->store);
		stream_reset(srv->stream, 0, 0);
	} else {
		stream_reset(srv->stream, res.last_seq, offset);
		zr_log(ZR_LOG_NOTICE,
		       "MASTER <-> REPLICA sync: finished with success: %" PRIu64
		       " keys loaded, journal seq %" PRIu64 ", offset %" PRIu64,
		       res.keys_loaded, res.last_seq, offset);
	}
	store_write_end(&w);
	persist_replace_end(srv->persist, path, rc == 0);
	atomic_store_explicit(&srv->repl_loading, 0, memory_order_release);
	return rc;
}

/* --- the stream ------------------------------------------------------------------------------- */

/* A JR_COMMIT frame that came while other transactions were still open:
 * it goes to our stream in its place among the records the replay holds,
 * once they are applied. */
struct held_commit {
	uint64_t seq;
	unsigned char *frame;
	size_t len;
};

struct applying {
	struct link *l;
	void *applier;		 /* the link thread's own (records applied alone) */
	struct apply_pool *pool; /* NULL: every record applied on the link's thread */
	bool diverged;		 /* a batch failed part-applied: only a full sync mends it */
	struct jbuf frame;
	struct held_commit *commits;
	size_t ncommits, capcommits, first; /* [first, ncommits) not yet in our stream */
	int rc;				    /* the first append error */
};

static void note_rc(struct applying *a, int r)
{
	if (r < 0 && !a->rc)
		a->rc = r;
}

/* Appends the held commits numbered below BELOW (all: UINT64_MAX). */
static void flush_commits(struct applying *a, uint64_t below)
{
	struct stream *s = a->l->r->srv->stream;
	while (a->first < a->ncommits && a->commits[a->first].seq < below) {
		struct held_commit *hc = &a->commits[a->first++];
		note_rc(a, stream_append_frame(s, hc->frame, hc->len, NULL));
		zr_free(hc->frame);
	}
	if (a->first == a->ncommits)
		a->first = a->ncommits = 0;
}

static void hold_commit(struct applying *a, uint64_t seq, const unsigned char *frame, size_t len)
{
	if (a->ncommits == a->capcommits) {
		a->capcommits = a->capcommits ? 2 * a->capcommits : 16;
		a->commits = zr_realloc(a->commits, a->capcommits * sizeof(*a->commits));
	}
	struct held_commit *hc = &a->commits[a->ncommits++];
	hc->seq = seq;
	hc->len = len;
	hc->frame = zr_malloc(len);
	memcpy(hc->frame, frame, len);
}

static void drop_commits(struct applying *a)
{
	for (size_t i = a->first; i < a->ncommits; i++)
		zr_free(a->commits[i].frame);
	zr_free(a->commits);
	a->commits = NULL;
	a->first = a->ncommits = a->capcommits = 0;
}

/* replay_applied_fn: the record goes to our stream under its locks,
 * after the held commits that came before it. */
static void applied(void *ctx, const struct jr_cmd *rec)
{
	struct applying *a = ctx;
	flush_commits(a, rec->seq);
	a->frame.len = 0;
	jbuf_u32(&a->frame, (uint32_t)rec->plen);
	jbuf_u32(&a->frame, 0); /* the stream seals it when it is taken */
	jbuf_put(&a->frame, rec->payload, rec->plen);
	jr_cmd_dest_as_replica(a->frame.p + JR_FRAME_HEADER, rec);
	note_rc(a, stream_append_frame(a->l->r->srv->stream, a->frame.p, a->frame.len, NULL));
}

/* apply_pool_append_fn: a batch's record goes to our stream in its place,
 * after the held commits that came before it. */
static int append_batched(void *ctx, const unsigned char *frame, size_t len, uint64_t seq)
{
	struct applying *a = ctx;
	flush_commits(a, seq);
	if (a->rc)
		return a->rc;
	return stream_append_frame(a->l->r->srv->stream, frame, len, NULL);
}

/* Applies the batch (apply_pool.h) under the whole-keyspace gate, so a
 * snapshot's instant comes before it or after all of it is in the stream. */
static int run_batch(struct applying *a, char *err, size_t errlen)
{
	if (!a->pool || !apply_pool_pending(a->pool))
		return 0;
	struct persist *persist = a->l->r->srv->persist;
	atomic_fetch_add_explicit(&a->l->r->applied_batched, apply_pool_pending(a->pool),
				  memory_order_relaxed);
	persist_gate_enter(persist);
	int rc = apply_pool_run(a->pool, append_batched, a, err, errlen);
	persist_gate_leave(persist);
	if (rc < 0)
		a->diverged = true;
	return rc;
}

/* jr_apply_fn of the link's replay: a record of one shard, outside any
 * transaction, joins the batch; any other runs after the batch, alone,
 * on this thread (its hook, applied(), puts it in our stream). */
static int apply_record(void *ctx, const struct jr_cmd *rec, char *err, size_t errlen)
{
	struct applying *a = ctx;
	struct repl *r = a->l->r;
	if (a->pool && !rec->txn) {
		int shard = r->apply.record_shard(a->applier, rec);
		if (shard >= 0) {
			apply_pool_add(a->pool, rec, (unsigned)shard);
			return apply_pool_full(a->pool) ? run_batch(a, err, errlen) : 0;
		}
	}
	int rc = run_batch(a, err, errlen);
	atomic_fetch_add_explicit(&r->applied_alone, 1, memory_order_relaxed);
	return rc < 0 ? rc : r->apply.record(a->applier, rec, err, errlen);
}

/* Logs the record that could not be applied (the replay's error, a
 * batch's in BATCH_ERR, or an append's errno) and its offset. */
static void log_refused(const struct applying *a, const struct jr_replay *rp, uint64_t at, int cr,
			const char *batch_err)
{
	const char *why = rp->rc ? rp->err : a->diverged && batch_err[0] ? batch_err : strerror(-cr);
	zr_log(ZR_LOG_WARNING,
	       "Replication stream: the record at offset %" PRIu64
	       " cannot be applied (%s): link closed, it is asked for again at the next sync",
	       rp->rc ? rp->err_pos : at, why);
}

/* Applies the stream until the link fails; B holds what came already. */
static int apply_stream(struct link *l, int fd, struct sockbuf *b)
{
	struct repl *r = l->r;
	struct server *srv = r->srv;
	struct applying a = { .l = l, .applier = r->apply.open_link(r->apply.ctx) };
	a.pool = apply_pool_new(&r->apply, r->load_threads);
	atomic_store_explicit(&r->apply_threads, a.pool ? r->load_threads : 1, memory_order_relaxed);
	jbuf_init(&a.frame);
	r->apply.set_hook(a.applier, applied, &a);
	struct jr_replay rp;
	jr_replay_init(&rp, stream_last_seq(srv->stream), apply_record, &a);
	atomic_store_explicit(&l->up, 1, memory_order_relaxed);
	atomic_store_explicit(&srv->repl_link_up, 1, memory_order_relaxed);
	int rc = send_ack(l, fd);
	uint64_t acked_seq = stream_last_seq(srv->stream);
	int64_t last_ack = zr_time_ms();
	char batch_err[256] = "";
	uint64_t seq;
	/* the stream offset of the frame being read (its records reach our
	 * stream later when batched or held) */
	uint64_t at = stream_position(srv->stream, &seq);
	while (rc == 0 && !stopping(l)) {
		size_t off = 0;
		while (b->len - off >= JR_FRAME_HEADER) {
			const unsigned char *h = (const unsigned char *)b->p + off;
			uint32_t plen;
			int whole = jr_frame_peek(h, b->len - off, &plen);
			if (whole < 0) {
				zr_log(ZR_LOG_WARNING,
				       "Replication stream: impossible frame length at offset %" PRIu64, at);
				rc = -EPROTO;
				break;
			}
			if (!whole)
				break;
			if (plen == 0) { /* heartbeat */
				off += JR_FRAME_HEADER;
				continue;
			}
			const unsigned char *pl = h + JR_FRAME_HEADER;
			if (!jr_frame_crc_ok(h, plen)) {
				zr_log(ZR_LOG_WARNING,
				       "Replication stream: checksum mismatch at offset %" PRIu64, at);
				rc = -EPROTO;
				break;
			}
			int cr = jr_replay_frame(&rp, pl, plen, at);
			if (cr >= 0 && pl[0] == JR_COMMIT) {
				uint64_t cseq = jr_commit_seq(pl);
				if (rp.nopen) { /* other transactions still open: in its place later */
					hold_commit(&a, cseq, h, JR_FRAME_HEADER + plen);
				} else if ((cr = run_batch(&a, batch_err, sizeof(batch_err))) >= 0) {
					flush_commits(&a, UINT64_MAX);
					cr = stream_append_frame(srv->stream, h, JR_FRAME_HEADER + plen,
								 NULL);
				}
			}
			if (cr >= 0 && a.rc)
				cr = a.rc;
			if (cr < 0) {
				log_refused(&a, &rp, at, cr, batch_err);
				rc = cr;
				break;
			}
			off += JR_FRAME_HEADER + plen;
			at += JR_FRAME_HEADER + plen;
		}
		sockbuf_consume(b, off);
		/* what this read brought is applied and in our stream before it
		 * is acknowledged */
		if (rc == 0 && (rc = run_batch(&a, batch_err, sizeof(batch_err))) < 0)
			log_refused(&a, &rp, at, rc, batch_err);
		if (rc < 0)
			break;
		int64_t now = zr_time_ms();
		uint64_t cur = stream_last_seq(srv->stream);
		if (cur != acked_seq || now - last_ack >= ACK_EVERY_MS) {
			if ((rc = send_ack(l, fd)) < 0)
				break;
			acked_seq = cur;
			last_ack = now;
		}
		ssize_t n = sockbuf_fill(b, fd, 1u << 20, ACK_EVERY_MS);
		if (n == -ETIMEDOUT) {
			int64_t io = atomic_load_explicit(&l->last_io_ms, memory_order_relaxed);
			if (zr_time_ms() - io > timeout_ms(l)) {
				zr_log(ZR_LOG_WARNING, "MASTER timeout: no data nor PING received...");
				rc = -ETIMEDOUT;
			}
			continue;
		}
		if (n < 0) {
			rc = (int)n;
			break;
		}
		atomic_store_explicit(&l->last_io_ms, zr_time_ms(), memory_order_relaxed);
	}
	if (rc == 0 && run_batch(&a, batch_err, sizeof(batch_err)) < 0)
		log_refused(&a, &rp, at, -EINVAL, batch_err);
	if (a.pool)
		apply_pool_discard(a.pool); /* cut before it ran: sent again */
	if (a.diverged) {
		zr_log(ZR_LOG_WARNING,
		       "Replication: records applied in parallel after the refused one are not in "
		       "this server's stream: the next sync is a full one");
		repl_forget_history(r);
	}
	size_t dropped = jr_replay_drop(&rp);
	if (dropped)
		zr_log(ZR_LOG_NOTICE,
		       "Replication link cut inside a transaction: %zu records not applied, asked for again",
		       dropped);
	jr_replay_free(&rp);
	drop_commits(&a);
	jbuf_free(&a.frame);
	apply_pool_free(a.pool);
	r->apply.close(a.applier);
	return rc;
}

/* --- the link ------------------------------------------------------------------------------------ */

/* One connection: handshake, sync, stream. True when it reached the stream. */
static bool session(struct link *l)
{
	struct repl *r = l->r;
	struct server *srv = r->srv;
	zr_log(ZR_LOG_NOTICE, "Connecting to MASTER %s:%d", l->host, l->port);
	int fd = sock_connect(l->host, l->port, HANDSHAKE_TIMEOUT_MS);
	if (fd < 0) {
		zr_log(ZR_LOG_WARNING, "Error condition on socket for SYNC: %s", strerror(-fd));
		return false;
	}
	atomic_store_explicit(&l->fd, fd, memory_order_relaxed);
	atomic_store_explicit(&l->last_io_ms, zr_time_ms(), memory_order_relaxed);
	struct sockbuf b = { 0 };
	bool streamed = false;
	int rc = handshake(l, fd, &b);
	char line[256];
	if (rc == 0) {
		char id[41], off[32];
		uint64_t seq;
		repl_replid(r, id);
		uint64_t end = stream_position(srv->stream, &seq);
		snprintf(off, sizeof(off), "%" PRIu64, end + 1);
		/* a server with no history yet asks for a full sync, as Redis's
		 * "PSYNC ? -1" */
		bool fresh = repl_fresh(r);
		rc = ask(l, fd, &b, line, sizeof(line), 3,
			 (const char *[]){ "PSYNC", fresh ? "?" : id, fresh ? "-1" : off });
	}
	if (rc == 0 && !strncmp(line, "+FULLRESYNC ", 12)) {
		char id[41];
		unsigned long long offset;
		if (sscanf(line + 12, "%40s %llu", id, &offset) != 2) {
			rc = -EPROTO;
		} else {
			zr_log(ZR_LOG_NOTICE, "Full resync from master: %s:%llu", id, offset);
			atomic_store_explicit(&l->syncing, 1, memory_order_relaxed);
			char path[64];
			snprintf(path, sizeof(path), "temp-sync-%d.snap", (int)getpid());
			rc = receive_snapshot(l, fd, &b, path);
			if (rc == 0) {
				repl_drop_peers(r); /* their history is not the new one */
				rc = load_synced(l, path, offset);
				if (rc == 0)
					repl_take_id(r, id);
			} else {
				zr_log(ZR_LOG_WARNING,
				       "Full sync from %s:%d interrupted (%s): the data is left as it was",
				       l->host, l->port, strerror(-rc));
			}
			atomic_store_explicit(&l->syncing, 0, memory_order_relaxed);
		}
	} else if (rc == 0 && !strncmp(line, "+CONTINUE", 9)) {
		char id[41];
		if (sscanf(line + 9, " %40s", id) == 1) {
			char mine[41];
			repl_replid(r, mine);
			if (strcmp(id, mine)) /* PSYNC2: the primary's history goes on under a new id */
				repl_take_id(r, id);
		}
		zr_log(ZR_LOG_NOTICE, "Successful partial resynchronization with master %s:%d", l->host,
		       l->port);
	} else if (rc == 0) {
		zr_log(ZR_LOG_WARNING, "Unexpected reply to PSYNC from master: %s", line);
		rc = -EPROTO;
	}
	if (rc == 0 && !stopping(l)) {
		streamed = true;
		rc = apply_stream(l, fd, &b);
	}
	/* master_link_down_since_seconds counts from the end of the last time
	 * in sync, as Redis's: a session that never reached the stream leaves
	 * it as it was (-1 when this link was never up), so the supervisor can
	 * tell how recently a replica had its primary's history */
	if (atomic_exchange_explicit(&l->up, 0, memory_order_relaxed))
		atomic_store_explicit(&l->down_since_ms, zr_time_ms(), memory_order_relaxed);
	atomic_store_explicit(&srv->repl_link_up, 0, memory_order_relaxed);
	atomic_store_explicit(&l->fd, -1, memory_order_relaxed);
	close(fd);
	sockbuf_free(&b);
	if (!stopping(l))
		zr_log(ZR_LOG_NOTICE, "Connection with master lost (%s)", rc ? strerror(-rc) : "closed");
	return streamed;
}

static void *link_main(void *arg)
{
	struct link *l = arg;
	int backoff = BACKOFF_MIN_MS;
	while (!stopping(l)) {
		if (session(l))
			backoff = BACKOFF_MIN_MS;
		for (int waited = 0; waited < backoff && !stopping(l); waited += 50) {
			struct timespec ts = { 0, 50 * 1000000L };
			nanosleep(&ts, NULL);
		}
		backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
	}
	return NULL;
}

struct link *link_start(struct repl *r, const char *host, int port)
{
	struct link *l = zr_calloc(1, sizeof(*l));
	l->r = r;
	l->host = zr_strdup(host);
	l->port = port;
	atomic_store(&l->fd, -1);
	atomic_store(&l->down_since_ms, 0); /* never up: INFO says -1 */
	if (pthread_create(&l->thread, NULL, link_main, l) != 0) {
		zr_log(ZR_LOG_WARNING, "replication: cannot start the link thread");
		atomic_store(&l->stop, true);
	}
	return l;
}

void link_stop(struct link *l)
{
	atomic_store_explicit(&l->stop, true, memory_order_relaxed);
	int fd = atomic_load_explicit(&l->fd, memory_order_relaxed);
	if (fd >= 0)
		shutdown(fd, SHUT_RDWR);
}

void link_join(struct link *l)
{
	pthread_join(l->thread, NULL);
	zr_free(l->host);
	zr_free(l);
}
