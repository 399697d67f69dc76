/*
 * chain.h: --chain, one stream through a list of receivers: the sender connects to the first,
 * each node writes what it receives to its stdout and forwards it at once to the next, and the
 * results of every node travel back up to the sender, which alone says whether the stream
 * arrived everywhere. Private to chain/ and cli/. The protocol: doc/chain-protocol.md.
 */
#ifndef FASTCAT_CHAIN_H
#define FASTCAT_CHAIN_H

#include <stddef.h>
#include <poll.h>
#include <stdint.h>

#include "fastcat.h"
#include "net/net.h"

#include "relay/relay.h"

#define CHAIN_MAX      32   /* nodes in a list */
#define CHAIN_TEXT_MAX 2048 /* the list as it travels: host:port,host:port,... */
#define CHAIN_HOST_MAX 256
#define CHAIN_PORT_MAX 6

/* The wire (chain-wire.c): the node's hello, the opening, its answer, the results. */
#define CHAIN_VERSION       1
#define CHAIN_HELLO_BYTES   16
#define CHAIN_OPENING_BYTES 24 /* and the list's text after it */
#define CHAIN_ANSWER_BYTES  16
#define CHAIN_RESULTS_HEAD  8
#define CHAIN_ENTRY_BYTES   24
#define CHAIN_RESULTS_MAX   (CHAIN_RESULTS_HEAD + CHAIN_MAX * CHAIN_ENTRY_BYTES)
#define CHAIN_END_BYTES     32 /* the stream's end mark, right before the sender's EOF */
#define CHAIN_ACK_BYTES     32 /* a node's confirmation, upstream while the stream flows */
#define CHAIN_REJOIN        1  /* the opening's flag: go on from what the node holds */

/* Seconds a node's hello and its answer may take (the answer: per node still to be reached). */
#define CHAIN_PATIENCE 5

/* Seconds a rejoin's opening may take once the node sent its hello (the relay waits). */
#define CHAIN_REJOIN_PATIENCE 1.0

/* Seconds a node whose upstream vanished waits for the node before it to reach it instead. */
#define CHAIN_ORPHAN_WAIT (2 * CHAIN_PATIENCE)

/*
 * The ring a node holds between its upstream, its stdout and its downstream: it keeps what
 * the node after the next one may still need, should the next one die (what lies in two
 * hops' socket buffers and the next node's ring).
 */
#define CHAIN_RING (8u << 20)

/*
 * -P N at the sender: N connections (lanes) on every hop. The stream travels on them in pieces
 * of at most CHAIN_CHUNK, each after a CHAIN_PIECE_HEAD header with its offset and length, and
 * each lane takes the next piece when it has room, so a lane that slows down carries less; the
 * ring grows with the lanes (CHAIN_RING each), as the bytes on the way do.
 */
#define CHAIN_LANES_MAX  8
#define CHAIN_CHUNK      (256u << 10)
#define CHAIN_PIECE_HEAD 16
#define CHAIN_SPANS      64 /* pieces a node holds beyond the first gap */

/*
 * A node that confirms nothing for CHAIN_STALL seconds while bytes wait for it is lost (it hangs,
 * or its host is gone without a FIN or a reset); a live one confirms at least every
 * CHAIN_HEARTBEAT seconds. A node with a rejoin waiting takes it once its upstream sent nothing
 * for CHAIN_QUIET seconds.
 */
#define CHAIN_STALL     15.0
#define CHAIN_HEARTBEAT 3.0
#define CHAIN_QUIET     1.0

/*
 * Bytes a hop's socket may hold unsent (TCP_NOTSENT_LOWAT): the rest waits in the ring, so the
 * bytes between a node and the one two hops on, which its ring keeps for a bypass, stay few on
 * fast links (unsent queues of megabytes filled the ring and held the chain back).
 */
#define CHAIN_UNSENT (256 << 10)

/* A node confirms what it received every this many bytes, or after CHAIN_ACK_DELAY seconds. */
#define CHAIN_ACK_STEP  (256u << 10)
#define CHAIN_ACK_DELAY 0.02

struct chain_node {
	char host[CHAIN_HOST_MAX];
	char port[CHAIN_PORT_MAX];
};

struct chain_list {
	unsigned n;
	struct chain_node node[CHAIN_MAX];
};

/* What became of one node, as the results say it. */
enum chain_state {
	CHAIN_WHOLE,        /* it wrote what it received and its upstream ended well */
	CHAIN_WRITE_FAILED, /* its stdout failed (err); it forwarded the rest */
	CHAIN_NOT_REACHED,  /* it could not be connected to at the start (err) */
	CHAIN_LOST,         /* its connection was lost mid-stream (err; bytes: forwarded to it) */
	CHAIN_CUT,          /* behind a lost node: nothing is known of it */
	CHAIN_SHORT,        /* its stream ended without the end mark (bytes: what it wrote) */
	CHAIN_STATES
};

struct chain_entry {
	unsigned index;
	enum chain_state state;
	int err;
	uint64_t bytes;  /* written to its stdout (lost: forwarded to it) */
	uint64_t digest; /* XXH64 of what it received */
};

