/*
 * flow.h: one direction of the relay, and the parts it is made of
 * (flow*.c, copy.c, iobuf.c, lowat.c, ratelimit.c).
 */
#ifndef FLOW_H
#define FLOW_H

#include <errno.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "fastcat.h"
#include "relay/relay.h"

/* A TCP receiver's SO_RCVLOWAT, on while data queues up (lowat.c). */
struct lowat {
	int fd;       /* the socket; -1: not for this flow */
	int mark;     /* --rcvlowat: the most bytes the kernel waits for before it wakes us */
	size_t chunk; /* a read this large says data is queuing */
	int set;      /* the mark set now, at most a quarter of the receive buffer; 0 = off */
	int skip;     /* whole reads before the buffer is looked at again */
	int logged;   /* -v said so once */
	double since; /* waiting on poll() with the mark on since, 0 = not waiting */
};

enum flow_kind { FLOW_SEND, FLOW_RECEIVE };

/*
 * A flow's socket side: the connections it reads from (receiving) or writes
 * to (sending). One today; striping one stream over several connections
 * (-P) fills more, and the pump picks the one a call uses (cur). Poll
 * slots are one per connection that waits, so the relay's loop keeps its
 * shape whatever n is.
 */
#define FLOW_NET_MAX STRIPE_MAX

struct flow_net {
	int fd[FLOW_NET_MAX];
	int ready[FLOW_NET_MAX]; /* optimistic: true until a call on it says EAGAIN */
	unsigned n;              /* connections in use */
	unsigned cur;            /* the one the next call uses */
};

/* One direction: bytes read from src wait in buf until dst takes them. */
struct flow {
	enum flow_kind kind;
	int stdio;                  /* stdin (sending) or stdout (receiving) */
	int stdio_ready;            /* optimistic: true until a call on it says EAGAIN */
	struct flow_net net;        /* the socket side */
	struct stripe_flow *stripe; /* -P: the chunks on their way or held for their turn */
	int enabled;                /* not turned off by -d */
	int running;                /* enabled and its EOF not yet passed on */
	int discard;                /* --send-only: read the peer's data and drop it */
	int keep_dst;               /* -k: stdout stays open for the next connection */
	int src_eof;                /* the source said EOF */
	int dgram_src;              /* whole datagrams in, counted, truncation seen */
	int dgram_dst;              /* each write is one datagram */
	int exact;                  /* --dgram-size: only whole write_size datagrams until EOF */
	int eof_datagram;           /* EOF goes out as a zero-length datagram */
	int ignore_empty;           /* --no-dgram-eof: a zero-length datagram is not EOF */
	int soft_refusal;           /* a refused connectionless peer is no reason to stop reading */
	int checksum;               /* feed what is delivered to stats->digest */
	int seq;                    /* --seq: datagrams carry a sequence number */
	uint64_t next_seq;          /* the number the next datagram sent carries */
	double seq_tail;            /* --seq: the EOF datagram came with gaps open; stragglers
	                               may fill them until then (0: it did not) */
	size_t recv_slot; /* --dgram-size at a receiver: the most a datagram holds, 0 = unknown */
	size_t read_size, write_size;
	size_t read_min; /* room needed at the tail before a read */
	struct iobuf buf;
	struct flow_stats *stats;
	int moved;               /* a byte moved since the relay last looked */
	int err;                 /* errno of the failure that stopped the flow */
	int err_on_write;        /* ... and whether it was writing */
	size_t failed_write_len; /* bytes the failed write tried to move */
	enum copy_method method; /* how this flow moves bytes (copy.c) */
	int pipe[2];             /* METHOD_SPLICE: the pipe the bytes pass through */
	size_t pipe_cap;         /* ... its capacity */
	size_t piped;            /* ... the bytes in it now */
	int pipe_full;           /* ... took no more though bytes say room: its slots are used */
	int copy_forced;         /* --copy=splice: a fallback is worth a warning */
	int method_told;         /* -v named the zero-copy method (once it moved bytes) */
	struct verify *verify;   /* the session's --verify state (verify->on), or the sniffer's */
	struct replay *replay;   /* --retry from a pipe, sending: what was read, until confirmed */
	struct retry *retry;     /* --retry, the sender receiving: the receiver's confirmations */
	struct dgverify *dg;     /* --verify over datagrams: the control state; NULL otherwise */
	int sniff_hello;         /* no --verify: refuse a peer whose first bytes are its hello */
	size_t gate;             /* --verify, sending: bytes that may go before the peer's hello */
	int end_queued;          /* --verify, sending: our END is in the buffer */
	int verdict_queued;      /* --verify, sending: our VERDICT is in the buffer */
	size_t header_left;      /* --verify, sending: header bytes of the frame at the head */
	uint64_t frame_left;     /* --verify: payload bytes of the DATA frame at the head */
	int limited;             /* --rate-limit: writes take tokens from limit */
	struct ratelimit limit;
	struct lowat lowat; /* receiving from TCP: wake per --rcvlowat while data queues */
	/* a connectionless IP listener: datagrams from anyone but peer are dropped */
	int only_peer;
	struct sockaddr_storage peer;
};

/* What flow_init needs to know about a flow's role. */
struct flow_setup {
	const struct config *cfg;
	enum flow_kind kind;
	int src, dst;
	int enabled, discard, keep_dst;
	struct verify *verify;
	struct replay *replay; /* --retry: the sending flow's replay buffer, else NULL */
	struct retry *retry;   /* --retry: the sender's receiving flow takes confirmations */
	struct dgverify *dg;   /* --verify over datagrams, else NULL */
	const int *net;        /* the socket side's connections (src or dst is the first) ... */
	unsigned nnet;         /* ... how many; 0: just src or dst */
	uint64_t start;        /* -P --resume: the stream offset the data starts at (L) */
};

