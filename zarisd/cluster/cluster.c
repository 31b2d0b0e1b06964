/* cluster — see cluster.h. */
#include "zarisd/cluster/cluster.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zarisd/core/log.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/thread.h"

#define TOPOLOGY_FILE "cluster-topology"
#define NODE_ID_FILE "cluster-node-id"

struct reader {
	_Atomic uint64_t seq; /* odd: inside a read section */
	char pad[64 - sizeof(uint64_t)];
};

struct retired {
	struct topology *t;
	uint64_t *seen; /* each reader's seq at the swap */
	struct retired *next;
};

struct cluster {
	char *dir;
	char node_id[TOPO_ID_LEN + 1];
	_Atomic(struct topology *) current;
	pthread_mutex_t push_lock; /* serializes pushes; readers past nreaders */
	unsigned nreaders;
	struct reader *readers;	 /* [nreaders], cache-line aligned */
	struct retired *retired; /* under push_lock */
};

/* Whether the calling thread reads through READER's number: it is that
 * worker's thread (or the one left once every worker was joined). A
 * number is one thread's alone (cluster.h). */
static bool own_reader(const struct cluster *cl, unsigned reader)
{
	return reader < cl->nreaders && zr_thread_is_worker(reader);
}

const struct topology *cluster_read_begin(struct cluster *cl, unsigned reader)
{
	if (!own_reader(cl, reader)) {
		pthread_mutex_lock(&cl->push_lock);
		return atomic_load_explicit(&cl->current, memory_order_relaxed);
	}
	struct reader *r = &cl->readers[reader];
	uint64_t s = atomic_load_explicit(&r->seq, memory_order_relaxed);
	/* seq_cst store then seq_cst load: a push that swapped before this
	 * store is seen by the load; one that swaps after it sees us odd */
	atomic_store_explicit(&r->seq, s + 1, memory_order_seq_cst);
	return atomic_load_explicit(&cl->current, memory_order_seq_cst);
}

void cluster_read_end(struct cluster *cl, unsigned reader)
{
	if (!own_reader(cl, reader)) {
		pthread_mutex_unlock(&cl->push_lock);
		return;
	}
	struct reader *r = &cl->readers[reader];
	uint64_t s = atomic_load_explicit(&r->seq, memory_order_relaxed);
	atomic_store_explicit(&r->seq, s + 1, memory_order_release);
}

/* Frees the retired tables no reader can still hold. Under push_lock. */
static void reclaim(struct cluster *cl, bool all)
{
	struct retired **pp = &cl->retired;
	while (*pp) {
		struct retired *x = *pp;
		bool free_it = true;
		for (unsigned i = 0; i < cl->nreaders && !all && free_it; i++) {
			uint64_t now = atomic_load_explicit(&cl->readers[i].seq, memory_order_acquire);
			free_it = (x->seen[i] & 1) == 0 || now != x->seen[i];
		}
		if (!free_it) {
			pp = &x->next;
			continue;
		}
		*pp = x->next;
		topology_free(x->t);
		zr_free(x->seen);
		zr_free(x);
	}
}

/* Publishes T (may be NULL), retiring the table it replaces. Under push_lock. */
static void publish(struct cluster *cl, struct topology *t)
{
	struct topology *old = atomic_exchange_explicit(&cl->current, t, memory_order_seq_cst);
	if (old) {
		struct retired *x = zr_malloc(sizeof(*x));
		x->t = old;
		x->seen = zr_malloc(sizeof(uint64_t) * (cl->nreaders ? cl->nreaders : 1));
		for (unsigned i = 0; i < cl->nreaders; i++)
			x->seen[i] = atomic_load_explicit(&cl->readers[i].seq, memory_order_seq_cst);
		x->next = cl->retired;
		cl->retired = x;
	}
	reclaim(cl, false);
}

static char *path_in(const struct cluster *cl, const char *name)
{
	size_t n = strlen(cl->dir) + strlen(name) + 2;
	char *p = zr_malloc(n);
	snprintf(p, n, "%s/%s", cl->dir, name);
	return p;
}

