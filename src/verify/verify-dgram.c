/*
 * verify-dgram.c: --verify over datagrams (udp, unix-dgram). The data goes as
 * --seq datagrams; around it, control datagrams (verify-wire.c) make the hello
 * handshake and the END, VERDICT and DONE exchange. Any of them may be lost,
 * so each is sent again, backing off, until the peer answers; a peer silent
 * for longer than the patience (-w, or 10 s) ends the session. The exchange
 * runs as a relay agent; the flows' ops hold the data back until the hello
 * and take the control datagrams out of it. The protocol:
 * doc/verify-protocol.md.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "base/compat.h"
#include "fastcat.h"
#include "net/net.h"
#include "relay/flow.h"
#include "verify/verify.h"

#define RESEND_FIRST     0.05 /* seconds before the first resend; loopback answers in microseconds */
#define RESEND_MAX       1.0  /* the backoff doubles up to this */
#define PATIENCE_DEFAULT 10.0 /* seconds of silence before giving up, without -w */
#define VERDICT_TRIES    4    /* VERDICTs sent without a DONE before we stop waiting for one */

_Static_assert(CTL_HEADER == DATAGRAM_HEAD, "a control datagram's header is what the relay splits");

/*
 * One control datagram, never waiting: a full queue drops it and the resend
 * sends it again. Also used by an end without --verify, to refuse a hello,
 * and by one refusing a plain peer. Returns send()'s result.
 */
