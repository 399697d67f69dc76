/*
 * reliable-reorder.c: the --reliable receiver's store. Datagrams come in any order, twice, or
 * not at all; their bytes wait here at their offsets until all before them came, and stdout
 * takes them strictly in order. The store is bounded: a datagram beyond it is dropped and comes
 * again (the sender learns the room from each acknowledgement, and paces to it).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "reliable/reliable.h"

int reorder_init(struct reorder *r, size_t size)
{
	memset(r, 0, sizeof *r);
	r->buf = malloc(size);
	r->size = size;
	return r->buf != NULL ? 0 : -1;
}

void reorder_free(struct reorder *r)
{
	free(r->buf);
	r->buf = NULL;
}

/* len bytes into the ring at stream offset off (within out .. out + size). */
static void ring_copy(struct reorder *r, uint64_t off, const unsigned char *data, size_t len)
{
	while (len > 0) {
		size_t at = (size_t)(off % r->size), piece = r->size - at;

		if (piece > len)
			piece = len;
		memcpy(r->buf + at, data, piece);
		off += piece;
		data += piece;
		len -= piece;
	}
}

/* A datagram's len bytes at stream offset off. */
enum reorder_put reorder_put(struct reorder *r, uint64_t off, const unsigned char *data, size_t len)
{
	uint64_t end = off + len;

	if (end <= r->cum || rangeset_has(&r->ahead, off, end)) {
		r->duplicates++;
		return REORDER_DUP;
	}
	if (end > r->out + r->size) {
		r->dropped++;
		return REORDER_FAR;
	}
	if (off < r->cum) { /* its start came already */
		data += r->cum - off;
		off = r->cum;
	}
	if (off > r->cum && rangeset_add(&r->ahead, off, end) != 0) {
		r->dropped++;
		return REORDER_FULL;
	}
	ring_copy(r, off, data, (size_t)(end - off));
	if (off == r->cum)
		r->cum = rangeset_join(&r->ahead, end);
	return REORDER_NEW;
}

/* The bytes stdout may take now, in one piece of the ring (*p): 0 when none. */
size_t reorder_ready(const struct reorder *r, const unsigned char **p)
{
	size_t at = (size_t)(r->out % r->size), n = (size_t)(r->cum - r->out);

	*p = r->buf + at;
	return n < r->size - at ? n : r->size - at;
}

void reorder_took(struct reorder *r, size_t n)
{
	r->out += n;
}

/*
 * The last max ranges beyond cum, for an acknowledgement: how many. The
 * newest datagrams lie in them, and the sender remembers the older ranges
 * from earlier acknowledgements.
 */
unsigned reorder_sack(const struct reorder *r, struct reliable_range *out, unsigned max)
{
	unsigned n = r->ahead.n < max ? r->ahead.n : max;

	memcpy(out, r->ahead.r + (r->ahead.n - n), n * sizeof out[0]);
	return n;
}
