/* coord — see coord.h. The thread's loop: keep the session alive, read the
 * cluster's keys, lead or release, run elections, publish the view. */
#include "supervisor/coord.h"

#include "supervisor/etcd.h"
#include "supervisor/log.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define COORD_TICK_MS 100

struct coord_shard_def {
	char name[SV_COORD_NAME];
	size_t n;
	char member[SV_COORD_MAX_MEMBERS][SV_COORD_NAME];
	bool persistent
		[SV_COORD_MAX_MEMBERS]; /* appendonly with appendfsync always: a restart keeps every acknowledged write */
	char *member_ptr[SV_COORD_MAX_MEMBERS];
};

/* Per shard, what only the thread keeps. */
struct coord_shard_state {
	int64_t absent_since_ms;      /* leader key first seen absent, 0 while present */
	char led[SV_COORD_NAME];      /* the local node we made leader, "" none */
	pid_t led_pid;		      /* its pid then: a restarted process is not the leader */
	char last_led[SV_COORD_NAME]; /* the local node that led last, kept over a lost session */
	pid_t last_led_pid;
	char reason[400]; /* why the last leader went away */
	/* a switchover this supervisor carries out as the leader */
	bool handing;
	char hand_target[SV_COORD_NAME];
	bool hand_force;
	int64_t hand_start_ms;
};

struct sv_coord {
	/* immutable after start */
	char prefix[256]; /* "<prefix>/<cluster>/" */
	char machine[SV_COORD_NAME];
	int ttl_ms, validity_ms, handover_ms;
	int window_ms; /* candidates stand this long before the best takes the lead */
	long long boot_epoch;
	size_t n_shards;
	struct coord_shard_def def[SV_COORD_MAX_SHARDS];
	struct etcd *etcd; /* the thread's */
	pthread_t thread;

	pthread_mutex_t mu; /* guards everything below */
	bool quit;
	struct sv_coord_obs obs[SV_COORD_MAX_SHARDS];
	size_t n_obs;
	long long want_epoch;
	struct sv_coord_view view;
	bool req_pending; /* a switchover to put in etcd */
	char req_shard[SV_COORD_NAME], req_target[SV_COORD_NAME];
	bool req_force;

	/* the thread's own */
	int64_t session;
	int64_t ka_sent_ms; /* send time of the last successful grant or keepalive */
	int64_t ka_next_ms;
	struct coord_shard_state st[SV_COORD_MAX_SHARDS];
};

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Copies SRC into DST (SV_COORD_NAME bytes), cut to fit. */
static void copy_name(char *dst, const char *src)
{
	size_t n = src ? strnlen(src, SV_COORD_NAME - 1) : 0;
	memcpy(dst, src ? src : "", n);
	dst[n] = '\0';
}

const char *sv_coord_shard_name(const struct sv_coord *c, const char *name)
{
	for (size_t k = 0; k < c->n_shards; k++)
		for (size_t m = 0; m < c->def[k].n; m++)
			if (strcmp(c->def[k].member[m], name) == 0)
				return c->def[k].name;
	return NULL;
}

size_t sv_coord_members(const struct sv_coord *c, const char *shard, const char **out, size_t max)
{
	for (size_t k = 0; k < c->n_shards; k++) {
		if (strcmp(c->def[k].name, shard) != 0)
			continue;
		size_t n = c->def[k].n < max ? c->def[k].n : max;
		for (size_t m = 0; m < n; m++)
			out[m] = c->def[k].member[m];
		return n;
	}
	return 0;
}

static void key(const struct sv_coord *c, char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void key(const struct sv_coord *c, char *buf, size_t size, const char *fmt, ...)
{
	int n = snprintf(buf, size, "%s", c->prefix);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + n, size - (size_t)n, fmt, ap);
	va_end(ap);
}

/* The observation of local node NAME, or NULL (mu held). */
static const struct sv_coord_obs *obs_of(const struct sv_coord_obs *obs, size_t n, const char *name)
{
	for (size_t k = 0; k < n; k++)
		if (strcmp(obs[k].name, name) == 0)
			return &obs[k];
	return NULL;
}

