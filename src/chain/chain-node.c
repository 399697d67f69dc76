/*
 * chain-node.c: a --chain node's pump. What comes from upstream goes into a ring, from which it
 * is written to stdout and forwarded to the next node as soon as each can take it: the chain
 * moves at its slowest hop, and a slow one holds the upstream back (the ring is full) instead
 * of dropping a byte. A stdout that fails stops only the writing (the rest is forwarded); a
 * next node that is lost is named, and this node goes on. At the upstream's EOF the node ends
 * the next one's stream, waits for the results of the nodes behind it, adds its own and sends
 * them all upstream.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fastcat.h"
#include "base/base.h"
#include "net/net.h"
#include "relay/flow.h"
#include "chain/chain.h"

#define TEE_BUDGET 64 /* moves before the relay looks at signals and agents */

static size_t min_size(uint64_t a, uint64_t b)
{
	return (size_t)(a < b ? a : b);
}

/* Bytes from offset at of the ring that lie in one piece, at most limit. */
static size_t ring_piece(uint64_t at, uint64_t limit)
{
	return min_size(CHAIN_RING - at % CHAIN_RING, limit);
}

static uint64_t tee_room(const struct chain_tee *t)
{
	uint64_t kept = t->out < t->fwd ? t->out : t->fwd;

	return CHAIN_RING - (t->in - (kept < t->digested ? kept : t->digested));
}

/*
 * What stdout may have: not the last CHAIN_END_BYTES received before the
 * EOF tells whether they are the end mark or data.
 */
static uint64_t tee_data(const struct chain_tee *t)
{
	if (t->up_eof)
		return t->end;
	return t->in > CHAIN_END_BYTES ? t->in - CHAIN_END_BYTES : 0;
}

/* The received bytes up to upto into the digest (the ring still has them). */
static void tee_digest(struct flow *f, struct chain_tee *t, uint64_t upto)
{
	while (t->digested < upto) {
		size_t piece = ring_piece(t->digested, upto - t->digested);

		digest_update(&f->stats->digest, t->ring + t->digested % CHAIN_RING, piece);
		t->digested += piece;
	}
}

/* The upstream's EOF: were the last bytes the end mark? If not, they are data. */
static void tee_upstream_ended(struct flow *f, struct chain_tee *t)
{
	t->up_eof = 1;
	if (t->in >= CHAIN_END_BYTES) {
		unsigned char mark[CHAIN_END_BYTES];
		uint64_t at = t->in - CHAIN_END_BYTES;

		for (size_t i = 0; i < sizeof mark; i++)
			mark[i] = t->ring[(at + i) % CHAIN_RING];
		t->marked = chain_end_decode(mark, at, &t->mark_digest) == 0;
	}
	t->end = t->marked ? t->in - CHAIN_END_BYTES : t->in;
	tee_digest(f, t, t->end);
	if (t->out_err != 0)
		t->out = t->end;
}

/* The next node's connection: reset when the session failed, so that it fails too. */
void chain_close(struct chain *c, const struct config *cfg, int reset)
{
	if (c->down.fd < 0)
		return;
	if (reset)
		endpoint_abort(cfg, &c->down);
	endpoint_close(&c->down);
}

/* The next node is lost: named once; those behind it are cut off; the stream goes on here. */
static void tee_lose(struct chain *c, int err)
{
	char name[CHAIN_HOST_MAX + 16];
	struct chain_tee *t = &c->tee;

	log_error("--chain: receiver %u, %s, lost after %llu bytes forwarded to it: %s%s",
	          c->down_index + 1, chain_node_name(&c->list, c->down_index, name, sizeof name),
	          (unsigned long long)t->fwd, strerror(err),
	          c->down_index + 1 < c->list.n ? "; the receivers behind it are cut off" : "");
	chain_mark(&c->results, c->down_index, CHAIN_LOST, err, t->fwd, 0);
	for (unsigned i = c->down_index + 1; i < c->list.n; i++)
		if (!c->results.have[i])
			chain_mark(&c->results, i, CHAIN_CUT, 0, 0, 0);
	chain_close(c, NULL, 0);
	t->fwd = t->in;
}

/* Upstream into the ring. 1 moved, 0 blocked, -1 failed (the upstream is lost). */
static int tee_read(struct flow *f, struct chain *c)
{
	struct chain_tee *t = &c->tee;
	size_t want = ring_piece(t->in, min_size(tee_room(t), f->read_size));
	unsigned char *at = t->ring + t->in % CHAIN_RING;
	ssize_t n;

	if (t->up_eof || !f->sock_ready || want == 0)
		return 0;
	n = read(f->sock, at, want);
	f->stats->reads++;
	switch (io_result(n)) {
	case IO_MOVED:
		t->in += (uint64_t)n;
		flow_count_read(f, (size_t)n);
		tee_digest(f, t, tee_data(t));
		if (t->out_err != 0)
			t->out = tee_data(t);
		if (c->down.fd < 0)
			t->fwd = t->in;
		return 1;
	case IO_END: tee_upstream_ended(f, t); return 1;
	case IO_AGAIN: f->sock_ready = 0; return 0;
	case IO_INTERRUPTED: return 0;
	default: flow_failed(f, 0, errno); return -1;
	}
}

