/*
 * chain-tee.c: the ring of a --chain node (and of its sender) and the three moves on it: from
 * the upstream in, out to stdout, on to the next node. The ring keeps what the node after the
 * next one has not confirmed yet, so that the next one's death costs nothing but a reconnect:
 * this node goes on from what that one holds (chain-rejoin.c).
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fastcat.h"
#include "base/base.h"
#include "relay/flow.h"
#include "chain/chain.h"

static uint64_t min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* Bytes from offset at of the ring that lie in one piece, at most limit. */
static size_t ring_piece(const struct chain_tee *t, uint64_t at, uint64_t limit)
{
	return (size_t)min64(t->ring_size - at % t->ring_size, limit);
}

/*
 * The oldest byte the ring must keep: not yet written, digested or
 * forwarded, nor confirmed by the node after the next one. Never below
 * what an earlier call let go, nor what lanes ahead wrote over.
 */
uint64_t chain_tee_keep(const struct chain *c)
{
	const struct chain_tee *t = &c->tee;
	uint64_t keep = min64(min64(t->out, t->digested), t->fwd);
	uint64_t oldest = t->top - min64(t->top, t->ring_size);

	if (c->next != NULL && c->next->fd >= 0 && t->behind_in != CHAIN_NONE)
		keep = min64(keep, t->behind_in);
	return keep > oldest ? keep : oldest;
}

uint64_t chain_tee_room(const struct chain *c)
{
	return c->tee.ring_size - (c->tee.in - chain_tee_keep(c));
}

/*
 * What stdout may have: not the last CHAIN_END_BYTES received before the
 * EOF tells whether they are the end mark or data.
 */
uint64_t chain_tee_data(const struct chain_tee *t)
{
	if (t->up_eof)
		return t->end;
	return t->in > CHAIN_END_BYTES ? t->in - CHAIN_END_BYTES : 0;
}

/* The received bytes up to upto into the digest (the ring still has them). */
void chain_tee_digest(struct flow *f, struct chain_tee *t, uint64_t upto)
{
	while (t->digested < upto) {
		size_t piece = ring_piece(t, t->digested, upto - t->digested);

		digest_update(&f->stats->digest, t->ring + t->digested % t->ring_size, piece);
		t->digested += piece;
	}
}

/* Are the last CHAIN_END_BYTES received the end mark? 1 (its digest kept), else 0. */
int chain_tee_marked(struct chain_tee *t)
{
	unsigned char mark[CHAIN_END_BYTES];
	uint64_t at = t->in - CHAIN_END_BYTES;

	if (t->in < CHAIN_END_BYTES)
		return 0;
	for (size_t i = 0; i < sizeof mark; i++)
		mark[i] = t->ring[(at + i) % t->ring_size];
	return chain_end_decode(mark, at, &t->mark_digest) == 0;
}

/* The upstream's end, for good: its last bytes were the mark, or they are data. */
void chain_tee_ended(struct flow *f, struct chain_tee *t)
{
	t->up_eof = 1;
	t->marked = chain_tee_marked(t);
	t->end = t->marked ? t->in - CHAIN_END_BYTES : t->in;
	chain_tee_digest(f, t, t->end);
	if (t->out_err != 0)
		t->out = t->end;
}

/* The sender's stdin ended: the end mark goes into the ring after the data. */
static int tee_mark(struct flow *f, struct chain *c)
{
	struct chain_tee *t = &c->tee;
	unsigned char mark[CHAIN_END_BYTES];

	if (chain_tee_room(c) < sizeof mark)
		return 0;
	chain_tee_digest(f, t, t->in);
	chain_end_encode(mark, t->in, digest_final(&f->stats->digest));
	for (size_t i = 0; i < sizeof mark; i++)
		t->ring[(t->in + i) % t->ring_size] = mark[i];
	t->end = t->in;
	t->in += sizeof mark;
	t->top = t->in;
	t->up_eof = t->marked = 1;
	t->out = t->digested = t->end;
	return 1;
}

/* What the read brought: digested as far as it is data; a sender has no stdout to wait for. */
void chain_tee_received(struct flow *f, struct chain *c, size_t n)
{
	struct chain_tee *t = &c->tee;

	t->in += n;
	if (t->in > t->top)
		t->top = t->in;
	t->up_heard = clock_now();
	if (t->up_lanes == 1)
		flow_count_read(f, n); /* -P: each lane's read counts itself */
	if (chain_is_sender(c)) {
		chain_tee_digest(f, t, t->in);
		t->out = t->in;
	} else {
		chain_tee_digest(f, t, chain_tee_data(t));
		if (t->out_err != 0)
			t->out = chain_tee_data(t);
	}
	if (c->next == NULL || c->next->fd < 0)
		t->fwd = t->in;
}