/* The opening a node receives: its place in the list, the session's id, the list. */
struct chain_opening {
	unsigned index, count;
	uint64_t id;
	size_t text_len;
	int rejoin;     /* the node before it is gone: its upstream now goes on from what it has */
	unsigned lanes; /* connections on this hop (-P) ... */
	unsigned lane;  /* ... this one's place among them (0: the first, with the back channel) */
	int lanes_auto; /* -P auto: each node picks its own hop's count from its round trip */
};

/* One connection of a hop: lane 0's fd is the flow's socket (upstream) or c->next (down). */
struct chain_lane {
	int fd;
	int ready, eof;
	uint64_t at;   /* the piece on it: its next byte to move ... */
	uint64_t from; /* ... where it starts */
	size_t left;   /* ... its bytes still to move (0: none) */
	unsigned char head[CHAIN_PIECE_HEAD];
	size_t head_n; /* upstream: header bytes read; downstream: header bytes still to send */
	int done;      /* upstream: a piece read whole that waits for room in the list of spans */
};

/* Bytes of the stream a node holds beyond its first gap, [from, to). */
struct chain_span {
	uint64_t from, to;
};

/*
 * A node's confirmation: what it received, what the node after it did (none: NONE), and
 * the least that any node from it to the end of the chain did (the sender's progress).
 */
#define CHAIN_NONE UINT64_MAX
struct chain_ack {
	uint64_t in, next_in, least;
};

/* One node's results and the nodes behind it, by index; have: the ones that are known. */
struct chain_results {
	struct chain_entry entry[CHAIN_MAX];
	unsigned char have[CHAIN_MAX];
};

/*
 * A node's pump: a ring between its upstream, its stdout and the next node (chain-tee.c).
 * The sender's is the same without a stdout, its upstream its stdin. Stream offsets.
 */
struct chain_tee {
	unsigned char *ring; /* ring_size bytes: CHAIN_RING a lane */
	size_t ring_size;
	uint64_t top; /* the highest offset a lane read into (the ring's oldest: top - size) */
	unsigned up_lanes, down_lanes;
	struct chain_lane up[CHAIN_LANES_MAX], down[CHAIN_LANES_MAX];
	struct chain_span got[CHAIN_SPANS]; /* pieces that came ahead of the first gap */
	unsigned ngot;
	uint64_t handed;       /* the stream up to here went to the next node's lanes */
	unsigned rejoin_lanes; /* the waiting rejoin's */
	uint64_t in, out, fwd; /* received, written to stdout, forwarded */
	uint64_t digested;     /* received bytes digested: all but the last CHAIN_END_BYTES */
	uint64_t end;          /* the data's end: in - CHAIN_END_BYTES, once the EOF told */
	uint64_t counted;      /* the sender: data forwarded, each byte counted once */
	uint64_t next_in;      /* what the next node confirmed ... */
	uint64_t behind_in;    /* ... and the one after it (CHAIN_NONE: there is none) */
	uint64_t least;        /* ... and the least of the nodes from it on (CHAIN_NONE: unknown) */
	uint64_t acked_in, acked_next, acked_least; /* this node's last confirmation upstream */
	double ack_due;    /* ... the next one, when something changed, or 0 */
	double acked_at;   /* ... when the last one went (a heartbeat follows CHAIN_HEARTBEAT on) */
	double next_heard; /* when the next node last confirmed anything */
	double up_heard;   /* when the upstream last sent a byte */
	unsigned char ack[CHAIN_ACK_BYTES];
	size_t ack_left;       /* ... the bytes of it still to go */
	int src_eof;           /* the sender: stdin ended (the mark goes into the ring) */
	int up_eof;            /* the upstream's EOF came ... */
	int marked;            /* ... right after a valid end mark */
	uint64_t mark_digest;  /* ... which says this XXH64 */
	double orphan_until;   /* the upstream vanished: a rejoin may come until then, or 0 */
	int up_err;            /* ... how (0: an EOF without the mark) */
	int rejoin_fd;         /* a rejoin that waits for the old upstream's end, or -1 */
	char rejoin_peer[112]; /* ... its address */
	int out_err;           /* stdout failed (its errno): the rest is only forwarded */
	int sync_failed;       /* ... and it was --sync's fdatasync */
	int down_ready, back_ready, down_shut, back_eof, results_in;
	int synced;
};

/* A session's chain: the list, the next node's connection, what came back. */
struct chain {
	struct session *s;
	struct chain_list list;
	unsigned self;             /* the node this is (the sender: none, list.n) */
	int lanes_auto;            /* -P auto: the hop to the next node gets what its RTT needs */
	struct endpoint down;      /* the next node that answered, fd -1: none */
	struct endpoint *next;     /* ... the connection forwarded on: down, the sender's own */
	unsigned down_index;       /* ... its place in the list */
	uint64_t id;               /* the session's */
	struct listener *listener; /* a node's: where a rejoin comes when the node before dies */
	struct flow *flow;         /* the pump's */
	char up_peer[112];         /* the upstream now */
	struct chain_results results;
	struct receiver_outcome outcome[CHAIN_MAX]; /* the sender's judgement, for the report */
	unsigned char back[CHAIN_RESULTS_MAX];      /* confirmations, then the results */
	size_t back_len;
	struct chain_tee tee;
};

