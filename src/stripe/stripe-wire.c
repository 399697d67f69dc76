/* stripe-wire.c: -P's wire format: the hello, the join and the chunk header, coded and checked. */
#include "config.h"

#include <string.h>

#include "fastcat.h"
#include "base/base.h"
#include "stripe/stripe.h"

const char stripe_hello[STRIPE_HELLO_BYTES] = "FASTCAT-STRIPE1\n";
const char stripe_hello_resume[STRIPE_HELLO_BYTES] = "FASTCAT-STRIPE2\n"; /* -l -P --resume */
static const unsigned char join_magic[4] = {'F', 'C', 'S', 'J'};

/*
 * A receiver's hello, of either version, in buf? 1: all of it, 0: len bytes
 * of the start of one, -1: no.
 */
int stripe_hello_seen(const unsigned char *buf, size_t len)
{
	int v1 = wire_match(buf, len, stripe_hello, STRIPE_HELLO_BYTES);
	int v2 = wire_match(buf, len, stripe_hello_resume, STRIPE_HELLO_BYTES);

	return v1 > v2 ? v1 : v2;
}

/* A whole hello (stripe_hello_seen said 1): is it version 2's, a -l -P --resume receiver's? */
int stripe_hello_resumes(const unsigned char *hello)
{
	return memcmp(hello, stripe_hello_resume, STRIPE_HELLO_BYTES) == 0;
}

void stripe_join_encode(unsigned char *p, const struct stripe_join *j)
{
	memset(p, 0, STRIPE_JOIN_BYTES);
	memcpy(p, join_magic, sizeof join_magic);
	p[4] = j->resume ? STRIPE_VERSION_RESUME : STRIPE_VERSION;
	wire_put(p + 6, j->count, 2);
	wire_put(p + 8, j->index, 2);
	wire_put(p + 12, j->session, 8);
}

/*
 * 0, or -1 when the bytes are not a join of a version this fastcat knows (1,
 * or 2 for -P --resume) or its numbers make no sense.
 */
int stripe_join_decode(const unsigned char *p, struct stripe_join *j)
{
	static const unsigned char zero[4];

	if (memcmp(p, join_magic, sizeof join_magic) != 0 ||
	    (p[4] != STRIPE_VERSION && p[4] != STRIPE_VERSION_RESUME) || p[5] != 0 || p[10] != 0 ||
	    p[11] != 0 || memcmp(p + 20, zero, sizeof zero) != 0)
		return -1;
	j->count = (unsigned)wire_get(p + 6, 2);
	j->index = (unsigned)wire_get(p + 8, 2);
	j->session = wire_get(p + 12, 8);
	j->resume = p[4] == STRIPE_VERSION_RESUME;
	if (j->count == STRIPE_AUTO)
		return j->index < STRIPE_AUTO_MAX ? 0 : -1;
	return j->count <= CONN_MAX && j->index < j->count ? 0 : -1;
}

void stripe_chunk_encode(unsigned char *p, const struct stripe_chunk *c)
{
	memset(p, 0, STRIPE_CHUNK_BYTES);
	p[0] = (unsigned char)c->type;
	p[1] = (unsigned char)c->flags;
	wire_put(p + 2, c->count, 2);
	wire_put(p + 4, c->len, 4);
	wire_put(p + 8, c->offset, 8);
}

/* 0, or -1 for a header no sender writes. */
int stripe_chunk_decode(const unsigned char *p, struct stripe_chunk *c)
{
	c->type = p[0];
	c->flags = p[1];
	c->count = (unsigned)wire_get(p + 2, 2);
	c->len = (uint32_t)wire_get(p + 4, 4);
	c->offset = wire_get(p + 8, 8);
	switch (c->type) {
	case STRIPE_END:
		return c->len == STRIPE_TRAILER_BYTES && (c->flags & ~STRIPE_HAS_DIGEST) == 0 &&
		               c->count >= 1 && c->count <= CONN_MAX
		           ? 0
		           : -1;
	case STRIPE_VERDICT:
		return c->len == STRIPE_TRAILER_BYTES && c->flags == 0 && c->count == 0 ? 0 : -1;
	case STRIPE_DATA:
		if (c->flags != 0 || c->count != 0 || c->len == 0 || c->len > STRIPE_CHUNK_MAX)
			return -1;
		return c->offset <= UINT64_MAX - c->len ? 0 : -1;
	case STRIPE_ZERO: /* no payload: len zero bytes of the stream */
		if (c->flags != 0 || c->count != 0 || c->len < STRIPE_ZERO_MIN)
			return -1;
		return c->offset <= UINT64_MAX - c->len ? 0 : -1;
	default: return -1;
	}
}

/* An END's or VERDICT's XXH64, after its header. */
void stripe_trailer_put(unsigned char *p, uint64_t digest)
{
	wire_put(p, digest, 8);
}

uint64_t stripe_trailer_get(const unsigned char *p)
{
	return wire_get(p, 8);
}

/* The first bytes of a join? (so a stranger is refused at its first wrong byte) */
int stripe_join_prefix(const unsigned char *p, size_t len)
{
	return memcmp(p, join_magic, len < sizeof join_magic ? len : sizeof join_magic) == 0;
}
