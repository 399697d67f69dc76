/*
 * chain-wire.c: --chain's wire format: a node's hello, the opening it receives, its answer, and
 * the results that travel back up, coded and checked (pure, fuzzed by fuzz-frame).
 */
#include "config.h"

#include <string.h>

#include "fastcat.h"
#include "base/base.h"
#include "chain/chain.h"

const char chain_hello[CHAIN_HELLO_BYTES] = "FASTCAT-CHAIN-1\n";
static const unsigned char opening_magic[4] = {'F', 'C', 'C', 'O'};
static const unsigned char answer_magic[4] = {'F', 'C', 'C', 'A'};
static const unsigned char results_magic[4] = {'F', 'C', 'C', 'R'};
static const unsigned char ack_magic[4] = {'F', 'C', 'C', 'K'};
static const unsigned char piece_magic[4] = {'F', 'C', 'C', 'P'};
static const unsigned char end_magic[8] = {'F', 'C', 'C', 'E', 'N', 'D', '\n', 0};
static const unsigned char zero[8];

/* The hello in buf? 1: all of it, 0: len bytes of its start, -1: no. */
int chain_hello_seen(const unsigned char *buf, size_t len)
{
	return wire_match(buf, len, chain_hello, CHAIN_HELLO_BYTES);
}

void chain_opening_encode(unsigned char *p, const struct chain_opening *o)
{
	memset(p, 0, CHAIN_OPENING_BYTES);
	memcpy(p, opening_magic, sizeof opening_magic);
	p[4] = CHAIN_VERSION;
	p[5] = o->rejoin ? CHAIN_REJOIN : 0;
	wire_put(p + 6, o->index, 2);
	wire_put(p + 8, o->id, 8);
	wire_put(p + 16, o->count, 2);
	wire_put(p + 18, o->text_len, 2);
	p[20] = (unsigned char)(o->lanes > 1 ? o->lanes : 0); /* 0: one, as before -P */
	p[21] = (unsigned char)o->lane;
	p[22] = o->lanes_auto ? 1 : 0;
}

/* 0, or -1: not an opening this version knows, or a place outside the list. */
int chain_opening_decode(const unsigned char *p, struct chain_opening *o)
{
	if (memcmp(p, opening_magic, sizeof opening_magic) != 0 || p[4] != CHAIN_VERSION ||
	    (p[5] & ~CHAIN_REJOIN) != 0 || p[20] == 1 || p[20] > CHAIN_LANES_MAX || p[22] > 1 ||
	    p[23] != 0)
		return -1;
	o->lanes = p[20] != 0 ? p[20] : 1;
	o->lane = p[21];
	o->lanes_auto = p[22];
	o->rejoin = p[5] == CHAIN_REJOIN;
	o->index = (unsigned)wire_get(p + 6, 2);
	o->id = wire_get(p + 8, 8);
	o->count = (unsigned)wire_get(p + 16, 2);
	o->text_len = (size_t)wire_get(p + 18, 2);
	return o->count >= 1 && o->count <= CHAIN_MAX && o->index < o->count && o->text_len >= 1 &&
	               o->text_len <= CHAIN_TEXT_MAX && o->lane < o->lanes
	           ? 0
	           : -1;
}

/* The node's answer: it and the nodes behind it are ready; held: bytes it has already. */
void chain_answer_encode(unsigned char *p, uint64_t held)
{
	memset(p, 0, CHAIN_ANSWER_BYTES);
	memcpy(p, answer_magic, sizeof answer_magic);
	p[4] = CHAIN_VERSION;
	wire_put(p + 8, held, 8);
}

int chain_answer_decode(const unsigned char *p, uint64_t *held)
{
	if (memcmp(p, answer_magic, sizeof answer_magic) != 0 || p[4] != CHAIN_VERSION ||
	    memcmp(p + 5, zero, 3) != 0)
		return -1;
	*held = wire_get(p + 8, 8);
	return 0;
}

/* A node's confirmation upstream: what it received, and what the node after it did. */
void chain_ack_encode(unsigned char *p, const struct chain_ack *a)
{
	memset(p, 0, CHAIN_ACK_BYTES);
	memcpy(p, ack_magic, sizeof ack_magic);
	p[4] = CHAIN_VERSION;
	wire_put(p + 8, a->in, 8);
	wire_put(p + 16, a->next_in, 8);
	wire_put(p + 24, a->least, 8);
}

/*
 * The first len bytes of what came back: 1 a confirmation (its 32 bytes)
 * in *a, 0 the start of one (or of the results), -1 not a confirmation.
 */
int chain_ack_decode(const unsigned char *p, size_t len, struct chain_ack *a)
{
	size_t have = len < sizeof ack_magic ? len : sizeof ack_magic;

	if (memcmp(p, ack_magic, have) != 0)
		return -1;
	if (len < CHAIN_ACK_BYTES)
		return 0;
	if (p[4] != CHAIN_VERSION || memcmp(p + 5, zero, 3) != 0)
		return -1;
	a->in = wire_get(p + 8, 8);
	a->next_in = wire_get(p + 16, 8);
	a->least = wire_get(p + 24, 8);
	return 1;
}

/*
 * The results' length from the first len bytes of them: 0 with *total,
 * 1 when their head is not all there yet, -1 when they are no results.
 */
