/*
 * stripe.h: -P, one stream striped over several TCP connections: private to stripe/ and to
 * cli/, which opens a session's connections with it and plugs its flows into the relay. The
 * wire format, the decision of -P auto, the connections on their way into a session, and a
 * striped flow's state.
 */
#ifndef FASTCAT_STRIPE_H
#define FASTCAT_STRIPE_H

#include <poll.h>
#include <stdint.h>
#include <sys/socket.h>

#include "fastcat.h"
#include "net/net.h"
#include "relay/relay.h"

/* The wire format (doc/stripe-protocol.md). */
#define STRIPE_VERSION        1 /* a session from byte 0 */
#define STRIPE_VERSION_RESUME 2 /* -P --resume: the --resume opening runs on connection 0 first */
/* "FASTCAT-STRIPE1\n" ("...2\n" for version 2): the receiver's first bytes, each connection */
#define STRIPE_HELLO_BYTES 16
#define STRIPE_JOIN_BYTES  24 /* "FCSJ", version, 0, count, index, 0 0, session id, 4 zero bytes */
#define STRIPE_CHUNK_BYTES 16 /* type, 3 zero bytes, length, stream offset (big-endian) */
#define STRIPE_CHUNK_MAX   CHUNK_MAX

/* -P auto: a join's count says the session grows as it goes, up to this many connections */
#define STRIPE_AUTO     0
#define STRIPE_AUTO_MAX PATH_CONNS_MAX

#define STRIPE_TRAILER_BYTES 8 /* an END's or VERDICT's payload: an XXH64 */
#define STRIPE_HAS_DIGEST    1 /* END flag: the XXH64 is of the whole stream (--verify) */

enum stripe_type {
	STRIPE_DATA = 'D',    /* len bytes of the stream, starting at offset */
	STRIPE_END = 'E',     /* no more on this connection; the stream is offset bytes long */
	STRIPE_VERDICT = 'V', /* receiver -> sender, on connection 0: offset bytes written */
	STRIPE_ZERO = 'Z',    /* --sparse: len zero bytes of the stream at offset, no payload */
};

/*
 * --sparse: a run of zero bytes goes as a ZERO chunk when it is at least
 * this long (whole blocks of this size, counted from the read's start),
 * and a hole in a file on stdin at most this much per chunk.
 */
#define STRIPE_ZERO_MIN   4096
#define STRIPE_ZERO_CHUNK (1024 * MIB)

/* The sender's first bytes on each connection: which session, and which of its connections. */
struct stripe_join {
	unsigned count;   /* connections in the session */
	unsigned index;   /* this one's, 0 to count - 1 */
	uint64_t session; /* the sender's id for the session */
	int resume;       /* version 2: -P --resume, the session starts where the file ends */
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
extern const char stripe_hello_resume[STRIPE_HELLO_BYTES];
int stripe_hello_seen(const unsigned char *, size_t);
int stripe_hello_resumes(const unsigned char *);
int stripe_join_prefix(const unsigned char *, size_t);
void stripe_join_encode(unsigned char *, const struct stripe_join *);
int stripe_join_decode(const unsigned char *, struct stripe_join *);
void stripe_chunk_encode(unsigned char *, const struct stripe_chunk *);
int stripe_chunk_decode(const unsigned char *, struct stripe_chunk *);
void stripe_trailer_put(unsigned char *, uint64_t);
uint64_t stripe_trailer_get(const unsigned char *);

/*
 * -P auto's decision, one tick at a time (stripe-auto.c: pure, unit-tested).
 * What the connections did since the last tick:
 */
struct auto_sample {
	unsigned n;          /* connections in the session */
	double seconds;      /* since the last tick */
	double acked;        /* bytes the receiver acknowledged, all connections */
	double min_rtt_ms;   /* the lowest round trip any of them saw */
	double rtt_ms;       /* their smoothed round trips, the mean */
	double rttvar_ms;    /* their round trips' mean deviations, the mean */
	unsigned limited;    /* connections their send buffer or the peer's window held back */
	unsigned at_ceiling; /* ... by a window that no longer grows */
	double retransmits;  /* segments sent again */
	int network_bound;   /* stdin kept the connections full more often than it ran dry */
	double window_most;  /* the largest send buffer autotuning allows (0: not known) */
};

/* One connection over a tick, for stripe_auto_conn_limited. */
struct auto_conn {
	const struct tcp_stats *now, *before; /* TCP_INFO at this tick and the last */
	double seconds;                       /* between them */
	int sndbuf;                           /* SO_SNDBUF now */
	double sndbuf_ceiling;                /* what autotuning may grow it to (tcp_wmem[2]) */
};

struct auto_state {
	int settled;    /* it grows no more */
	int looked;     /* the first tick's look at the round trip is done */
	int sized;      /* the step sized by what a connection carried is done */
	int judging;    /* it grew: 1, 2 = the measured ticks since that decide whether it helped */
	unsigned skip;  /* ticks to let new connections ramp up before judging */
	double goodput; /* bytes/s before it grew */
	double prev_acked, prev_s; /* the last tick's, for a goodput over two */
	double acc_acked, acc_s;   /* since the judging began */
	char why[160];             /* what the last tick decided, for -v */
	char decision[160];        /* why it settled, for the exit hint */
};

unsigned stripe_auto_decide(struct auto_state *, const struct auto_sample *);
int stripe_auto_conn_limited(const struct auto_conn *);
int stripe_auto_conn_at_ceiling(const struct auto_conn *);
double stripe_auto_interval(double);
void stripe_auto_decision(const struct auto_state *, unsigned, char *, size_t);

/*
 * A connection on its way into a session. Receiving: it was accepted and
 * said hello, and its join has not come whole yet. Sending (-P auto): it is
 * connecting, or the receiver's hello has not come whole yet.
 */
struct pending {
	int fd;
	double deadline;
	unsigned char buf[STRIPE_JOIN_BYTES];
	size_t have;
	int connecting; /* sending: the connect has not finished */
	unsigned index; /* sending: what its join will say */
};

/*
 * Who is in the session and who is on the way: the receiver's wait for the
 * joins, and with -P auto, both ends' connections that join mid-session.
 */
struct stripe_growth {
	const struct config *cfg;
	const struct endpoint *ep; /* sending: the first connection, whose address the rest dial */
	struct conns *conns;       /* the session's connections, which joiners are added to */
	struct listener *l;        /* receiving: where late connections come from */
	struct sockaddr_storage peer; /* receiving: the first join's host; others are strangers */
	struct pending pending[CONN_MAX];
	size_t npending;
	unsigned count;    /* receiving: connections the sender announced; 0 = no join yet */
	int grows;         /* -P auto: the session takes connections as they come */
	unsigned attached; /* connections in the session */
	unsigned char taken[CONN_MAX]; /* receiving: join indexes seen */
	uint64_t session;
	double progress; /* when the last one joined */
	/* sending */
	unsigned next_index;
	double ticked, next_tick; /* the last tick, the next */
	struct auto_state decide;
	struct tcp_stats last[CONN_MAX]; /* TCP_INFO at the last tick */
	uint64_t last_full, last_dry;
	double sndbuf_ceiling; /* tcp_wmem[2], or the SO_SNDBUF -O fixed */
};

/* The state of a striped flow (stripe-flow.c, stripe-send.c, stripe-receive.c). */
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
	int zero;                 /* a ZERO chunk: len zero bytes, none held */
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
	uint64_t start;  /* -P --resume: where the session's stream started (L), else 0 */
	unsigned next;   /* sending: where the search for a free connection starts */
	const struct conns *conns; /* the session's connections: n of them are this flow's */
	int ready[CONN_MAX];       /* optimistic: true until a call on it says EAGAIN */
	struct out_conn out[CONN_MAX];
	struct in_conn in[CONN_MAX];
	struct held *held; /* receiving: early chunks, by offset */
	size_t held_bytes;
	uint64_t total; /* the stream's length, from the ENDs */
	unsigned ended, eofs;
	unsigned char *scratch; /* draining: what a receiver should not have sent */
	struct session *s;      /* the session: its verdict, and --resume's start */
	int verify;             /* sending: --verify, the END carries the stream's XXH64 */
	int sparse;             /* sending: --sparse, zero blocks go as ZERO chunks ... */
	int holes;              /* ... and stdin is a file whose holes are skipped, not read */
	off_t src_pos;          /* ... its position, -1 until known */
	off_t data_until;       /* ... where its data runs to: no hole before it */
	int end_flags;          /* receiving: the ENDs' flags ... */
	uint64_t end_digest;    /* ... and XXH64 */
	int grows;              /* -P auto: connections may join while it runs */
	unsigned expect;        /* receiving: the connections the ENDs announce, 0 = none yet */
	uint64_t full, dry;     /* sending: no connection free for stdin's data; stdin ran dry */
};