static const struct etcd_kv *kv_find(const struct etcd_kvs *kvs, const char *k)
{
	for (size_t j = 0; j < kvs->n; j++)
		if (strcmp(kvs->kv[j].key, k) == 0)
			return &kvs->kv[j];
	return NULL;
}

/* Keeps the session lease alive; a lost lease (expired while etcd was out
 * of reach, or revoked) means every leadership it carried is gone. */
static void session_step(struct sv_coord *c, int64_t now)
{
	if (c->session && now < c->ka_next_ms)
		return;
	int64_t sent = mono_ms();
	int rc;
	if (!c->session) {
		int64_t id = 0;
		int ttl = 0;
		rc = etcd_lease_grant(c->etcd, c->ttl_ms / 1000, &id, &ttl);
		if (rc == 0) {
			c->session = id;
			c->ka_sent_ms = sent;
			sv_log(LOG_INFO, "coordination: session lease %" PRId64 " granted (TTL %d s)", id,
			       ttl);
		}
	} else {
		int ttl = 0;
		rc = etcd_lease_keepalive(c->etcd, c->session, &ttl);
		if (rc == 0)
			c->ka_sent_ms = sent;
		else if (rc == -ENOENT) {
			sv_log(LOG_WARNING,
			       "coordination: session lease %" PRId64
			       " expired (etcd was out of reach for longer than its TTL); leadership lost",
			       c->session);
			c->session = 0;
			for (size_t k = 0; k < c->n_shards; k++)
				c->st[k].led[0] = '\0';
		}
	}
	if (rc != 0 && rc != -ENOENT)
		sv_log(LOG_DEBUG, "coordination: keepalive failed: %s", etcd_last_error(c->etcd));
	c->ka_next_ms = now + (rc == 0 ? c->ttl_ms / 3 : COORD_TICK_MS * 2);
}

/* etcd has no epoch yet: the first supervisor writes the file's layout. */
static void bootstrap(struct sv_coord *c)
{
	char k[512], v[32];
	struct etcd_txn *t = etcd_txn_new();

	key(c, k, sizeof(k), "epoch");
	etcd_txn_cmp_create_rev(t, k, ETCD_EQUAL, 0);
	snprintf(v, sizeof(v), "%lld", c->boot_epoch);
	etcd_txn_put(t, true, k, v, 0);
	for (size_t s = 0; s < c->n_shards; s++) {
		key(c, k, sizeof(k), "shard/%s/primary", c->def[s].name);
		etcd_txn_put(t, true, k, c->def[s].name, 0);
	}
	bool ok = false;
	if (etcd_txn_commit(c->etcd, t, &ok, NULL) == 0 && ok)
		sv_log(LOG_NOTICE, "coordination: cluster state created in etcd at epoch %lld",
		       c->boot_epoch);
	etcd_txn_free(t);
}

static void release(struct sv_coord *c, size_t s, const struct etcd_kv *lead, const char *why)
{
	char k[512];
	struct etcd_txn *t = etcd_txn_new();
	bool ok = false;

	key(c, k, sizeof(k), "shard/%s/leader", c->def[s].name);
	etcd_txn_cmp_mod_rev(t, k, ETCD_EQUAL, lead->mod_rev);
	etcd_txn_delete(t, true, k);
	if (etcd_txn_commit(c->etcd, t, &ok, NULL) == 0 && ok)
		sv_log(LOG_WARNING, "coordination: shard %s: %s releases leadership: %s", c->def[s].name,
		       lead->value, why);
	etcd_txn_free(t);
	c->st[s].led[0] = '\0';
}

/* Whether a candidate (OFFSET, NAME) beats (BEST_OFF, BEST): the higher
 * offset, then the recorded primary, then the smaller name. */
static bool better(long long offset, const char *name, long long best_off, const char *best,
		   const char *primary)
{
	if (!best[0])
		return true;
	if (offset != best_off)
		return offset > best_off;
	bool np = strcmp(name, primary) == 0, bp = strcmp(best, primary) == 0;
	if (np != bp)
		return np;
	return strcmp(name, best) < 0;
}

