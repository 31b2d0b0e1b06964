/* write — the write bracket: every change of the keyspace happens between
 * store_write_begin() and store_write_end() on the thread that makes it.
 *
 * Why: a point-in-time snapshot (store_snap_begin) runs beside the
 * writers, and a writer that changes an entry in place must have looked it
 * up "for writing" so that the store kept the entry's pre-image first
 * (snap.c). Type handlers change their objects in place before telling
 * the store, so the store cannot see the change coming: it must know, at
 * the lookup, that the thread is writing. That, the writer's clock (a
 * write that replaces a key past its TTL expires it first, as Redis's
 * setKey), the change count (Redis's server.dirty) and the journal's
 * transaction are one state: the bracket. A writer outside any bracket
 * (a blocked client served after its command had ended) once lost keys
 * from snapshots; now the store's write paths check that a bracket is
 * open, and sanitizer builds abort with the call stack while release
 * builds count the breach (store_write_breaches, INFO's
 * write_outside_bracket) and log it once.
 *
 * Brackets nest (a script's commands inside EVAL, EXEC's queued commands,
 * a replayed record's commands): the innermost is the open one, and its
 * changes are added to the bracket around it when it ends.
 *
 * Threads: a bracket belongs to the thread that began it and lives on its
 * stack; begin and end pair on that thread. The open bracket is found
 * through one per-thread pointer that only begin and end set.
 */
#ifndef ZARIS_STORE_WRITE_H
#define ZARIS_STORE_WRITE_H

#include <stdbool.h>
#include <stdint.h>

/* Who writes: named in the breach log and kept for the writers that
 * differ (a replay applies its primary's versions). */
enum store_write_origin {
	STORE_WRITE_CLIENT,   /* a client's command (the dispatcher, EXEC, scripts, RF1 batches) */
	STORE_WRITE_REPLAY,   /* a journal record applied: the log at start-up, a replica link */
	STORE_WRITE_SERVE,    /* a blocked client served: its pop or move */
	STORE_WRITE_EXPIRY,   /* the active expiry cycle */
	STORE_WRITE_EVICTION, /* eviction under maxmemory */
	STORE_WRITE_LOAD,     /* a snapshot loaded: start-up, a replica's full sync */
	STORE_WRITE_TEARDOWN, /* store_destroy freeing what is left */
	STORE_WRITE_ORIGINS
};

/* One bracket. Invariant: open from store_write_begin to store_write_end,
 * which pair on one thread, innermost first. The fields below `outer`
 * are the journal's (commands/propagate.c), kept here so that one
 * bracket holds the whole write state. */
struct store_write {
	enum store_write_origin origin;
	const char *what;	   /* the command or writer (static), for the breach log */
	int64_t now_ms;		   /* the writer's clock, unix ms; 0: none (loading) */
	bool intent;		   /* may change entries: lookups keep snapshot pre-images */
	bool said;		   /* the writer said its change count (store_write_changes_are) */
	uint64_t said_n;	   /* that count */
	uint64_t dirty;		   /* changes stamped or freed inside (nested ones included) */
	struct store_write *outer; /* the bracket this one nests in; NULL: outermost */
	/* the journal's (propagate.c): */
	bool txn_open; /* EXEC or a script: its records form one transaction */
	uint64_t txn;  /* that transaction's id, once it made a record; 0: none yet */
	bool marked;   /* the command changed state the store does not count */
};

/* Opens W on the calling thread, inside the bracket open there (if any).
 * ORIGIN and WHAT say who writes; INTENT: the writer may change entries
 * (a read-only command opens one with false: its lookups still expire
 * keys lazily); NOW_MS its clock (0: none). W is the caller's until the
 * matching store_write_end. */
void store_write_begin(struct store_write *w, enum store_write_origin origin, const char *what, bool intent,
		       int64_t now_ms);
/* Closes W, which must be the open bracket, and adds its changes to the
 * one around it. */
void store_write_end(struct store_write *w);
/* The calling thread's open bracket, or NULL. */
struct store_write *store_write_open(void);
/* The outermost bracket with a transaction open around the calling
 * thread's writes (EXEC, a script), or NULL. */
struct store_write *store_write_txn(void);

/* Changes (writes, deletions, evictions) made inside the open bracket so
 * far (0 with none open). A command compares it around its handler to know
 * that it changed the keyspace (Redis's server.dirty). Expiries are not
 * counted: the deletion hook journals each, and Redis's dirty count
 * leaves them out (a GET that met an expired key changed nothing). */
uint64_t store_write_dirty(void);
/* For Redis's change count (server.dirty, INFO rdb_changes_since_last_save,
 * the save rules), a command that adds or removes elements of a collection
 * says how many (SADD of 3 new members: 3), and a command whose writes the
 * store stamps more than once (SETRANGE creating its key) says 1: the open
 * bracket's writer made N changes, whatever the store counted. */
void store_write_changes_are(uint64_t n);
/* W's change count for Redis: what its writer said, else what the store
 * counted inside it. */
uint64_t store_write_changes(const struct store_write *w);

/* Writes made outside any bracket since start-up (all threads): each is a
 * bug; INFO shows the count. */
uint64_t store_write_breaches(void);

#endif