/* Writes LEN bytes of DATA as DIR/NAME: a temporary file, fsync, rename,
 * fsync of the directory. 0, or -errno with the step in ERR. */
static int write_file(const struct cluster *cl, const char *name, const char *data, size_t len, char *err,
		      size_t errlen)
{
	char *path = path_in(cl, name);
	size_t tn = strlen(path) + 8;
	char *tmp = zr_malloc(tn);
	snprintf(tmp, tn, "%s.tmp", path);
	int rc = 0;
	const char *step = "open";
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	step = "write";
	for (size_t off = 0; off < len && !rc;) {
		ssize_t w = write(fd, data + off, len - off);
		if (w < 0 && errno != EINTR)
			rc = -errno;
		else if (w > 0)
			off += (size_t)w;
	}
	if (!rc && fsync(fd) < 0) {
		step = "fsync";
		rc = -errno;
	}
	close(fd);
	if (!rc && rename(tmp, path) < 0) {
		step = "rename";
		rc = -errno;
	}
	if (!rc) {
		int dfd = open(cl->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd >= 0) {
			if (fsync(dfd) < 0) {
				step = "fsync of the directory";
				rc = -errno;
			}
			close(dfd);
		}
	}
out:
	if (rc) {
		snprintf(err, errlen, "cannot %s %s: %s", step,
			 fd < 0 || !strcmp(step, "rename") ? tmp : path, strerror(-rc));
		unlink(tmp);
	}
	zr_free(tmp);
	zr_free(path);
	return rc;
}

/* Reads DIR/NAME whole into *OUT (NUL-terminated). 0, -ENOENT, or another
 * -errno with the reason in ERR. */
static int read_file(const struct cluster *cl, const char *name, char **out, size_t *len, char *err,
		     size_t errlen)
{
	char *path = path_in(cl, name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int rc = 0;
	if (fd < 0) {
		rc = -errno;
		if (rc != -ENOENT)
			snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		zr_free(path);
		return rc;
	}
	size_t cap = 4096, used = 0;
	char *buf = zr_malloc(cap + 1);
	for (;;) {
		if (used == cap) {
			cap *= 2;
			buf = zr_realloc(buf, cap + 1);
		}
		ssize_t r = read(fd, buf + used, cap - used);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = -errno;
			snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
			break;
		}
		if (r == 0)
			break;
		used += (size_t)r;
	}
	close(fd);
	zr_free(path);
	if (rc) {
		zr_free(buf);
		return rc;
	}
	buf[used] = '\0';
	*out = buf;
	*len = used;
	return 0;
}

static int load_node_id(struct cluster *cl, char *err, size_t errlen)
{
	char *text = NULL;
	size_t len = 0;
	int rc = read_file(cl, NODE_ID_FILE, &text, &len, err, errlen);
	if (rc == 0) {
		while (len && (text[len - 1] == '\n' || text[len - 1] == '\r'))
			len--;
		if (!topology_valid_id(text, len)) {
			snprintf(err, errlen, "%s/%s:1: not a node id (40 lowercase hex digits)", cl->dir,
				 NODE_ID_FILE);
			zr_free(text);
			return -EINVAL;
		}
		memcpy(cl->node_id, text, TOPO_ID_LEN);
		zr_free(text);
		return 0;
	}
	if (rc != -ENOENT)
		return rc;
	unsigned char raw[TOPO_ID_LEN / 2];
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
		snprintf(err, errlen, "getrandom: %s", strerror(errno));
		return -EIO;
	}
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(cl->node_id + 2 * i, 3, "%02x", raw[i]);
	char line[TOPO_ID_LEN + 2];
	snprintf(line, sizeof(line), "%s\n", cl->node_id);
	return write_file(cl, NODE_ID_FILE, line, TOPO_ID_LEN + 1, err, errlen);
}

