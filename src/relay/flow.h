/*
 * flow.h: one direction of the relay. For the relay's own files, and for a feature whose
 * struct flow_ops (relay.h) works on a flow: the flow's state, the bookkeeping every step
 * calls (flow-book.c), and how a syscall's result is sorted.
 */
#ifndef FASTCAT_FLOW_H
#define FASTCAT_FLOW_H

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

/*
 * One direction: bytes read from the source wait in buf until the destination takes them.
 * The socket side is one connection (sock); a feature with a pump of its own (-P) keeps its
 * connections itself.
 */
struct flow {
	enum flow_kind kind;
	const struct flow_ops *ops; /* what a feature changes; flow_plain_ops when none */
	void *ctx;                  /* ... the feature's state */
	struct flow_source source;  /* sending: how stdin is read (read(2) unless .read) */
	struct flow_sink sink;      /* receiving: where the peer's bytes go (stdout unless .take) */
	const struct hello_guard *guards[HELLO_GUARDS_MAX]; /* receiving: refused first bytes */
	unsigned nguards;                                   /* ... 0 once the first bytes passed */
	int stdio;                                          /* stdin (sending) or stdout */
	int stdio_ready;   /* optimistic: true until a call on it says EAGAIN */
	int sock;          /* the connection */
	int sock_ready;    /* ... optimistic too */
	int enabled;       /* not turned off by -d, or by a one-way session */
	int running;       /* enabled and its EOF not yet passed on */
	int discard;       /* --send-only: read the peer's data and drop it */
	int keep_dst;      /* -k: stdout stays open for the next connection */
	int sync;          /* --sync: flow_sync makes stdout's bytes durable */
	int src_eof;       /* the source said EOF */
	int dgram_src;     /* whole datagrams in, counted, truncation seen */
	int dgram_dst;     /* each write is one datagram */
	int exact;         /* --dgram-size: only whole write_size datagrams until EOF */
	int eof_datagram;  /* EOF goes out as a zero-length datagram */
	int ignore_empty;  /* --no-dgram-eof: a zero-length datagram is not EOF */
	int soft_refusal;  /* a refused connectionless peer is no reason to stop reading */
	int checksum;      /* feed what is delivered to stats->digest */
	int seq;           /* --seq: datagrams carry a sequence number */
	uint64_t next_seq; /* the number the next datagram sent carries */
	double seq_tail;   /* --seq: the EOF datagram came with gaps open; stragglers
	                      may fill them until then (0: it did not) */
	size_t recv_slot;  /* --dgram-size at a receiver: the most a datagram holds, 0 = unknown */
	size_t read_size, write_size;
	size_t read_min; /* room needed at the tail before a read */
	struct iobuf buf;
	struct flow_stats *stats;
	/* the stream pump's steps for read/write, chosen once (flow_choose_steps) */
	ssize_t (*read)(struct flow *, size_t);
	int (*write)(struct flow *, size_t);
	int moved;               /* a byte moved since the relay last looked */
	int err;                 /* errno of the failure that stopped the flow */
	int err_on_write;        /* ... and whether it was writing */
	int err_on_sync;         /* ... making the written bytes durable (--sync) */
	size_t failed_write_len; /* bytes the failed write tried to move */
	struct failure failure;  /* a failure with its own reason (flow_fail), else the errno's */
	enum copy_method method; /* how this flow moves bytes (copy.c) */
	int pipe[2];             /* METHOD_SPLICE: the pipe the bytes pass through */
	size_t pipe_cap;         /* ... its capacity */
	size_t piped;            /* ... the bytes in it now */
	int pipe_full;           /* ... took no more though bytes say room: its slots are used */
	int copy_forced;         /* --copy=splice: a fallback is worth a warning */
	int method_told;         /* -v named the zero-copy method (once it moved bytes) */
	int limited;             /* --rate-limit: writes take tokens from limit */
	struct ratelimit limit;
	struct lowat lowat; /* receiving from TCP: wake per --rcvlowat while data queues */
	/* a connectionless IP listener: datagrams from anyone but peer are dropped */
	int only_peer;
	struct sockaddr_storage peer;
};

/* The source and destination of the stream pump's calls, and whether they may be ready. */
static inline int flow_src(const struct flow *f)
{
	return f->kind == FLOW_SEND ? f->stdio : f->sock;
}

static inline int flow_dst(const struct flow *f)
{
	return f->kind == FLOW_SEND ? f->sock : f->stdio;
}

static inline int flow_src_ready(const struct flow *f)
{
	return f->kind == FLOW_SEND ? f->stdio_ready : f->sock_ready;
}

static inline int flow_dst_ready(const struct flow *f)
{
	return f->kind == FLOW_SEND ? f->sock_ready : f->stdio_ready;
}

static inline void flow_set_src_ready(struct flow *f, int ready)
{
	*(f->kind == FLOW_SEND ? &f->stdio_ready : &f->sock_ready) = ready;
}

static inline void flow_set_dst_ready(struct flow *f, int ready)
{
	*(f->kind == FLOW_SEND ? &f->sock_ready : &f->stdio_ready) = ready;
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

/* flow-book.c: the bookkeeping every step calls, the relay's own and the features' */
void flow_count_read(struct flow *, size_t);
void flow_count_write(struct flow *, uint64_t, size_t);
void flow_wrote(struct flow *, size_t, unsigned);
int flow_wrote_result(struct flow *, ssize_t, size_t, unsigned);
void flow_poll_ready(struct flow *, const struct pollfd *, int, const int *, int *, unsigned);
void flow_failed(struct flow *, int, int);
int flow_write_failed(struct flow *, size_t);
int flow_fail(struct flow *, int, const char *, ...) __attribute__((format(printf, 3, 4)));
int flow_sync(struct flow *);
void flow_source_dry(struct flow *);
ssize_t flow_source_read(struct flow *, void *, size_t);
size_t flow_source_room(const struct flow *);

/* flow-pump.c: the stream pump */
enum pump_result flow_pump(struct flow *);
int flow_poll_events(const struct flow *, struct pollfd *);
void flow_poll_result(struct flow *, const struct pollfd *, int);
long flow_wait_ms(const struct flow *, double);
int flow_finish(struct flow *);
uint64_t flow_stdin_left(const struct flow *);
void flow_choose_steps(struct flow *);

/* flow-setup.c */
int flow_init(struct flow *, enum flow_kind, const struct config *, const struct flow_setup *, int,
              int, struct flow_stats *);
void flow_free(struct flow *);

/* flow-dgram.c: the datagram steps */
ssize_t flow_dgram_read(struct flow *, size_t);
int flow_dgram_write(struct flow *, size_t);
ssize_t flow_dgram_send_eof(struct flow *);
int flow_dgram_tail_over(const struct flow *, double);
void flow_dgram_init(struct flow *, const struct config *, struct flow_stats *);

/* copy.c */
void copy_choose(struct flow *, const struct config *);
int copy_read(struct flow *, size_t);
int copy_write(struct flow *, size_t);
void copy_close(struct flow *);

/* sniff.c */
int sniff_hello(struct flow *);

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

/* lowat.c */
void lowat_init(struct lowat *, int, size_t, size_t);
int lowat_on(const struct lowat *);
void lowat_read(struct lowat *, size_t);
void lowat_wait(struct lowat *, double);
long lowat_wait_ms(const struct lowat *, double);
int lowat_expired(struct lowat *, double);

#endif
