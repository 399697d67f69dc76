/*
 * relay.h: the relay's face for the layers above. relay_run moves a session's two flows
 * (stdin -> socket, socket -> stdout) and knows no feature: what a feature changes in a
 * flow it says once, at set-up, in a struct flow_ops (OpenSSH's channel handlers, iperf3's
 * struct protocol); what needs a pollfd or a deadline while the relay runs registers as a
 * struct relay_agent (redis's ae.c file and time events).
 */
#ifndef FASTCAT_RELAY_H
#define FASTCAT_RELAY_H

#include <stddef.h>
#include <sys/types.h>

#include "fastcat.h"

enum flow_kind { FLOW_SEND, FLOW_RECEIVE };

/*
 * After a datagram sender's end (--seq's EOF datagram, or a feature's), seconds its reordered
 * datagrams may take to arrive: a gap still open then is a loss.
 */
#define STRAGGLER_GRACE 0.25

/* A feature's datagram starts with this many bytes that say whose it is (as --seq's number). */
#define DATAGRAM_HEAD 8

enum pump_result { PUMP_BLOCKED, PUMP_BUDGET_USED, PUMP_FINISHED, PUMP_FAILED };

struct flow;
struct pollfd;
struct relay;

/*
 * What a feature changes in a flow, chosen once at set-up (relay/flow.h has the struct
 * flow they get). A NULL member keeps the relay's own way; a flow without a feature has
 * flow_plain_ops.
 */
struct flow_ops {
	const char *rw_reason; /* why the flow must see its bytes (no zero-copy), or NULL */
	size_t read_reserve;   /* room a read leaves in front of the data (a frame header) */
	size_t buffer_extra;   /* the buffer's room past a chunk (trailers) */
	int digests_itself;    /* the ops feed the flow's digest, not the relay (--checksum) */
	int ends_input;        /* datagrams: the feature ends the input, an empty one does not */
	size_t datagram_min;   /* datagrams: the feature's own fit whole in a receive slot */
	int (*start)(struct flow *); /* once the buffer is there: 0, or -1 out of memory */
	void (*stop)(struct flow *); /* free what start made */
	/* a pump of its own (-P), with its own poll slots; else the stream pump's steps below */
	enum pump_result (*pump)(struct flow *);
	int (*poll_events)(const struct flow *, struct pollfd *);
	void (*poll_result)(struct flow *, const struct pollfd *, int);
	long (*wait_ms)(const struct flow *, double); /* ... and its deadline: ms from now, -1 */
	ssize_t (*read)(struct flow *,
	                size_t);             /* the source into the buffer's tail, read(2)'s way */
	int (*write)(struct flow *, size_t); /* the buffer's head to the destination: 0, -1 */
	size_t (*len)(const struct flow *);  /* bytes the next write may take */
	size_t (*wrote)(struct flow *, size_t); /* of n bytes written from the head, the data's */
	int (*step)(struct flow *);             /* before each step: 0, or -1 when it failed */
	int (*may_send)(const struct flow *);   /* data may go to the socket now */
	int (*drained)(const struct flow *);    /* nothing of its own is left to pass on */
	int (*pass_eof)(struct flow *);         /* EOF, its way: 1 done, 0 not yet, -1 failed */
	void (*ended)(struct flow *);           /* the flow passed its EOF on */
	/* a datagram whose first bytes (head, then body) may be the feature's: 1 taken, 0 data,
	 * -1 failed */
	int (*datagram)(struct flow *, const unsigned char *, const unsigned char *, size_t);
	void (*unreachable)(struct flow *); /* ICMP: the peer's port was unreachable */
};

extern const struct flow_ops flow_plain_ops;

/* What feeds a sending flow instead of read(2) on stdin (--retry's replay buffer). */
struct flow_source {
	ssize_t (*read)(void *, int, void *, size_t); /* (ctx, stdin, buf, want): read(2)'s way */
	size_t (*room)(const void *);                 /* bytes it may take now */
	void *ctx;
	const char *rw_reason; /* it must see the bytes: no zero-copy */
};

