/* persist — zarisd's persistence: snapshots (SAVE, BGSAVE, save rules, the
 * save at shutdown), the append-only log (appendonly, appendfsync,
 * BGREWRITEAOF and automatic rewrites), recovery at start-up and INFO
 * persistence. The pieces: journal/format.h (the one record format), snapshot.h
 * (fork-less point-in-time image), aof.h (the log writer, group commit),
 * load.h (recovery and the checker).
 *
 * The log and the snapshot are tied by the journal sequence: a snapshot
 * records the seq of its instant and cuts the log there, so recovery
 * loads the snapshot and replays exactly the records after it; a finished
 * snapshot deletes the log segments it covers (that is the rewrite:
 * BGREWRITEAOF is a BGSAVE). With appendonly no, only the snapshot loads.
 *
 * Directories: every save and the log use absolute paths taken from the
 * working directory when they start, so CONFIG SET dir (a chdir, in
 * settings.c) never splits one file across two directories. After it,
 * later snapshots (named by dbfilename, also settable) go to the new
 * directory, and with the log on a rewrite starts at once: its cut closes
 * the log in the old directory and opens the next segment in the new one
 * (stale segments there removed, the segment marked fresh), so each
 * directory on its own always recovers — the old one up to the cut, the
 * new one from the rewrite's snapshot on.
 *
 * Deletions no command made — evictions (maxmemory) and expiries (the
 * active cycle, and the lazy expiry of a key a command meets past its TTL)
 * — are journaled as DEL <key> from the store's deletion hook (installed by
 * commands/propagate.c, where every record is made), under the
 * key's shard lock (so each is ordered with the commands on that key and
 * with a snapshot's instant; the append takes only the stream's mutex). A
 * lazy expiry's DEL precedes the record of the command that met the key;
 * inside EXEC it is one of the transaction's records (propagate.c says why).
 * An expiry is not a change of the command that met it (Redis's dirty
 * count leaves it out): a read that expired a key writes no record of its
 * own. Replay needs the DELs less than a replica does — every record
 * replays with the wall clock it first ran with and a TTL is absolute, so
 * a replayed lookup sees the keys expired that were then — but they make
 * the log the whole story: a key the active cycle deleted stays deleted
 * after a restart (without its DEL it came back expired, and a wall clock
 * set back between runs would have revived it), and a replica that never
 * expires on its own (the store's replica mode) applies them and holds
 * what its primary holds.
 *
 * Threads: the dispatcher hooks run on workers; saves run on the calling
 * worker (SAVE) or a background thread (BGSAVE, rules, rewrites); a cron
 * thread checks the rules every 100 ms. One save at a time.
 */
#ifndef ZR_PERSIST_H
#define ZR_PERSIST_H

#include <stdbool.h>
#include <stdint.h>

#include <stdatomic.h>

struct persist;
struct settings;
struct store;
struct stream;
struct textbuf;

/* What SHUTDOWN asked of the final save (*persist_env.shutdown_save; the
 * values of server.h's enum server_shutdown_save). */
#define PERSIST_FINAL_DEFAULT 0 /* save when save rules are set */
#define PERSIST_FINAL_NOSAVE 1
#define PERSIST_FINAL_SAVE 2

/* What persistence reaches of the server: no more. The pointers outlive
 * the persist object; the settings are read as CONFIG SET leaves them
 * (their atomics, their lock for strings) and appendonly is switched back
 * off when turning the log on fails. */
struct persist_env {
	struct store *store;
	struct stream *stream; /* the change stream the log consumes */
	struct settings *cfg;
	unsigned nworkers;	    /* loader threads */
	_Atomic int64_t *lastsave;  /* unix seconds of the last save (LASTSAVE, INFO) */
	_Atomic int *shutdown_save; /* PERSIST_FINAL_*, set by SHUTDOWN */
	/* The log's durability report (aof.h): records up to SEQ are durable;
	 * publish it and wake the workers whose replies wait. Any thread. */
	void (*durable)(void *ctx, uint64_t seq);
	void *durable_ctx;
};

/* main: creates the persistence state (*OUT) from ENV and loads the data
 * (snapshot, then log tail), then starts the log (appendonly yes) and the
 * cron thread. The working directory is `dir` already. Returns 0, or
 * -errno after logging why (the server must not start; *OUT NULL). */
int persist_init(const struct persist_env *env, struct persist **out);
/* main, after the workers stopped: the final save (unless SHUTDOWN NOSAVE
 * or no save rules; always with SHUTDOWN SAVE), then the log is flushed
 * and closed. Frees P (NULL: nothing). */