/* The ring to stdout; a failure is kept for the end, and the writing stops. 1 moved, else 0. */
static int tee_write(struct flow *f, struct chain_tee *t)
{
	size_t want = ring_piece(t->out, min_size(tee_data(t) - t->out, f->write_size));
	ssize_t n;

	if (t->out_err != 0 || want == 0 || !f->stdio_ready)
		return 0;
	n = write(f->stdio, t->ring + t->out % CHAIN_RING, want);
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
		t->out = tee_data(t);
		return 1;
	}
}

/* The ring to the next node. 1 moved (or the node was lost), else 0. */
static int tee_forward(struct flow *f, struct chain *c)
{
	struct chain_tee *t = &c->tee;
	size_t want = ring_piece(t->fwd, min_size(t->in - t->fwd, f->read_size));
	ssize_t n;

	if (c->down.fd < 0 || want == 0 || !t->down_ready)
		return 0;
	n = send(c->down.fd, t->ring + t->fwd % CHAIN_RING, want, MSG_NOSIGNAL);
	switch (io_result(n)) {
	case IO_MOVED: t->fwd += (uint64_t)n; return 1;
	case IO_AGAIN: t->down_ready = 0; return 0;
	case IO_END:
	case IO_INTERRUPTED: return 0;
	default: tee_lose(c, errno); return 1;
	}
}

/* The results of the nodes behind, read to their EOF. 1 all there, 0 not yet. */
static int tee_read_back(struct chain *c)
{
	struct chain_tee *t = &c->tee;
	struct chain_results r;

	while (c->down.fd >= 0 && !t->back_eof) {
		ssize_t n;

		if (!t->back_ready)
			return 0;
		n = recv(c->down.fd, c->back + c->back_len, sizeof c->back - c->back_len, 0);
		if (n > 0 && (c->back_len += (size_t)n) < sizeof c->back)
			continue;
		if (n == 0)
			t->back_eof = 1;
		else if (n > 0)
			tee_lose(c, EPROTO); /* more than any results */
		else if (errno == EAGAIN || errno == EWOULDBLOCK)
			t->back_ready = 0;
		else if (errno != EINTR)
			tee_lose(c, errno);
	}
	if (c->down.fd < 0)
		return 1;
	if (chain_results_decode(c->back, c->back_len, c->list.n, &r) != 0) {
		tee_lose(c, EPROTO);
		return 1;
	}
	chain_merge(&c->results, &r);
	return 1;
}

/* This node's entry: what it wrote, and how its stream ended. */
static enum chain_state tee_state(const struct chain_tee *t)
{
	if (!t->marked)
		return CHAIN_SHORT;
	return t->out_err != 0 ? CHAIN_WRITE_FAILED : CHAIN_WHOLE;
}

/* The results (this node's and those behind it) upstream, then our EOF. */
static void tee_answer(struct flow *f, struct chain *c)
{
	unsigned char msg[CHAIN_RESULTS_MAX];
	size_t len;

	chain_mark(&c->results, c->self, tee_state(&c->tee), c->tee.out_err, f->stats->bytes,
	           digest_final(&f->stats->digest));
	len = chain_results_encode(msg, &c->results);
	if (handshake_move(f->sock, msg, len, 1, clock_now() + CHAIN_PATIENCE) == len)
		shutdown(f->sock, SHUT_WR);
	c->s->close_plainly = 1; /* the upstream reads the results: a reset could drop them */
}

/* This node's own end: 0 whole, else -1 with its failure (stdout's, or the stream's). */
static int tee_verdict(struct flow *f, struct chain *c)
{
	struct chain_tee *t = &c->tee;

	if (t->out_err != 0) {
		flow_failed(f, 1, t->out_err);
		f->err_on_sync = t->sync_failed;
		return -1;
	}
	if (!t->marked)
		return flow_fail(
		    f, EXIT_PEER,
		    "--chain: the stream from %s ended without its end mark, after %llu "
		    "bytes: the sender or a receiver before this one is gone",
		    c->s->ep->peer, (unsigned long long)t->in);
	if (digest_final(&f->stats->digest) != t->mark_digest)
		return flow_fail(
		    f, EXIT_VERIFY,
		    "--chain: the stream's XXH64 is %016llx, its end mark says %016llx",
		    (unsigned long long)digest_final(&f->stats->digest),
		    (unsigned long long)t->mark_digest);
	return 0;
}