/* NODE (process PID) of this supervisor now leads the shard whose state
 * is ST: it is granted write leases while that process runs, and stays
 * the one that led last over a lost session (the restart rule of
 * elect()). */
static void remember_leader(struct coord_shard_state *st, const char *node, pid_t pid)
{
	copy_name(st->led, node);
	st->led_pid = pid;
	copy_name(st->last_led, node);
	st->last_led_pid = pid;
}

/* Takes shard S's lead for LEADER in one transaction: the leader key is
 * absent and the epoch is as read; the epoch rises when the primary
 * changes. EXTRA_DELETE (a handover key) goes in the same transaction.
 * True when it went through. */
static bool take_lead(struct sv_coord *c, size_t s, const char *leader, const struct etcd_kv *epoch_kv,
		      long long epoch, const char *primary, const char *extra_delete)
{
	const struct coord_shard_def *d = &c->def[s];
	char lk[512], ek[512], pk[512], v[32];
	struct etcd_txn *t = etcd_txn_new();
	key(c, lk, sizeof(lk), "shard/%s/leader", d->name);
	key(c, ek, sizeof(ek), "epoch");
	key(c, pk, sizeof(pk), "shard/%s/primary", d->name);
	etcd_txn_cmp_create_rev(t, lk, ETCD_EQUAL, 0);
	etcd_txn_cmp_mod_rev(t, ek, ETCD_EQUAL, epoch_kv->mod_rev);
	etcd_txn_put(t, true, lk, leader, c->session);
	if (strcmp(leader, primary) != 0) {
		snprintf(v, sizeof(v), "%lld", epoch + 1);
		etcd_txn_put(t, true, ek, v, 0);
		etcd_txn_put(t, true, pk, leader, 0);
	}
	if (extra_delete)
		etcd_txn_delete(t, true, extra_delete);
	char led[512];
	key(c, led, sizeof(led), "shard/%s/led", d->name);
	etcd_txn_put(t, true, led, "1", 0); /* the shard has had a leader: an empty restart is no candidate */
	bool ok = false;
	int rc = etcd_txn_commit(c->etcd, t, &ok, NULL);
	etcd_txn_free(t);
	return rc == 0 && ok;
}

/* A handover is under way (planned switchover): only its target stands,
 * once it has applied every record the old primary wrote (or at once with
 * force). Dropped by the old leader's supervisor when nobody took it in
 * time, so that an ordinary election follows. */
static void take_handover(struct sv_coord *c, size_t s, const struct etcd_kv *hk, long long epoch,
			  const struct etcd_kv *epoch_kv, const char *primary, const struct sv_coord_obs *obs,
			  size_t n_obs, int64_t now)
{
	struct coord_shard_state *st = &c->st[s];
	char target[SV_COORD_NAME];
	long long need;
	int force = 0;
	if (sscanf(hk->value, "%63s %lld %d", target, &need, &force) < 2)
		return;
	const struct sv_coord_obs *o = obs_of(obs, n_obs, target);
	if (o && o->pid && o->up && (force || (!o->is_primary && o->offset >= need))) {
		if (take_lead(c, s, target, epoch_kv, epoch, primary, hk->key)) {
			remember_leader(st, target, o->pid);
			sv_log(LOG_WARNING,
			       "coordination: shard %s: switchover: %s takes the lead at offset %lld%s, epoch %lld -> "
			       "%lld, %" PRId64 " ms after the old primary stopped writing",
			       c->def[s].name, target, o->offset, force ? " (forced)" : "", epoch,
			       strcmp(target, primary) ? epoch + 1 : epoch, now - st->absent_since_ms);
			st->absent_since_ms = 0;
		}
		return;
	}
	if (hk->lease == c->session && now - st->absent_since_ms > c->handover_ms) {
		struct etcd_txn *t = etcd_txn_new();
		bool ok = false;
		etcd_txn_cmp_mod_rev(t, hk->key, ETCD_EQUAL, hk->mod_rev);
		etcd_txn_delete(t, true, hk->key);
		if (etcd_txn_commit(c->etcd, t, &ok, NULL) == 0 && ok)
			sv_log(LOG_WARNING,
			       "coordination: shard %s: switchover to %s not taken within %d ms (it did not reach "
			       "offset %lld); an ordinary election follows",
			       c->def[s].name, target, c->handover_ms, need);
		etcd_txn_free(t);
		snprintf(st->reason, sizeof(st->reason), "switchover to %s not taken", target);
		st->absent_since_ms = now;
	}
}