int chain_results_length(const unsigned char *p, size_t len, size_t *total)
{
	size_t have = len < sizeof results_magic ? len : sizeof results_magic;

	if (memcmp(p, results_magic, have) != 0)
		return -1;
	if (len < CHAIN_RESULTS_HEAD)
		return 1;
	*total = CHAIN_RESULTS_HEAD + (size_t)wire_get(p + 6, 2) * CHAIN_ENTRY_BYTES;
	return *total <= CHAIN_RESULTS_MAX ? 0 : -1;
}

/* The known entries, in index order; the message's length. */
size_t chain_results_encode(unsigned char *p, const struct chain_results *r)
{
	unsigned count = 0;

	memset(p, 0, CHAIN_RESULTS_HEAD);
	memcpy(p, results_magic, sizeof results_magic);
	p[4] = CHAIN_VERSION;
	for (unsigned i = 0; i < CHAIN_MAX; i++) {
		const struct chain_entry *e = &r->entry[i];
		unsigned char *q = p + CHAIN_RESULTS_HEAD + (size_t)count * CHAIN_ENTRY_BYTES;

		if (!r->have[i])
			continue;
		memset(q, 0, CHAIN_ENTRY_BYTES);
		wire_put(q, i, 2);
		q[2] = (unsigned char)e->state;
		q[3] = (unsigned char)(e->err > 0 && e->err < 256 ? e->err : 0);
		wire_put(q + 8, e->bytes, 8);
		wire_put(q + 16, e->digest, 8);
		count++;
	}
	wire_put(p + 6, count, 2);
	return CHAIN_RESULTS_HEAD + (size_t)count * CHAIN_ENTRY_BYTES;
}

/*
 * len bytes, the whole message, of a list of n nodes: entries for nodes of
 * the list, each once, in states this version knows. 0, or -1.
 */
int chain_results_decode(const unsigned char *p, size_t len, unsigned n, struct chain_results *r)
{
	unsigned count;

	memset(r, 0, sizeof *r);
	if (len < CHAIN_RESULTS_HEAD || memcmp(p, results_magic, sizeof results_magic) != 0 ||
	    p[4] != CHAIN_VERSION || p[5] != 0)
		return -1;
	count = (unsigned)wire_get(p + 6, 2);
	if (count > n || len != CHAIN_RESULTS_HEAD + (size_t)count * CHAIN_ENTRY_BYTES)
		return -1;
	for (unsigned k = 0; k < count; k++) {
		const unsigned char *q = p + CHAIN_RESULTS_HEAD + (size_t)k * CHAIN_ENTRY_BYTES;
		unsigned i = (unsigned)wire_get(q, 2);

		if (i >= n || r->have[i] || q[2] >= CHAIN_STATES || memcmp(q + 4, zero, 4) != 0)
			return -1;
		r->have[i] = 1;
		r->entry[i] = (struct chain_entry){.index = i,
		                                   .state = (enum chain_state)q[2],
		                                   .err = q[3],
		                                   .bytes = wire_get(q + 8, 8),
		                                   .digest = wire_get(q + 16, 8)};
	}
	return 0;
}

/*
 * The end mark: the last CHAIN_END_BYTES of what the sender sends, so that
 * a node tells the stream's end from the EOF of an upstream that died (a
 * killed process's socket ends with a FIN too): the data's length and XXH64.
 */
void chain_end_encode(unsigned char *p, uint64_t length, uint64_t digest)
{
	memset(p, 0, CHAIN_END_BYTES);
	memcpy(p, end_magic, sizeof end_magic);
	p[8] = CHAIN_VERSION;
	wire_put(p + 16, length, 8);
	wire_put(p + 24, digest, 8);
}

/* p: the last bytes before an EOF, after length others: the mark's XXH64, 0; or -1: no mark. */
int chain_end_decode(const unsigned char *p, uint64_t length, uint64_t *digest)
{
	if (memcmp(p, end_magic, sizeof end_magic) != 0 || p[8] != CHAIN_VERSION ||
	    memcmp(p + 9, zero, 7) != 0 || wire_get(p + 16, 8) != length)
		return -1;
	*digest = wire_get(p + 24, 8);
	return 0;
}

/* What the results say of node i. */
void chain_mark(struct chain_results *r, unsigned i, enum chain_state state, int err,
                uint64_t bytes, uint64_t digest)
{
	if (i >= CHAIN_MAX)
		return;
	r->have[i] = 1;
	r->entry[i] = (struct chain_entry){i, state, err, bytes, digest};
}

/* What the nodes behind say, where this end knows nothing of its own. */
void chain_merge(struct chain_results *r, const struct chain_results *from)
{
	for (unsigned i = 0; i < CHAIN_MAX; i++)
		if (from->have[i] && !r->have[i]) {
			r->have[i] = 1;
			r->entry[i] = from->entry[i];
		}
}

/* A piece's header on a -P lane: its length, then its stream offset. */
void chain_piece_encode(unsigned char *p, uint64_t at, size_t len)
{
	memcpy(p, piece_magic, sizeof piece_magic);
	wire_put(p + 4, len, 4);
	wire_put(p + 8, at, 8);
}

/* 0, or -1: not a piece's header, or an empty one, or one longer than CHAIN_CHUNK. */
int chain_piece_decode(const unsigned char *p, uint64_t *at, size_t *len)
{
	if (memcmp(p, piece_magic, sizeof piece_magic) != 0)
		return -1;
	*len = (size_t)wire_get(p + 4, 4);
	*at = wire_get(p + 8, 8);
	return *len >= 1 && *len <= CHAIN_CHUNK && *at <= UINT64_MAX - *len ? 0 : -1;
}
