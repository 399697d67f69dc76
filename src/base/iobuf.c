/* iobuf.c: a fixed buffer whose data lives in [head, tail), so a partial write costs no memmove. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "base/base.h"

int iobuf_init(struct iobuf *b, size_t cap)
{
	b->data = malloc(cap);
	b->cap = cap;
	b->head = b->tail = 0;
	return b->data == NULL ? -1 : 0;
}

void iobuf_free(struct iobuf *b)
{
	free(b->data);
	b->data = NULL;
	b->cap = b->head = b->tail = 0;
}

/* Bytes waiting to be written. */
size_t iobuf_len(const struct iobuf *b)
{
	return b->tail - b->head;
}

/* Bytes that can be read in at the tail without moving anything. */
size_t iobuf_room(const struct iobuf *b)
{
	return b->cap - b->tail;
}

char *iobuf_head(struct iobuf *b)
{
	return b->data + b->head;
}

char *iobuf_tail(struct iobuf *b)
{
	return b->data + b->tail;
}

void iobuf_produced(struct iobuf *b, size_t n)
{
	b->tail += n;
}

/* Once everything is written the offsets start over, which is what keeps reads full-sized. */
void iobuf_consumed(struct iobuf *b, size_t n)
{
	b->head += n;
	if (b->head == b->tail)
		b->head = b->tail = 0;
}

/* Move the waiting bytes to the front: only for a part datagram stuck at the end. */
void iobuf_compact(struct iobuf *b)
{
	size_t len = iobuf_len(b);

	memmove(b->data, b->data + b->head, len);
	b->head = 0;
	b->tail = len;
}
