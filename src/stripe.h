/* stripe.h: -P's wire format and the striped flows' state (stripe.c, flow-stripe.c). */
#ifndef STRIPE_H
#define STRIPE_H

#include <stdint.h>

#include "fastcat.h"

/* The wire format (doc/stripe-protocol.md). */
#define STRIPE_VERSION     1
#define STRIPE_HELLO_BYTES 16 /* "FASTCAT-STRIPE1\n": the receiver's first bytes, each connection  \
	                       */
#define STRIPE_JOIN_BYTES  24 /* "FCSJ", version, 0, count, index, 0 0, session id, 4 zero bytes */
#define STRIPE_CHUNK_BYTES 16 /* type, 3 zero bytes, length, stream offset (big-endian) */
#define STRIPE_CHUNK_MAX   CHUNK_MAX

enum stripe_type {
	STRIPE_DATA = 'D', /* len bytes of the stream, starting at offset */
	STRIPE_END = 'E',  /* no more on this connection; the stream is offset bytes long */
};

/* The sender's first bytes on each connection: which session, and which of its connections. */
struct stripe_join {
	unsigned count;   /* connections in the session */
	unsigned index;   /* this one's, 0 to count - 1 */
	uint64_t session; /* the sender's id for the session */
};

struct stripe_chunk {
	int type;
	uint32_t len;
	uint64_t offset;
};

/* stripe.c */
void stripe_join_encode(unsigned char *, const struct stripe_join *);
int stripe_join_decode(const unsigned char *, struct stripe_join *);
void stripe_chunk_encode(unsigned char *, const struct stripe_chunk *);
int stripe_chunk_decode(const unsigned char *, struct stripe_chunk *);

#endif
