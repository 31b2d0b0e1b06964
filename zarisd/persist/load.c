/* load — see load.h. Files are mapped private and writable (handlers get
 * argv pointing into the map, and a handler may normalize an argument in
 * place); nothing is written back. */
#include "zarisd/persist/load.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zarisd/core/log.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"
#include "zarisd/persist/aof.h"
#include "zarisd/journal/format.h"
#include "zarisd/journal/replay.h"
#include "zarisd/store/store.h"
#include "zarisd/store/write.h"

/* The reason given for damage that jr_torn_tail calls a torn tail. */
#define TORN_TAIL "a damaged frame that no record follows (a torn write)"

/* --- mapped files ------------------------------------------------------------ */

struct mapped {
	unsigned char *p;
	size_t len;
};

static int map_file(const char *path, struct mapped *m)
{
	m->p = NULL;
	m->len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	m->len = (size_t)st.st_size;
	if (m->len) {
		void *p = mmap(NULL, m->len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
		if (p == MAP_FAILED) {
			int e = -errno;
			close(fd);
			return e;
		}
		m->p = p;
	}
	close(fd);
	return 0;
}

static void unmap_file(struct mapped *m)
{
	if (m->p)
		munmap(m->p, m->len);
	m->p = NULL;
}

static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return code;
}

/* --- the applier main installed ---------------------------------------------- */

static struct load_apply applier; /* set once by main before any load */

void load_set_apply(const struct load_apply *ops)
{
	applier = *ops;
}

const struct load_apply *load_get_apply(void)
{
	return &applier;
}

static void *applier_open(void)
{
	return applier.open ? applier.open(applier.ctx) : NULL;
}

static void applier_close(void *a)
{
	if (a && applier.close)
		applier.close(a);
}

static int no_record(void *ctx, const struct jr_cmd *rec, char *err, size_t errlen)
{
	(void)ctx;
	(void)rec;
	snprintf(err, errlen, "no command runner installed");
	return -ENOSYS;
}

/* --- snapshot -------------------------------------------------------------------- */

struct snap_load {
	struct store *s;
	const char *path;
	const unsigned char *base;
	const size_t *offs; /* frame payload offsets */
	const size_t *lens;
	size_t lo, hi; /* this thread's range */
	int64_t now;
	uint64_t loaded, expired;
	int rc;
	char err[256];
};

int load_entry_meta_locked(struct store *s, const struct jr_snap_entry *k, struct entry **e)
{
	const char *labels[JR_META_MAX_LABELS];
	size_t lens[JR_META_MAX_LABELS];
	struct store_meta_fields f;
	int r = jr_meta_get(k->tail, &f, labels, lens);
	if (r <= 0)
		return r;
	return store_meta_set_locked(s, k->db, e, &f);
}

static void *snap_load_range(void *arg)
{
	struct snap_load *sl = arg;
	struct store *s = sl->s;
	void *ap = applier_open();
	struct store_write w; /* this thread's share of the load */
	store_write_begin(&w, STORE_WRITE_LOAD, "a snapshot load", true, 0);
	for (size_t i = sl->lo; i < sl->hi && sl->rc == 0; i++) {
		struct jr_snap_entry k;
		if (!jr_parse_snap_entry(sl->base + sl->offs[i], sl->lens[i], &k)) {
			sl->rc = fail(sl->err, sizeof(sl->err), -EINVAL,
				      "%s: malformed key record at offset %zu", sl->path,
				      sl->offs[i] - JR_FRAME_HEADER);
			break;
		}
		if (k.db >= store_databases(s)) {
			sl->rc = fail(sl->err, sizeof(sl->err), -ERANGE,
				      "%s: key in database %u but only %u databases are configured", sl->path,
				      k.db, store_databases(s));
			break;
		}
		/* a replica keeps what its primary's snapshot holds, expired or
		 * not: its primary's records say what becomes of it (a DEL, or
		 * a PERSIST that ran before the TTL passed) */
		if (k.expire >= 0 && k.expire < sl->now && !store_replica_mode(s)) {
			sl->expired++;
			continue;
		}
		bool good;
		if (k.kind == JR_SNAP_STR) {
			unsigned shard = store_shard_of(s, k.key, k.klen);
			store_lock(s, shard);
			struct entry *e = NULL;
			if (store_set_string_locked(s, k.db, k.key, k.klen, k.val, k.vlen, k.expire, 0, &e) <
			    0)
				e = NULL;
			if (e && load_entry_meta_locked(s, &k, &e) < 0)
				e = NULL;
			if (e)
				store_entry_set_version_locked(s, e, k.version);
			store_unlock(s, shard);
			good = e != NULL;
		} else {
			char name[80] = "";
			int r = ap && applier.object ? applier.object(ap, &k, sl->now, name, sizeof(name))
						     : -EINVAL;
			if (r == -ENOTSUP) {
				sl->rc = fail(sl->err, sizeof(sl->err), -ENOTSUP,
					      "%s: key '%.*s' needs command '%s', which this zarisd lacks",
					      sl->path, (int)(k.klen > 64 ? 64 : k.klen), k.key, name);
				break;
			}
			good = r == 0;
		}
		if (!good) {
			sl->rc = fail(sl->err, sizeof(sl->err), -EINVAL,
				      "%s: cannot restore the key at offset %zu", sl->path,
				      sl->offs[i] - JR_FRAME_HEADER);
			break;
		}
		sl->loaded++;
	}
	store_write_end(&w);
	applier_close(ap);
	return NULL;
}