/* The leader of shard S (on this supervisor) was asked to switch over:
 * fence its instance, and once a passed check confirmed it (its final
 * offset read after the fence), hand the lead on. */
static void hand_over(struct sv_coord *c, size_t s, const struct etcd_kv *lkv, const struct etcd_kv *swk,
		      const struct sv_coord_obs *obs, size_t n_obs, int64_t now)
{
	struct coord_shard_state *st = &c->st[s];
	const struct coord_shard_def *d = &c->def[s];
	if (!st->handing) {
		char target[SV_COORD_NAME] = "";
		int force = 0;
		if (sscanf(swk->value, "%63s %d", target, &force) < 1)
			target[0] = '\0';
		if (!target[0] || strcmp(target, "-") == 0)
			for (size_t m = 0; m < d->n; m++)
				if (strcmp(d->member[m], lkv->value) != 0) {
					copy_name(target, d->member[m]);
					break;
				}
		st->handing = true;
		st->hand_force = force;
		st->hand_start_ms = now;
		copy_name(st->hand_target, target);
		sv_log(LOG_WARNING, "coordination: shard %s: switchover to %s: fencing %s", d->name, target,
		       lkv->value);
	}
	const struct sv_coord_obs *o = obs_of(obs, n_obs, lkv->value);
	if (o && o->lease_applied_ms == 0) {
		char hk[512], sk[512], v[128];
		key(c, hk, sizeof(hk), "shard/%s/handover", d->name);
		key(c, sk, sizeof(sk), "shard/%s/switchover", d->name);
		snprintf(v, sizeof(v), "%s %lld %d", st->hand_target, o->offset, st->hand_force ? 1 : 0);
		struct etcd_txn *t = etcd_txn_new();
		bool ok = false;
		etcd_txn_cmp_mod_rev(t, lkv->key, ETCD_EQUAL, lkv->mod_rev);
		etcd_txn_delete(t, true, lkv->key);
		etcd_txn_delete(t, true, sk);
		etcd_txn_put(t, true, hk, v, c->session);
		if (etcd_txn_commit(c->etcd, t, &ok, NULL) == 0 && ok) {
			sv_log(LOG_WARNING,
			       "coordination: shard %s: %s fenced at offset %lld; handing over to %s",
			       d->name, lkv->value, o->offset, st->hand_target);
			snprintf(st->reason, sizeof(st->reason), "switchover from %s to %s", lkv->value,
				 st->hand_target);
			st->led[0] = '\0';
			st->handing = false;
			st->absent_since_ms = now;
		}
		etcd_txn_free(t);
		return;
	}
	if (now - st->hand_start_ms > c->handover_ms) {
		char sk[512];
		key(c, sk, sizeof(sk), "shard/%s/switchover", d->name);
		etcd_delete(c->etcd, sk, false);
		sv_log(LOG_WARNING,
		       "coordination: shard %s: switchover abandoned: %s did not confirm its fence", d->name,
		       lkv->value);
		st->handing = false;
	}
}

/* No leader for shard S: stand our members as candidates, and once the
 * window is over take the lead if ours is the best. */
