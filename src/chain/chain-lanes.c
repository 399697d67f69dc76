/*
 * chain-lanes.c: --chain with -P N: every hop is N connections (lanes). The upstream hands the
 * stream out in pieces of at most CHAIN_CHUNK, each after a header with its offset and length,
 * to whichever lane has room (a lane that slows down carries less, and holds nobody back); the
 * node reads each piece into its ring at its offset. What it holds in one run from byte 0 is
 * its count, and that alone is written out, forwarded and confirmed; pieces that came ahead of
 * a gap wait in a short list. Lane 0 is the hop's first connection: the opening, the
 * confirmations and the results travel on it only.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fastcat.h"
#include "base/base.h"
#include "net/net.h"
#include "relay/flow.h"
#include "chain/chain.h"

static uint64_t min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* Every upstream lane idle, the pieces that came ahead forgotten (a new upstream resends). */
void chain_lanes_reset_up(struct chain_tee *t)
{
	for (unsigned j = 0; j < CHAIN_LANES_MAX; j++) {
		t->up[j].left = t->up[j].head_n = 0;
		t->up[j].done = t->up[j].eof = 0;
		t->up[j].ready = 1;
	}
	t->ngot = 0;
}

/* Every lane to the next node idle, the stream handed out again from offset `from`. */
void chain_lanes_reset_down(struct chain_tee *t, uint64_t from)
{
	for (unsigned j = 0; j < CHAIN_LANES_MAX; j++) {
		t->down[j].left = t->down[j].head_n = 0;
		t->down[j].ready = 1;
	}
	t->handed = from;
}

/* Lanes 1 on closed (lane 0 is the flow's or c->next's, closed with it). */
void chain_lanes_close(struct chain_lane *l, unsigned n)
{
	for (unsigned j = 1; j < n; j++) {
		if (l[j].fd >= 0)
			close(l[j].fd);
		l[j].fd = -1;
	}
}

static int up_fd(const struct flow *f, const struct chain_tee *t, unsigned j)
{
	return j == 0 ? flow_src(f) : t->up[j].fd;
}

static int up_ready(const struct flow *f, const struct chain_tee *t, unsigned j)
{
	return j == 0 ? flow_src_ready(f) : t->up[j].ready;
}

static void up_blocked(struct flow *f, struct chain_tee *t, unsigned j)
{
	if (j == 0)
		flow_set_src_ready(f, 0);
	else
		t->up[j].ready = 0;
}

/*
 * A piece read whole: the count grows when it fills the first gap, with
 * every piece it now joins; else it waits in the list. 0, or -1: the list
 * is full (the lane waits until the gap is filled).
 */
static int piece_arrived(struct flow *f, struct chain *c, uint64_t from, uint64_t to)
{
	struct chain_tee *t = &c->tee;
	uint64_t in = t->in;

	if (from != in) {
		if (t->ngot == CHAIN_SPANS)
			return -1;
		t->got[t->ngot++] = (struct chain_span){from, to};
		return 0;
	}
	in = to;
	for (unsigned i = 0; i < t->ngot;) {
		if (t->got[i].from == in) {
			in = t->got[i].to;
			t->got[i] = t->got[--t->ngot];
			i = 0;
		} else {
			i++;
		}
	}
	chain_tee_received(f, c, (size_t)(in - t->in));
	return 0;
}

/* A lane's piece header, read whole: checked, the piece's place kept. 0, or -1 (EPROTO). */
static int piece_begins(struct chain_tee *t, struct chain_lane *l)
{
	uint64_t at;
	size_t len;

	l->head_n = 0;
	if (chain_piece_decode(l->head, &at, &len) != 0 || at < t->in) {
		errno = EPROTO;
		return -1;
	}
	l->from = l->at = at;
	l->left = len;
	return 0;
}

/* Lane j's next read: into its header, or its piece where the ring has room for it. */
static ssize_t lane_recv(struct flow *f, struct chain *c, unsigned j)
{
	struct chain_tee *t = &c->tee;
	struct chain_lane *l = &t->up[j];
	uint64_t limit = chain_tee_keep(c) + t->ring_size, want;

	if (l->left == 0)
		return read(up_fd(f, t, j), l->head + l->head_n, sizeof l->head - l->head_n);
	if (limit <= l->at)
		return -2;
	want = min64(min64(l->left, limit - l->at), f->read_size);
	want = min64(want, t->ring_size - l->at % t->ring_size);
	return read(up_fd(f, t, j), t->ring + l->at % t->ring_size, (size_t)want);
}

