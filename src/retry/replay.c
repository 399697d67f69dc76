/* replay.c: the bytes a --retry sender read from a pipe and the receiver has not confirmed yet,
 * in a ring of fixed size, so that a lost connection's bytes can be sent again; and the last
 * REPLAY_CHECKED bytes it confirmed, so that a receiver that was restarted can have its file's
 * tail checked against them (pure). */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fastcat.h"
#include "base/base.h"
#include "retry/retry.h"

/*
 * A ring of cap bytes not yet confirmed, and the checked window before them;
 * untouched, its pages cost no memory. NULL when there is none.
 */
struct replay *replay_new(size_t cap)
{
	struct replay *r = calloc(1, sizeof *r);

	if (r == NULL || (r->data = malloc(cap + REPLAY_CHECKED)) == NULL) {
		free(r);
		return NULL;
	}
	r->cap = cap + REPLAY_CHECKED;
	return r;
}

void replay_free(struct replay *r)
{
	if (r != NULL)
		free(r->data);
	free(r);
}

/* The stream starts at offset (where the first connection resumed): nothing held yet. */
void replay_start(struct replay *r, uint64_t offset)
{
	r->oldest = r->kept = r->filled = r->next = offset;
}

/* Bytes the flow may bring in now: while it resends, what it likes; else what the ring has free. */
size_t replay_room(const struct replay *r)
{
	if (r->next < r->filled)
		return SIZE_MAX;
	return r->cap - (size_t)(r->filled - r->oldest);
}

/* Copy between the ring at stream offset off and buf, in at most two pieces (the wrap). */
static void ring_copy(struct replay *r, uint64_t off, unsigned char *buf, size_t len, int in)
{
	while (len > 0) {
		size_t at = (size_t)(off % r->cap), piece = r->cap - at;

		if (piece > len)
			piece = len;
		if (in)
			memcpy(r->data + at, buf, piece);
		else
			memcpy(buf, r->data + at, piece);
		off += piece;
		buf += piece;
		len -= piece;
	}
}

/* len bytes just read from stdin (at most replay_room): they are held, and count as sent next. */
void replay_keep(struct replay *r, const void *buf, size_t len)
{
	ring_copy(r, r->filled, (unsigned char *)(uintptr_t)buf, len, 1);
	if (r->digesting) /* read once: what is sent again is not digested again */
		digest_update(&r->digest, buf, len);
	r->filled += len;
	r->next = r->filled;
}

/* Up to len held bytes from next on into buf, for a connection that resumes. How many. */
size_t replay_resend(struct replay *r, void *buf, size_t len)
{
	uint64_t left = r->filled - r->next;

	if (len > left)
		len = (size_t)left;
	ring_copy(r, r->next, buf, len, 0);
	r->next += len;
	return len;
}

/*
 * The receiver wrote everything before offset: drop it, but for the checked
 * window before it. -1: an offset we never sent.
 */
int replay_confirm(struct replay *r, uint64_t offset)
{
	if (offset > r->filled)
		return -1;
	if (offset > r->kept)
		r->kept = offset;
	if (r->kept - r->oldest > REPLAY_CHECKED)
		r->oldest = r->kept - REPLAY_CHECKED;
	return 0;
}

/*
 * A new connection goes on from offset, the receiver's file length; from
 * any byte held, the checked window's too (a receiver that was restarted
 * has at least what it confirmed). -1: not held (any more).
 */
int replay_rewind(struct replay *r, uint64_t offset)
{
	if (offset < r->oldest || offset > r->filled)
		return -1;
	if (offset > r->kept)
		r->kept = offset;
	r->next = offset;
	return 0;
}

/* XXH64 of the held bytes [from, from + len) into *out. -1: not all of them are held. */
int replay_digest(const struct replay *r, uint64_t from, size_t len, uint64_t *out)
{
	struct digest d;
	unsigned char piece[65536];

	if (from < r->oldest || from + len > r->filled)
		return -1;
	digest_init(&d);
	while (len > 0) {
		size_t n = len < sizeof piece ? len : sizeof piece;

		ring_copy((struct replay *)(uintptr_t)r, from, piece, n, 0);
		digest_update(&d, piece, n);
		from += n;
		len -= n;
	}
	*out = digest_final(&d);
	return 0;
}
