/* persist — zarisd's persistence: snapshots (SAVE, BGSAVE, save rules, the
 * save at shutdown), the append-only log (appendonly, appendfsync,
 * BGREWRITEAOF and automatic rewrites), recovery at start-up and INFO
 * persistence. The pieces: journal.h (the one record format), snapshot.h
 * (fork-less point-in-time image), aof.h (the log writer, group commit),
 * load.h (recovery and the checker).
 *
 * The log and the snapshot are tied by the journal sequence: a snapshot
 * records the seq of its instant and cuts the log there, so recovery
 * loads the snapshot and replays exactly the records after it; a finished
 * snapshot deletes the log segments it covers (that is the rewrite:
 * BGREWRITEAOF is a BGSAVE). With appendonly no, only the snapshot loads.
 *
 * Threads: the dispatcher hooks run on workers; saves run on the calling
 * worker (SAVE) or a background thread (BGSAVE, rules, rewrites); a cron
 * thread checks the rules every 100 ms. One save at a time.
 */
#ifndef ZR_PERSIST_H
#define ZR_PERSIST_H

#include <stdbool.h>
#include <stdint.h>

struct server;
struct client;
struct command;
struct textbuf;

/* main: creates srv->persist from the settings and loads the data
 * (snapshot, then log tail), then starts the log (appendonly yes) and the
 * cron thread. The working directory is `dir` already. Returns 0, or
 * -errno after logging why (the server must not start). */
int persist_init(struct server *srv);
/* main, after the workers stopped: the final save (unless SHUTDOWN NOSAVE
 * or no save rules; always with SHUTDOWN SAVE), then the log is flushed
 * and closed. Frees srv->persist. */
void persist_shutdown(struct server *srv);

/* Dispatcher, around each handler, shard locks held: BEGIN returns a token
 * for END. END journals the command when it changed the keyspace. */
uint64_t persist_command_begin(struct client *c, const struct command *cmd);
void persist_command_end(struct client *c, const struct command *cmd, uint64_t token);

/* SAVE: a snapshot now, on this thread (other workers keep serving).
 * Returns 0, -EBUSY (one runs) or -errno. */
int persist_save(struct server *srv);
/* BGSAVE / BGREWRITEAOF: starts one in the background. SCHEDULE: when
 * one already runs, do it after (returns 1). Returns 0, 1, or -EBUSY. */
int persist_bgsave(struct server *srv, bool rewrite, bool schedule);
bool persist_bg_running(struct server *srv, bool *rewrite);

/* CONFIG SET: applies appendonly / appendfsync now. */
void persist_settings_changed(struct server *srv);
/* INFO persistence, Redis's field names. */
void persist_info(struct server *srv, struct textbuf *t);

/* zarisd --check-data DIR [--fix]: exit code. */
int persist_check_data(const char *dir, bool fix);

#endif
