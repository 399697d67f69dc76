/*
 * chain-back.c: what travels up a --chain against the stream. While it flows, each node confirms
 * what it received and what the node after it did (the node before keeps its ring back to the
 * second one, to bypass the first should it die); at the end, the results. A node reads its
 * next node's confirmations and results here, and sends its own confirmations up.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "fastcat.h"
#include "base/base.h"
#include "relay/flow.h"
#include "chain/chain.h"

/* The rest of a confirmation to the upstream: 1 all gone, 0 the socket is full, -1 failed. */
static int ack_flush(struct chain *c)
{
	struct chain_tee *t = &c->tee;

	while (t->ack_left > 0) {
		ssize_t n = send(c->flow->sock, t->ack + CHAIN_ACK_BYTES - t->ack_left, t->ack_left,
		                 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0)
			t->ack_left -= (size_t)n;
		else if (n < 0 && errno == EINTR)
			continue;
		else
			return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
	}
	return 1;
}

/*
 * A node confirms upstream what it received, and what its next node did:
 * at once every CHAIN_ACK_STEP bytes of either, else CHAIN_ACK_DELAY after
 * a change (ack_due), and at least every CHAIN_HEARTBEAT seconds, so that
 * its silence means it is gone. A socket that fails here fails its reads
 * too.
 */
void chain_ack_send(struct chain *c, double now)
{
	struct chain_tee *t = &c->tee;
	struct chain_ack a = {t->in, CHAIN_NONE, t->in};

	if (chain_is_sender(c) || t->orphan_until > 0 || c->flow == NULL)
		return;
	if (t->ack_left > 0 && ack_flush(c) <= 0)
		return;
	if (c->next->fd >= 0) {
		a.next_in = t->next_in;
		a.least = t->least < t->in ? t->least : t->in;
	}
	if (a.in == t->acked_in && a.next_in == t->acked_next && a.least == t->acked_least &&
	    now < t->acked_at + CHAIN_HEARTBEAT) {
		t->ack_due = 0;
		return;
	}
	/* at the upstream's end at once: --sync may keep this node from its loop for long */
	if (!t->up_eof && a.in - t->acked_in < CHAIN_ACK_STEP &&
	    a.next_in - t->acked_next < CHAIN_ACK_STEP &&
	    a.least - t->acked_least < CHAIN_ACK_STEP && now < t->acked_at + CHAIN_HEARTBEAT) {
		if (t->ack_due == 0)
			t->ack_due = now + CHAIN_ACK_DELAY;
		if (now < t->ack_due)
			return;
	}
	chain_ack_encode(t->ack, &a);
	t->ack_left = CHAIN_ACK_BYTES;
	t->acked_in = a.in;
	t->acked_next = a.next_in;
	t->acked_least = a.least;
	t->ack_due = 0;
	t->acked_at = now;
	ack_flush(c);
}

/* What came back so far: the confirmations taken, the results once all there. 0, or -1. */
static int back_parse(struct chain *c)
{
	struct chain_tee *t = &c->tee;
	struct chain_ack a;
	size_t total;

	while (c->back_len > 0 && !t->results_in) {
		int rc = chain_ack_decode(c->back, c->back_len, &a);

		if (rc == 1) {
			if (a.in < t->next_in || a.in > t->fwd)
				return -1; /* it confirms what it was never sent */
			t->next_in = a.in;
			t->next_heard = clock_now();
			t->behind_in = a.next_in;
			t->least = a.least;
			if (chain_is_sender(c))
				c->s->slowest = a.least;
			c->back_len -= CHAIN_ACK_BYTES;
			memmove(c->back, c->back + CHAIN_ACK_BYTES, c->back_len);
			continue;
		}
		if (rc == 0)
			return 0;
		rc = chain_results_length(c->back, c->back_len, &total);
		if (rc != 0)
			return rc < 0 ? -1 : 0;
		if (c->back_len > total)
			return -1;
		t->results_in = c->back_len == total;
		return 0;
	}
	return 0;
}

/*
 * The next node's confirmations and results, as they come: 1 the results
 * are all there and its EOF came, 0 not yet, -1 the next node is gone
 * (errno; EPROTO: it sent what no node sends).
 */
int chain_back_read(struct chain *c)
{
	struct chain_tee *t = &c->tee;

	while (c->next->fd >= 0 && !t->back_eof && t->back_ready) {
		ssize_t n = recv(c->next->fd, c->back + c->back_len, sizeof c->back - c->back_len,
		                 MSG_DONTWAIT);

		if (n > 0) {
			c->back_len += (size_t)n;
			if (back_parse(c) != 0 ||
			    (c->back_len == sizeof c->back && !t->results_in)) {
				errno = EPROTO;
				return -1;
			}
		} else if (n == 0) {
			t->back_eof = 1;
		} else if (errno == EAGAIN || errno == EWOULDBLOCK) {
			t->back_ready = 0;
		} else if (errno != EINTR) {
			return -1;
		}
	}
	if (c->next->fd < 0)
		return 1;
	if (t->back_eof && !t->results_in) {
		errno = c->back_len > 0 ? EPROTO : ECONNRESET;
		return -1;
	}
	return t->back_eof;
}

/* The results that came back, into this end's: 0, or -1 when they do not decode. */
int chain_back_merge(struct chain *c)
{
	struct chain_results r;

	if (!c->tee.results_in)
		return 0;
	if (chain_results_decode(c->back, c->back_len, c->list.n, &r) != 0)
		return -1;
	chain_merge(&c->results, &r);
	return 0;
}