/*
 * The upstream (the sender: stdin) into the ring. 1 moved, 0 blocked, -1
 * the upstream is gone (an EOF without the mark, or an error: errno, 0
 * for the EOF); a sender's EOF puts the mark in.
 */
int chain_tee_read(struct flow *f, struct chain *c)
{
	struct chain_tee *t = &c->tee;
	size_t want = ring_piece(t, t->in, min64(chain_tee_room(c), f->read_size));
	ssize_t n;

	if (t->src_eof)
		return t->up_eof ? 0 : tee_mark(f, c);
	if (t->up_eof || t->orphan_until > 0 || !flow_src_ready(f) || want == 0)
		return 0;
	n = read(flow_src(f), t->ring + t->in % t->ring_size, want);
	f->stats->reads++;
	switch (io_result(n)) {
	case IO_MOVED: chain_tee_received(f, c, (size_t)n); return 1;
	case IO_AGAIN: flow_set_src_ready(f, 0); return 0;
	case IO_INTERRUPTED: return 0;
	case IO_END:
		if (chain_is_sender(c)) {
			t->src_eof = 1;
			return tee_mark(f, c);
		}
		if (chain_tee_marked(t)) {
			chain_tee_ended(f, t);
			return 1;
		}
		errno = 0;
		return -1;
	default:
		if (chain_is_sender(c))
			flow_failed(f, 0, errno);
		return -1;
	}
}

/* The ring to stdout; a failure is kept for the end, and the writing stops. 1 moved, else 0. */
int chain_tee_write(struct flow *f, struct chain_tee *t)
{
	size_t want = ring_piece(t, t->out, min64(chain_tee_data(t) - t->out, f->write_size));
	ssize_t n;

	if (t->out_err != 0 || want == 0 || !f->stdio_ready)
		return 0;
	n = write(f->stdio, t->ring + t->out % t->ring_size, want);
	f->stats->writes++;
	switch (io_result(n)) {
	case IO_MOVED:
		t->out += (uint64_t)n;
		flow_count_write(f, (uint64_t)n, (size_t)n);
		return 1;
	case IO_AGAIN: f->stdio_ready = 0; return 0;
	case IO_END:
	case IO_INTERRUPTED: return 0;
	default:
		t->out_err = errno;
		log_error("--chain: write stdout: %s after %llu bytes; the rest goes on to the "
		          "receivers behind this one",
		          strerror(t->out_err), (unsigned long long)t->out);
		t->out = chain_tee_data(t);
		return 1;
	}
}

/*
 * Forwarded now up to fwd (n bytes in the last send). The sender counts
 * the data as it first leaves (a bypass sends some of it again).
 */
void chain_tee_forwarded(struct flow *f, struct chain *c, uint64_t fwd, size_t n)
{
	struct chain_tee *t = &c->tee;
	uint64_t upto = min64(fwd, t->up_eof ? t->end : t->in);

	t->fwd = fwd;
	if (!chain_is_sender(c))
		return;
	f->stats->writes++;
	if (upto > t->counted) {
		flow_count_write(f, upto - t->counted, n);
		t->counted = upto;
	}
}

/* The ring to the next node. 1 moved, 0 blocked, -1 the next node is gone (errno). */
int chain_tee_forward(struct flow *f, struct chain *c)
{
	struct chain_tee *t = &c->tee;
	size_t want = ring_piece(t, t->fwd, min64(t->in - t->fwd, f->read_size));
	ssize_t n;

	if (c->next == NULL || c->next->fd < 0 || want == 0 || !t->down_ready)
		return 0;
	if (f->limited && (want = ratelimit_allow(&f->limit, clock_now(), want)) == 0)
		return 0; /* --rate-limit: the bucket refills first (flow_wait_ms wakes the relay)
		           */
	n = send(c->next->fd, t->ring + t->fwd % t->ring_size, want, MSG_NOSIGNAL);
	switch (io_result(n)) {
	case IO_MOVED:
		if (f->limited)
			ratelimit_spend(&f->limit, (size_t)n);
		chain_tee_forwarded(f, c, t->fwd + (uint64_t)n, (size_t)n);
		return 1;
	case IO_AGAIN: t->down_ready = 0; return 0;
	case IO_END:
	case IO_INTERRUPTED: return 0;
	default: return -1;
	}
}
