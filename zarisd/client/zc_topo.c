/* zc_topo — the client's nodes and slot map: finding a node by its native
 * or RESP address, and applying a TOPOLOGY result (PROTOCOL.md 7). Nodes
 * are only ever added (an index in flight must stay valid); a node the
 * new topology does not list keeps its connection but owns no slot. */
#include <stdlib.h>
#include <string.h>

#include "zarisd/client/zc_int.h"

int zc_node_find(struct zaris *z, const char *host, size_t hlen, uint16_t port)
{
	for (size_t i = 0; i < z->nnodes; i++) {
		struct zc_node *n = z->nodes[i];
		if (n->port == port && strlen(n->host) == hlen && !memcmp(n->host, host, hlen))
			return (int)i;
	}
	if (z->nnodes >= INT16_MAX)
		return ZARIS_E_NOMEM;
	if (z->nnodes == z->nodes_cap) {
		size_t cap = z->nodes_cap ? z->nodes_cap * 2 : 8;
		struct zc_node **q = realloc(z->nodes, cap * sizeof(*q));
		if (!q)
			return ZARIS_E_NOMEM;
		z->nodes = q;
		z->nodes_cap = cap;
	}
	struct zc_node *n = calloc(1, sizeof(*n));
	if (!n || !(n->host = malloc(hlen + 1))) {
		free(n);
		return ZARIS_E_NOMEM;
	}
	memcpy(n->host, host, hlen);
	n->host[hlen] = '\0';
	n->port = port;
	n->fd = -1;
	z->nodes[z->nnodes] = n;
	return (int)z->nnodes++;
}

int zc_node_by_resp(struct zaris *z, const char *host, size_t hlen, uint16_t port)
{
	for (size_t i = 0; i < z->nnodes; i++) {
		struct zc_node *n = z->nodes[i];
		if (n->resp_port == port && strlen(n->host) == hlen && !memcmp(n->host, host, hlen))
			return (int)i;
	}
	return -1;
}

static bool is_str(const struct zaris_value *v)
{
	return v && (v->type == ZARIS_T_BULK || v->type == ZARIS_T_SIMPLE);
}

static bool str_is(const struct zaris_value *v, const char *s)
{
	return is_str(v) && v->len == strlen(s) && !memcmp(v->str, s, v->len);
}

static bool is_int(const struct zaris_value *v, int64_t lo, int64_t hi)
{
	return v && v->type == ZARIS_T_INTEGER && v->integer >= lo && v->integer <= hi;
}

/* One node's map: its index (made when new) and whether it is a primary
 * with a native port, or a negative error. */
static int apply_node(struct zaris *z, const struct zaris_value *m, int16_t *map)
{
	const struct zaris_value *ip = zaris_map_get(m, "ip"), *port = zaris_map_get(m, "port"),
				 *nport = zaris_map_get(m, "native-port"), *role = zaris_map_get(m, "role"),
				 *id = zaris_map_get(m, "id"), *slots = zaris_map_get(m, "slots");
	if (!is_str(ip) || !is_int(port, 0, 65535) || (nport && !is_int(nport, 0, 65535)) || !is_str(role))
		return ZARIS_E_PROTO;
	int64_t native = nport ? nport->integer : 0;
	if (native == 0 && z->opts.native_port_offset && port->integer)
		native = port->integer + z->opts.native_port_offset;
	if (native <= 0 || native > 65535)
		return 0; /* not reachable over the native protocol: its slots stay unowned */
	int idx = zc_node_find(z, ip->str, ip->len, (uint16_t)native);
	if (idx < 0)
		return idx;
	struct zc_node *n = z->nodes[idx];
	n->resp_port = (uint16_t)port->integer;
	if (is_str(id) && id->len <= 40) {
		memcpy(n->id, id->str, id->len);
		n->id[id->len] = '\0';
	}
	n->primary = str_is(role, "primary");
	if (!n->primary || !slots)
		return 0;
	if (slots->type != ZARIS_T_ARRAY)
		return ZARIS_E_PROTO;
	for (size_t i = 0; i < slots->n; i++) {
		const struct zaris_value *r = &slots->elements[i];
		if (r->type != ZARIS_T_ARRAY || r->n != 2 || !is_int(&r->elements[0], 0, 16383) ||
		    !is_int(&r->elements[1], r->elements[0].integer, 16383))
			return ZARIS_E_PROTO;
		for (int64_t s = r->elements[0].integer; s <= r->elements[1].integer; s++)
			map[s] = (int16_t)idx;
	}
	return 0;
}

int zc_topo_apply(struct zaris *z, const struct zaris_value *v)
{
	const struct zaris_value *epoch = zaris_map_get(v, "epoch"), *nodes = zaris_map_get(v, "nodes");
	if (!is_int(epoch, 0, INT64_MAX) || !nodes || nodes->type != ZARIS_T_ARRAY) {
		zc_set_err(z, "TOPOLOGY: not the map PROTOCOL.md 7 describes");
		return ZARIS_E_PROTO;
	}
	if ((uint64_t)epoch->integer < z->epoch)
		return 0; /* an older view (a node behind): keep ours */
	int16_t *map = malloc(sizeof(z->slot_node));
	if (!map)
		return ZARIS_E_NOMEM;
	for (unsigned s = 0; s < 16384; s++)
		map[s] = -1;
	for (size_t i = 0; i < z->nnodes; i++)
		z->nodes[i]->primary = false;
	for (size_t i = 0; i < nodes->n; i++) {
		int rc = nodes->elements[i].type == ZARIS_T_MAP ? apply_node(z, &nodes->elements[i], map)
								: ZARIS_E_PROTO;
		if (rc < 0) {
			free(map);
			zc_set_err(z, "TOPOLOGY: node %zu is not as PROTOCOL.md 7 describes", i);
			return rc;
		}
	}
	memcpy(z->slot_node, map, sizeof(z->slot_node));
	free(map);
	z->epoch = (uint64_t)epoch->integer;
	z->stats.epoch = z->epoch;
	return 0;
}
