/*
 * reliable.h: --reliable, a paced and repaired datagram transfer over udp: the wire format, the
 * range sets, the sender's record of what is on the way, the pacer's model of the path, the
 * receiver's reorder store (all pure), the opening, both pumps, and what a session plugs in.
 * Private to reliable/ and cli/. The protocol: doc/reliable-protocol.md.
 */
#ifndef FASTCAT_RELIABLE_H
#define FASTCAT_RELIABLE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "fastcat.h"

#define RELIABLE_VERSION   1
#define RELIABLE_HEAD      16 /* every datagram's: magic, type, version, flags, session */
#define RELIABLE_DATA_HEAD (RELIABLE_HEAD + 16)
#define RELIABLE_ACK_HEAD  (RELIABLE_HEAD + 32)
#define RELIABLE_SACK_MAX  64 /* ranges one acknowledgement carries */
#define RELIABLE_ACK_MAX   (RELIABLE_ACK_HEAD + RELIABLE_SACK_MAX * 16)
#define RELIABLE_HELLO_LEN (RELIABLE_HEAD + 16)
#define RELIABLE_END_LEN   (RELIABLE_HEAD + 24)
#define RELIABLE_RANGES    1024 /* byte ranges a side keeps beyond its first gap */

/* What a datagram is (its byte 4). */
enum reliable_type {
	RELIABLE_ANSWER = 'A',  /* the receiver: here, this much room */
	RELIABLE_HELLO = 'H',   /* the sender: this session, datagrams this big */
	RELIABLE_DATA = 'D',    /* stream bytes at an offset */
	RELIABLE_ACK = 'K',     /* what arrived: all below cum, and ranges beyond */
	RELIABLE_END = 'E',     /* the sender's last: count and XXH64 */
	RELIABLE_CONFIRM = 'C', /* the receiver's answer to it: what it wrote */
	RELIABLE_REFUSE = 'N',  /* not this session, or not a --reliable peer */
};

struct reliable_head {
	enum reliable_type type;
	unsigned tag; /* the receiver's own number (multicast tells receivers apart by it); 0 */
	uint64_t session;
};

/* [from, to) of the stream. */
struct reliable_range {
	uint64_t from, to;
};

/* A data datagram: pkt is new for every sending (repairs too), off is where it belongs. */
struct reliable_data {
	uint64_t pkt, off;
};

/* An acknowledgement: all below cum arrived, and the ranges beyond it (their gaps: the NAKs). */
struct reliable_ack {
	uint64_t largest_pkt; /* the highest pkt seen, and how long it waited (for the RTT) */
	uint32_t delay_us;
	uint32_t room; /* bytes the receiver can still hold beyond cum */
	uint64_t cum;
	uint64_t delivered; /* bytes received all told, repairs and duplicates too (the rate) */
	unsigned n;
	struct reliable_range range[RELIABLE_SACK_MAX];
};

/* The hellos (A, H), the end (E) and its confirmation (C): a few numbers each. */
struct reliable_hello {
	uint64_t nonce;
	uint32_t room;    /* A: the receiver's reorder store */
	uint16_t payload; /* H: the data bytes in a datagram; A: the most it takes */
};

struct reliable_end {
	uint64_t bytes, digest, datagrams;
};

/* A set of disjoint byte ranges, in order, at most RELIABLE_RANGES of them. */
struct rangeset {
	struct reliable_range r[RELIABLE_RANGES];
	unsigned n;
};

/* The receiver's store: bytes beyond what stdout took, written out strictly in order. */
struct reorder {
	unsigned char *buf;
	size_t size;
	uint64_t out;          /* written to stdout */
	uint64_t cum;          /* received in one run from 0 */
	struct rangeset ahead; /* received beyond cum */
	uint64_t base;         /* the offset at the ring's start: out, each time the ring empties */
	uint64_t duplicates, dropped;
};

enum reorder_put {
	REORDER_NEW,  /* some of it was new */
	REORDER_DUP,  /* all of it was there already */
	REORDER_FAR,  /* beyond what the store holds: dropped, to come again */
	REORDER_FULL, /* too many ranges ahead: dropped, to come again */
};

/*
 * The sender's record of what is on the way: one entry per datagram sent, by pkt, until an
 * acknowledgement covers its bytes or it is taken for lost (its bytes then wait in `repair`).
 */
