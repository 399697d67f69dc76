/* stripe.h: -P's wire format (stripe-wire.c), for the handshake (stripe.c) and the flows. */
#ifndef STRIPE_H
#define STRIPE_H

#include <stdint.h>

#include "fastcat.h"

/* The wire format (doc/stripe-protocol.md). */
#define STRIPE_VERSION 1
#define STRIPE_HELLO_BYTES                                                                         \
	16                    /* "FASTCAT-STRIPE1\n": the receiver's first bytes, each connection  \
	                       */
#define STRIPE_JOIN_BYTES  24 /* "FCSJ", version, 0, count, index, 0 0, session id, 4 zero bytes */
#define STRIPE_CHUNK_BYTES 16 /* type, 3 zero bytes, length, stream offset (big-endian) */
#define STRIPE_CHUNK_MAX   CHUNK_MAX

#define STRIPE_TRAILER_BYTES 8 /* an END's or VERDICT's payload: an XXH64 */
#define STRIPE_HAS_DIGEST    1 /* END flag: the XXH64 is of the whole stream (--verify) */

enum stripe_type {
	STRIPE_DATA = 'D',    /* len bytes of the stream, starting at offset */
	STRIPE_END = 'E',     /* no more on this connection; the stream is offset bytes long */
	STRIPE_VERDICT = 'V', /* receiver -> sender, on connection 0: offset bytes written */
};

/* The sender's first bytes on each connection: which session, and which of its connections. */
struct stripe_join {
	unsigned count;   /* connections in the session */
	unsigned index;   /* this one's, 0 to count - 1 */
	uint64_t session; /* the sender's id for the session */
};

struct stripe_chunk {
	int type;
	int flags;       /* END: STRIPE_HAS_DIGEST */
	unsigned count;  /* END: the session's connections */
	uint32_t len;    /* DATA: payload bytes; END, VERDICT: STRIPE_TRAILER_BYTES */
	uint64_t offset; /* DATA: of its first byte; END: the stream's length; VERDICT: written */
};

/* stripe-wire.c */
extern const char stripe_hello[STRIPE_HELLO_BYTES];
int stripe_hello_seen(const unsigned char *, size_t);
int stripe_join_prefix(const unsigned char *, size_t);
void stripe_join_encode(unsigned char *, const struct stripe_join *);
int stripe_join_decode(const unsigned char *, struct stripe_join *);
void stripe_chunk_encode(unsigned char *, const struct stripe_chunk *);
int stripe_chunk_decode(const unsigned char *, struct stripe_chunk *);
void stripe_trailer_put(unsigned char *, uint64_t);
uint64_t stripe_trailer_get(const unsigned char *);

/* The state of a striped flow (flow-stripe.c, flow-stripe-in.c). */
/*
 * Bytes of early chunks the receiver may hold: RSS stays under 64 MiB at
 * -P 8 with the default chunk (the bound), and 32 MiB is 2.5 s of a
 * 100 Mbit/s path's worth of one slow connection falling behind.
 */
#define REORDER_MAX (32 * MIB)

/* A chunk that came before its turn, in the list sorted by offset. */
struct held {
	struct held *next;
	uint64_t offset;
	size_t len, got, written; /* payload bytes; read from the socket; written to stdout */
	unsigned char data[];
};

/* Sending: the chunk on its way on one connection (header, then payload). */
struct out_conn {
	unsigned char *buf;
	size_t len, sent;
	size_t payload; /* of len, the stream's bytes */
	int end_queued; /* our END is in buf (or went) */
	int shut;       /* ... and the connection is half-closed after it */
};

/* Receiving: where one connection's stream of chunks stands. */
struct in_conn {
	unsigned char hdr[STRIPE_CHUNK_BYTES + STRIPE_TRAILER_BYTES];
	size_t have;        /* header bytes read (and an END's or VERDICT's trailer) */
	struct held *chunk; /* the payload being read; NULL: a header comes next */
	int ended;          /* its END came */
	int eof;            /* its EOF came */
	int waiting;        /* its chunk is ahead and the reorder memory is full */
};

struct stripe_flow {
	unsigned n;
	uint64_t offset; /* sending: of the next chunk read; receiving: of the next byte written */
	unsigned next;   /* sending: where the search for a free connection starts */
	struct out_conn out[STRIPE_MAX];
	struct in_conn in[STRIPE_MAX];
	struct held *held; /* receiving: early chunks, by offset */
	size_t held_bytes;
	uint64_t total; /* the stream's length, from the ENDs */
	unsigned ended, eofs;
	int failed_conn;        /* the connection a failure came from, -1 = none */
	int status;             /* ... the exit status it means */
	char why[200];          /* ... and what to say */
	unsigned char *scratch; /* draining: what a receiver should not have sent */
	int verify;             /* sending: --verify, the END carries the stream's XXH64 */
	int end_flags;          /* receiving: the ENDs' flags ... */
	uint64_t end_digest;    /* ... and XXH64 */
};

#endif
