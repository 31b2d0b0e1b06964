/* notify_flags — the notify-keyspace-events classes (Redis's letters and
 * bit values) and their text form, shared by the settings (CONFIG GET/SET
 * notify-keyspace-events) and the notifications themselves
 * (commands/notify.h). Pure functions.
 */
#ifndef ZR_NOTIFY_FLAGS_H
#define ZR_NOTIFY_FLAGS_H

#include <stddef.h>

/* Classes, one bit per notify-keyspace-events letter (Redis's values). */
enum notify_flag {
	NOTIFY_KEYSPACE = 1 << 0,  /* K: __keyspace@<db>__:<key> receives the event name */
	NOTIFY_KEYEVENT = 1 << 1,  /* E: __keyevent@<db>__:<event> receives the key */
	NOTIFY_GENERIC = 1 << 2,   /* g: DEL EXPIRE RENAME COPY MOVE PERSIST ... */
	NOTIFY_STRING = 1 << 3,	   /* $ */
	NOTIFY_LIST = 1 << 4,	   /* l */
	NOTIFY_SET = 1 << 5,	   /* s */
	NOTIFY_HASH = 1 << 6,	   /* h */
	NOTIFY_ZSET = 1 << 7,	   /* z */
	NOTIFY_EXPIRED = 1 << 8,   /* x */
	NOTIFY_EVICTED = 1 << 9,   /* e */
	NOTIFY_STREAM = 1 << 10,   /* t */
	NOTIFY_KEY_MISS = 1 << 11, /* m (excluded from A) */
	NOTIFY_LOADED = 1 << 12,   /* module only, no letter */
	NOTIFY_MODULE = 1 << 13,   /* d */
	NOTIFY_NEW = 1 << 14,	   /* n (excluded from A) */
};

/* A: every class but m and n. */
#define NOTIFY_ALL                                                                               \
	(NOTIFY_GENERIC | NOTIFY_STRING | NOTIFY_LIST | NOTIFY_SET | NOTIFY_HASH | NOTIFY_ZSET | \
	 NOTIFY_EXPIRED | NOTIFY_EVICTED | NOTIFY_STREAM | NOTIFY_MODULE)

/* The CONFIG SET error for a bad class letter (after Redis's prefix). */
#define NOTIFY_ERR_CLASS "Invalid event class character. Use 'Ag$lshzxeKEtmdn'."

/* Parses a notify-keyspace-events value ("KEA", "Ex", ""). Returns the
 * flags, or -1 when a character is not a class letter. */
int notify_flags_parse(const char *s);
/* Writes the flags as CONFIG GET shows them (Redis's canonical order,
 * "A" for all of NOTIFY_ALL). */
void notify_flags_format(int flags, char *buf, size_t size);

#endif
