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

#include "fastcat.h"

#define RETRY_FIRST      0.05 /* seconds before the first retry; loopback answers in microseconds */
#define RETRY_MAX        1.0  /* the backoff doubles up to this */
#define PATIENCE_DEFAULT 10.0 /* seconds of silence before giving up, without -w */
#define STRAGGLER_GRACE  0.25 /* after the peer's END, seconds its reordered datagrams may take */
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
static void send_ctl(struct verify *v, const struct ctl *c)
{
	if (dgverify_send(v->fd, c) < 0 && errno == ECONNREFUSED)
		v->unreachable = 1;
}

static void send_hello(struct verify *v)
{
	struct ctl c = {.type = CTL_HELLO};

	c.flags = (v->hello_seen ? CTL_HAVE_YOURS : 0) | (v->peer_has_hello ? 0 : CTL_ANSWER);
	send_ctl(v, &c);
}

static void send_verdict(struct verify *v, const struct session *s)
{
	struct ctl c = {CTL_VERDICT,           0,
	                s->received.datagrams, v->delivered_bytes,
	                v->delivered_digest,   s->received.seq.lost};

	send_ctl(v, &c);
	v->verdict_sent = 1;
}

static void send_end(struct verify *v, const struct session *s)
{
	struct ctl c = {CTL_END, 0, v->sent_datagrams, s->sent.bytes, digest_final(&s->sent.digest),
	                0};

	send_ctl(v, &c);
}

/* Send again soon: something new went out that wants an answer. */
static void retry_soon(struct verify *v, double now)
{
	v->backoff = RETRY_FIRST;
	v->next_retry = now + v->backoff;
}

/*
 * The client says hello at once and until answered; a listener answers the
 * hello that made it accept, so a peer without --verify never hears from it
 * unasked.
 */
void dgverify_start(struct verify *v, const struct config *cfg, const struct endpoint *ep,
                    double now)
{
	v->fd = ep->fd;
	v->started = v->last_heard = now;
	v->patience = cfg->timeout_ms >= 0 ? (double)cfg->timeout_ms / 1000 : PATIENCE_DEFAULT;
	if (!cfg->listen) {
		v->hello_out = 1;
		send_hello(v);
		retry_soon(v, now);
	}
}

/* Two END or VERDICT datagrams of one session must say the same. */
static int same_counts(const struct ctl *c, uint64_t datagrams, uint64_t bytes, uint64_t digest)
{
	return c->datagrams == datagrams && c->bytes == bytes && c->digest == digest;
}

/* A control datagram from the peer. 0, or -1 for a protocol failure (v->why). */
int dgverify_receive(struct verify *v, const struct ctl *c, double now)
{
	v->last_heard = now;
	if (c->type == CTL_REFUSE) {
		v->refused = 1;
		log_format(v->why, sizeof v->why, 0,
		           "--verify: the peer runs without --verify and refused our hello "
		           "(give --verify at both ends)");
		return -1;
	}
	if (c->type == CTL_HELLO) {
		v->hello_seen = 1;
		v->peer_has_hello |= (c->flags & CTL_HAVE_YOURS) != 0;
		/* answered at once: our data, sent in this round, must not overtake it */
		if (c->flags & CTL_ANSWER) {
			if (!v->hello_out)
				retry_soon(v,
				           now); /* a listener's first hello wants an answer too */
			v->hello_out = 1;
			send_hello(v);
		}
		return 0;
	}
	if (!v->hello_seen)
		return 0;      /* a late one from an earlier peer (-k): not this session's */
	v->peer_has_hello = 1; /* it sends nothing else before our hello */
	switch (c->type) {
	case CTL_END:
		if (v->end_seen &&
		    !same_counts(c, v->peer_datagrams, v->peer_bytes, v->peer_digest)) {
			log_format(v->why, sizeof v->why, 0,
			           "--verify: the peer sent two different end marks");
			return -1;
		}
		if (!v->end_seen) {
			v->end_seen = 1;
			v->end_at = now;
			v->peer_datagrams = c->datagrams;
			v->peer_bytes = c->bytes;
			v->peer_digest = c->digest;
		}
		v->answer_end = 1;
		break;
	case CTL_VERDICT:
		if (!v->end_sent ||
		    (v->verdict_seen && !same_counts(c, v->confirmed_datagrams, v->confirmed_bytes,
		                                     v->confirmed_digest))) {
			log_format(v->why, sizeof v->why, 0,
			           "--verify: the peer sent a verdict on data we did not end");
			return -1;
		}
		v->verdict_seen = 1;
		v->confirmed_datagrams = c->datagrams;
		v->confirmed_bytes = c->bytes;
		v->confirmed_digest = c->digest;
		v->confirmed_lost = c->lost;
		v->answer_verdict = 1;
		break;
	case CTL_DONE: v->done_seen |= v->verdict_sent; break;
	default: break;
	}
	return 0;
}

/*
 * May the receiving flow end? Once the peer's END came and every datagram
 * it numbered arrived, or the grace for stragglers passed: what is missing
 * then is lost, the ones at the very end included.
 */
int dgverify_input_done(struct verify *v, struct seqtrack *seq, double now)
{
	if (!v->datagram || !v->end_seen)
		return 0;
	if (seq->next >= v->peer_datagrams && seq->lost == 0)
		return 1;
	if (now < v->end_at + STRAGGLER_GRACE)
		return 0;
	if (seq->next < v->peer_datagrams) {
		seq->lost += v->peer_datagrams - seq->next;
		seq->next = v->peer_datagrams;
	}
	return 1;
}

/*
 * Once the receiving flow is done, nobody else reads the socket: control
 * datagrams are read here, late data dropped. 0, or -1 (v->why).
 */