void persist_shutdown(struct persist *p);

/* Every function below takes P NULL (unit tests, the bench floor) as "no
 * persistence": nothing is done, 0 / false returned. */

/* The dispatcher, around a whole-keyspace write outside EXEC (FLUSHALL,
 * SWAPDB): the gate orders it with a snapshot's instant (which takes it
 * for writing). */
void persist_gate_enter(struct persist *p);
void persist_gate_leave(struct persist *p);
/* The dispatcher, after a command: CHANGES it made, for the save rules
 * and rdb_changes_since_last_save (Redis's server.dirty). */
void persist_count_changes(struct persist *p, uint64_t changes);
/* Dispatcher, before a write command: 0, or the errno that keeps the log
 * from being written (appendonly on, a write or fsync failed and no later
 * one worked): Redis then refuses writes with -MISCONF. */
int persist_write_errno(struct persist *p);

/* SAVE: a snapshot now, on this thread (other workers keep serving).
 * Returns 0, -EBUSY (one runs) or -errno. */
int persist_save(struct persist *p);
/* BGSAVE / BGREWRITEAOF: starts one in the background. SCHEDULE: when
 * one already runs, do it after (returns 1). Returns 0, 1, or -EBUSY. */
int persist_bgsave(struct persist *p, bool rewrite, bool schedule);
bool persist_bg_running(struct persist *p, bool *rewrite);

/* --- replication (repl/) ------------------------------------------------ */

struct snapshot_sink;
struct snapshot_result;
struct snapshot_origin;

/* A primary's full sync: a snapshot to SINK (a replica's socket), taken
 * as a save takes it (one at a time, the whole-keyspace gate ordered with
 * its instant) but cutting no log and counted as no save. AT_INSTANT(CTX)
 * runs with every shard lock held and returns the seq of the instant.
 * Returns snapshot_write_sink's result. */
int persist_snapshot_to(struct persist *p, const struct snapshot_sink *sink,
			uint64_t (*at_instant)(void *ctx, struct snapshot_origin *origin), void *ctx,
			struct snapshot_result *out);
/* A replica's full sync, in two steps around the load of the received
 * snapshot, so that a crash at any point leaves on disk the old data or
 * the complete new copy, never a mix: BEGIN stops saves until END and,
 * with the log on, stops it and removes its segments (the old snapshot
 * alone is then the old data); END renames SNAP_PATH (the received file,
 * fsynced, in the working directory) over dbfilename (the new copy), then
 * restarts the log from the stream's seq now (appendonly yes). OK false:
 * the load failed; SNAP_PATH is removed and the log restarted with a
 * rewrite of whatever the keyspace holds. */
void persist_replace_begin(struct persist *p);
void persist_replace_end(struct persist *p, const char *snap_path, bool ok);

/* CONFIG SET: applies appendonly / appendfsync now; a changed working
 * directory (CONFIG SET dir) starts the rewrite that moves the log. */
void persist_settings_changed(struct persist *p);
/* INFO persistence, Redis's field names. */
void persist_info(struct persist *p, struct textbuf *t);

/* DEBUG JOURNAL-STALL <ms> [<limit>]: the log writer sleeps MS before its
 * next write (a slow disk, for the back-pressure test); LIMIT > 0 sets the
 * log buffer bound (aof.h). Returns 0, or -ENOTCONN when the log is off. */
int persist_debug_journal(struct persist *p, long long stall_ms, long long limit);

/* zarisd --check-data DIR [--fix]: exit code. */
int persist_check_data(const char *dir, bool fix);

/* Shutdown when net_serve gave up on workers still running a command
 * (net.h, -EBUSY): stops the save rules, then the final save when one is
 * due, allowed WAIT_MS to take every shard lock (a busy worker may hold
 * one); once past that instant it is waited for, and no reply is sent any
 * more (persist_replies_frozen: a later write is not in the image). Then the append-only log, if on, is written and
 * fsynced up to its last committed record and frozen (aof_freeze): every
 * acknowledged write is on disk. Returns 0 (saved, or no save was due),
 * the save's -errno, or -ETIMEDOUT (logged: not saved, the files on disk
 * are as they were). Frees nothing, as workers still run: the caller ends
 * the process. Main thread. */
int persist_shutdown_busy(struct persist *p, int64_t wait_ms);
/* Whether that final save passed its instant: workers send no more
 * replies. Any thread; a worker that ran a command after the instant sees
 * it set (the shard locks order it). */
bool persist_replies_frozen(const struct persist *p);

#endif