static void elect(struct sv_coord *c, size_t s, const struct etcd_kvs *kvs, long long epoch,
		  const struct etcd_kv *epoch_kv, const char *primary, const struct sv_coord_obs *obs,
		  size_t n_obs, int64_t now)
{
	struct coord_shard_state *st = &c->st[s];
	const struct coord_shard_def *d = &c->def[s];
	char k[512], v[64];

	if (!st->absent_since_ms) {
		st->absent_since_ms = now;
		sv_log(LOG_WARNING, "coordination: shard %s has no leader (%s): election at epoch %lld",
		       d->name, st->reason[0] ? st->reason : "leader key gone", epoch);
	}
	if (!c->session)
		return;
	key(c, k, sizeof(k), "shard/%s/handover", d->name);
	const struct etcd_kv *hk = kv_find(kvs, k);
	if (hk) {
		take_handover(c, s, hk, epoch, epoch_kv, primary, obs, n_obs, now);
		return;
	}
	/* zarisctl failover --force with no leader to hand over: the named
	 * member's supervisor takes the lead as it is */
	key(c, k, sizeof(k), "shard/%s/switchover", d->name);
	const struct etcd_kv *swk = kv_find(kvs, k);
	char ft[SV_COORD_NAME];
	int force = 0;
	if (swk && sscanf(swk->value, "%63s %d", ft, &force) == 2 && force) {
		const struct sv_coord_obs *fo = obs_of(obs, n_obs, ft);
		if (fo && fo->pid && fo->up && take_lead(c, s, ft, epoch_kv, epoch, primary, swk->key)) {
			remember_leader(st, ft, fo->pid);
			sv_log(LOG_WARNING,
			       "coordination: shard %s: %s takes the lead by zarisctl failover --force "
			       "(offset %lld), epoch %lld -> %lld",
			       d->name, ft, fo->offset, epoch, strcmp(ft, primary) ? epoch + 1 : epoch);
			st->absent_since_ms = 0;
		}
		return;
	}
	key(c, k, sizeof(k), "shard/%s/led", d->name);
	bool ever_led = kv_find(kvs, k) != NULL;
	for (size_t m = 0; m < d->n; m++) {
		const struct sv_coord_obs *o = obs_of(obs, n_obs, d->member[m]);
		if (!o || !o->pid || !o->up || now - o->last_ok_ms > c->ttl_ms / 2)
			continue;
		bool is_rec = strcmp(d->member[m], primary) == 0;
		if (!is_rec && (o->is_primary || o->syncing || !o->link_up_ms ||
				now - o->link_up_ms > c->validity_ms + c->ttl_ms))
			continue; /* not caught up enough: --force only */
		/* a recorded primary whose process is not the one that led (it
		 * restarted) comes back with less than it acknowledged unless its
		 * log is fsynced per write: once the shard has had a leader it is
		 * no candidate then (--force only); the same process, its session
		 * lost in an etcd outage, is */
		if (is_rec && ever_led && !d->persistent[m] &&
		    !(strcmp(st->last_led, d->member[m]) == 0 && st->last_led_pid == o->pid))
			continue;
		key(c, k, sizeof(k), "shard/%s/cand/%s", d->name, d->member[m]);
		snprintf(v, sizeof(v), "%lld %lld", epoch, o->offset);
		const struct etcd_kv *have = kv_find(kvs, k);
		if (have && strcmp(have->value, v) == 0)
			continue;
		if (etcd_put(c->etcd, k, v, c->session) != 0)
			return;
	}
	if (now - st->absent_since_ms < c->window_ms)
		return;
	char best[SV_COORD_NAME] = "";
	long long best_off = -1;
	char pre[512];
	key(c, pre, sizeof(pre), "shard/%s/cand/", d->name);
	size_t plen = strlen(pre);
	for (size_t j = 0; j < kvs->n; j++) {
		const struct etcd_kv *kv = &kvs->kv[j];
		long long e, off;
		if (strncmp(kv->key, pre, plen) != 0 || sscanf(kv->value, "%lld %lld", &e, &off) != 2 ||
		    e != epoch)
			continue;
		if (better(off, kv->key + plen, best_off, best, primary)) {
			copy_name(best, kv->key + plen);
			best_off = off;
		}
	}
	const struct sv_coord_obs *o = best[0] ? obs_of(obs, n_obs, best) : NULL;
	if (!o)
		return; /* not ours (or nobody yet): its supervisor takes it */
	bool moved = strcmp(best, primary) != 0;
	if (!take_lead(c, s, best, epoch_kv, epoch, primary, NULL))
		return;
	remember_leader(st, best, o->pid);
	sv_log(LOG_WARNING,
	       "coordination: shard %s: %s elected (offset %lld; %s), epoch %lld -> %lld, election took %" PRId64
	       " ms",
	       d->name, best, best_off, st->reason[0] ? st->reason : "no leader", epoch,
	       moved ? epoch + 1 : epoch, now - st->absent_since_ms);
	st->absent_since_ms = 0;
	st->reason[0] = '\0';
}