/* What lane j's read brought. 1, or -1 failed (errno). */
static int lane_took(struct flow *f, struct chain *c, unsigned j, size_t n)
{
	struct chain_tee *t = &c->tee;
	struct chain_lane *l = &t->up[j];

	if (l->left == 0) {
		l->head_n += n;
		return l->head_n < sizeof l->head || piece_begins(t, l) == 0 ? 1 : -1;
	}
	l->at += n;
	l->left -= n;
	flow_count_read(f, n);
	if (l->at > t->top)
		t->top = l->at;
	if (l->left == 0)
		l->done = piece_arrived(f, c, l->from, l->at) != 0;
	return 1;
}

/* One read on lane j. 1 moved (or its EOF came), 0 blocked, -1 failed (errno). */
static int lane_read(struct flow *f, struct chain *c, unsigned j)
{
	struct chain_tee *t = &c->tee;
	struct chain_lane *l = &t->up[j];
	ssize_t n;

	if (l->done && (l->done = piece_arrived(f, c, l->from, l->at) != 0))
		return 0;
	if (l->eof || !up_ready(f, t, j) || (n = lane_recv(f, c, j)) == -2)
		return 0;
	f->stats->reads++;
	switch (io_result(n)) {
	case IO_MOVED: return lane_took(f, c, j, (size_t)n);
	case IO_AGAIN: up_blocked(f, t, j); return 0;
	case IO_END:
		l->eof = 1;
		if (l->left == 0 && l->head_n == 0)
			return 1;
		errno = 0; /* it ended within a piece */
		return -1;
	case IO_INTERRUPTED: return 0;
	default: return -1;
	}
}

/*
 * The upstream's lanes into the ring. 1 moved, 0 blocked, -1 the upstream
 * is gone (errno; 0: every lane ended, without the mark after the data).
 */
int chain_lanes_read(struct flow *f, struct chain *c)
{
	struct chain_tee *t = &c->tee;
	unsigned ended = 0;
	int moved = 0;

	if (t->up_eof || t->orphan_until > 0)
		return 0;
	for (unsigned j = 0; j < t->up_lanes; j++) {
		int rc = lane_read(f, c, j);

		if (rc < 0)
			return -1;
		moved |= rc;
		ended += t->up[j].eof;
	}
	if (ended < t->up_lanes)
		return moved;
	if (t->ngot != 0 || !chain_tee_marked(t)) {
		errno = 0;
		return -1;
	}
	chain_tee_ended(f, t);
	return 1;
}

static int down_fd(const struct chain *c, unsigned j)
{
	return j == 0 ? c->next->fd : c->tee.down[j].fd;
}

/* Lane j is idle: it takes the next piece of what the node has, up to CHAIN_CHUNK. */
static void lane_take_piece(struct chain_tee *t, struct chain_lane *l)
{
	size_t len = (size_t)min64(CHAIN_CHUNK, t->in - t->handed);

	chain_piece_encode(l->head, t->handed, len);
	l->head_n = sizeof l->head;
	l->from = l->at = t->handed;
	l->left = len;
	t->handed += len;
}

/* Lane j's next send: what is left of its header, then of its piece (-2: --rate-limit waits). */
static ssize_t lane_send(struct flow *f, struct chain *c, unsigned j)
{
	struct chain_tee *t = &c->tee;
	struct chain_lane *l = &t->down[j];
	size_t want =
	    (size_t)min64(min64(l->left, f->read_size), t->ring_size - l->at % t->ring_size);

	if (f->limited && (want = ratelimit_allow(&f->limit, clock_now(), want)) == 0)
		return -2;
	struct iovec iov[2] = {{l->head + sizeof l->head - l->head_n, l->head_n},
	                       {t->ring + l->at % t->ring_size, want}};
	struct msghdr msg = {.msg_iov = iov, .msg_iovlen = 2};

	return sendmsg(down_fd(c, j), &msg, MSG_NOSIGNAL);
}

/* One send on lane j to the next node (*sent: its piece's bytes): 1 moved, 0 not, -1 failed. */
static int lane_forward(struct flow *f, struct chain *c, unsigned j, size_t *sent)
{
	struct chain_tee *t = &c->tee;
	struct chain_lane *l = &t->down[j];
	int *ready = j == 0 ? &t->down_ready : &l->ready;
	size_t head;
	ssize_t n;

	if (!*ready || (l->left == 0 && t->handed >= t->in))
		return 0;
	if (l->left == 0)
		lane_take_piece(t, l);
	head = l->head_n;
	if ((n = lane_send(f, c, j)) == -2)
		return 0;
	switch (io_result(n)) {
	case IO_MOVED:
		l->head_n -= (size_t)n < head ? (size_t)n : head;
		if ((size_t)n > head) {
			l->at += (size_t)n - head;
			l->left -= (size_t)n - head;
			*sent += (size_t)n - head;
			if (f->limited)
				ratelimit_spend(&f->limit, (size_t)n - head);
		}
		return 1;
	case IO_AGAIN: *ready = 0; return 0;
	case IO_END:
	case IO_INTERRUPTED: return 0;
	default: return -1;
	}
}