/* The replication origin in the tail of a JR_SNAP_HEAD (RD after its
 * fields): a malformed or partial one is no origin. */
static void head_origin(struct jreader rd, struct load_result *res)
{
	uint64_t type;
	const char *p;
	size_t n;
	char id[41] = "";
	uint64_t offset = 0;
	bool have_off = false;
	while (jr_tail_next(&rd, &type, &p, &n) == 1) {
		if (type == JR_TAIL_ORIGIN_ID && n == 40) {
			memcpy(id, p, 40);
			id[40] = 0;
		} else if (type == JR_TAIL_ORIGIN_OFFSET && n == 8) {
			for (int i = 7; i >= 0; i--)
				offset = offset << 8 | (unsigned char)p[i];
			have_off = true;
		}
	}
	if (id[0] && have_off) {
		memcpy(res->origin_id, id, sizeof(id));
		res->origin_offset = offset;
	}
}

int load_snapshot(struct store *s, const char *path, unsigned threads, struct load_result *res, char *err,
		  size_t errlen)
{
	int64_t t0 = zr_mono_us();
	struct mapped m;
	int r = map_file(path, &m);
	if (r == -ENOENT)
		return r;
	if (r < 0)
		return fail(err, errlen, r, "%s: cannot read: %s", path, strerror(-r));
	r = jr_check_file_header(m.p, m.len, JR_MAGIC_SNAPSHOT);
	if (r < 0) {
		unmap_file(&m);
		return fail(err, errlen, r, "%s at offset 0: %s", path,
			    r == -EPROTO ? "snapshot format version not supported" : "not a zarisd snapshot");
	}
	size_t off = JR_FILE_HEADER, cap = 1024, n = 0;
	size_t *offs = zr_malloc(cap * sizeof(size_t)), *lens = zr_malloc(cap * sizeof(size_t));
	size_t fcap = 8, nf = 0;
	size_t *foffs = zr_malloc(fcap * sizeof(size_t)), *flens = zr_malloc(fcap * sizeof(size_t));
	bool head = false, end = false;
	uint64_t seq = 0, want_keys = 0;
	for (;;) {
		size_t at = off;
		const unsigned char *pl;
		size_t plen;
		const char *why;
		enum jr_status st = jr_next_frame(m.p, m.len, &off, &pl, &plen, &why);
		if (st == JR_EOF)
			break;
		if (st != JR_OK) {
			r = fail(err, errlen, -EINVAL, "%s at offset %zu: %s", path, at,
				 st == JR_TRUNCATED ? "the snapshot is truncated" : why);
			goto out;
		}
		struct jreader rd = { pl, pl + plen };
		uint8_t kind = pl[0];
		if (end) {
			r = fail(err, errlen, -EINVAL, "%s at offset %zu: data after the end record", path,
				 at);
			goto out;
		}
		if (!head) {
			uint64_t created;
			uint32_t ndb;
			jrd_u8(&rd, &kind);
			if (kind != JR_SNAP_HEAD || !jrd_u64(&rd, &seq) || !jrd_u64(&rd, &created) ||
			    !jrd_u32(&rd, &ndb)) {
				r = fail(err, errlen, -EINVAL, "%s at offset %zu: missing snapshot header",
					 path, at);
				goto out;
			}
			head_origin(rd, res);
			head = true;
		} else if (kind == JR_SNAP_STR || kind == JR_SNAP_OBJ) {
			if (n == cap) {
				cap *= 2;
				offs = zr_realloc(offs, cap * sizeof(size_t));
				lens = zr_realloc(lens, cap * sizeof(size_t));
			}
			offs[n] = (size_t)(pl - m.p);
			lens[n++] = plen;
		} else if (kind == JR_SNAP_FUNCTION) {
			const char *code;
			size_t clen;
			jrd_u8(&rd, &kind);
			if (n || !jrd_bytes(&rd, &code, &clen) || !jr_tail_ok(rd)) {
				r = fail(err, errlen, -EINVAL,
					 "%s at offset %zu: bad function library record", path, at);
				goto out;
			}
			if (nf == fcap) {
				fcap *= 2;
				foffs = zr_realloc(foffs, fcap * sizeof(size_t));
				flens = zr_realloc(flens, fcap * sizeof(size_t));
			}
			foffs[nf] = (size_t)((const unsigned char *)code - m.p);
			flens[nf++] = clen;
		} else if (kind == JR_SNAP_END) {
			jrd_u8(&rd, &kind);
			if (!jrd_u64(&rd, &want_keys)) {
				r = fail(err, errlen, -EINVAL, "%s at offset %zu: bad end record", path, at);
				goto out;
			}
			end = true;
		} else {
			r = fail(err, errlen, -EINVAL, "%s at offset %zu: unknown record kind %u", path, at,
				 kind);
			goto out;
		}
	}
	if (!end || want_keys != n) {
		r = fail(err, errlen, -EINVAL, "%s at offset %zu: %s", path, m.len,
			 !end ? "the snapshot is truncated (no end record)"
			      : "key count does not match the end record");
		goto out;
	}
	/* the whole file is sound: the libraries (replacing the server's),
	 * then the keys, split across threads */
	r = 0;
	if (applier.functions_flush)
		applier.functions_flush(applier.ctx);
	if (nf) {
		void *ap = applier_open();
		for (size_t i = 0; i < nf && r == 0; i++) {
			char why[512] = "";
			int fr = ap && applier.function ? applier.function(ap, (const char *)m.p + foffs[i],
									   flens[i], why, sizeof(why))
							: -ENOSYS;
			if (fr < 0)
				r = fail(err, errlen, fr, "%s: cannot load function library %zu: %s", path,
					 i + 1, why);
		}
		applier_close(ap);
		if (r < 0)
			goto out;
	}
	if (threads < 1)
		threads = 1;
	if (threads > 16)
		threads = 16;
	if (n < 20000)
		threads = 1;
	struct snap_load sl[16];
	pthread_t tid[16];
	int64_t now = zr_time_ms();
	for (unsigned i = 0; i < threads; i++) {
		sl[i] = (struct snap_load){ .s = s,
					    .path = path,
					    .base = m.p,
					    .offs = offs,
					    .lens = lens,
					    .lo = n * i / threads,
					    .hi = n * (i + 1) / threads,
					    .now = now };
		if (i > 0 && pthread_create(&tid[i], NULL, snap_load_range, &sl[i]) != 0)
			sl[i].rc = -EAGAIN;
	}
	snap_load_range(&sl[0]);
	for (unsigned i = 1; i < threads; i++)
		if (sl[i].rc != -EAGAIN)
			pthread_join(tid[i], NULL);
	r = 0;
	for (unsigned i = 0; i < threads; i++) {
		if (sl[i].rc && !r) {
			r = sl[i].rc;
			snprintf(err, errlen, "%s", sl[i].err);
		}
		res->keys_loaded += sl[i].loaded;
		res->keys_expired += sl[i].expired;
	}
	res->last_seq = seq;
	res->snapshot_bytes = m.len;
out:
	zr_free(offs);
	zr_free(lens);
	zr_free(foffs);
	zr_free(flens);
	unmap_file(&m);
	res->ms += (zr_mono_us() - t0) / 1000;
	return r;
}