static int load_topology(struct cluster *cl, char *err, size_t errlen)
{
	char *text = NULL;
	size_t len = 0;
	int rc = read_file(cl, TOPOLOGY_FILE, &text, &len, err, errlen);
	if (rc == -ENOENT)
		return 0;
	if (rc)
		return rc;
	char why[256];
	struct topology *t = topology_parse(text, len, why, sizeof(why));
	zr_free(text);
	if (!t) {
		/* "line N: ..." -> "<file>:N: ..." */
		const char *rest = strncmp(why, "line ", 5) ? why : why + 5;
		snprintf(err, errlen, "%s/%s:%s", cl->dir, TOPOLOGY_FILE, rest);
		return -EINVAL;
	}
	atomic_store_explicit(&cl->current, t, memory_order_release);
	zr_log(ZR_LOG_NOTICE, "cluster: topology epoch %llu loaded from %s/%s (%u nodes, %u slots assigned)",
	       (unsigned long long)t->epoch, cl->dir, TOPOLOGY_FILE, t->nnodes, t->assigned);
	return 0;
}

struct cluster *cluster_create(const char *dir, unsigned nreaders, char *err, size_t errlen)
{
	struct cluster *cl = zr_calloc(1, sizeof(*cl));
	char cwd[4096];
	/* main has moved into the data directory: a relative DIR is where we
	 * are; kept absolute, as CONFIG SET dir moves the process later */
	cl->dir = zr_strdup(dir[0] != '/' && getcwd(cwd, sizeof(cwd)) ? cwd : dir);
	pthread_mutex_init(&cl->push_lock, NULL);
	cl->nreaders = nreaders;
	cl->readers = zr_calloc(nreaders ? nreaders : 1, sizeof(struct reader));
	atomic_init(&cl->current, NULL);
	if (load_node_id(cl, err, errlen) < 0 || load_topology(cl, err, errlen) < 0) {
		cluster_free(cl);
		return NULL;
	}
	return cl;
}

void cluster_free(struct cluster *cl)
{
	if (!cl)
		return;
	reclaim(cl, true);
	topology_free(atomic_load_explicit(&cl->current, memory_order_relaxed));
	pthread_mutex_destroy(&cl->push_lock);
	zr_free(cl->readers);
	zr_free(cl->dir);
	zr_free(cl);
}

void cluster_my_id(struct cluster *cl, unsigned reader, char out[TOPO_ID_LEN + 1])
{
	const struct topology *t = cluster_read_begin(cl, reader);
	memcpy(out, t ? t->nodes[t->myself].id : cl->node_id, TOPO_ID_LEN);
	out[TOPO_ID_LEN] = '\0';
	cluster_read_end(cl, reader);
}

const char *cluster_generated_id(const struct cluster *cl)
{
	return cl->node_id;
}

int cluster_push(struct cluster *cl, const char *doc, size_t len, char *err, size_t errlen)
{
	char why[256];
	struct topology *t = topology_parse(doc, len, why, sizeof(why));
	if (!t) {
		snprintf(err, errlen, "topology %s", why);
		return -EINVAL;
	}
	pthread_mutex_lock(&cl->push_lock);
	const struct topology *cur = atomic_load_explicit(&cl->current, memory_order_relaxed);
	int rc = 0;
	if (cur && t->epoch < cur->epoch) {
		snprintf(err, errlen, "topology epoch %llu is older than the current epoch %llu",
			 (unsigned long long)t->epoch, (unsigned long long)cur->epoch);
		rc = -ESTALE;
	} else if (cur && t->epoch == cur->epoch) {
		if (!topology_same_layout(t, cur)) {
			snprintf(err, errlen,
				 "topology epoch %llu is the current epoch with a different layout",
				 (unsigned long long)t->epoch);
			rc = -EEXIST;
		}
		topology_free(t); /* the same one again: nothing to do */
		t = NULL;
	}
	if (t && rc == 0)
		rc = write_file(cl, TOPOLOGY_FILE, t->text, t->text_len, err, errlen);
	if (t && rc == 0) {
		zr_log(ZR_LOG_NOTICE, "cluster: topology epoch %llu applied (%u nodes, %u slots assigned)",
		       (unsigned long long)t->epoch, t->nnodes, t->assigned);
		publish(cl, t);
		t = NULL;
	}
	pthread_mutex_unlock(&cl->push_lock);
	topology_free(t);
	return rc;
}