/* Forwarded: all before the first piece still on its way (or not yet handed out). */
static uint64_t lanes_forwarded(const struct chain_tee *t)
{
	uint64_t fwd = t->handed;

	for (unsigned j = 0; j < t->down_lanes; j++)
		if (t->down[j].left > 0)
			fwd = min64(fwd, t->down[j].at);
	return fwd;
}

/* A lane's turn: the oldest piece first (idle lanes last), so the next node's gap fills first. */
static uint64_t lane_age(const struct chain_tee *t, unsigned j)
{
	return t->down[j].left > 0 ? t->down[j].at : UINT64_MAX;
}

/* The lanes in the order they move: the one with the oldest piece first (--rate-limit's bytes). */
static void lanes_by_age(const struct chain_tee *t, unsigned *order)
{
	for (unsigned j = 0; j < t->down_lanes; j++) {
		unsigned k = j;

		for (; k > 0 && lane_age(t, order[k - 1]) > lane_age(t, j); k--)
			order[k] = order[k - 1];
		order[k] = j;
	}
}

/* The ring on to the next node's lanes. 1 moved, 0 blocked, -1 the next node is gone (errno). */
int chain_lanes_forward(struct flow *f, struct chain *c)
{
	struct chain_tee *t = &c->tee;
	unsigned order[CHAIN_LANES_MAX];
	size_t sent = 0;
	int moved = 0;

	if (c->next == NULL || c->next->fd < 0)
		return 0;
	lanes_by_age(t, order);
	for (unsigned k = 0; k < t->down_lanes; k++) {
		int rc = lane_forward(f, c, order[k], &sent);

		if (rc < 0)
			return -1;
		moved |= rc;
	}
	if (moved)
		chain_tee_forwarded(f, c, lanes_forwarded(t), sent);
	return moved;
}

/* Lane j to the next node has bytes to send: its piece, or the next one to take. */
int chain_lanes_has_work(const struct chain_tee *t, unsigned j)
{
	return t->down[j].left > 0 || t->handed < t->in;
}

/* What the upstream's lanes wait for: a header, or a piece where the ring has room for it. */
int chain_lanes_poll_up(const struct flow *f, const struct chain *c, struct pollfd *pfd)
{
	const struct chain_tee *t = &c->tee;
	uint64_t limit = chain_tee_keep(c) + t->ring_size;
	int n = 0;

	for (unsigned j = 0; j < t->up_lanes; j++) {
		const struct chain_lane *l = &t->up[j];

		if (!l->eof && !l->done && !up_ready(f, t, j) && (l->left == 0 || l->at < limit))
			pfd[n++] = (struct pollfd){.fd = up_fd(f, t, j), .events = POLLIN};
	}
	return n;
}

/* What lanes 1 on to the next node wait for: room, where they have bytes to send. */
int chain_lanes_poll_down(const struct chain *c, struct pollfd *pfd)
{
	const struct chain_tee *t = &c->tee;
	int n = 0;

	for (unsigned j = 1; j < t->down_lanes; j++)
		if (!t->down[j].ready && chain_lanes_has_work(t, j))
			pfd[n++] = (struct pollfd){.fd = t->down[j].fd, .events = POLLOUT};
	return n;
}

/* A polled fd that is one of the lanes: marked ready (1), else 0. */
int chain_lanes_polled(struct flow *f, struct chain *c, const struct pollfd *p)
{
	struct chain_tee *t = &c->tee;

	for (unsigned j = 0; j < t->up_lanes && t->up_lanes > 1; j++)
		if (p->fd == up_fd(f, t, j) && (p->events & POLLIN)) {
			if (j == 0)
				flow_set_src_ready(f, 1);
			t->up[j].ready = 1;
			return 1;
		}
	for (unsigned j = 1; j < t->down_lanes; j++)
		if (p->fd == t->down[j].fd) {
			t->down[j].ready = 1;
			return 1;
		}
	return 0;
}

/* The end of the stream on lanes 1 on to the next node: 0, or -1 (errno). */
int chain_lanes_shut(struct chain *c)
{
	for (unsigned j = 1; j < c->tee.down_lanes; j++)
		if (c->tee.down[j].fd >= 0 && shutdown(c->tee.down[j].fd, SHUT_WR) != 0)
			return -1;
	return 0;
}
