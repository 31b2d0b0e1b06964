/* example — libzaris in a few calls: connect to a zarisd's native port,
 * SET a key with a TTL and labels, GET it back, INCRBY a counter, drop the
 * labelled keys with INVALIDATE, and run PING as a COMMAND.
 *
 *   cc example.c $(pkg-config --cflags --libs zaris) -o example
 *   ./example [host] port
 *
 * Prints one line per step and exits 0 when every step answered as
 * expected, 1 otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zaris.h>

static int fail(struct zaris *z, const char *step, int rc)
{
	fprintf(stderr, "%s: %s (%s)\n", step, zaris_strerror(rc), z ? zaris_errstr(z) : "");
	zaris_close(z);
	return 1;
}

int main(int argc, char **argv)
{
	struct zaris_options o;
	zaris_options_init(&o);
	if (argc == 3) {
		o.host = argv[1];
		o.port = (uint16_t)atoi(argv[2]);
	} else if (argc == 2) {
		o.port = (uint16_t)atoi(argv[1]);
	} else {
		fprintf(stderr, "usage: %s [host] port\n", argv[0]);
		return 2;
	}
	struct zaris *z;
	char err[256];
	int rc = zaris_connect(&o, &z, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "connect: %s: %s\n", zaris_strerror(rc), err);
		return 1;
	}
	printf("connected: client id %llu%s\n", (unsigned long long)zaris_client_id(z),
	       zaris_is_cluster(z) ? ", cluster mode" : "");

	const char *labels[] = { "example", "greeting" };
	struct zaris_meta meta = { .labels = labels, .nlabels = 2, .entity = "user:1", .entity_len = 6 };
	struct zaris_set_opts set = { .ttl_ms = 60000, .meta = &meta };
	if ((rc = zaris_set(z, "example:key", 11, "hello", 5, &set)) != 1)
		return fail(z, "SET", rc);
	printf("SET example:key hello (ttl 60 s, labels example, greeting)\n");

	char *val;
	size_t vlen;
	if ((rc = zaris_get(z, "example:key", 11, &val, &vlen)) != 1)
		return fail(z, "GET", rc);
	printf("GET example:key: %.*s\n", (int)vlen, val);
	int same = vlen == 5 && !memcmp(val, "hello", 5);
	free(val);
	if (!same)
		return fail(z, "GET (value)", 0);

	int64_t n;
	if ((rc = zaris_incrby(z, "example:counter", 15, 5, &n)))
		return fail(z, "INCRBY", rc);
	printf("INCRBY example:counter 5: %lld\n", (long long)n);

	int64_t gone = zaris_invalidate(z, "example", NULL);
	if (gone < 0)
		return fail(z, "INVALIDATE", (int)gone);
	printf("INVALIDATE example: %lld key(s)\n", (long long)gone);
	if ((rc = zaris_get(z, "example:key", 11, &val, &vlen)) != 0)
		return fail(z, "GET after INVALIDATE", rc < 0 ? rc : 0);

	const char *ping[] = { "PING" };
	const struct zaris_value *reply;
	if ((rc = zaris_command(z, 1, ping, NULL, &reply)))
		return fail(z, "COMMAND PING", rc);
	printf("PING: %.*s\n", (int)reply->len, reply->str);
	if (reply->type != ZARIS_T_SIMPLE || strcmp(reply->str, "PONG"))
		return fail(z, "COMMAND PING (reply)", 0);

	zaris_close(z);
	printf("ok\n");
	return 0;
}
