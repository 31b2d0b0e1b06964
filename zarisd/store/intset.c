/* intset — see intset.h. */
#include "zarisd/store/intset.h"

#include <assert.h>
#include <string.h>

#include "zarisd/core/mem.h"

static uint32_t width_for(int64_t v)
{
	if (v >= INT16_MIN && v <= INT16_MAX)
		return 2;
	if (v >= INT32_MIN && v <= INT32_MAX)
		return 4;
	return 8;
}

static int64_t get_w(const unsigned char *data, uint32_t width, uint32_t i)
{
	int16_t a;
	int32_t b;
	int64_t c;
	switch (width) {
	case 2:
		memcpy(&a, data + (size_t)i * 2, 2);
		return a;
	case 4:
		memcpy(&b, data + (size_t)i * 4, 4);
		return b;
	default:
		memcpy(&c, data + (size_t)i * 8, 8);
		return c;
	}
}

static void set_w(unsigned char *data, uint32_t width, uint32_t i, int64_t v)
{
	int16_t a = (int16_t)v;
	int32_t b = (int32_t)v;
	switch (width) {
	case 2:
		memcpy(data + (size_t)i * 2, &a, 2);
		break;
	case 4:
		memcpy(data + (size_t)i * 4, &b, 4);
		break;
	default:
		memcpy(data + (size_t)i * 8, &v, 8);
		break;
	}
}

struct intset *intset_new(void)
{
	struct intset *is = zr_malloc(sizeof(*is));
	is->width = 2;
	is->len = 0;
	return is;
}

struct intset *intset_dup(const struct intset *is)
{
	size_t n = sizeof(*is) + (size_t)is->len * is->width;
	struct intset *d = zr_malloc(n);
	memcpy(d, is, n);
	return d;
}

int64_t intset_get(const struct intset *is, uint32_t i)
{
	assert(i < is->len);
	return get_w(is->data, is->width, i);
}

/* Binary search: true and *POS = index when found, else *POS = insertion
 * point. */
static bool search(const struct intset *is, int64_t v, uint32_t *pos)
{
	uint32_t lo = 0, hi = is->len;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int64_t m = get_w(is->data, is->width, mid);
		if (m == v) {
			*pos = mid;
			return true;
		}
		if (m < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	*pos = lo;
	return false;
}

bool intset_contains(const struct intset *is, int64_t v)
{
	uint32_t pos;
	return width_for(v) <= is->width && search(is, v, &pos);
}

static struct intset *resize(struct intset *is, uint32_t len, uint32_t width)
{
	return zr_realloc(is, sizeof(*is) + (size_t)len * width);
}

bool intset_add(struct intset **isp, int64_t v)
{
	struct intset *is = *isp;
	uint32_t w = width_for(v);
	if (w > is->width) {
		/* V is outside every stored value's range: it goes first or
		 * last. Widen from the end so no value is overwritten early. */
		uint32_t old = is->width;
		is = resize(is, is->len + 1, w);
		bool front = v < 0;
		for (uint32_t i = is->len; i-- > 0;)
			set_w(is->data, w, i + (front ? 1 : 0), get_w(is->data, old, i));
		set_w(is->data, w, front ? 0 : is->len, v);
		is->width = w;
		is->len++;
		*isp = is;
		return true;
	}
	uint32_t pos;
	if (search(is, v, &pos))
		return false;
	is = resize(is, is->len + 1, is->width);
	memmove(is->data + (size_t)(pos + 1) * is->width, is->data + (size_t)pos * is->width,
		(size_t)(is->len - pos) * is->width);
	set_w(is->data, is->width, pos, v);
	is->len++;
	*isp = is;
	return true;
}

void intset_remove_at(struct intset **isp, uint32_t i)
{
	struct intset *is = *isp;
	assert(i < is->len);
	memmove(is->data + (size_t)i * is->width, is->data + (size_t)(i + 1) * is->width,
		(size_t)(is->len - i - 1) * is->width);
	is->len--;
	*isp = resize(is, is->len, is->width);
}

bool intset_remove(struct intset **isp, int64_t v)
{
	uint32_t pos;
	if (width_for(v) > (*isp)->width || !search(*isp, v, &pos))
		return false;
	intset_remove_at(isp, pos);
	return true;
}

size_t intset_memory(const struct intset *is)
{
	return zr_usable(is);
}
