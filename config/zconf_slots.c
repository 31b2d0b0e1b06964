/* zconf_slots — cluster mode in the file: who serves which hash slot.
 * `cluster.slots = "auto"` (or no node naming its own) splits the 16384
 * slots over the primaries in file order the way `redis-cli --cluster
 * create` does; otherwise each primary lists its own `slots` and together
 * they must cover every slot exactly once. API in zconf.h and
 * zconf_internal.h.
 */
#include "config/zconf_internal.h"
#include "zarisd/core/sha1.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOT_BYTES (ZCONF_SLOTS / 8)

static bool has_slot(const unsigned char *owned, int s)
{
	return owned[s >> 3] & (1u << (s & 7));
}

static void set_slot(unsigned char *owned, int s)
{
	owned[s >> 3] |= (unsigned char)(1u << (s & 7));
}

/* A slot number at *P (digits only), advancing *P; -1 when there is none or
 * it is past the last slot. */
static int read_slot(const char **p)
{
	long v = 0;
	const char *s = *p;

	if (!isdigit((unsigned char)*s))
		return -1;
	for (; isdigit((unsigned char)*s); s++)
		if ((v = v * 10 + (*s - '0')) >= ZCONF_SLOTS)
			return -1;
	*p = s;
	return (int)v;
}

int zconf_parse_slots(const char *s, unsigned char *owned, char *why, size_t whysize)
{
	unsigned char mine[SLOT_BYTES] = { 0 };
	const char *p = s;

	for (;;) {
		const char *item = p;
		int a, b;

		while (*p == ' ')
			p++;
		a = read_slot(&p);
		b = a;
		if (a >= 0 && *p == '-') {
			p++;
			b = read_slot(&p);
		}
		while (*p == ' ')
			p++;
		if (a < 0 || b < 0 || (*p && *p != ',')) {
			snprintf(why, whysize, "\"%.*s\" is not a slot or a range a-b of slots 0 to %d",
				 (int)strcspn(item, ","), item, ZCONF_SLOTS - 1);
			return -EINVAL;
		}
		if (b < a) {
			snprintf(why, whysize, "the range %d-%d ends before it starts", a, b);
			return -EINVAL;
		}
		for (int x = a; x <= b; x++) {
			if (has_slot(mine, x)) {
				snprintf(why, whysize, "slot %d is listed twice", x);
				return -EINVAL;
			}
			set_slot(mine, x);
		}
		if (!*p)
			break;
		p++;
	}
	for (int i = 0; i < SLOT_BYTES; i++)
		owned[i] |= mine[i];
	return 0;
}

/* Appends the ranges of the slots for which OWNER_OF(slot) is true. */
static void format_ranges(const unsigned char *owned, char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	for (int s = 0; s < ZCONF_SLOTS; s++) {
		int e = s;

		if (!has_slot(owned, s))
			continue;
		while (e + 1 < ZCONF_SLOTS && has_slot(owned, e + 1))
			e++;
		if (len < size)
			len += (size_t)(e > s ? snprintf(buf + len, size - len, "%s%d-%d", len ? "," : "", s,
							 e)
					      : snprintf(buf + len, size - len, "%s%d", len ? "," : "", s));
		s = e;
	}
}

void zconf_format_slots(const unsigned char *owned, char *buf, size_t size)
{
	format_ranges(owned, buf, size);
}

void zconf_node_id(const struct zconf *conf, const struct zconf_node *node, char out[41])
{
	char in[512];
	int n = snprintf(in, sizeof(in), "%s/%s", conf->cluster_name ? conf->cluster_name : "", node->name);

	zr_sha1_hex(in, (size_t)n, out);
}

/* redis-cli --cluster create's split: primary i of N gets the slots up to
 * lround(i * 16384/N + 16384/N - 1), computed in float as it does, the last
 * one everything to the end. */
static void auto_split(struct zconf *conf)
{
	size_t n = 0, i = 0;
	float per, cursor = 0.0f;
	int first = 0;

	for (size_t k = 0; k < conf->n_nodes; k++)
		n += conf->nodes[k].role == ZCONF_ROLE_PRIMARY;
	per = (float)ZCONF_SLOTS / (float)n;
	for (size_t k = 0; k < conf->n_nodes; k++) {
		long last;

		if (conf->nodes[k].role != ZCONF_ROLE_PRIMARY)
			continue;
		last = lround(cursor + per - 1);
		if (last > ZCONF_SLOTS || i == n - 1)
			last = ZCONF_SLOTS - 1;
		if (last < first)
			last = first;
		for (int s = first; s <= last; s++)
			conf->slot_owner[s] = (short)k;
		first = (int)last + 1;
		cursor += per;
		i++;
	}
}

/* "0-5, 9, 12-20" of the first three runs of unowned slots, into BUF. */
static int describe_gaps(const struct zconf *conf, char *buf, size_t size)
{
	size_t len = 0;
	int runs = 0, total = 0;

	buf[0] = '\0';
	for (int s = 0; s < ZCONF_SLOTS; s++) {
		int e = s;

		if (conf->slot_owner[s] >= 0)
			continue;
		while (e + 1 < ZCONF_SLOTS && conf->slot_owner[e + 1] < 0)
			e++;
		total += e - s + 1;
		if (++runs <= 3 && len < size)
			len += (size_t)(e > s ? snprintf(buf + len, size - len, "%s%d-%d", len ? ", " : "", s,
							 e)
					      : snprintf(buf + len, size - len, "%s%d", len ? ", " : "", s));
		s = e;
	}
	if (runs > 3 && len < size)
		snprintf(buf + len, size - len, ", ...");
	return total;
}