/*
 * All received is written and forwarded, and the upstream ended: --sync,
 * the next node's EOF, its results, ours upstream. 1 finished, 0 waiting,
 * -1 failed (this node's own status).
 */
static int tee_end(struct flow *f, struct chain *c)
{
	struct chain_tee *t = &c->tee;

	if (!t->synced) {
		t->synced = 1;
		if (t->out_err == 0 && flow_sync(f) != 0) {
			t->out_err = f->err;
			t->sync_failed = 1;
		}
		f->sync = 0;
	}
	if (c->down.fd >= 0 && !t->down_shut) {
		t->down_shut = 1;
		if (shutdown(c->down.fd, SHUT_WR) != 0)
			tee_lose(c, errno);
	}
	if (!tee_read_back(c))
		return 0;
	tee_answer(f, c);
	if (tee_verdict(f, c) != 0)
		return -1;
	return flow_finish(f) < 0 ? -1 : 1;
}

static enum pump_result tee_pump(struct flow *f)
{
	struct chain *c = f->ctx;
	struct chain_tee *t = &c->tee;

	if (!f->running)
		return PUMP_FINISHED;
	for (int calls = 0; calls < TEE_BUDGET; calls++) {
		int moved = tee_forward(f, c) | tee_write(f, t);
		int read = tee_read(f, c);

		if (read < 0)
			return PUMP_FAILED;
		if (t->up_eof && t->out == t->end && t->fwd == t->in) {
			switch (tee_end(f, c)) {
			case -1: return PUMP_FAILED;
			case 0: return PUMP_BLOCKED;
			default: return PUMP_FINISHED;
			}
		}
		if (!moved && !read)
			return PUMP_BLOCKED;
	}
	return PUMP_BUDGET_USED;
}

/* What the pump waits for: the upstream while the ring has room, stdout, the next node. */
static int tee_poll_events(const struct flow *f, struct pollfd *pfd)
{
	const struct chain *c = f->ctx;
	const struct chain_tee *t = &c->tee;
	int n = 0;
	short down = 0;

	if (!f->running)
		return 0;
	if (!t->up_eof && tee_room(t) > 0 && !f->sock_ready)
		pfd[n++] = (struct pollfd){.fd = f->sock, .events = POLLIN};
	if (t->out_err == 0 && t->out < tee_data(t) && !f->stdio_ready)
		pfd[n++] = (struct pollfd){.fd = f->stdio, .events = POLLOUT};
	if (c->down.fd >= 0 && t->fwd < t->in && !t->down_ready)
		down |= POLLOUT;
	if (c->down.fd >= 0 && t->down_shut && !t->back_eof && !t->back_ready)
		down |= POLLIN;
	if (down != 0)
		pfd[n++] = (struct pollfd){.fd = c->down.fd, .events = down};
	return n;
}

static void tee_poll_result(struct flow *f, const struct pollfd *pfd, int n)
{
	struct chain *c = f->ctx;

	for (int i = 0; i < n; i++) {
		if (pfd[i].revents == 0)
			continue;
		if (pfd[i].fd == f->sock)
			f->sock_ready = 1;
		else if (pfd[i].fd == f->stdio)
			f->stdio_ready = 1;
		else {
			c->tee.down_ready |= (pfd[i].events & POLLOUT) != 0;
			c->tee.back_ready |= (pfd[i].events & POLLIN) != 0;
		}
	}
}

static int tee_start(struct flow *f)
{
	struct chain *c = f->ctx;

	c->tee.ring = malloc(CHAIN_RING);
	c->tee.down_ready = c->tee.back_ready = 1;
	return c->tee.ring != NULL ? 0 : -1;
}

static void tee_stop(struct flow *f)
{
	struct chain *c = f->ctx;

	free(c->tee.ring);
	c->tee.ring = NULL;
}

static const struct flow_ops tee_ops = {
    .rw_reason = "--chain writes and forwards the same bytes",
    .start = tee_start,
    .stop = tee_stop,
    .pump = tee_pump,
    .poll_events = tee_poll_events,
    .poll_result = tee_poll_result,
};

/* A node's relay: one way, the upstream's bytes through the tee; nothing is sent back but the
 * results. */
void chain_node_plug(struct chain *c, struct session *s, struct relay_setup *rs)
{
	(void)s;
	rs->flows[FLOW_SEND].enabled = 0;
	rs->flows[FLOW_RECEIVE].ops = &tee_ops;
	rs->flows[FLOW_RECEIVE].ctx = c;
}