/* One pass: read the keys, act per shard, publish the view. */
static void coord_step(struct sv_coord *c)
{
	int64_t now = mono_ms();
	struct sv_coord_obs obs[SV_COORD_MAX_SHARDS];
	size_t n_obs;
	long long want_epoch;

	pthread_mutex_lock(&c->mu);
	n_obs = c->n_obs;
	memcpy(obs, c->obs, n_obs * sizeof(obs[0]));
	want_epoch = c->want_epoch;
	pthread_mutex_unlock(&c->mu);

	session_step(c, now);
	pthread_mutex_lock(&c->mu);
	bool req = c->req_pending;
	char rs[SV_COORD_NAME], rt[SV_COORD_NAME];
	bool rf = c->req_force;
	copy_name(rs, c->req_shard);
	copy_name(rt, c->req_target);
	c->req_pending = false;
	pthread_mutex_unlock(&c->mu);
	if (req) {
		char sk[512], sv[128];
		key(c, sk, sizeof(sk), "shard/%s/switchover", rs);
		snprintf(sv, sizeof(sv), "%s %d", rt[0] ? rt : "-", rf ? 1 : 0);
		if (etcd_put(c->etcd, sk, sv, c->session) != 0)
			sv_log(LOG_ERR, "coordination: switchover of shard %s not requested: %s", rs,
			       etcd_last_error(c->etcd));
	}

	struct sv_coord_view v;
	memset(&v, 0, sizeof(v));
	struct etcd_kvs kvs = { 0 };
	char k[512];
	key(c, k, sizeof(k), "%s", "");
	int rc = etcd_get(c->etcd, k, true, &kvs);
	if (rc == 0) {
		key(c, k, sizeof(k), "epoch");
		if (!kv_find(&kvs, k)) {
			bootstrap(c);
			etcd_kvs_free(&kvs);
			rc = etcd_get(c->etcd, c->prefix, true, &kvs);
		}
	}
	if (rc != 0) {
		snprintf(v.etcd_error, sizeof(v.etcd_error), "%s", etcd_last_error(c->etcd));
		pthread_mutex_lock(&c->mu);
		/* keep the last known layout; grants stop growing by themselves */
		v = c->view;
		v.etcd_ok = false;
		snprintf(v.etcd_error, sizeof(v.etcd_error), "%s", etcd_last_error(c->etcd));
		if (strcmp(v.etcd_error, c->view.etcd_error) != 0 || c->view.etcd_ok)
			v.generation++;
		c->view = v;
		pthread_mutex_unlock(&c->mu);
		return;
	}
	const struct etcd_kv *ekv = kv_find(&kvs, k);
	long long epoch = ekv ? atoll(ekv->value) : 0;
	if (ekv && want_epoch > epoch) {
		/* an instance holds a higher epoch (etcd's data was lost): pass it */
		struct etcd_txn *t = etcd_txn_new();
		char val[32];
		snprintf(val, sizeof(val), "%lld", want_epoch + 1);
		etcd_txn_cmp_mod_rev(t, k, ETCD_EQUAL, ekv->mod_rev);
		etcd_txn_put(t, true, k, val, 0);
		bool ok;
		etcd_txn_commit(c->etcd, t, &ok, NULL);
		etcd_txn_free(t);
	}
	v.etcd_ok = true;
	v.epoch = epoch;
	v.session = c->session;
	v.n_shards = c->n_shards;
	int64_t until = c->session ? c->ka_sent_ms + c->ttl_ms - c->ttl_ms / 4 : 0;
	for (size_t s = 0; s < c->n_shards; s++) {
		const struct coord_shard_def *d = &c->def[s];
		struct coord_shard_state *st = &c->st[s];
		struct sv_coord_shard *vs = &v.shard[s];
		copy_name(vs->name, d->name);
		key(c, k, sizeof(k), "shard/%s/primary", d->name);
		const struct etcd_kv *pkv = kv_find(&kvs, k);
		copy_name(vs->primary, pkv ? pkv->value : d->name);
		key(c, k, sizeof(k), "shard/%s/leader", d->name);
		const struct etcd_kv *lkv = kv_find(&kvs, k);
		vs->leader_ttl = -1;
		if (lkv) {
			copy_name(vs->leader, lkv->value);
			vs->leader_here = c->session && lkv->lease == c->session;
			st->absent_since_ms = 0;
			if (vs->leader_here) {
				const struct sv_coord_obs *o = obs_of(obs, n_obs, lkv->value);
				const char *why = NULL;
				char buf[120];
				if (!o || !o->pid)
					why = "its instance is not running";
				else if (strcmp(st->led, lkv->value) != 0 || o->pid != st->led_pid)
					why = "its instance restarted since it was elected";
				else if (now - o->last_ok_ms > c->ttl_ms / 2) {
					snprintf(buf, sizeof(buf),
						 "its instance has not answered for %" PRId64 " ms",
						 now - o->last_ok_ms);
					why = buf;
				}
				if (why) {
					snprintf(st->reason, sizeof(st->reason), "%s on %s: %s", lkv->value,
						 c->machine, why);
					release(c, s, lkv, why);
					vs->leader[0] = '\0';
					vs->leader_here = false;
					st->handing = false;
				} else {
					key(c, k, sizeof(k), "shard/%s/switchover", d->name);
					const struct etcd_kv *swk = kv_find(&kvs, k);
					if (swk || st->handing)
						hand_over(c, s, lkv, swk ? swk : lkv, obs, n_obs, now);
				}
			}
		} else {
			elect(c, s, &kvs, epoch, ekv, vs->primary, obs, n_obs, now);
		}
	}
	/* grants: a local node leads only while our session holds its key */
	for (size_t k2 = 0; k2 < n_obs && v.n_grants < SV_COORD_MAX_SHARDS; k2++) {
		copy_name(v.grant[v.n_grants].name, obs[k2].name);
		v.grant[v.n_grants].until_ms = 0;
		for (size_t s = 0; s < c->n_shards; s++)
			if (c->st[s].led[0] && strcmp(c->st[s].led, obs[k2].name) == 0 && until > 0 &&
			    !c->st[s].handing)
				v.grant[v.n_grants].until_ms = until;
		v.n_grants++;
	}
	etcd_kvs_free(&kvs);
	pthread_mutex_lock(&c->mu);
	v.generation = c->view.generation + 1;
	c->view = v;
	pthread_mutex_unlock(&c->mu);
}