static inline int chain_is_sender(const struct chain *c)
{
	return c->self == c->list.n;
}

/* chain-list.c */
int chain_list_parse(const char *, const char *, struct chain_list *, struct failure *);
size_t chain_list_format(const struct chain_list *, char *, size_t);
const char *chain_node_name(const struct chain_list *, unsigned, char *, size_t);

/* chain-wire.c (pure; fuzzed by fuzz-frame) */
extern const char chain_hello[CHAIN_HELLO_BYTES];
int chain_hello_seen(const unsigned char *, size_t);
void chain_opening_encode(unsigned char *, const struct chain_opening *);
int chain_opening_decode(const unsigned char *, struct chain_opening *);
void chain_answer_encode(unsigned char *, uint64_t);
int chain_answer_decode(const unsigned char *, uint64_t *);
void chain_ack_encode(unsigned char *, const struct chain_ack *);
int chain_ack_decode(const unsigned char *, size_t, struct chain_ack *);
int chain_results_length(const unsigned char *, size_t, size_t *);
size_t chain_results_encode(unsigned char *, const struct chain_results *);
int chain_results_decode(const unsigned char *, size_t, unsigned, struct chain_results *);
void chain_end_encode(unsigned char *, uint64_t, uint64_t);
void chain_piece_encode(unsigned char *, uint64_t, size_t);
int chain_piece_decode(const unsigned char *, uint64_t *, size_t *);
int chain_end_decode(const unsigned char *, uint64_t, uint64_t *);
void chain_mark(struct chain_results *, unsigned, enum chain_state, int, uint64_t, uint64_t);
void chain_merge(struct chain_results *, const struct chain_results *);

/* chain-open.c */
extern const struct hello_guard chain_guard;
int chain_reach(struct chain *, const struct config *, unsigned, int, struct endpoint *, uint64_t *,
                struct failure *);
int chain_await_hello(int, const char *, struct failure *);
int chain_send_opening(const struct chain *, unsigned, int, unsigned, int, const char *,
                       struct failure *);
int chain_await_answer(const struct chain *, unsigned, int, const struct endpoint *, uint64_t *,
                       struct failure *);
int chain_greeted(int, const char *, double, struct chain_list *, struct chain_opening *,
                  struct failure *);
int chain_answer(int, const char *, uint64_t, struct failure *);
int chain_open(struct chain *, struct session *, struct endpoint *);

/* chain-lanes.c: -P N, a hop over N connections */
void chain_lanes_reset_up(struct chain_tee *);
void chain_lanes_reset_down(struct chain_tee *, uint64_t);
void chain_lanes_close(struct chain_lane *, unsigned);
int chain_lanes_read(struct flow *, struct chain *);
int chain_lanes_forward(struct flow *, struct chain *);
int chain_lanes_has_work(const struct chain_tee *, unsigned);
int chain_lanes_poll_up(const struct flow *, const struct chain *, struct pollfd *);
int chain_lanes_poll_down(const struct chain *, struct pollfd *);
int chain_lanes_polled(struct flow *, struct chain *, const struct pollfd *);
int chain_lanes_shut(struct chain *);

/* chain-hop.c: a -P hop's other connections opened */
int chain_reach_lanes(struct chain *, const struct config *, unsigned, int, const struct endpoint *,
                      int *, struct failure *);
int chain_lanes_accept(struct chain *, unsigned, struct failure *);
unsigned chain_lanes_for(const struct chain *, const struct endpoint *, unsigned);

/* chain-tee.c: the ring */
uint64_t chain_tee_keep(const struct chain *);
uint64_t chain_tee_room(const struct chain *);
uint64_t chain_tee_data(const struct chain_tee *);
void chain_tee_received(struct flow *, struct chain *, size_t);
void chain_tee_forwarded(struct flow *, struct chain *, uint64_t, size_t);
void chain_tee_digest(struct flow *, struct chain_tee *, uint64_t);
int chain_tee_read(struct flow *, struct chain *);
int chain_tee_write(struct flow *, struct chain_tee *);
int chain_tee_forward(struct flow *, struct chain *);
int chain_tee_marked(struct chain_tee *);
void chain_tee_ended(struct flow *, struct chain_tee *);

/* chain-back.c: confirmations upstream, and what comes back from the next node */
void chain_ack_send(struct chain *, double);
int chain_back_read(struct chain *);
int chain_back_merge(struct chain *);

/* chain-rejoin.c: a lost node bypassed */
void chain_lose(struct chain *, int);
void chain_rejoin_accept(struct chain *);
int chain_rejoin_adopt(struct chain *, double);

/* chain-node.c */
void chain_node_plug(struct chain *, struct session *, struct relay_setup *);
void chain_sender_plug(struct chain *, struct session *, struct relay_setup *);
void chain_close(struct chain *, const struct config *, int);

/* chain-end.c */
void chain_plug(struct chain *, struct session *, struct relay_setup *);
void chain_conclude(struct chain *, struct session *);

#endif
