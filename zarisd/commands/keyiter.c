/* keyiter — see keyiter.h. */
#include "zarisd/commands/keyiter.h"

#include <stdlib.h>
#include <string.h>

#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"

/* Where REF's keyword is in ARGV (any case), or -1: forward from
 * argv[pos] to the last but one (a key must follow it), or for a negative
 * pos backward from argv[argc + pos] to argv[2], as Redis's search. */
static int keyword_at(const struct cmd_arg_ref *ref, const struct resp_arg *argv, int argc)
{
	if (ref->pos > 0) {
		for (int i = ref->pos; i < argc - 1; i++)
			if (zr_eq_nocase(argv[i].ptr, argv[i].len, ref->keyword))
				return i;
	} else {
		for (int i = argc + ref->pos; i > 1; i--)
			if (i < argc && zr_eq_nocase(argv[i].ptr, argv[i].len, ref->keyword))
				return i;
	}
	return -1;
}

/* Where SPEC's keys begin in ARGV, for its range or its count: *FIRST
 * (argc when a keyword ends ARGV: the spec does not fit). False when the
 * keyword is absent. */
static bool spec_begin(const struct key_spec *s, const struct resp_arg *argv, int argc, int *first)
{
	if (!s->begin.keyword) {
		*first = s->begin.pos;
		return true;
	}
	int at = keyword_at(&s->begin, argv, argc);
	*first = at + 1;
	return at > 0;
}

/* SPEC's keys in ARGV[0..ARGC) into R (first > last: none). False when the
 * spec does not fit ARGV; an absent keyword fits, with no key. */
static bool spec_range(const struct key_spec *s, const struct resp_arg *argv, int argc,
		       struct keyiter_range *r)
{
	r->first = 1;
	r->last = 0;
	r->step = 1;
	r->flags = s->flags;
	int first, last, step;
	if (!spec_begin(s, argv, argc, &first))
		return true;
	if (s->find == KS_FIND_RANGE) {
		int lastkey = s->fk.range.lastkey;
		step = s->fk.range.keystep;
		if (lastkey >= 0)
			last = first + lastkey;
		else if (s->fk.range.limit <= 0)
			last = argc + lastkey;
		else
			last = first + (argc - first) / s->fk.range.limit + lastkey;
	} else {
		step = s->fk.keynum.keystep;
		int at = first + s->fk.keynum.keynumidx;
		long long n;
		if (at >= argc || !zr_str_to_ll(argv[at].ptr, argv[at].len, &n) || n < 0 || n > argc)
			return false;
		first += s->fk.keynum.firstkey;
		last = first + ((int)n - 1) * (step > 0 ? step : 1);
	}
	if (first < 1 || first >= argc || last >= argc || last < first)
		return false;
	r->first = first;
	r->last = last;
	r->step = step > 0 ? step : 1;
	return !(s->flags & KS_INCOMPLETE);
}

void keyiter_init_skip(struct keyiter *it, const struct command *cmd, const struct resp_arg *argv, int argc,
		       uint32_t skip)
{
	it->fits = true;
	it->cur = 0;
	it->n = 0;
	for (int j = 0; j < cmd->key_specs_num; j++) {
		const struct key_spec *s = &cmd->key_specs[j];
		if (s->flags & skip)
			continue;
		struct keyiter_range *r = &it->r[it->n];
		if (!spec_range(s, argv, argc, r))
			it->fits = false;
		/* an INCOMPLETE spec that fits still yields its keys */
		if (r->first <= r->last)
			it->n++;
	}
	it->pos = it->n ? it->r[0].first : 0;
}

void keyiter_init_locked_keys(struct keyiter *it, const struct command *cmd, const struct resp_arg *argv,
			      int argc)
{
	if (keyiter_locks(cmd)) {
		keyiter_init(it, cmd, argv, argc);
		return;
	}
	it->fits = true;
	it->cur = it->n = it->pos = 0;
}

int keyiter_count(const struct keyiter *it)
{
	int n = 0;
	for (int j = it->cur; j < it->n; j++) {
		const struct keyiter_range *r = &it->r[j];
		int from = j == it->cur ? it->pos : r->first;
		if (r->last >= from)
			n += (r->last - from) / r->step + 1;
	}
	return n;
}

int keyiter_getkeys_counted(const struct command *cmd, const struct resp_arg *argv, int argc,
			    struct cmd_key *out)
{
	const struct key_spec *count = NULL;
	int store = 0;
	for (int j = 0; j < cmd->key_specs_num; j++) {
		const struct key_spec *s = &cmd->key_specs[j];
		if (s->find == KS_FIND_KEYNUM && !s->begin.keyword)
			count = s;
		else if (!store && !s->begin.keyword && s->find == KS_FIND_RANGE && s->fk.range.lastkey == 0)
			store = s->begin.pos;
	}
	if (!count)
		return 0;
	int at = count->begin.pos + count->fk.keynum.keynumidx;
	int first = count->begin.pos + count->fk.keynum.firstkey;
	int step = count->fk.keynum.keystep > 0 ? count->fk.keynum.keystep : 1;
	if (at >= argc)
		return 0;
	char *tmp = zr_malloc(argv[at].len + 1);
	memcpy(tmp, argv[at].ptr, argv[at].len);
	tmp[argv[at].len] = '\0';
	int num = (int)strtol(tmp, NULL, 10); /* glibc's atoi */
	zr_free(tmp);
	if (num < 1 || num > (argc - first) / step)
		return 0;
	int n = 0;
	for (int i = 0; i < num; i++)
		out[n++] = (struct cmd_key){ .pos = first + i * step, .flags = 0 };
	if (store)
		out[n++] = (struct cmd_key){ .pos = store, .flags = 0 };
	return n;
}
