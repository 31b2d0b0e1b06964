/* cmd_zset — helpers shared by the sorted-set command files (cmd_zset.c,
 * cmd_zset_setops.c, cmd_zset_pop.c). Each runs on the client's
 * worker with the shard locks of the keys it touches held, and the ones
 * that can fail have already replied the error when they return false
 * (Redis's ...OrReply habit).
 */
#ifndef ZR_CMD_ZSET_H
#define ZR_CMD_ZSET_H

#include <stdbool.h>
#include <stddef.h>

struct client;
struct entry;
struct zset;
struct zset_limits;
struct zset_score_range;
struct zset_lex_range;

/* zset-max-listpack-entries / -value, read now. */
void zcmd_limits(const struct client *c, struct zset_limits *lim);
/* Looks argv[ARGI] up (WRITE: lookupKeyWrite, not counted in keyspace
 * hits/misses). *Z is NULL when the key is missing. false after replying
 * WRONGTYPE when it holds something else. */
bool zcmd_lookup(struct client *c, int argi, bool write, struct entry **e, struct zset **z);
/* After modifying Z (entry E of argv[KEYI]) in place: notifies EVENT,
 * then deletes the key (and notifies "del") when Z is empty, else records
 * the change. E and Z are invalid afterwards when deleted. */
void zcmd_written(struct client *c, int keyi, struct entry *e, struct zset *z, const char *event);
/* Stores the new Z (consumed) as argv[KEYI], replacing the key and its TTL
 * like setKey, and signals the key to clients blocked in BZPOP*. false
 * after replying -OOM. */
bool zcmd_store_new(struct client *c, int keyi, struct zset *z);
/* A store command's end (ZRANGESTORE, Z*STORE): stores Z (consumed) as
 * with zcmd_store_new, or deletes argv[KEYI] when Z is empty; replies the
 * cardinality; then notifies EVENT ("del" for a deleted key), in Redis's
 * order. */
void zcmd_store_result(struct client *c, int keyi, struct zset *z, const char *event);

/* The header of an element list: RESP2 WITHSCORES flattens the pairs. */
void zcmd_reply_elems_header(struct client *c, long n, bool withscores);
/* One element; with scores, RESP3 nests [member, score]. */
void zcmd_reply_elem(struct client *c, const char *m, size_t mlen, double score, bool withscores);

/* zslParseRange / zslParseLexRange of argv[MINI], argv[MAXI]; false after
 * replying Redis's "min or max ..." error. Lex bounds point into argv. */
bool zcmd_parse_score_range(struct client *c, int mini, int maxi, struct zset_score_range *r);
bool zcmd_parse_lex_range(struct client *c, int mini, int maxi, struct zset_lex_range *r);

#endif