/* --- journal ------------------------------------------------------------------------ */

int load_journal(const char *dir, const char *name, bool trim, struct load_result *res, char *err,
		 size_t errlen)
{
	int64_t t0 = zr_mono_us();
	char **paths;
	uint64_t *starts;
	int n = aof_list(dir, name, &paths, &starts);
	if (n < 0)
		return fail(err, errlen, n, "%s: cannot list: %s", dir, strerror(-n));
	void *ap = applier_open();
	int r = 0;
	/* records of an open transaction, and every record after its first,
	 * wait in the replay for its commit, so an unfinished transaction is
	 * never applied */
	struct jr_replay rp;
	jr_replay_init(&rp, res->last_seq, ap && applier.record ? applier.record : no_record, ap);
	struct mapped m = { 0 };
	uint64_t pending = 0; /* bytes of held records: counted once their transactions commit */
	for (int f = 0; f < n && r == 0; f++) {
		const char *path = paths[f];
		bool last = f == n - 1;
		r = map_file(path, &m);
		if (r < 0) {
			r = fail(err, errlen, r, "%s: cannot read: %s", path, strerror(-r));
			break;
		}
		if (m.len < JR_FILE_HEADER && last && trim) {
			zr_log(ZR_LOG_WARNING,
			       "!!! Warning: %s is an incomplete segment (%zu bytes), removed", path, m.len);
			unmap_file(&m);
			unlink(path);
			break;
		}
		int hr = jr_check_file_header(m.p, m.len, JR_MAGIC_JOURNAL);
		if (hr < 0) {
			r = fail(err, errlen, hr,
				 "Bad file format reading the append only file %s at offset 0: %s", path,
				 hr == -EPROTO ? "format version not supported"
					       : "not a zarisd journal segment");
			break;
		}
		size_t off = JR_FILE_HEADER;
		bool first = true, skip_file = false;
		for (;;) {
			size_t at = off;
			const unsigned char *pl;
			size_t plen;
			const char *why;
			enum jr_status st = jr_next_frame(m.p, m.len, &off, &pl, &plen, &why);
			if (st == JR_EOF)
				break;
			if (st == JR_CORRUPT && last && jr_torn_tail(m.p, m.len, at, rp.expect - 1)) {
				st = JR_TRUNCATED;
				why = TORN_TAIL;
			}
			if (st == JR_TRUNCATED && last && trim) {
				uint64_t first_held = at;
				jr_replay_held(&rp, &first_held);
				size_t cut = (size_t)first_held;
				zr_log(ZR_LOG_WARNING,
				       "!!! Warning: short read while loading the append only file %s at offset %zu "
				       "(%s): trimming %zu bytes of an incomplete tail (aof-load-truncated yes)",
				       path, at, why, m.len - cut);
				res->trimmed += m.len - cut;
				if (truncate(path, (off_t)cut) < 0)
					r = fail(err, errlen, -errno, "%s: cannot trim: %s", path,
						 strerror(errno));
				jr_replay_drop(&rp);
				break;
			}
			if (st != JR_OK) {
				r = fail(
					err, errlen, -EINVAL,
					"Bad file format reading the append only file %s at offset %zu: %s%s; "
					"use zarisd --check-data to inspect and --fix to repair",
					path, at, st == JR_TRUNCATED ? "truncated: " : "", why);
				break;
			}
			if (first) {
				struct jreader rd = { pl, pl + plen };
				uint8_t kind;
				uint64_t start, created;
				uint32_t flags;
				first = false;
				jrd_u8(&rd, &kind);
				if (kind != JR_SEGMENT || !jrd_u64(&rd, &start) || !jrd_u32(&rd, &flags) ||
				    !jrd_u64(&rd, &created)) {
					r = fail(err, errlen, -EINVAL,
						 "%s at offset %zu: missing segment header", path, at);
					break;
				}
				if (start > rp.expect) {
					if (flags & JR_SEG_FRESH) {
						zr_log(ZR_LOG_WARNING,
						       "%s starts at record %" PRIu64
						       " but the data on disk ends at %" PRIu64
						       ": appendonly was turned on and no snapshot finished after; "
						       "its records cannot be applied, ignored",
						       path, start, rp.expect - 1);
						skip_file = true;
						res->history_broken = true;
						break;
					}
					r = fail(err, errlen, -EINVAL,
						 "%s: journal gap: records %" PRIu64 " to %" PRIu64
						 " are missing",
						 path, rp.expect, start - 1);
					break;
				}
				continue;
			}
			int cr = jr_replay_frame(&rp, pl, plen, at);
			if (cr < 0) {
				r = fail(err, errlen, cr, "%s at offset %" PRIu64 ": %s", path, rp.err_pos,
					 rp.err);
				break;
			}
			/* the log's records are the change stream's frames byte for
			 * byte: what was applied moves the replication offset */
			if (cr == JR_REPLAY_HELD) {
				pending += JR_FRAME_HEADER + plen;
			} else if (cr == JR_REPLAY_APPLIED) {
				res->replayed_bytes += pending + JR_FRAME_HEADER + plen;
				pending = 0;
			}
		}
		uint64_t first_held = 0;
		size_t nheld = jr_replay_held(&rp, &first_held);
		if (r == 0 && last && rp.nopen) {
			/* the log ends inside a transaction whose commit never came */
			zr_log(ZR_LOG_WARNING,
			       "%s ends inside a transaction: its %zu records are not applied", path, nheld);
			if (trim && nheld && truncate(path, (off_t)first_held) == 0)
				res->trimmed += m.len - first_held;
			jr_replay_drop(&rp);
		}
		unmap_file(&m);
		if (skip_file)
			continue;
	}
	res->last_seq = rp.expect - 1;
	res->records += rp.applied;
	jr_replay_free(&rp);
	applier_close(ap);
	aof_list_free(paths, starts, n);
	res->ms += (zr_mono_us() - t0) / 1000;
	return r;
}

