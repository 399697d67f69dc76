/*
 * chain-node.c: a --chain node's pump, and its sender's. What comes from upstream (the sender:
 * stdin) goes into a ring (chain-tee.c), from which it is written to stdout and forwarded to
 * the next node as soon as each can take it: the chain moves at its slowest hop, and a slow
 * one holds the upstream back (the ring is full) instead of dropping a byte. A stdout that
 * fails stops only the writing; a next node that dies is bypassed (chain-rejoin.c); an
 * upstream that vanishes may be replaced by the node before it. At the end a node ends the
 * next one's stream, waits for the results of the nodes behind it, adds its own and sends
 * them all upstream; the sender judges them (chain-end.c).
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

/* The next node's connection (reset when the session failed, so that it fails too). */
void chain_close(struct chain *c, const struct config *cfg, int reset)
{
	if (c->tee.rejoin_fd >= 0)
		endpoint_refuse(c->tee.rejoin_fd);
	c->tee.rejoin_fd = -1;
	chain_lanes_close(c->tee.up, c->tee.up_lanes);
	chain_lanes_close(c->tee.down, c->tee.down_lanes);
	if (c->down.fd < 0)
		return;
	if (reset)
		endpoint_abort(cfg, &c->down);
	endpoint_close(&c->down);
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
	struct chain_tee *t = &c->tee;
	unsigned char msg[CHAIN_RESULTS_MAX];
	double deadline = clock_now() + CHAIN_PATIENCE;
	size_t len;

	chain_mark(&c->results, c->self, tee_state(t), t->out_err, f->stats->bytes,
	           digest_final(&f->stats->digest));
	len = chain_results_encode(msg, &c->results);
	if (handshake_move(f->sock, t->ack + CHAIN_ACK_BYTES - t->ack_left, t->ack_left, 1,
	                   deadline) == t->ack_left &&
	    handshake_move(f->sock, msg, len, 1, deadline) == len)
		shutdown(f->sock, SHUT_WR);
	t->ack_left = 0;
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
		    c->up_peer, (unsigned long long)t->in);
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
 * the next node's EOF, its results, ours upstream (the sender: its
 * judgement follows the relay). 1 finished, 0 waiting, -1 failed (this
 * node's own status).
 */
static int tee_end(struct flow *f, struct chain *c)
{
	struct chain_tee *t = &c->tee;
	int sender = chain_is_sender(c);

	if (!t->synced) {
		t->synced = 1;
		if (!sender && t->out_err == 0 && flow_sync(f) != 0) {
			t->out_err = f->err;
			t->sync_failed = 1;
		}
		f->sync = 0;
	}
	if (c->next->fd >= 0 && !t->down_shut) {
		t->down_shut = 1;
		if (chain_lanes_shut(c) != 0 || shutdown(c->next->fd, SHUT_WR) != 0) {
			chain_lose(c, errno);
			return 0;
		}
	}
	if (c->next->fd >= 0 && !t->back_eof)
		return 0;
	if (sender)
		return flow_finish(f) < 0 ? -1 : 1;
	if (c->next->fd >= 0 && chain_back_merge(c) != 0) {
		chain_lose(c, EPROTO);
		return 0;
	}
	tee_answer(f, c);
	if (tee_verdict(f, c) != 0)
		return -1;
	return flow_finish(f) < 0 ? -1 : 1;
}

/*
 * The upstream vanished (err; 0: an EOF without the mark): the node before
 * it may reach this one instead, so the node listens for that a while
 * before the end stands. 1 the end stands now, 0 waiting.
 */
static int tee_orphaned(struct flow *f, struct chain *c, int err)
{
	struct chain_tee *t = &c->tee;

	if (c->listener == NULL || c->listener->fd < 0 || c->self == 0) {
		if (err != 0)
			flow_failed(f, 0, err);
		else
			chain_tee_ended(f, t);
		return 1;
	}
	t->up_err = err;
	t->orphan_until = clock_now() + CHAIN_ORPHAN_WAIT;
	log_error("--chain: %s is gone after %llu bytes (%s); waiting %d s for the receiver "
	          "before it",
	          c->up_peer, (unsigned long long)t->in,
	          err != 0 ? strerror(err) : "its stream ended without the end mark",
	          CHAIN_ORPHAN_WAIT);
	return 0;
}

/* An orphan's turn: a rejoin taken (1), still waiting (0), or the end stands (-1 failed). */
static int tee_orphan_turn(struct flow *f, struct chain *c)
{
	struct chain_tee *t = &c->tee;
	int rc = chain_rejoin_adopt(c, clock_now());

	if (rc >= 0)
		return rc;
	t->orphan_until = 0;
	if (t->up_err != 0) {
		flow_failed(f, 0, t->up_err);
		return -1;
	}
	chain_tee_ended(f, t);
	return 1;
}

/*
 * A rejoin waits while the old upstream still holds the connection: the
 * node before the old one found it silent (chain_lose). Once it sent
 * nothing here for CHAIN_QUIET either, the rejoin takes its place.
 */
static void tee_quiet_upstream(struct chain *c, double now)
{
	struct chain_tee *t = &c->tee;

	if (t->rejoin_fd < 0 || t->orphan_until > 0 || t->up_eof || now < t->up_heard + CHAIN_QUIET)
		return;
	log_error("--chain: %s sent nothing for %.0f s after %llu bytes, and %s reaches this "
	          "receiver in its place",
	          c->up_peer, now - t->up_heard, (unsigned long long)t->in, t->rejoin_peer);
	t->up_err = 0;
	t->orphan_until = now + CHAIN_ORPHAN_WAIT;
}

/* The upstream's turn: 1 moved, 0 not, -1 the flow failed. */
static int tee_upstream(struct flow *f, struct chain *c)
{
	int rc;

	tee_quiet_upstream(c, clock_now());
	if (c->tee.orphan_until > 0)
		return tee_orphan_turn(f, c);
	rc = c->tee.up_lanes > 1 ? chain_lanes_read(f, c) : chain_tee_read(f, c);
	if (rc >= 0)
		return rc;
	if (chain_is_sender(c))
		return -1;
	rc = tee_orphaned(f, c, errno);
	return rc > 0 && f->err != 0 ? -1 : rc;
}

/* Bytes wait for the next node, which confirmed nothing for CHAIN_STALL: it hangs, or is gone. */
static int next_stalled(const struct chain *c, double now)
{
	const struct chain_tee *t = &c->tee;

	return c->next->fd >= 0 && !t->results_in && t->fwd > t->next_in &&
	       now >= t->next_heard + CHAIN_STALL;
}

/* The next node's turn: forward, read what it sends back; bypass it when it is gone. */
static int tee_next(struct flow *f, struct chain *c)
{
	int moved;

	if (next_stalled(c, clock_now())) {
		char name[CHAIN_HOST_MAX + 16];

		log_error("--chain: receiver %u, %s, confirmed nothing for %.0f s",
		          c->down_index + 1,
		          chain_node_name(&c->list, c->down_index, name, sizeof name), CHAIN_STALL);
		chain_lose(c, ETIMEDOUT);
		return 1;
	}
	moved = c->tee.down_lanes > 1 ? chain_lanes_forward(f, c) : chain_tee_forward(f, c);

	if (moved < 0) {
		chain_lose(c, errno);
		return 1;
	}
	if (c->next->fd >= 0 && chain_back_read(c) < 0) {
		chain_lose(c, errno);
		return 1;
	}
	return moved;
}

static enum pump_result tee_pump(struct flow *f)
{
	struct chain *c = f->ctx;
	struct chain_tee *t = &c->tee;

	if (!f->running)
		return PUMP_FINISHED;
	for (int calls = 0; calls < TEE_BUDGET; calls++) {
		int moved = tee_next(f, c) | (chain_is_sender(c) ? 0 : chain_tee_write(f, t));
		int up = tee_upstream(f, c);

		if (up < 0)
			return PUMP_FAILED;
		chain_ack_send(c, clock_now());
		if ((t->up_eof && t->out == t->end && t->fwd == t->in) ||
		    (chain_is_sender(c) && c->next->fd < 0)) {
			switch (tee_end(f, c)) {
			case -1: return PUMP_FAILED;
			case 0: return PUMP_BLOCKED;
			default: return PUMP_FINISHED;
			}
		}
		if (!moved && !up)
			return PUMP_BLOCKED;
	}
	return PUMP_BUDGET_USED;
}

/*
 * What the pump waits for: the upstream while the ring has room, stdout,
 * the next node both ways, and a node's listener for a rejoin.
 */
static int tee_poll_events(const struct flow *f, struct pollfd *pfd)
{
	const struct chain *c = f->ctx;
	const struct chain_tee *t = &c->tee;
	int n = 0;
	short down = 0;

	if (!f->running)
		return 0;
	if (!t->up_eof && !t->src_eof && t->orphan_until == 0) {
		if (t->up_lanes > 1)
			n += chain_lanes_poll_up(f, c, pfd + n);
		else if (chain_tee_room(c) > 0 && !flow_src_ready(f))
			pfd[n++] = (struct pollfd){.fd = flow_src(f), .events = POLLIN};
	}
	if (!chain_is_sender(c) && t->out_err == 0 && t->out < chain_tee_data(t) && !f->stdio_ready)
		pfd[n++] = (struct pollfd){.fd = f->stdio, .events = POLLOUT};
	if (c->next->fd >= 0)
		n += chain_lanes_poll_down(c, pfd + n);
	if (c->next->fd >= 0 && (t->down_lanes > 1 ? chain_lanes_has_work(t, 0) : t->fwd < t->in) &&
	    !t->down_ready)
		down |= POLLOUT;
	if (c->next->fd >= 0 && !t->back_eof && !t->back_ready)
		down |= POLLIN;
	if (down != 0)
		pfd[n++] = (struct pollfd){.fd = c->next->fd, .events = down};
	if (c->listener != NULL && c->listener->fd >= 0 && t->rejoin_fd < 0 && !t->up_eof)
		pfd[n++] = (struct pollfd){.fd = c->listener->fd, .events = POLLIN};
	return n;
}

static void tee_poll_result(struct flow *f, const struct pollfd *pfd, int n)
{
	struct chain *c = f->ctx;

	for (int i = 0; i < n; i++) {
		if (pfd[i].revents == 0)
			continue;
		if (pfd[i].fd == c->next->fd) {
			c->tee.down_ready |= (pfd[i].events & POLLOUT) != 0;
			c->tee.back_ready |= (pfd[i].events & POLLIN) != 0;
		} else if (c->listener != NULL && pfd[i].fd == c->listener->fd) {
			chain_rejoin_accept(c);
		} else if (chain_lanes_polled(f, c, &pfd[i])) {
			continue;
		} else if (pfd[i].fd == flow_src(f)) {
			flow_set_src_ready(f, 1);
		} else {
			f->stdio_ready = 1;
		}
	}
}

static int tee_start(struct flow *f)
{
	struct chain *c = f->ctx;

	c->flow = f;
	c->tee.next_heard = c->tee.up_heard = clock_now();
	c->tee.ring_size =
	    (size_t)CHAIN_RING *
	    (c->tee.up_lanes > c->tee.down_lanes ? c->tee.up_lanes : c->tee.down_lanes);
	chain_lanes_reset_up(&c->tee);
	chain_lanes_reset_down(&c->tee, 0);
	c->tee.ring = malloc(c->tee.ring_size);
	c->tee.down_ready = c->tee.back_ready = 1;
	return c->tee.ring != NULL ? 0 : -1;
}

static void tee_stop(struct flow *f)
{
	struct chain *c = f->ctx;

	free(c->tee.ring);
	c->tee.ring = NULL;
	c->flow = NULL;
}

/* The sender's EOF is the end mark in its ring and the next node's half-close: nothing more. */
static int sender_pass_eof(struct flow *f)
{
	(void)f;
	return 1;
}

static const struct flow_ops tee_ops = {
    .rw_reason = "--chain writes and forwards the same bytes",
    .start = tee_start,
    .stop = tee_stop,
    .pump = tee_pump,
    .poll_events = tee_poll_events,
    .poll_result = tee_poll_result,
};

static const struct flow_ops sender_ops = {
    .rw_reason = "--chain digests what it sends",
    .digests_itself = 1,
    .start = tee_start,
    .stop = tee_stop,
    .pump = tee_pump,
    .poll_events = tee_poll_events,
    .poll_result = tee_poll_result,
    .pass_eof = sender_pass_eof,
};

static double earliest(double due, double at)
{
	return due < 0 || at < due ? at : due;
}

/*
 * When the relay must look again with no fd event: a confirmation or a
 * heartbeat due, an orphan's wait over, a next node's silence too long, an
 * upstream quiet long enough for the rejoin that waits.
 */
static double chain_due(const void *ctx, const struct relay *r, double now)
{
	const struct chain *c = ctx;
	const struct chain_tee *t = &c->tee;
	double due = t->ack_due > 0 ? t->ack_due : -1;

	(void)r;
	/* not sooner than 50 ms on: an upstream that takes no confirmation must not spin the loop
	 */
	if (!chain_is_sender(c) && t->orphan_until == 0 && c->flow != NULL && c->flow->running)
		due = earliest(due, t->acked_at + CHAIN_HEARTBEAT > now + 0.05
		                        ? t->acked_at + CHAIN_HEARTBEAT
		                        : now + 0.05);
	if (t->orphan_until > 0)
		due = earliest(due, t->orphan_until);
	if (c->next != NULL && c->next->fd >= 0 && !t->results_in && t->fwd > t->next_in)
		due = earliest(due, t->next_heard + CHAIN_STALL); /* as next_stalled */
	if (t->rejoin_fd >= 0 && t->orphan_until == 0 && !t->up_eof)
		due = earliest(due, t->up_heard + CHAIN_QUIET); /* as tee_quiet_upstream */
	return due;
}

static const struct relay_agent chain_agent = {.due = chain_due};

/* A node's relay: one way, the upstream's bytes through the tee; back only confirmations and
 * the results. */
void chain_node_plug(struct chain *c, struct session *s, struct relay_setup *rs)
{
	(void)s;
	rs->flows[FLOW_SEND].enabled = 0;
	rs->flows[FLOW_RECEIVE].ops = &tee_ops;
	rs->flows[FLOW_RECEIVE].ctx = c;
	relay_add_agent(rs, &chain_agent, c);
}

/* The sender's: stdin through its ring to the first node; what comes back, the tee reads. */
void chain_sender_plug(struct chain *c, struct session *s, struct relay_setup *rs)
{
	(void)s;
	rs->flows[FLOW_RECEIVE].enabled = 0;
	rs->flows[FLOW_SEND].ops = &sender_ops;
	rs->flows[FLOW_SEND].ctx = c;
	relay_add_agent(rs, &chain_agent, c);
}