int verify_ctl_send(int fd, const struct ctl *c)
{
	unsigned char buf[CTL_MAX];
	size_t n = verify_ctl_encode(buf, c);

	return send(fd, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 ? -1 : 0;
}

/* ... from this session's socket: a peer gone is noted. */
static void send_ctl(struct verify *v, const struct ctl *c)
{
	if (verify_ctl_send(v->dg.fd, c) < 0 && errno == ECONNREFUSED)
		v->dg.unreachable = 1;
}

static void send_hello(struct verify *v)
{
	struct ctl c = {.type = CTL_HELLO};

	c.flags = (v->hello_seen ? CTL_HAVE_YOURS : 0) | (v->dg.peer_has_hello ? 0 : CTL_ANSWER);
	send_ctl(v, &c);
}

static void send_verdict(struct verify *v)
{
	const struct session *s = v->s;
	struct ctl c = {CTL_VERDICT,
	                0,
	                s->received.datagrams,
	                v->vd->delivered_bytes,
	                v->vd->delivered_digest,
	                s->received.seq.lost};

	send_ctl(v, &c);
	v->dg.verdict_sent = 1;
}

static void send_end(struct verify *v)
{
	const struct session *s = v->s;
	struct ctl c = {
	    CTL_END, 0, v->dg.sent_datagrams, s->sent.bytes, digest_final(&s->sent.digest), 0};

	send_ctl(v, &c);
}

/* Send again soon: something new went out that wants an answer. */
static void resend_soon(struct dgverify *d, double now)
{
	d->backoff = RESEND_FIRST;
	d->next_resend = now + d->backoff;
}

/* Two END or VERDICT datagrams of one session must say the same. */
static int same_counts(const struct ctl *c, uint64_t datagrams, uint64_t bytes, uint64_t digest)
{
	return c->datagrams == datagrams && c->bytes == bytes && c->digest == digest;
}

/* The peer's hello, answered at once: our data, sent in this round, must not overtake it. */
static void receive_hello(struct verify *v, const struct ctl *c, double now)
{
	struct dgverify *d = &v->dg;

	v->hello_seen = 1;
	d->peer_has_hello |= (c->flags & CTL_HAVE_YOURS) != 0;
	if (!(c->flags & CTL_ANSWER))
		return;
	if (!d->hello_out)
		resend_soon(d, now); /* a listener's first hello wants an answer too */
	d->hello_out = 1;
	send_hello(v);
}

static int receive_end(struct verify *v, const struct ctl *c, double now)
{
	struct dgverify *d = &v->dg;
	struct verdict *vd = v->vd;

	if (vd->end_seen && !same_counts(c, d->peer_datagrams, vd->peer_bytes, vd->peer_digest))
		return failure_set(&v->failure, EXIT_VERIFY,
		                   "--verify: the peer sent two different end marks");
	if (!vd->end_seen) {
		vd->end_seen = 1;
		d->end_at = now;
		d->peer_datagrams = c->datagrams;
		vd->peer_bytes = c->bytes;
		vd->peer_digest = c->digest;
	}
	d->answer_end = 1;
	return 0;
}

static int receive_verdict(struct verify *v, const struct ctl *c)
{
	struct dgverify *d = &v->dg;
	struct verdict *vd = v->vd;

	if (!d->end_sent ||
	    (vd->verdict_seen &&
	     !same_counts(c, d->confirmed_datagrams, vd->confirmed_bytes, vd->confirmed_digest)))
		return failure_set(&v->failure, EXIT_VERIFY,
		                   "--verify: the peer sent a verdict on data we did not end");
	vd->verdict_seen = 1;
	d->confirmed_datagrams = c->datagrams;
	vd->confirmed_bytes = c->bytes;
	vd->confirmed_digest = c->digest;
	d->answer_verdict = 1;
	return 0;
}

/* A control datagram from the peer. 0, or the exit status of a protocol failure (v->failure). */
int verify_dgram_receive(struct verify *v, const struct ctl *c, double now)
{
	struct dgverify *d = &v->dg;

	d->last_heard = now;
	if (c->type == CTL_REFUSE) {
		d->refused = 1;
		return failure_set(&v->failure, EXIT_VERIFY,
		                   "--verify: the peer runs without --verify and refused our hello "
		                   "(give --verify at both ends)");
	}
	if (c->type == CTL_HELLO) {
		receive_hello(v, c, now);
		return 0;
	}
	if (!v->hello_seen)
		return 0;      /* a late one from an earlier peer (-k): not this session's */
	d->peer_has_hello = 1; /* it sends nothing else before our hello */
	switch (c->type) {
	case CTL_END: return receive_end(v, c, now);
	case CTL_VERDICT: return receive_verdict(v, c);
	case CTL_DONE: d->done_seen |= d->verdict_sent; break;
	default: break;
	}
	return 0;
}

/*
 * May the receiving flow end? Once the peer's END came and every datagram
 * it numbered arrived, or the grace for stragglers passed: what is missing
 * then is lost, the ones at the very end included.
 */
int verify_dgram_input_done(struct verify *v, struct seqtrack *seq, double now)
{
	struct dgverify *d = &v->dg;

	if (!v->vd->end_seen)
		return 0;
	if (seq->next >= d->peer_datagrams && seq->lost == 0)
		return 1;
	if (now < d->end_at + STRAGGLER_GRACE)
		return 0;
	if (seq->next < d->peer_datagrams) {
		seq->lost += d->peer_datagrams - seq->next;
		seq->next = d->peer_datagrams;
	}
	return 1;
}

/*
 * Once the receiving flow is done, nobody else reads the socket: control
 * datagrams are read here, late data dropped. 0, or the exit status of a
 * failure (v->failure).
 */
static int read_control(struct verify *v, double now)
{
	unsigned char buf[64];
	struct ctl c;

	for (;;) {
		ssize_t n = recv(v->dg.fd, buf, sizeof buf, MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == ECONNREFUSED) {
			v->dg.unreachable = 1;
			continue;
		}
		if (n < 0)
			return 0; /* EAGAIN; anything else shows at the next send */
		if (n <= CTL_MAX) {
			int rc = verify_ctl_parse(buf, (size_t)n, &c);
			if (rc < 0)
				return failure_set(&v->failure, EXIT_VERIFY,
				                   "--verify: the peer sent a malformed control "
				                   "datagram");
			if (rc == 1 && verify_dgram_receive(v, &c, now) != 0)
				return v->failure.status;
		}
	}
}

/* Still waiting for the peer to answer something we sent? */
static int awaiting_answer(const struct verify *v)
{
	const struct dgverify *d = &v->dg;

	return (d->hello_out && !d->peer_has_hello) || (!v->hello_seen) ||
	       (d->end_sent && !v->vd->verdict_seen);
}

/* An ICMP "port unreachable": before its hello, maybe not started yet; after, it is gone. */
static int note_unreachable(struct verify *v)
{
	struct dgverify *d = &v->dg;

	if (!d->unreachable)
		return 0;
	d->unreachable = 0;
	if (!v->hello_seen) {
		d->never_reached = 1;
		return 0;
	}
	d->done_seen |= d->verdict_sent; /* nobody is left to say DONE */
	if (d->end_sent && !v->vd->verdict_seen)
		return failure_set(&v->failure, EXIT_PEER,
		                   "--verify: the peer went away without confirming the %llu bytes "
		                   "sent to it",
		                   (unsigned long long)v->s->sent.bytes);
	return 0;
}

/* The peer was silent for the whole patience while we waited: why, and the exit status. */
static int give_up(struct verify *v)
{
	struct dgverify *d = &v->dg;

	if (!v->hello_seen && d->never_reached)
		return failure_set(&v->failure, EXIT_CONNECT,
		                   "--verify: no answer from %s in %g s: its port is unreachable "
		                   "(nothing listening?)",
		                   v->s->ep->peer, d->patience);
	if (!v->hello_seen)
		return failure_set(&v->failure, EXIT_VERIFY,
		                   "--verify: no verify hello from the peer in %g s (is --verify "
		                   "given at both ends?)",
		                   d->patience);
	return failure_set(&v->failure, EXIT_PEER,
	                   "--verify: the peer did not confirm the %llu bytes sent to it (silent "
	                   "for %g s)",
	                   (unsigned long long)v->s->sent.bytes, d->patience);
}

/* Send again what is still unanswered; a VERDICT only so often. */
static void resend(struct verify *v, double now)
{
	struct dgverify *d = &v->dg;

	if (d->hello_out && !d->peer_has_hello)
		send_hello(v);
	if (d->end_sent && !v->vd->verdict_seen)
		send_end(v);
	if (d->verdict_sent && !d->done_seen) {
		if (d->verdict_tries++ < VERDICT_TRIES)
			send_verdict(v);
		else
			d->done_seen = 1; /* our verdict is known here; the peer fails without it */
	}
	d->backoff = d->backoff * 2 < RESEND_MAX ? d->backoff * 2 : RESEND_MAX;
	d->next_resend = now + d->backoff;
}

/*
 * One round: read control datagrams if the receiving flow no longer does,
 * answer what came, send what is due or overdue, give up on a silent peer.
 * 0, or the exit status of a failure (v->failure says why).
 */
static int exchange(struct verify *v, int receiving, double now)
{
	struct dgverify *d = &v->dg;
	int status;

	if (!receiving && (status = read_control(v, now)) != 0)
		return status;
	if (d->refused)
		return EXIT_VERIFY;
	if ((status = note_unreachable(v)) != 0)
		return status;
	if (d->answer_verdict)
		send_ctl(v, &(struct ctl){.type = CTL_DONE});
	d->answer_verdict = 0;
	if (d->end_due && !d->end_sent) {
		send_end(v);
		d->end_sent = 1;
		resend_soon(d, now);
	}
	if (v->vd->end_seen && d->verdict_ready && (!d->verdict_sent || d->answer_end)) {
		if (!d->verdict_sent)
			resend_soon(d, now);
		send_verdict(v);
		d->answer_end = 0;
	}
	if (now >= d->next_resend && (awaiting_answer(v) || (d->verdict_sent && !d->done_seen)))
		resend(v, now);
	if (awaiting_answer(v) && now - d->last_heard >= d->patience)
		return give_up(v);
	return 0;
}

static int finished(const struct verify *v)
{
	const struct dgverify *d = &v->dg;

	return v->hello_seen && d->peer_has_hello && d->end_sent && v->vd->verdict_seen &&
	       d->verdict_sent && d->done_seen;
}

/* ---------------------------------------------------------------- the agent */

/*
 * The client says hello at once and until answered; a listener answers the
 * hello that made it accept, so a peer without --verify never hears from it
 * unasked.
 */
static void agent_start(void *ctx, struct relay *r, double now)
{
	struct verify *v = ctx;
	const struct config *cfg = v->s->cfg;
	struct dgverify *d = &v->dg;

	(void)r;
	d->fd = v->s->ep->fd;
	d->last_heard = now;
	d->patience = cfg->timeout_ms >= 0 ? (double)cfg->timeout_ms / 1000 : PATIENCE_DEFAULT;
	if (!cfg->listen) {
		d->hello_out = 1;
		send_hello(v);
		resend_soon(d, now);
	}
}

/* What the peer said counts as activity for -w. */
static int agent_turn(void *ctx, struct relay *r, double now)
{
	struct verify *v = ctx;
	int status = exchange(v, relay_flow(r, FLOW_RECEIVE)->running, now);

	relay_heard(r, v->dg.last_heard);
	return status == 0 ? 0
	                   : failure_set(&relay_session(r)->failure, status, "%s", v->failure.why);
}

static int agent_busy(const void *ctx, const struct relay *r)
{
	(void)r;
	return !finished(ctx);
}

/* The socket needs polling for control datagrams that no flow reads. */
static int agent_poll_events(void *ctx, const struct relay *r, struct pollfd *pfd, int max,
                             double now)
{
	const struct verify *v = ctx;

	(void)now;
	if (max < 1 || relay_flow_const(r, FLOW_RECEIVE)->running || finished(v))
		return 0;
	pfd[0] = (struct pollfd){.fd = v->dg.fd, .events = POLLIN};
	return 1;
}

static double earliest(double a, double b)
{
	return a < 0 || (b >= 0 && b < a) ? b : a;
}

/* Monotonic seconds of the next thing to do (a resend, a give-up, the grace's end), or -1. */
static double agent_due(const void *ctx, const struct relay *r, double now)
{
	const struct verify *v = ctx;
	const struct dgverify *d = &v->dg;
	double due = -1;

	if (awaiting_answer(v) || (d->verdict_sent && !d->done_seen))
		due = d->next_resend;
	if (awaiting_answer(v))
		due = earliest(due, d->last_heard + d->patience);
	if (relay_flow_const(r, FLOW_RECEIVE)->running && v->vd->end_seen &&
	    now < d->end_at + STRAGGLER_GRACE)
		due = earliest(due, d->end_at + STRAGGLER_GRACE);
	return due;
}

const struct relay_agent verify_dgram_agent = {
    .start = agent_start,
    .turn = agent_turn,
    .busy = agent_busy,
    .poll_events = agent_poll_events,
    .due = agent_due,
};
