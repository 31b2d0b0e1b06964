/* server — see server.h. */
#include "zarisd/server/server.h"

#include "zarisd/server/settings.h"
#include "zarisd/store/store.h"
#include "zarisd/core/util.h"

void server_settings_changed(struct server *srv)
{
	struct settings *cfg = srv->cfg;
	store_set_lfu_params(srv->store, atomic_load_explicit(&cfg->lfu_log_factor, memory_order_relaxed),
			     atomic_load_explicit(&cfg->lfu_decay_time, memory_order_relaxed));
	store_set_evict_policy(srv->store, (enum store_evict_policy)atomic_load_explicit(
						   &cfg->maxmemory_policy, memory_order_relaxed));
	store_set_maxmemory_samples(srv->store,
				    atomic_load_explicit(&cfg->maxmemory_samples, memory_order_relaxed));
}

void server_wake(struct server *srv, unsigned worker)
{
	pthread_rwlock_rdlock(&srv->wake_lock);
	if (srv->wake)
		srv->wake(srv->wake_ctx, worker);
	pthread_rwlock_unlock(&srv->wake_lock);
}

void server_wake_all(struct server *srv)
{
	for (unsigned i = 0; i < srv->nworkers; i++)
		server_wake(srv, i);
}

void server_publish_durable(void *ctx, uint64_t seq)
{
	struct server *srv = ctx;
	atomic_store_explicit(&srv->journal_durable, seq, memory_order_release);
	server_wake_all(srv);
}

void server_request_shutdown(struct server *srv)
{
	/* release: workers that see shutdown=1 (acquire) stop after their turn */
	atomic_store_explicit(&srv->shutdown, 1, memory_order_release);
	server_wake_all(srv);
}

int64_t server_write_lease_remaining(struct server *srv)
{
	if (!srv->write_lease)
		return -1;
	int64_t until = atomic_load_explicit(&srv->write_lease_until_ms, memory_order_relaxed);
	int64_t now = zr_mono_us() / 1000;
	return until > now ? until - now : 0;
}