/*
 * One -P session: its connections are the session's (s->conns); the flows' states while the
 * relay runs, and with -P auto the connections on their way.
 */
struct stripe {
	const struct config *cfg;
	struct session *s;
	uint64_t id;                  /* the sender's session id */
	struct stripe_growth *growth; /* -P auto: the connections joining mid-session, or NULL */
	struct stripe_flow flows[2];  /* by enum flow_kind, while the relay runs */
};

/* stripe.c: the sender's opening, the relay's place for the pumps, the close */
extern const struct hello_guard stripe_guard;
int stripe_connect(struct stripe *, struct session *, const struct endpoint *, struct failure *);
void stripe_plug(struct stripe *, struct relay_setup *);
void stripe_close(struct stripe *, int);

/* stripe-join.c: connections on their way into a session */
double stripe_patience(const struct config *);
int stripe_accept(struct stripe *, struct session *, struct listener *, struct endpoint *,
                  struct failure *);
int stripe_growth_poll_events(const struct stripe_growth *, struct pollfd *, int);
int stripe_growth_step(struct stripe_growth *, const struct pollfd *, int, int *, int);
double stripe_growth_due(const struct stripe_growth *);
int stripe_growth_dial(struct stripe_growth *);
void stripe_growth_stop(struct stripe_growth *, const char *);
void stripe_growth_free(struct stripe_growth *);

/* stripe-grow.c: -P auto while the relay runs */
void stripe_grow_tick(struct stripe_growth *, const struct stripe_flow *, double, struct session *);
extern const struct relay_agent stripe_growth_agent;

/* stripe-sparse.c: --sparse, the zero runs of a chunk just read (pure, unit-tested) */
size_t stripe_sparse_pack(unsigned char *, size_t, uint64_t, uint64_t *);

/* stripe-flow.c: what both striped flows share */
int stripe_start(struct flow *);
void stripe_stop(struct flow *);
int stripe_poll_events(const struct flow *, struct pollfd *);
void stripe_poll_result(struct flow *, const struct pollfd *, int);
int stripe_attach(struct flow *, size_t);
int stripe_fail(struct flow *, int, int, const char *, ...) __attribute__((format(printf, 4, 5)));
int stripe_socket_failed(struct flow *, int, const char *);
int stripe_free_conn(const struct flow *);

/* stripe-send.c, stripe-receive.c: the pumps */
enum pump_result stripe_pump_send(struct flow *);
enum pump_result stripe_pump_receive(struct flow *);
enum pump_result stripe_pump_drain(struct flow *);

#endif