/* Where a receiving flow's bytes go instead of stdout (--retry's confirmations, at the sender).
 * take: 0, or -1 with the failure set on the flow. */
struct flow_sink {
	int (*take)(void *, struct flow *, const unsigned char *, size_t);
	void *ctx;
};

/* A peer whose first bytes are another mode's hello, refused before they reach stdout. */
struct hello_guard {
	size_t len;                                 /* the hello's length (at most 64) */
	int (*seen)(const unsigned char *, size_t); /* 1 the hello, 0 a prefix of it, -1 not it */
	int status;                                 /* the exit status of the refusal ... */
	const char *why;                            /* ... and what it says */
};
#define HELLO_GUARDS_MAX 4

/* A flow's role, and what plugs into it (relay_plan fills the relay's defaults). */
struct flow_setup {
	int enabled;  /* not turned off by -d, or by a one-way session */
	int discard;  /* --send-only: read the peer's data and drop it */
	int keep_dst; /* -k: stdout stays open for the next connection */
	int sync;     /* --sync: stdout on disk before its end is confirmed (flow_sync) */
	const struct flow_ops *ops;
	void *ctx;                 /* the ops' state */
	struct flow_source source; /* sending; read(2) when .read is NULL */
	struct flow_sink sink;     /* receiving; stdout when .take is NULL */
	const struct hello_guard *guards[HELLO_GUARDS_MAX];
	unsigned nguards;
	const struct digest *digest_from; /* --checksum's digest goes on from here, or NULL */
};

/*
 * Something that needs a pollfd or a deadline while the relay runs: a feature's table of
 * these, registered with its state (relay_add_agent sets ctx). Every member may be NULL;
 * ctx is the first argument of each, and now (monotonic seconds) the last. In each
 * turn the relay calls turn (after the flows moved), then, while the session goes on, idle,
 * poll_events and due, polls, and calls poll_result with the agent's own slots. turn and
 * poll_result return 0, or non-zero to end the session (the reason in the session's failure).
 */
struct relay_agent {
	void *ctx;
	void (*start)(void *, struct relay *, double);
	int (*turn)(void *, struct relay *, double);
	int (*busy)(const void *, const struct relay *); /* the session may not end yet */
	void (*idle)(void *, struct relay *, double);
	int (*poll_events)(void *, const struct relay *, struct pollfd *, int, double);
	int (*poll_result)(void *, struct relay *, const struct pollfd *, int, double);
	double (*due)(const void *, const struct relay *, double); /* when next, -1: no deadline */
	void (*stop)(void *, struct relay *); /* the loop is over: before any line is printed */
};
#define RELAY_AGENTS_MAX 4

/* Everything relay_run needs: the session, stdio, the two flows' roles, the agents. */
struct relay_setup {
	struct session *s;
	int in, out;
	struct flow_setup flows[2]; /* by enum flow_kind */
	struct relay_agent agents[RELAY_AGENTS_MAX];
	unsigned nagents;
};

/* copy.c */
const char *copy_method_name(enum copy_method);

/* flow-book.c: a direction's figures from its counters */
double flow_stats_seconds(const struct flow_stats *, double);
double flow_stats_rate(const struct flow_stats *, double);

/* relay.c */
void relay_plan(struct relay_setup *, struct session *, int, int);
void relay_add_agent(struct relay_setup *, const struct relay_agent *, void *);
void relay_run(struct relay_setup *);
struct flow *relay_flow(struct relay *, enum flow_kind);
int relay_flow_fail(struct relay *, enum flow_kind);
const struct flow *relay_flow_const(const struct relay *, enum flow_kind);
struct session *relay_session(const struct relay *);
double relay_idle_since(const struct relay *);
void relay_heard(struct relay *, double);

/* zerocopy-linux.c or zerocopy-none.c, chosen by configure (the rest is in flow.h) */
int zerocopy_available(void);

#endif