enum pump_result { PUMP_BLOCKED, PUMP_BUDGET_USED, PUMP_FINISHED, PUMP_FAILED };

/* copy.c */
void copy_choose(struct flow *, const struct config *);
int copy_read(struct flow *, size_t);
int copy_write(struct flow *, size_t);
int copy_fallback(struct flow *);
void copy_close(struct flow *);

/* batch-mmsg.c or batch-single.c, chosen by configure */
#define BATCH_MAX 64 /* datagrams one batch_send call may take */
struct msghdr;
int batch_send(int, const struct msghdr *, unsigned);
int batch_recv(int, struct msghdr *, unsigned, size_t *);

/* zerocopy-linux.c or zerocopy-none.c, chosen by configure (zerocopy_available: relay.h) */
int zerocopy_pipe(int[2], size_t, size_t *);
void zerocopy_grow_pipe(int, size_t);
ssize_t zerocopy_splice(int, int, size_t);
ssize_t zerocopy_sendfile(int, int, size_t);

/* flow.c: the pump, and what its parts share */
struct pollfd;
enum pump_result flow_pump(struct flow *);
size_t flow_unsent(const struct flow *);
int flow_poll_events(const struct flow *, struct pollfd *);
void flow_poll_result(struct flow *, const struct pollfd *, int);
long flow_wait_ms(const struct flow *, double);
void flow_failed(struct flow *, int, int);
int flow_write_failed(struct flow *, size_t);
int flow_fall_back(struct flow *, int);
void flow_source_dry(struct flow *);
void flow_count_read(struct flow *, size_t);
void flow_count_write(struct flow *, uint64_t, size_t);
int flow_finish(struct flow *);

/* flow-stripe.c */
int flow_stripe_init(struct flow *, unsigned, int, uint64_t);
enum pump_result flow_stripe_pump(struct flow *);
int flow_stripe_poll_events(const struct flow *, struct pollfd *);
const char *flow_stripe_failure(const struct flow *, int *);
int flow_stripe_attach(struct flow *, int);
void flow_stripe_free(struct flow *);
int stripe_fail(struct flow *, int, int, const char *, ...) __attribute__((format(printf, 4, 5)));
int stripe_socket_failed(struct flow *, int, const char *);

/* flow-stripe-in.c */
enum pump_result stripe_pump_receive(struct flow *);
enum pump_result stripe_pump_drain(struct flow *);

/* flow-setup.c */
int flow_init(struct flow *, const struct flow_setup *, struct flow_stats *);
void flow_free(struct flow *);

/* flow-dgram.c */
ssize_t flow_dgram_recv(struct flow *, size_t);
ssize_t flow_dgram_recv_batch(struct flow *);
ssize_t flow_dgram_send(struct flow *, size_t);
ssize_t flow_dgram_send_batch(struct flow *, unsigned *);
ssize_t flow_dgram_send_eof(struct flow *);
int flow_dgram_tail_over(const struct flow *, double);
void flow_dgram_init(struct flow *, const struct config *, struct flow_stats *);

/* flow-verify.c */
int flow_verify_failed(struct flow *, int, const char *);
ssize_t flow_verify_read(struct flow *, size_t);
int flow_verify_sniff(struct flow *);
size_t flow_verify_len(const struct flow *);
size_t flow_verify_payload(struct flow *, size_t);
int flow_verify_write(struct flow *, size_t);
int flow_verify_queue_trailer(struct flow *);
void flow_verify_init(struct flow *);

/* --verify over streams: this flow carries frames (sending) or takes them apart (receiving). */
static inline int flow_is_framed(const struct flow *f)
{
	return f->verify != NULL && f->verify->on && !f->verify->datagram;
}

/* The source and destination of the flow's next call, and whether they may be ready. */
static inline int flow_src(const struct flow *f)
{
	return f->kind == FLOW_SEND ? f->stdio : f->net.fd[f->net.cur];
}

static inline int flow_dst(const struct flow *f)
{
	return f->kind == FLOW_SEND ? f->net.fd[f->net.cur] : f->stdio;
}

static inline int flow_src_ready(const struct flow *f)
{
	return f->kind == FLOW_SEND ? f->stdio_ready : f->net.ready[f->net.cur];
}

static inline int flow_dst_ready(const struct flow *f)
{
	return f->kind == FLOW_SEND ? f->net.ready[f->net.cur] : f->stdio_ready;
}

static inline void flow_set_src_ready(struct flow *f, int ready)
{
	*(f->kind == FLOW_SEND ? &f->stdio_ready : &f->net.ready[f->net.cur]) = ready;
}

static inline void flow_set_dst_ready(struct flow *f, int ready)
{
	*(f->kind == FLOW_SEND ? &f->net.ready[f->net.cur] : &f->stdio_ready) = ready;
}

/*
 * What a read, write, splice or send said, sorted once: "try again" is
 * never a failure (n is the call's result; errno is read only for n < 0).
 */
enum io_result { IO_MOVED, IO_END, IO_AGAIN, IO_INTERRUPTED, IO_FAILED };

static inline enum io_result io_result(ssize_t n)
{
	if (n > 0)
		return IO_MOVED;
	if (n == 0)
		return IO_END;
	if (errno == EAGAIN || errno == EWOULDBLOCK)
		return IO_AGAIN;
	return errno == EINTR ? IO_INTERRUPTED : IO_FAILED;
}

/* lowat.c */
void lowat_init(struct lowat *, int, size_t, size_t);
int lowat_on(const struct lowat *);
void lowat_read(struct lowat *, size_t);
void lowat_wait(struct lowat *, double);
long lowat_wait_ms(const struct lowat *, double);
int lowat_expired(struct lowat *, double);

#endif
