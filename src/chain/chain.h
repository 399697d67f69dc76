/*
 * chain.h: --chain, one stream through a list of receivers: the sender connects to the first,
 * each node writes what it receives to its stdout and forwards it at once to the next, and the
 * results of every node travel back up to the sender, which alone says whether the stream
 * arrived everywhere. Private to chain/ and cli/. The protocol: doc/chain-protocol.md.
 */
#ifndef FASTCAT_CHAIN_H
#define FASTCAT_CHAIN_H

#include <stddef.h>
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

/* Seconds a node's hello and its answer may take (the answer: per node still to be reached). */
#define CHAIN_PATIENCE 5

/* The ring a node holds between its upstream, its stdout and its downstream. */
#define CHAIN_RING (4u << 20)

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
};

/* One node's results and the nodes behind it, by index; have: the ones that are known. */
struct chain_results {
	struct chain_entry entry[CHAIN_MAX];
	unsigned char have[CHAIN_MAX];
};

/* A node's pump: a ring between its upstream, its stdout and the next node (chain-node.c). */
struct chain_tee {
	unsigned char *ring;   /* CHAIN_RING bytes */
	uint64_t in, out, fwd; /* received, written to stdout, forwarded: stream offsets */
	uint64_t digested;     /* received bytes digested: all but the last CHAIN_END_BYTES */
	uint64_t end;          /* the data's end: in - CHAIN_END_BYTES, once the EOF told */
	int up_eof;            /* the upstream's EOF came ... */
	int marked;            /* ... right after a valid end mark */
	uint64_t mark_digest;  /* ... which says this XXH64 */
	int out_err;           /* stdout failed (its errno): the rest is only forwarded */
	int sync_failed;       /* ... and it was --sync's fdatasync */
	int down_ready, back_ready, down_shut, back_eof;
	int synced;
};

/* A session's chain: the list, the next node's connection, what came back. */
struct chain {
	struct session *s;
	struct chain_list list;
	unsigned self;        /* the node this is (the sender: none, list.n) */
	struct endpoint down; /* the next node that answered, fd -1: none */
	unsigned down_index;  /* ... its place in the list */
	struct chain_results results;
	unsigned char back[CHAIN_RESULTS_MAX + 1]; /* the results as they arrive (+1: too long) */
	size_t back_len;
	int back_overflow;
	struct chain_tee tee;
	unsigned char mark[CHAIN_END_BYTES]; /* the sender's end mark ... */
	size_t mark_sent;                    /* ... and how much of it went */
};

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
size_t chain_results_encode(unsigned char *, const struct chain_results *);
int chain_results_decode(const unsigned char *, size_t, unsigned, struct chain_results *);
void chain_end_encode(unsigned char *, uint64_t, uint64_t);
int chain_end_decode(const unsigned char *, uint64_t, uint64_t *);
void chain_mark(struct chain_results *, unsigned, enum chain_state, int, uint64_t, uint64_t);
void chain_merge(struct chain_results *, const struct chain_results *);

/* chain-open.c */
extern const struct hello_guard chain_guard;
int chain_open(struct chain *, struct session *, struct endpoint *);

/* chain-node.c */
void chain_node_plug(struct chain *, struct session *, struct relay_setup *);
void chain_close(struct chain *, const struct config *, int);

/* chain-end.c */
void chain_plug(struct chain *, struct session *, struct relay_setup *);
void chain_conclude(struct chain *, struct session *);

#endif
