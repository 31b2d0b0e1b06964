/* registry — every connected client, grouped by worker, so that commands
 * on one worker can list (CLIENT LIST, INFO clients) and kill (CLIENT KILL)
 * clients owned by another.
 *
 * Each worker's list has its own mutex; a client is added and removed only
 * by its owning worker. Visitors run under that worker's mutex and may read
 * only the client's "shared" fields (client.h) and its name. Killing sets
 * kill_requested and wakes the owner, which closes the connection on its
 * own thread: no thread ever touches another worker's socket.
 */
#ifndef ZR_REGISTRY_H
#define ZR_REGISTRY_H

#include <stdbool.h>
#include <stdint.h>

struct client;
struct server;

struct registry *registry_create(unsigned nworkers);
void registry_destroy(struct registry *r);

/* Owning worker only. */
void registry_add(struct registry *r, struct client *c);
void registry_remove(struct registry *r, struct client *c);
/* Replaces c's name (NAME consumed, may be NULL); owning worker only. */
void registry_set_name(struct registry *r, struct client *c, char *name);

/* The client of WORKER with id ID, or NULL. Only WORKER's own thread may
 * call it (the index is the owner's alone). */
struct client *registry_find_local(struct registry *r, unsigned worker, uint64_t id);

/* Calls FN for every client of every worker, under each worker's lock in
 * turn. FN must not block or take shard locks. */
typedef void (*registry_visit_fn)(struct client *c, void *ctx);
void registry_foreach(struct registry *r, registry_visit_fn fn, void *ctx);

/* Connected clients, all workers. */
uint64_t registry_count(struct registry *r);

/* Marks C (visited under its worker's lock) for closing and remembers to
 * wake its worker; call registry_flush_kills() after the visit. */
void registry_mark_kill(struct registry *r, struct client *c);
/* Wakes every worker that has clients marked since the last call. */
void registry_flush_kills(struct registry *r, struct server *srv);

#endif