static int read_control(struct verify *v, double now)
{
	unsigned char buf[64];
	struct ctl c;

	for (;;) {
		ssize_t n = recv(v->fd, buf, sizeof buf, MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == ECONNREFUSED) {
			v->unreachable = 1;
			continue;
		}
		if (n < 0)
			return 0; /* EAGAIN; anything else shows at the next send */
		if (n >= CTL_HEADER && n <= CTL_MAX) {
			int rc =
			    verify_ctl_decode(buf, buf + CTL_HEADER, (size_t)n - CTL_HEADER, &c);
			if (rc < 0) {
				log_format(v->why, sizeof v->why, 0,
				           "--verify: the peer sent a malformed control datagram");
				return -1;
			}
			if (rc == 1 && dgverify_receive(v, &c, now) < 0)
				return -1;
		}
	}
}

/* Still waiting for the peer to answer something we sent? */
static int awaiting_answer(const struct verify *v)
{
	return (v->hello_out && !v->peer_has_hello) || (!v->hello_seen) ||
	       (v->end_sent && !v->verdict_seen);
}

/* An ICMP "port unreachable": before its hello, maybe not started yet; after, it is gone. */
static int note_unreachable(struct verify *v, const struct session *s)
{
	if (!v->unreachable)
		return 0;
	v->unreachable = 0;
	if (!v->hello_seen) {
		v->never_reached = 1;
		return 0;
	}
	v->done_seen |= v->verdict_sent; /* nobody is left to say DONE */
	if (v->end_sent && !v->verdict_seen) {
		log_format(v->why, sizeof v->why, 0,
		           "--verify: the peer went away without confirming the %llu bytes "
		           "sent to it",
		           (unsigned long long)s->sent.bytes);
		return EXIT_PEER;
	}
	return 0;
}

/* The peer was silent for the whole patience while we waited: why, and the exit status. */
static int give_up(struct verify *v, const struct session *s)
{
	if (!v->hello_seen && v->never_reached) {
		log_format(v->why, sizeof v->why, 0,
		           "--verify: no answer from %s in %g s: its port is unreachable "
		           "(nothing listening?)",
		           s->ep->peer, v->patience);
		return EXIT_CONNECT;
	}
	if (!v->hello_seen) {
		log_format(v->why, sizeof v->why, 0,
		           "--verify: no verify hello from the peer in %g s (is --verify given "
		           "at both ends?)",
		           v->patience);
		return EXIT_VERIFY;
	}
	log_format(v->why, sizeof v->why, 0,
	           "--verify: the peer did not confirm the %llu bytes sent to it (silent "
	           "for %g s)",
	           (unsigned long long)s->sent.bytes, v->patience);
	return EXIT_PEER;
}

/* Send again what is still unanswered; a VERDICT only so often. */
static void retry(struct verify *v, const struct session *s, double now)
{
	if (v->hello_out && !v->peer_has_hello)
		send_hello(v);
	if (v->end_sent && !v->verdict_seen)
		send_end(v, s);
	if (v->verdict_sent && !v->done_seen) {
		if (v->verdict_tries++ < VERDICT_TRIES)
			send_verdict(v, s);
		else
			v->done_seen = 1; /* our verdict is known here; the peer fails without it */
	}
	v->backoff = v->backoff * 2 < RETRY_MAX ? v->backoff * 2 : RETRY_MAX;
	v->next_retry = now + v->backoff;
}

/*
 * One round of the relay: read control datagrams if the receiving flow no
 * longer does, answer what came, send what is due or overdue, give up on a
 * silent peer. 0, or the exit status of a failure (v->why says why).
 */
int dgverify_tick(struct session *s, int receiving, double now)
{
	struct verify *v = &s->verify;
	int status;

	if (!receiving && read_control(v, now) < 0)
		return EXIT_VERIFY;
	if (v->refused)
		return EXIT_VERIFY;
	if ((status = note_unreachable(v, s)) != 0)
		return status;
	if (v->answer_verdict)
		send_ctl(v, &(struct ctl){.type = CTL_DONE});
	v->answer_verdict = 0;
	if (v->end_due && !v->end_sent) {
		send_end(v, s);
		v->end_sent = 1;
		retry_soon(v, now);
	}
	if (v->end_seen && v->verdict_ready && (!v->verdict_sent || v->answer_end)) {
		if (!v->verdict_sent)
			retry_soon(v, now);
		send_verdict(v, s);
		v->answer_end = 0;
	}
	if (now >= v->next_retry && (awaiting_answer(v) || (v->verdict_sent && !v->done_seen)))
		retry(v, s, now);
	if (awaiting_answer(v) && now - v->last_heard >= v->patience)
		return give_up(v, s);
	return 0;
}

int dgverify_finished(const struct verify *v)
{
	return v->hello_seen && v->peer_has_hello && v->end_sent && v->verdict_seen &&
	       v->verdict_sent && v->done_seen;
}

/* The socket needs polling for control datagrams that no flow reads. */
int dgverify_wants_read(const struct verify *v, int receiving)
{
	return v->datagram && !receiving && !dgverify_finished(v);
}

static double earliest(double a, double b)
{
	return a < 0 || (b >= 0 && b < a) ? b : a;
}

/* Monotonic seconds of the next thing to do (a retry, a give-up, the grace's end), or -1. */
double dgverify_due(const struct verify *v, int receiving, double now)
{
	double due = -1;

	if (!v->datagram)
		return -1;
	if (awaiting_answer(v) || (v->verdict_sent && !v->done_seen))
		due = v->next_retry;
	if (awaiting_answer(v))
		due = earliest(due, v->last_heard + v->patience);
	if (receiving && v->end_seen && now < v->end_at + STRAGGLER_GRACE)
		due = earliest(due, v->end_at + STRAGGLER_GRACE);
	return due;
}
