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

/*
 * Where stream offset off (out .. out + size) lies in the ring. The ring starts again at out
 * each time stdout took all it held, so that in-order bytes keep to its first bytes, still in
 * the cache when the next datagrams come into them.
 */
static size_t ring_at(const struct reorder *r, uint64_t off)
{
	return (size_t)((off - r->base) % r->size);
}

/* len bytes into the ring at stream offset off (within out .. out + size). */
static void ring_copy(struct reorder *r, uint64_t off, const unsigned char *data, size_t len)
{
	while (len > 0) {
		size_t at = ring_at(r, off), piece = r->size - at;

		if (piece > len)
			piece = len;
		memcpy(r->buf + at, data, piece);
		off += piece;
		data += piece;
		len -= piece;
	}
}

/*
 * Bytes [off, end) of a datagram: new and within the store (REORDER_NEW, their ranges noted,
 * *from the first not held yet: off, or cum when their start came already), or why not.
 */
static enum reorder_put admit(struct reorder *r, uint64_t off, uint64_t end, uint64_t *from)
{
	if (end <= r->cum || rangeset_has(&r->ahead, off, end)) {
		r->duplicates++;
		return REORDER_DUP;
	}
	if (end > r->out + r->size) {
		r->dropped++;
		return REORDER_FAR;
	}
	*from = off < r->cum ? r->cum : off;
	if (*from > r->cum && rangeset_add(&r->ahead, *from, end) != 0) {
		r->dropped++;
		return REORDER_FULL;
	}
	return REORDER_NEW;
}

/* A datagram's len bytes at stream offset off. */
enum reorder_put reorder_put(struct reorder *r, uint64_t off, const unsigned char *data, size_t len)
{
	uint64_t end = off + len, from;
	enum reorder_put put = admit(r, off, end, &from);

	if (put != REORDER_NEW)
		return put;
	ring_copy(r, from, data + (from - off), (size_t)(end - from));
	if (from == r->cum)
		r->cum = rangeset_join(&r->ahead, end);
	return REORDER_NEW;
}

/*
 * A datagram's len bytes the socket put at their place in the ring already (reorder_at):
 * taken as reorder_put takes them, and where they are not taken the ring's bytes there mean
 * nothing.
 */
enum reorder_put reorder_mark(struct reorder *r, uint64_t off, size_t len)
{
	uint64_t end = off + len, from;
	enum reorder_put put = admit(r, off, end, &from);

	if (put == REORDER_NEW && from == r->cum)
		r->cum = rangeset_join(&r->ahead, end);
	return put;
}

/*
 * Where stream offset off lies in the ring, and in *contig the bytes from there to the
 * ring's end. A receive may put bytes there only when nothing is held at or beyond off (off
 * at least the highest byte taken) and off + len within the store.
 */
unsigned char *reorder_at(const struct reorder *r, uint64_t off, size_t *contig)
{
	size_t at = ring_at(r, off);

	*contig = r->size - at;
	return r->buf + at;
}

/* len bytes of the ring from stream offset off into out (those a receive put there). */
void reorder_read(const struct reorder *r, uint64_t off, unsigned char *out, size_t len)
{
	while (len > 0) {
		size_t contig, piece;
		const unsigned char *at = reorder_at(r, off, &contig);

		piece = contig < len ? contig : len;
		memcpy(out, at, piece);
		off += piece;
		out += piece;
		len -= piece;
	}
}

/* The bytes stdout may take now, in one piece of the ring (*p): 0 when none. */
size_t reorder_ready(const struct reorder *r, const unsigned char **p)
{
	size_t at = ring_at(r, r->out), n = (size_t)(r->cum - r->out);

	*p = r->buf + at;
	return n < r->size - at ? n : r->size - at;
}

void reorder_took(struct reorder *r, size_t n)
{
	r->out += n;
	if (r->out == r->cum && r->ahead.n == 0)
		r->base = r->out;
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