/* --- the checker ------------------------------------------------------------------------ */

/* Returns 0 good, 1 damage left, 2 a journal file was cut back (*CUT). */
static int check_file(const char *path, bool fix, bool *cut)
{
	unsigned char magic[8];
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	ssize_t got = read(fd, magic, 8);
	close(fd);
	bool snap = got == 8 && !memcmp(magic, JR_MAGIC_SNAPSHOT, 8);
	bool jnl = got == 8 && !memcmp(magic, JR_MAGIC_JOURNAL, 8);
	if (!snap && !jnl)
		return 0;
	if (jnl && *cut) {
		/* a later segment continues records lost by the cut: unusable */
		if (fix && unlink(path) == 0) {
			printf("%s: removed: it continues after the part cut from an earlier segment\n",
			       path);
			return 0;
		}
		printf("%s: follows a damaged segment\n", path);
		return 1;
	}
	struct mapped m;
	if (map_file(path, &m) < 0) {
		printf("%s: cannot read\n", path);
		return 1;
	}
	int hr = jr_check_file_header(m.p, m.len, snap ? JR_MAGIC_SNAPSHOT : JR_MAGIC_JOURNAL);
	size_t off = JR_FILE_HEADER, frames = 0, good = JR_FILE_HEADER;
	enum jr_status st = hr < 0 ? JR_CORRUPT : JR_OK;
	const char *why = hr < 0 ? "bad file header" : "";
	bool ended = false;
	while (hr == 0) {
		const unsigned char *pl;
		size_t plen;
		st = jr_next_frame(m.p, m.len, &off, &pl, &plen, &why);
		if (st == JR_CORRUPT && jnl && jr_torn_tail(m.p, m.len, off, 0)) {
			st = JR_TRUNCATED;
			why = TORN_TAIL;
		}
		if (st != JR_OK)
			break;
		frames++;
		good = off;
		ended = pl[0] == JR_SNAP_END;
	}
	int rc = 0;
	if (hr < 0) {
		printf("%s: CORRUPT at offset 0: %s\n", path, why);
		rc = 1;
	} else if (st == JR_EOF && (!snap || ended)) {
		printf("%s: OK, %s, %zu records, %zu bytes\n", path, snap ? "snapshot" : "journal segment",
		       frames, m.len);
	} else if (snap) {
		printf("%s: %s at offset %zu: %s (a snapshot cannot be repaired; restore it from a copy or "
		       "delete it)\n",
		       path, st == JR_CORRUPT ? "CORRUPT" : "TRUNCATED", st == JR_EOF ? m.len : good,
		       st == JR_EOF ? "no end record" : why);
		rc = 1;
	} else {
		printf("%s: %s at offset %zu: %s; %zu bytes after it\n", path,
		       st == JR_CORRUPT ? "CORRUPT" : "TRUNCATED", good, why, m.len - good);
		if (fix) {
			if (truncate(path, (off_t)good) == 0) {
				printf("%s: fixed: cut back to %zu bytes (%zu records kept)\n", path, good,
				       frames);
				*cut = true;
			} else {
				rc = 1;
			}
		} else {
			rc = 1;
		}
	}
	unmap_file(&m);
	return rc;
}

static int check_dir(const char *dir, bool fix, int depth)
{
	struct dirent **names;
	/* sorted: segments in seq order, so a cut one is seen before its successors */
	int n = scandir(dir, &names, NULL, alphasort);
	if (n < 0) {
		printf("%s: cannot open: %s\n", dir, strerror(errno));
		return 1;
	}
	int rc = 0;
	bool cut = false;
	for (int i = 0; i < n; i++) {
		struct dirent *de = names[i];
		if (de->d_name[0] == '.')
			continue;
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		struct stat st;
		if (stat(path, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode) && depth == 0)
			rc |= check_dir(path, fix, 1);
		else if (S_ISREG(st.st_mode))
			rc |= check_file(path, fix, &cut);
	}
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return rc;
}

int load_check_data(const char *dir, bool fix)
{
	return check_dir(dir, fix, 0);
}
