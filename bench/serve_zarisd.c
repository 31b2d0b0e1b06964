/* serve_zarisd — the floor on zarisd's own network loop: the same workers,
 * listeners, io backend, parser, output buffers and send path as zarisd
 * (zarisd/net/net.h), with srv->execute replaced by a canned responder
 * that touches no keyspace: GET -> a bulk string of value_size bytes,
 * PING -> +PONG, anything else -> +OK (serve.h). What zarisd costs above
 * this is its keyspace and command work.
 */
#include "bench/serve.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "zarisd/server/client.h"
#include "zarisd/server/info.h"
#include "zarisd/commands/dispatch.h"
#include "zarisd/net/msgq.h"
#include "zarisd/server/registry.h"
#include "zarisd/server/server.h"
#include "zarisd/server/settings.h"
#include "zarisd/commands/table.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"
#include "zarisd/net/net.h"
#include "zarisd/net/worker.h"
#include "zarisd/proto/reply.h"
#include "zarisd/store/store.h"

/* The canned GET value: written once before the workers start. */
static char *floor_value;
static size_t floor_value_len;

static int floor_execute(struct client *c)
{
	const struct resp_arg *cmd = &c->argv[0];
	if (zr_eq_nocase(cmd->ptr, cmd->len, "get"))
		reply_bulk(&c->out, floor_value, floor_value_len);
	else if (zr_eq_nocase(cmd->ptr, cmd->len, "ping"))
		reply_simple(&c->out, "PONG");
	else
		reply_ok(&c->out);
	return DISPATCH_DONE;
}

struct floor_ready {
	const struct serve_opts *o;
	const char *backend;
};

static void floor_on_ready(void *arg)
{
	struct floor_ready *r = arg;
	printf("serve: backend=zarisd port=%d threads=%u io=%s cores=%s\n", r->o->port, r->o->threads,
	       r->backend, r->o->cores ? r->o->cores : "-");
	fflush(stdout);
}

int serve_zarisd_run(const struct serve_opts *o, char *err, size_t errlen)
{
	zr_mem_thread_slot(0);
	zr_hash_init();
	command_table_init();
	struct settings cfg;
	settings_init(&cfg);
	char port[16];
	snprintf(port, sizeof(port), "%d", o->port);
	if (settings_set(&cfg, "port", port, true, err, errlen) < 0 ||
	    settings_set(&cfg, "bind", o->bind, true, err, errlen) < 0 ||
	    (o->cores && settings_set(&cfg, "cores", o->cores, true, err, errlen) < 0)) {
		settings_free(&cfg);
		return -EINVAL;
	}
	floor_value_len = o->value_size;
	floor_value = zr_malloc(floor_value_len + 1);
	memset(floor_value, 'x', floor_value_len);

	struct server srv = { 0 };
	srv.cfg = &cfg;
	pthread_rwlock_init(&srv.wake_lock, NULL);
	srv.execute = floor_execute;
	srv.cron_sample = info_sample;	/* as zarisd: the floor's timer costs what zarisd's does */
	srv.store = store_create(1, 0); /* the workers' timer expects one; it stays empty */
	srv.clients = registry_create(o->threads);
	srv.msgq = msgq_create(o->threads);
	srv.post = msgq_post;
	srv.start_ms = zr_time_ms();
	srv.start_mono_us = zr_mono_us();
	const struct net_backend *backend = net_choose_backend(0);
	struct floor_ready ready = { .o = o, .backend = backend->name };
	int rc = net_serve(&srv, backend, o->threads, cfg.cores, cfg.ncores, floor_on_ready, &ready);
	if (rc == -EBUSY)
		_exit(1); /* a worker did not stop (net.h): nothing may be freed */
	msgq_destroy(srv.msgq);
	registry_destroy(srv.clients);
	store_destroy(srv.store);
	ZR_FREE(floor_value);
	settings_free(&cfg);
	return rc < 0 ? rc : -EINTR; /* serving ended: a signal stopped it */
}