static int explicit_slots(struct zconf *conf, struct zconf_error *err)
{
	char why[200], gaps[200];
	int missing;

	for (size_t k = 0; k < conf->n_nodes; k++) {
		struct zconf_node *n = &conf->nodes[k];
		unsigned char owned[SLOT_BYTES] = { 0 };

		if (!n->slots)
			continue;
		if (zconf_parse_slots(n->slots, owned, why, sizeof(why)) < 0)
			return zconf_fail(err, conf->path, n->slots_line, "node '%s': 'slots': %s", n->name,
					  why);
		for (int s = 0; s < ZCONF_SLOTS; s++) {
			const struct zconf_node *o;

			if (!has_slot(owned, s))
				continue;
			if (conf->slot_owner[s] >= 0) {
				o = &conf->nodes[conf->slot_owner[s]];
				return zconf_fail(
					err, conf->path, n->slots_line,
					"node '%s': slot %d is already node '%s''s (line %d): slots "
					"overlap",
					n->name, s, o->name, o->slots_line);
			}
			conf->slot_owner[s] = (short)k;
		}
	}
	missing = describe_gaps(conf, gaps, sizeof(gaps));
	if (missing)
		return zconf_fail(err, conf->path, conf->cluster_enabled_line,
				  "cluster: %d slot%s served by no primary: %s (every slot 0-%d needs one, "
				  "or use slots = \"auto\")",
				  missing, missing == 1 ? " is" : "s are", gaps, ZCONF_SLOTS - 1);
	return 0;
}

int zconf_check_slots(struct zconf *conf, struct zconf_error *err)
{
	const struct zconf_node *first_explicit = NULL;
	int rc;

	for (size_t k = 0; k < conf->n_nodes; k++) {
		const struct zconf_node *n = &conf->nodes[k];

		if (!n->slots)
			continue;
		if (!first_explicit)
			first_explicit = n;
		if (!conf->cluster_enabled)
			return zconf_fail(
				err, conf->path, n->slots_line,
				"node '%s': 'slots' needs cluster mode (enabled = true; in cluster)",
				n->name);
		if (n->role == ZCONF_ROLE_REPLICA)
			return zconf_fail(err, conf->path, n->slots_line,
					  "node '%s' is a replica: it serves its primary's slots, only a "
					  "primary takes 'slots'",
					  n->name);
		if (conf->slots_line && conf->slots_auto)
			return zconf_fail(
				err, conf->path, n->slots_line,
				"node '%s': its own 'slots' and the cluster's slots = \"auto\" (line "
				"%d) cannot be mixed: give every primary its slots, or none",
				n->name, conf->slots_line);
	}
	if (!conf->cluster_enabled) {
		if (conf->slots_line)
			return zconf_fail(err, conf->path, conf->slots_line,
					  "'slots' needs cluster mode (enabled = true; in cluster)");
		return 0;
	}
	if (!conf->cluster_name)
		return zconf_fail(err, conf->path, conf->cluster_enabled_line,
				  "cluster mode needs the cluster's 'name' (the node ids derive from it)");
	conf->slots_auto = !first_explicit;
	conf->slot_owner = malloc(ZCONF_SLOTS * sizeof(*conf->slot_owner));
	if (!conf->slot_owner)
		abort();
	for (int s = 0; s < ZCONF_SLOTS; s++)
		conf->slot_owner[s] = -1;
	if (conf->slots_auto)
		auto_split(conf);
	else if ((rc = explicit_slots(conf, err)) < 0)
		return rc;
	for (size_t k = 0; k < conf->n_nodes; k++) {
		struct zconf_node *n = &conf->nodes[k];
		unsigned char owned[SLOT_BYTES] = { 0 };
		char buf[ZCONF_SLOTS * 3];

		for (int s = 0; s < ZCONF_SLOTS; s++)
			if (conf->slot_owner[s] == (short)k)
				set_slot(owned, s);
		format_ranges(owned, buf, sizeof(buf));
		free(n->slots);
		n->slots = zconf_strdup(buf);
	}
	for (size_t k = 0; k < conf->n_nodes; k++) {
		const struct zconf_node *n = &conf->nodes[k], *p;

		if (n->role != ZCONF_ROLE_REPLICA)
			continue;
		p = zconf_find_node(conf, n->replica_of);
		if (p->role == ZCONF_ROLE_REPLICA || !*p->slots)
			return zconf_fail(err, conf->path, n->replica_of_line ? n->replica_of_line : n->line,
					  "node '%s': its primary '%s' owns no slots (%s), so it would serve "
					  "nothing in cluster mode",
					  n->name, p->name,
					  p->role == ZCONF_ROLE_REPLICA ? "it is a replica itself"
									: "no slots given");
	}
	return 0;
}