struct sent_pkt {
	uint64_t off;
	uint32_t len;
	int live;  /* neither acknowledged nor lost yet */
	double at; /* when it was sent ... */
	uint64_t
	    delivered; /* ... and the bytes acknowledged by then (for a delivery-rate sample) */
	double delivered_at;
	double first_sent_at; /* the sending of the newest datagram acknowledged by then */
	int app_limited;      /* sent while stdin (or the receiver's room) held the sender back */
};

struct sent_log {
	struct sent_pkt *pkt; /* a ring of cap entries by pkt number */
	uint64_t cap;
	uint64_t first, next; /* the oldest pkt still recorded, the next to send */
	uint64_t scanned;     /* every pkt below it is resolved, or in doubt: */
	uint64_t *doubt;      /* ... not covered though a later one was (lost, or late) */
	uint64_t ndoubt;
	uint64_t cum;           /* the receiver has every byte below it */
	uint64_t largest_acked; /* + 1: 0 while none */
	uint64_t delivered;     /* bytes acknowledged, all told */
	double delivered_at;
	double first_sent_at;   /* when the newest datagram acknowledged so far was sent */
	double srtt, min_rtt;   /* seconds; 0 until the first sample */
	struct rangeset have;   /* bytes the receiver said it has beyond cum */
	struct rangeset repair; /* bytes taken for lost: to go again, first */
	uint64_t lost_pkts;
	uint64_t app_limited; /* + 1: what is sent is app-limited until delivered passes it */
};

/* What one acknowledgement told the sender. */
struct sent_news {
	uint64_t acked_bytes, lost_bytes;
	double rtt;      /* a round-trip sample, or 0 */
	double rate;     /* a delivery-rate sample in bytes a second, or 0 */
	int app_limited; /* the sample's datagram went while the sender had less than the pace */
};

/*
 * The pacer's model of the path, as BBR keeps one: the bottleneck's rate (the largest delivery
 * rate of the last RATE_ROUNDS round trips) and the round trip without a queue (the least of
 * the last 10 s). Random loss moves neither; a queue that stands raises the round trip, and the
 * gains that follow drain it. Bytes and seconds.
 */
#define RATE_ROUNDS 10
enum rate_mode { RATE_STARTUP, RATE_DRAIN, RATE_PROBE };

struct rate_model {
	enum rate_mode mode;
	double bw, round_bw[RATE_ROUNDS]; /* the bottleneck's rate, and each round's largest */
	unsigned round;
	double round_start;
	double min_rtt, min_rtt_at;
	double full_bw; /* startup: the rate that the last rounds did not beat by 25 % */
	unsigned full_rounds;
	unsigned phase; /* probe: where in its cycle of gains */
	double phase_start;
	double start_rate, ceiling; /* before any sample; --rate-limit (0: none) */
	char why[160];              /* the last change of mode, for -v */
};

/* What the bytes of a store and the numbers of a record come to (both ends, each session). */
#define RELIABLE_STORE   (32 * MIB) /* the sender's unacknowledged bytes; the receiver's reorder */
#define RELIABLE_LOG     65536      /* datagrams the sender's record holds at once */
#define RELIABLE_SILENCE 10.0       /* seconds a peer may say nothing (without -w) */
#define RELIABLE_SOCKBUF (8 * MIB)  /* SO_SNDBUF and SO_RCVBUF asked for (without -O, -I) */

/*
 * One receiver as the sender sees it (reliable-peers.c): what it has, the path to it, when it
 * last spoke. A unicast sender has one; a multicast sender one for each that answered.
 */
struct reliable_peer {
	struct sockaddr_storage addr; /* where its datagrams come from ... */
	socklen_t addr_len;
	unsigned tag; /* ... and the tag they carry */
	char name[80];
	struct sent_log log;
	struct rate_model model;
	uint64_t room_end; /* it cannot hold a byte at or beyond it (its cum + room) */
	uint64_t inflight; /* bytes sent and neither acknowledged nor taken for lost */
	double heard_at;   /* its last datagram */
	double held_since; /* multicast: new bytes wait for its room since then (0: they do not) */
	double probe_at;   /* no acknowledgement since: then what is on the way is lost */
	unsigned probes;   /* ... in a row (each doubles the wait) */
	int confirmed, dropped;
	struct reliable_end said; /* its confirmation */
	uint64_t acks, gap_acks, lost_bytes;
	char why[160]; /* dropped: why */
};

