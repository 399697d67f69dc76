/*
 * dgverify.c: --verify over datagrams (udp, unix-dgram). The data goes as
 * --seq datagrams; around it, control datagrams (verify.c) make the hello
 * handshake and the END, VERDICT and DONE exchange. Any of them may be
 * lost, so each is sent again, backing off, until the peer answers; a peer
 * silent for longer than the patience (-w, or 10 s) ends the session.
 * The protocol: doc/verify-protocol.md.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "base/compat.h"
#include "fastcat.h"
#include "verify/verify.h"

#define RETRY_FIRST      0.05 /* seconds before the first retry; loopback answers in microseconds */
#define RETRY_MAX        1.0  /* the backoff doubles up to this */
#define PATIENCE_DEFAULT 10.0 /* seconds of silence before giving up, without -w */
#define VERDICT_TRIES    4    /* VERDICTs sent without a DONE before we stop waiting for one */

/*
 * One control datagram, never waiting: a full queue drops it and the retry
 * sends it again. Also used by an end without --verify, to refuse a hello,
 * and by one refusing a plain peer. Returns send()'s result.
 */
int dgverify_send(int fd, const struct ctl *c)
{
	unsigned char buf[CTL_MAX];
	size_t n = verify_ctl_encode(buf, c);

	return send(fd, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 ? -1 : 0;
}

/* ... from this session's socket: a peer gone is noted. */
static void send_ctl(struct dgverify *d, const struct ctl *c)
{
	if (dgverify_send(d->fd, c) < 0 && errno == ECONNREFUSED)
		d->unreachable = 1;
}

static void send_hello(struct dgverify *d)
{
	struct ctl c = {.type = CTL_HELLO};

	c.flags = (d->v->hello_seen ? CTL_HAVE_YOURS : 0) | (d->peer_has_hello ? 0 : CTL_ANSWER);
	send_ctl(d, &c);
}

static void send_verdict(struct dgverify *d, const struct session *s)
{
	struct ctl c = {CTL_VERDICT,
	                0,
	                s->received.datagrams,
	                d->v->delivered_bytes,
	                d->v->delivered_digest,
	                s->received.seq.lost};

	send_ctl(d, &c);
	d->verdict_sent = 1;
}

static void send_end(struct dgverify *d, const struct session *s)
{
	struct ctl c = {CTL_END, 0, d->sent_datagrams, s->sent.bytes, digest_final(&s->sent.digest),
	                0};

	send_ctl(d, &c);
}

/* Send again soon: something new went out that wants an answer. */
static void retry_soon(struct dgverify *d, double now)
{
	d->backoff = RETRY_FIRST;
	d->next_retry = now + d->backoff;
}

/*
 * The client says hello at once and until answered; a listener answers the
 * hello that made it accept, so a peer without --verify never hears from it
 * unasked.
 */
void dgverify_start(struct dgverify *d, const struct config *cfg, const struct endpoint *ep,
                    double now)
{
	d->fd = ep->fd;
	d->last_heard = now;
	d->patience = cfg->timeout_ms >= 0 ? (double)cfg->timeout_ms / 1000 : PATIENCE_DEFAULT;
	if (!cfg->listen) {
		d->hello_out = 1;
		send_hello(d);
		retry_soon(d, now);
	}
}

/* Two END or VERDICT datagrams of one session must say the same. */
static int same_counts(const struct ctl *c, uint64_t datagrams, uint64_t bytes, uint64_t digest)
{
	return c->datagrams == datagrams && c->bytes == bytes && c->digest == digest;
}

/* The peer's hello, answered at once: our data, sent in this round, must not overtake it. */
static void receive_hello(struct dgverify *d, const struct ctl *c, double now)
{
	d->v->hello_seen = 1;
	d->peer_has_hello |= (c->flags & CTL_HAVE_YOURS) != 0;
	if (!(c->flags & CTL_ANSWER))
		return;
	if (!d->hello_out)
		retry_soon(d, now); /* a listener's first hello wants an answer too */
	d->hello_out = 1;
	send_hello(d);
}

/* A control datagram from the peer. 0, or -1 for a protocol failure (d->v->why). */
int dgverify_receive(struct dgverify *d, const struct ctl *c, double now)
{
	d->last_heard = now;
	if (c->type == CTL_REFUSE) {
		d->refused = 1;
		log_format(d->v->why, sizeof d->v->why, 0,
		           "--verify: the peer runs without --verify and refused our hello "
		           "(give --verify at both ends)");
		return -1;
	}
	if (c->type == CTL_HELLO) {
		receive_hello(d, c, now);
		return 0;
	}
	if (!d->v->hello_seen)
		return 0;      /* a late one from an earlier peer (-k): not this session's */
	d->peer_has_hello = 1; /* it sends nothing else before our hello */
	switch (c->type) {
	case CTL_END:
		if (d->v->end_seen &&
		    !same_counts(c, d->peer_datagrams, d->v->peer_bytes, d->v->peer_digest)) {
			log_format(d->v->why, sizeof d->v->why, 0,
			           "--verify: the peer sent two different end marks");
			return -1;
		}
		if (!d->v->end_seen) {
			d->v->end_seen = 1;
			d->end_at = now;
			d->peer_datagrams = c->datagrams;
			d->v->peer_bytes = c->bytes;
			d->v->peer_digest = c->digest;
		}
		d->answer_end = 1;
		break;
	case CTL_VERDICT:
		if (!d->end_sent || (d->v->verdict_seen &&
		                     !same_counts(c, d->confirmed_datagrams, d->v->confirmed_bytes,
		                                  d->v->confirmed_digest))) {
			log_format(d->v->why, sizeof d->v->why, 0,
			           "--verify: the peer sent a verdict on data we did not end");
			return -1;
		}
		d->v->verdict_seen = 1;
		d->confirmed_datagrams = c->datagrams;
		d->v->confirmed_bytes = c->bytes;
		d->v->confirmed_digest = c->digest;
		d->answer_verdict = 1;
		break;
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
int dgverify_input_done(struct dgverify *d, struct seqtrack *seq, double now)
{
	if (d == NULL || !d->v->end_seen)
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
 * datagrams are read here, late data dropped. 0, or -1 (d->v->why).
 */
static int read_control(struct dgverify *d, double now)
{
	unsigned char buf[64];
	struct ctl c;

	for (;;) {
		ssize_t n = recv(d->fd, buf, sizeof buf, MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == ECONNREFUSED) {
			d->unreachable = 1;
			continue;
		}
		if (n < 0)
			return 0; /* EAGAIN; anything else shows at the next send */
		if (n <= CTL_MAX) {
			int rc = verify_ctl_parse(buf, (size_t)n, &c);
			if (rc < 0) {
				log_format(d->v->why, sizeof d->v->why, 0,
				           "--verify: the peer sent a malformed control datagram");
				return -1;
			}
			if (rc == 1 && dgverify_receive(d, &c, now) < 0)
				return -1;
		}
	}
}

/* Still waiting for the peer to answer something we sent? */
static int awaiting_answer(const struct dgverify *d)
{
	return (d->hello_out && !d->peer_has_hello) || (!d->v->hello_seen) ||
	       (d->end_sent && !d->v->verdict_seen);
}

/* An ICMP "port unreachable": before its hello, maybe not started yet; after, it is gone. */
static int note_unreachable(struct dgverify *d, const struct session *s)
{
	if (!d->unreachable)
		return 0;
	d->unreachable = 0;
	if (!d->v->hello_seen) {
		d->never_reached = 1;
		return 0;
	}
	d->done_seen |= d->verdict_sent; /* nobody is left to say DONE */
	if (d->end_sent && !d->v->verdict_seen) {
		log_format(d->v->why, sizeof d->v->why, 0,
		           "--verify: the peer went away without confirming the %llu bytes "
		           "sent to it",
		           (unsigned long long)s->sent.bytes);
		return EXIT_PEER;
	}
	return 0;
}

/* The peer was silent for the whole patience while we waited: why, and the exit status. */
static int give_up(struct dgverify *d, const struct session *s)
{
	if (!d->v->hello_seen && d->never_reached) {
		log_format(d->v->why, sizeof d->v->why, 0,
		           "--verify: no answer from %s in %g s: its port is unreachable "
		           "(nothing listening?)",
		           s->ep->peer, d->patience);
		return EXIT_CONNECT;
	}
	if (!d->v->hello_seen) {
		log_format(d->v->why, sizeof d->v->why, 0,
		           "--verify: no verify hello from the peer in %g s (is --verify given "
		           "at both ends?)",
		           d->patience);
		return EXIT_VERIFY;
	}
	log_format(d->v->why, sizeof d->v->why, 0,
	           "--verify: the peer did not confirm the %llu bytes sent to it (silent "
	           "for %g s)",
	           (unsigned long long)s->sent.bytes, d->patience);
	return EXIT_PEER;
}

/* Send again what is still unanswered; a VERDICT only so often. */
static void retry(struct dgverify *d, const struct session *s, double now)
{
	if (d->hello_out && !d->peer_has_hello)
		send_hello(d);
	if (d->end_sent && !d->v->verdict_seen)
		send_end(d, s);
	if (d->verdict_sent && !d->done_seen) {
		if (d->verdict_tries++ < VERDICT_TRIES)
			send_verdict(d, s);
		else
			d->done_seen = 1; /* our verdict is known here; the peer fails without it */
	}
	d->backoff = d->backoff * 2 < RETRY_MAX ? d->backoff * 2 : RETRY_MAX;
	d->next_retry = now + d->backoff;
}

/*
 * One round of the relay: read control datagrams if the receiving flow no
 * longer does, answer what came, send what is due or overdue, give up on a
 * silent peer. 0, or the exit status of a failure (d->v->why says why).
 */
int dgverify_tick(struct session *s, int receiving, double now)
{
	struct dgverify *d = s->verify.dg;
	int status;

	if (!receiving && read_control(d, now) < 0)
		return EXIT_VERIFY;
	if (d->refused)
		return EXIT_VERIFY;
	if ((status = note_unreachable(d, s)) != 0)
		return status;
	if (d->answer_verdict)
		send_ctl(d, &(struct ctl){.type = CTL_DONE});
	d->answer_verdict = 0;
	if (d->end_due && !d->end_sent) {
		send_end(d, s);
		d->end_sent = 1;
		retry_soon(d, now);
	}
	if (d->v->end_seen && d->verdict_ready && (!d->verdict_sent || d->answer_end)) {
		if (!d->verdict_sent)
			retry_soon(d, now);
		send_verdict(d, s);
		d->answer_end = 0;
	}
	if (now >= d->next_retry && (awaiting_answer(d) || (d->verdict_sent && !d->done_seen)))
		retry(d, s, now);
	if (awaiting_answer(d) && now - d->last_heard >= d->patience)
		return give_up(d, s);
	return 0;
}

int dgverify_finished(const struct dgverify *d)
{
	return d->v->hello_seen && d->peer_has_hello && d->end_sent && d->v->verdict_seen &&
	       d->verdict_sent && d->done_seen;
}

/* The socket needs polling for control datagrams that no flow reads. */
int dgverify_wants_read(const struct dgverify *d, int receiving)
{
	return d != NULL && !receiving && !dgverify_finished(d);
}

static double earliest(double a, double b)
{
	return a < 0 || (b >= 0 && b < a) ? b : a;
}

/* Monotonic seconds of the next thing to do (a retry, a give-up, the grace's end), or -1. */
double dgverify_due(const struct dgverify *d, int receiving, double now)
{
	double due = -1;

	if (d == NULL)
		return -1;
	if (awaiting_answer(d) || (d->verdict_sent && !d->done_seen))
		due = d->next_retry;
	if (awaiting_answer(d))
		due = earliest(due, d->last_heard + d->patience);
	if (receiving && d->v->end_seen && now < d->end_at + STRAGGLER_GRACE)
		due = earliest(due, d->end_at + STRAGGLER_GRACE);
	return due;
}