static void *coord_main(void *arg)
{
	struct sv_coord *c = arg;
	for (;;) {
		pthread_mutex_lock(&c->mu);
		bool quit = c->quit;
		pthread_mutex_unlock(&c->mu);
		if (quit)
			break;
		coord_step(c);
		usleep(COORD_TICK_MS * 1000);
	}
	return NULL;
}

/* Whether NODE keeps every write it acknowledged across a restart of its
 * process: only the log fsynced before each reply does (a snapshot or an
 * everysec log comes back older than what it acknowledged). */
static bool keeps_data(const struct zconf *conf, const struct zconf_node *node)
{
	const char *aof = zconf_node_value(conf, node, ZCONF_K_APPENDONLY);
	const char *fsync = zconf_node_value(conf, node, ZCONF_K_APPENDFSYNC);
	return aof && strcmp(aof, "yes") == 0 && fsync && strcmp(fsync, "always") == 0;
}

struct sv_coord *sv_coord_start(const struct zconf *conf, long long epoch, char *err, size_t errlen)
{
	struct sv_coord *c = calloc(1, sizeof(*c));
	if (!c)
		abort();
	const struct zconf_coord *cc = &conf->coord;
	snprintf(c->prefix, sizeof(c->prefix), "%s/%s/", cc->prefix, conf->cluster_name);
	if (cc->local_machine >= 0)
		copy_name(c->machine, cc->machines[cc->local_machine].name);
	else
		copy_name(c->machine, "this machine");
	c->ttl_ms = cc->lease_ttl_ms;
	c->validity_ms = cc->replica_validity_ms;
	/* five ticks: every live supervisor has stood its members by then */
	c->window_ms = c->ttl_ms / 3 < 5 * COORD_TICK_MS ? c->ttl_ms / 3 : 5 * COORD_TICK_MS;
	c->handover_ms = conf->sv.catch_up_timeout_ms > 0 ? conf->sv.catch_up_timeout_ms : 60000;
	c->boot_epoch = epoch;
	for (size_t k = 0; k < conf->n_nodes && c->n_shards < SV_COORD_MAX_SHARDS; k++) {
		const struct zconf_node *n = &conf->nodes[k];
		if (n->role != ZCONF_ROLE_PRIMARY)
			continue;
		struct coord_shard_def *d = &c->def[c->n_shards++];
		copy_name(d->name, n->name);
		d->persistent[d->n] = keeps_data(conf, n);
		copy_name(d->member[d->n++], n->name);
		for (size_t j = 0; j < conf->n_nodes && d->n < SV_COORD_MAX_MEMBERS; j++)
			if (conf->nodes[j].replica_of && strcmp(conf->nodes[j].replica_of, n->name) == 0) {
				d->persistent[d->n] = keeps_data(conf, &conf->nodes[j]);
				copy_name(d->member[d->n++], conf->nodes[j].name);
			}
	}
	/* a call must end well inside a keepalive period */
	int timeout = c->ttl_ms / 6 < 1000 ? c->ttl_ms / 6 : 1000;
	c->etcd = etcd_new(cc->endpoints, timeout, err, errlen);
	if (!c->etcd) {
		free(c);
		return NULL;
	}
	pthread_mutex_init(&c->mu, NULL);
	int rc = pthread_create(&c->thread, NULL, coord_main, c);
	if (rc != 0) {
		snprintf(err, errlen, "coordinator thread: %s", strerror(rc));
		etcd_free(c->etcd);
		pthread_mutex_destroy(&c->mu);
		free(c);
		return NULL;
	}
	return c;
}