#define RELIABLE_RECEIVERS_MAX 64 /* --receivers */

/* The sender, from the opening to every receiver's confirmation (reliable-send.c). */
struct reliable_send {
	int fd;
	uint64_t session;
	size_t payload;       /* data bytes a datagram */
	unsigned char *store; /* a ring of the stream's bytes from the least cum to `read` */
	size_t size;
	uint64_t read; /* stdin's bytes taken into the store, all told */
	uint64_t next; /* the first byte never sent */
	struct reliable_peer *peers;
	unsigned npeers, wanted;       /* those that answered; --receivers (1 unicast) */
	struct sockaddr_storage group; /* multicast: where datagrams go (the socket is not */
	socklen_t group_len;           /* connected, so that every receiver's reach it); else 0 */
	double tokens, tokens_at;      /* the pacer's bucket, bytes */
	double end_at;                 /* the end (E) went last then, 0: not yet */
	double silence;                /* seconds a receiver may say nothing */
	double min_rate;               /* --min-rate, bytes/s (0: none) ... */
	double rate_at, slow_for;      /* ... the group's last look, and how long it was below */
	uint64_t rate_cum;             /* ... the bytes every receiver had then */
	int stdin_short;               /* ... stdin held the sender back since */
	int eof, confirmed, sock_ready;
	struct digest digest; /* XXH64 of stdin's bytes */
	struct reliable_end end;
	struct reliable_figures *fig;
	struct receiver_outcome *outcome; /* multicast, for the report: each receiver */
};

/* The receiver, from the hello to the sender's last word (reliable-recv.c). */
struct reliable_recv {
	int fd;
	uint64_t session;
	size_t payload;
	struct reorder store;
	unsigned char *slots; /* BATCH_MAX datagrams of RELIABLE_DATA_HEAD + payload */
	struct reliable_hello answer;
	uint64_t largest_pkt, delivered, datagrams;
	uint64_t highest;   /* the end of the highest bytes received */
	double largest_at;  /* when largest_pkt came */
	unsigned unacked;   /* data datagrams since the last acknowledgement */
	double unacked_at;  /* the first of them came then */
	double acked_at;    /* the last acknowledgement went then */
	uint32_t room_told; /* the room it said */
	int gap;            /* a datagram came out of order since the last acknowledgement */
	double heard_at;    /* the sender's last datagram */
	double silence;
	int end_seen, confirmed, stdout_ready;
	double linger_until; /* after the confirmation: the sender's E may come again until then */
	struct reliable_end end;
	struct digest digest;
	unsigned tag; /* stamped on what it sends */
	int dropped;  /* multicast: the sender said it goes on without this receiver */
	struct reliable_figures *fig;
};

/* --reliable in a session: one end's state (reliable.c). */
struct reliable {
	int opened, listening;
	struct reliable_send send;
	struct reliable_recv recv;
};

struct relay_setup;
struct flow;

/* reliable.c */
int reliable_open(struct reliable *, struct session *);
void reliable_plug(struct reliable *, struct session *, struct relay_setup *);
void reliable_conclude(struct reliable *, struct session *);
void reliable_close(struct reliable *);

/* reliable-open.c */
int reliable_connect(struct reliable_send *, struct session *);
int reliable_accept(struct reliable_recv *, struct session *);
size_t reliable_path_payload(int, const struct config *);

/* reliable-send.c */
extern const struct flow_ops reliable_send_ops;
void reliable_send_free(struct reliable_send *);

/* reliable-peers.c */
struct reliable_peer *peers_next_live(const struct reliable_send *, const struct reliable_peer *);
ssize_t peers_send_small(const struct reliable_send *, const unsigned char *, size_t);
#define EACH_LIVE(r, p)                                                                            \
	for (struct reliable_peer *p = peers_next_live(r, NULL); p; p = peers_next_live(r, p))
struct reliable_peer *peers_find(struct reliable_send *, const struct sockaddr *, socklen_t,
                                 unsigned);
