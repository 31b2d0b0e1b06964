/* notify_flags — see notify_flags.h. */
#include "zarisd/server/notify_flags.h"

#include <stdbool.h>
#include <stdio.h>

/* Letter of each class, in the order Redis prints them (keyspaceEventsFlagsToString). */
static const struct {
	char letter;
	int flag;
} classes[] = {
	{ 'g', NOTIFY_GENERIC },  { '$', NOTIFY_STRING },   { 'l', NOTIFY_LIST },    { 's', NOTIFY_SET },
	{ 'h', NOTIFY_HASH },	  { 'z', NOTIFY_ZSET },	    { 'x', NOTIFY_EXPIRED }, { 'e', NOTIFY_EVICTED },
	{ 't', NOTIFY_STREAM },	  { 'd', NOTIFY_MODULE },   { 'n', NOTIFY_NEW },     { 'K', NOTIFY_KEYSPACE },
	{ 'E', NOTIFY_KEYEVENT }, { 'm', NOTIFY_KEY_MISS },
};

#define CLASS_COUNT (sizeof(classes) / sizeof(classes[0]))

int notify_flags_parse(const char *s)
{
	int flags = 0;
	for (; *s; s++) {
		if (*s == 'A') {
			flags |= NOTIFY_ALL;
			continue;
		}
		size_t i = 0;
		while (i < CLASS_COUNT && classes[i].letter != *s)
			i++;
		if (i == CLASS_COUNT)
			return -1;
		flags |= classes[i].flag;
	}
	return flags;
}

void notify_flags_format(int flags, char *buf, size_t size)
{
	char out[CLASS_COUNT + 2];
	size_t n = 0;
	bool all = (flags & NOTIFY_ALL) == NOTIFY_ALL;
	if (all)
		out[n++] = 'A';
	for (size_t i = 0; i < CLASS_COUNT; i++) {
		int f = classes[i].flag;
		bool after_all = f == NOTIFY_KEYSPACE || f == NOTIFY_KEYEVENT || f == NOTIFY_KEY_MISS;
		/* Redis prints the class letters (n included) only without A, so
		 * "KEAn" reads back as "AKE" there: kept for CONFIG GET fidelity */
		if ((flags & f) && (after_all || !all))
			out[n++] = classes[i].letter;
	}
	out[n] = '\0';
	snprintf(buf, size, "%s", out);
}