void sv_coord_stop(struct sv_coord *c, bool release_lease)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	c->quit = true;
	pthread_mutex_unlock(&c->mu);
	pthread_join(c->thread, NULL);
	if (release_lease && c->session && etcd_lease_revoke(c->etcd, c->session) == 0)
		sv_log(LOG_NOTICE, "coordination: session lease revoked; leadership handed on");
	etcd_free(c->etcd);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

void sv_coord_observe(struct sv_coord *c, const struct sv_coord_obs *obs, size_t n)
{
	if (n > SV_COORD_MAX_SHARDS)
		n = SV_COORD_MAX_SHARDS;
	pthread_mutex_lock(&c->mu);
	memcpy(c->obs, obs, n * sizeof(obs[0]));
	c->n_obs = n;
	pthread_mutex_unlock(&c->mu);
}

void sv_coord_switchover(struct sv_coord *c, const char *shard, const char *target, bool force)
{
	pthread_mutex_lock(&c->mu);
	copy_name(c->req_shard, shard);
	copy_name(c->req_target, target);
	c->req_force = force;
	c->req_pending = true;
	pthread_mutex_unlock(&c->mu);
}

void sv_coord_raise_epoch(struct sv_coord *c, long long epoch)
{
	pthread_mutex_lock(&c->mu);
	if (epoch > c->want_epoch)
		c->want_epoch = epoch;
	pthread_mutex_unlock(&c->mu);
}

void sv_coord_view(struct sv_coord *c, struct sv_coord_view *out)
{
	pthread_mutex_lock(&c->mu);
	*out = c->view;
	pthread_mutex_unlock(&c->mu);
}