uint64_t peers_cum(const struct reliable_send *);
uint64_t peers_room_end(const struct reliable_send *);
double peers_pacing(const struct reliable_send *);
double peers_room_to_send(const struct reliable_send *);
int peers_full(const struct reliable_send *);
int peers_next_repair(struct reliable_send *, uint64_t *, size_t *);
int peers_want_repair(const struct reliable_send *);
void peers_app_limited(struct reliable_send *);
void peers_sent(struct reliable_send *, uint64_t, size_t, double);
void peers_ack(struct flow *, struct reliable_send *, struct reliable_peer *,
               const struct reliable_ack *, double);
void peers_probe(struct reliable_send *, double);
double peers_next_probe(const struct reliable_send *);
double peers_srtt(const struct reliable_send *);
const struct reliable_peer *peers_slowest(const struct reliable_send *);
int peers_all_confirmed(const struct reliable_send *);
uint64_t peers_next_pkt(const struct reliable_send *);

/* reliable-drop.c */
int peers_lost(struct flow *, struct reliable_send *, struct reliable_peer *, const char *);
int peers_check_silence(struct flow *, struct reliable_send *, double);
double peers_next_check(const struct reliable_send *);
int peers_served(struct flow *, const struct reliable_send *);
struct receiver_outcome *peers_outcome(const struct reliable_send *);

/* reliable-recv.c */
extern const struct flow_ops reliable_recv_ops;
void reliable_recv_free(struct reliable_recv *);
int reliable_refuse(int, const unsigned char *, size_t);

/* reliable-wire.c (pure; fuzzed by fuzz-frame) */
void reliable_head_encode(unsigned char *, const struct reliable_head *);
void reliable_head_tag(unsigned char *, unsigned);
int reliable_head_decode(const unsigned char *, size_t, struct reliable_head *);
int reliable_stale(const unsigned char *, size_t);
size_t reliable_data_encode(unsigned char *, uint64_t, const struct reliable_data *);
int reliable_data_decode(const unsigned char *, size_t, struct reliable_data *);
size_t reliable_ack_encode(unsigned char *, uint64_t, const struct reliable_ack *);
int reliable_ack_decode(const unsigned char *, size_t, struct reliable_ack *);
size_t reliable_hello_encode(unsigned char *, enum reliable_type, uint64_t,
                             const struct reliable_hello *);
int reliable_hello_decode(const unsigned char *, size_t, struct reliable_hello *);
size_t reliable_end_encode(unsigned char *, enum reliable_type, uint64_t,
                           const struct reliable_end *);
int reliable_end_decode(const unsigned char *, size_t, struct reliable_end *);

/* reliable-ranges.c (pure) */
int rangeset_add(struct rangeset *, uint64_t, uint64_t);
uint64_t rangeset_join(struct rangeset *, uint64_t);
int rangeset_has(const struct rangeset *, uint64_t, uint64_t);
void rangeset_drop_below(struct rangeset *, uint64_t);
int rangeset_remove(struct rangeset *, uint64_t, uint64_t);
uint64_t rangeset_skip(const struct rangeset *, uint64_t);

/* reliable-sent.c (pure) */
int sent_init(struct sent_log *, uint64_t);
void sent_free(struct sent_log *);
uint64_t sent_add(struct sent_log *, uint64_t, uint32_t, double);
int sent_full(const struct sent_log *);
void sent_app_limited(struct sent_log *, uint64_t);
void sent_ack(struct sent_log *, const struct reliable_ack *, double, struct sent_news *);
int sent_next_repair(struct sent_log *, size_t, uint64_t, uint64_t *, size_t *);
uint64_t sent_expire(struct sent_log *, double);

/* reliable-rate.c (pure) */
void rate_init(struct rate_model *, double, double, double);
int rate_sample(struct rate_model *, double, double, double, double, int);
double rate_pacing(const struct rate_model *);
double rate_inflight(const struct rate_model *, double);

/* reliable-reorder.c */
int reorder_init(struct reorder *, size_t);
void reorder_free(struct reorder *);
enum reorder_put reorder_put(struct reorder *, uint64_t, const unsigned char *, size_t);
enum reorder_put reorder_mark(struct reorder *, uint64_t, size_t);
unsigned char *reorder_at(const struct reorder *, uint64_t, size_t *);
void reorder_read(const struct reorder *, uint64_t, unsigned char *, size_t);
size_t reorder_ready(const struct reorder *, const unsigned char **);
void reorder_took(struct reorder *, size_t);
unsigned reorder_sack(const struct reorder *, struct reliable_range *, unsigned);

#endif
