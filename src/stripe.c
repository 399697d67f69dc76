/*
 * stripe.c: -P, one stream over several TCP connections: the handshake that
 * ties the connections into one session (doc/stripe-protocol.md; the wire
 * format is coded in stripe-wire.c).
 *
 * The receiver speaks first, on every connection it accepts: a plain peer
 * of a -P sender (nc, socat, fastcat without -P) never says that hello, so
 * the sender gives up before it has sent a single byte to it.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "compat.h"
#include "fastcat.h"
#include "stripe.h"

/* Seconds a handshake may take without -w: a plain peer is told apart by saying nothing. */
#define HANDSHAKE_PATIENCE 5.0

static double handshake_patience(const struct config *cfg)
{
	return cfg->timeout_ms >= 0 ? (double)cfg->timeout_ms / 1000 : HANDSHAKE_PATIENCE;
}

/*
 * Move len bytes on a non-blocking socket before the deadline: reading
 * (into buf) or writing (from it). The number moved: len, or fewer on a
 * timeout, EOF, error (errno) or stop signal.
 */
static size_t handshake_io(int fd, unsigned char *buf, size_t len, int writing, double deadline)
{
	size_t done = 0;

	while (done < len && !signal_stop) {
		ssize_t n = writing ? send(fd, buf + done, len - done, MSG_NOSIGNAL)
		                    : recv(fd, buf + done, len - done, 0);
		struct pollfd pfd = {.fd = fd, .events = writing ? POLLOUT : POLLIN};
		double left = deadline - clock_now();

		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n == 0) {
			errno = 0;
			break;
		}
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			break;
		if (left <= 0) {
			errno = ETIMEDOUT;
			break;
		}
		poll(&pfd, 1, (int)(left * 1000) + 1);
	}
	return done;
}

/* A session id no other sender picks: the clock and the pid, mixed (no randomness needed). */
static uint64_t session_id(void)
{
	struct timespec ts;
	uint64_t x;

	clock_gettime(CLOCK_REALTIME, &ts);
	x = (uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec ^ (uint64_t)getpid() << 32;
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	return x ^ x >> 33;
}

/*
 * The sender's side of one connection: the receiver's hello, then our join.
 * 0, or EXIT_CONNECT with the reason in err (nothing was sent then).
 */
static int join_one(const struct config *cfg, int fd, const struct stripe_join *j, const char *peer,
                    char *err, size_t errlen)
{
	unsigned char hello[STRIPE_HELLO_BYTES], join[STRIPE_JOIN_BYTES];
	double deadline = clock_now() + handshake_patience(cfg);
	size_t got = handshake_io(fd, hello, sizeof hello, 0, deadline);

	if (got < sizeof hello || stripe_hello_seen(hello, got) != 1) {
		if (got > 0 && stripe_hello_seen(hello, got) < 0)
			snprintf(err, errlen,
			         "-P: %s is not a fastcat -P receiver: it sent other data "
			         "first (give -l -P at the other end)",
			         peer);
		else if (errno == 0)
			snprintf(err, errlen,
			         "-P: %s is not a fastcat -P receiver: it ended its side "
			         "without a stripe hello (give -l -P at the other end)",
			         peer);
		else if (errno == ETIMEDOUT)
			snprintf(err, errlen,
			         "-P: %s is not a fastcat -P receiver: no stripe hello in "
			         "%g s (give -l -P at the other end)",
			         peer, handshake_patience(cfg));
		else
			snprintf(err, errlen,
			         "-P: %s closed the connection before its stripe hello%s%s", peer,
			         errno ? ": " : "", errno ? strerror(errno) : "");
		return signal_stop ? EXIT_RUNTIME : EXIT_CONNECT;
	}
	stripe_join_encode(join, j);
	if (handshake_io(fd, join, sizeof join, 1, deadline) < sizeof join) {
		snprintf(err, errlen, "-P: send to %s: %s", peer, strerror(errno ? errno : EPIPE));
		return EXIT_CONNECT;
	}
	return 0;
}

/*
 * -P N, sending: ep->fd is connected; tie it and N - 1 more connections to
 * the same address into one session, the others connecting all at once
 * once the first has shown a -P receiver. 0, or an exit status with err. A
 * refusal resets the connection, so a plain fastcat at the other end does
 * not take the empty stream for a finished one.
 */
int stripe_connect(const struct config *cfg, struct endpoint *ep, char *err, size_t errlen)
{
	struct stripe_join j = {.count = cfg->parallel, .session = session_id()};
	int rc;

	ep->stripe[0] = ep->fd;
	ep->stripes = 1;
	/* the first one tells a -P receiver from a plain peer before any other connects */
	rc = join_one(cfg, ep->fd, &j, ep->peer, err, errlen);
	for (unsigned i = 1; rc == 0 && i < cfg->parallel; i++) {
		rc = endpoint_connect_start(cfg, ep, &ep->stripe[i], err, errlen);
		ep->stripes += rc == 0;
	}
	for (unsigned i = 1; rc == 0 && i < cfg->parallel; i++) {
		j.index = i;
		rc = endpoint_connect_finish(cfg, ep, ep->stripe[i], err, errlen);
		if (rc == 0)
			rc = join_one(cfg, ep->stripe[i], &j, ep->peer, err, errlen);
	}
	if (rc != 0) {
		endpoint_abort(cfg, ep);
		return rc;
	}
	log_verbose("-P: %u connections to %s, session %016llx", ep->stripes, ep->peer,
	            (unsigned long long)j.session);
	return 0;
}

/* -P, receiving: a connection that said hello and whose join has not come whole yet. */
struct pending {
	int fd;
	double deadline;
	unsigned char join[STRIPE_JOIN_BYTES];
	size_t have;
};

/* The receiver's side of the joins: who is in the session so far. */
struct joining {
	const struct config *cfg;
	struct endpoint *ep;
	struct pending pending[STRIPE_MAX];
	size_t npending;
	unsigned count;    /* connections the sender announced; 0 = no join yet */
	unsigned attached; /* ... that joined */
	uint64_t session;
	double progress; /* when the last one joined */
};

/* Say hello on a connection just accepted; it then has the patience to join. */
static void joining_add(struct joining *s, int fd)
{
	struct pending *p;

	if (s->npending == STRIPE_MAX ||
	    send(fd, stripe_hello, sizeof stripe_hello, MSG_NOSIGNAL | MSG_DONTWAIT) !=
	        (ssize_t)sizeof stripe_hello) {
		endpoint_refuse(fd);
		return;
	}
	p = &s->pending[s->npending++];
	p->fd = fd;
	p->have = 0;
	p->deadline = clock_now() + handshake_patience(s->cfg);
}

static void joining_drop(struct joining *s, size_t i, const char *why)
{
	char who[112];

	addr_format_fd(s->pending[i].fd, 1, who, sizeof who);
	log_verbose("-P: refused a connection from %s: %s", who, why);
	endpoint_refuse(s->pending[i].fd);
	s->pending[i] = s->pending[--s->npending];
}

/* A whole join arrived on pending[i]: it belongs to the session (or starts it), or is refused. */
static void joining_decide(struct joining *s, size_t i)
{
	struct stripe_join j;

	if (stripe_join_decode(s->pending[i].join, &j) != 0) {
		joining_drop(s, i, "not a -P sender");
		return;
	}
	if (s->count == 0) {
		s->count = j.count;
		s->session = j.session;
	}
	if (j.session != s->session || j.count != s->count || s->ep->stripe[j.index] >= 0) {
		joining_drop(s, i, "not of this session");
		return;
	}
	s->ep->stripe[j.index] = s->pending[i].fd;
	s->attached++;
	s->progress = clock_now();
	s->pending[i] = s->pending[--s->npending];
}

/* Read what pending[i] sent of its join; a wrong byte, EOF or error refuses it at once. */
static void joining_read(struct joining *s, size_t i)
{
	struct pending *p = &s->pending[i];
	ssize_t n = recv(p->fd, p->join + p->have, sizeof p->join - p->have, 0);

	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n <= 0) {
		joining_drop(s, i, n == 0 ? "closed before its join" : strerror(errno));
		return;
	}
	p->have += (size_t)n;
	if (!stripe_join_prefix(p->join, p->have))
		joining_drop(s, i, "not a -P sender");
	else if (p->have == sizeof p->join)
		joining_decide(s, i);
}

/* One wait for joins and new connections. 0, or -1 when the listener failed or a stop came. */
static int joining_poll(struct joining *s, struct listener *l)
{
	struct pollfd pfd[STRIPE_MAX + 1];
	size_t n = s->npending;
	double now = clock_now(), until = -1;

	for (size_t i = 0; i < n; i++) {
		pfd[i] = (struct pollfd){.fd = s->pending[i].fd, .events = POLLIN};
		if (until < 0 || s->pending[i].deadline < until)
			until = s->pending[i].deadline;
	}
	pfd[n] = (struct pollfd){.fd = l->fd, .events = POLLIN};
	if (s->count > 0 && (until < 0 || s->progress + handshake_patience(s->cfg) < until))
		until = s->progress + handshake_patience(s->cfg);
	if (poll(pfd, n + 1, until < 0 ? -1 : (int)((until - now) * 1000) + 1) < 0 &&
	    errno != EINTR)
		return -1;
	if (signal_stop)
		return -1;
	now = clock_now();
	for (size_t i = n; i-- > 0;) {
		if (pfd[i].revents != 0)
			joining_read(s, i);
		else if (now >= s->pending[i].deadline)
			joining_drop(s, i, "no join in time");
	}
	if (pfd[n].revents != 0) {
		int fd;
		int got = endpoint_accept_pending(s->cfg, l, &fd);

		if (got < 0)
			return -1;
		if (got > 0)
			joining_add(s, fd);
	}
	return 0;
}

/* The session's connections are in: the endpoint names the first; -v says how many. */
static void joining_done(struct joining *s)
{
	struct endpoint *ep = s->ep;

	ep->fd = ep->stripe[0];
	ep->stripes = s->count;
	addr_format_fd(ep->fd, 0, ep->local, sizeof ep->local);
	addr_format_fd(ep->fd, 1, ep->peer, sizeof ep->peer);
	sock_read_buffers(ep->fd, &ep->sndbuf, &ep->rcvbuf);
	log_verbose("-P: %u connections from %s, session %016llx", ep->stripes, ep->peer,
	            (unsigned long long)s->session);
}

/*
 * -l -P, receiving: ep->fd was just accepted. Say hello on it and on every
 * connection that follows, until as many as the first sender's join
 * announced have joined its session; strangers are reset, and the wait for
 * a sender goes on. 0, or an exit status with err.
 */
int stripe_accept(const struct config *cfg, struct listener *l, struct endpoint *ep, char *err,
                  size_t errlen)
{
	struct joining s = {.cfg = cfg, .ep = ep};
	int rc = 0;

	for (unsigned i = 0; i < STRIPE_MAX; i++)
		ep->stripe[i] = -1;
	sock_set_nonblock(l->fd, 1);
	joining_add(&s, ep->fd);
	ep->fd = -1;
	while (s.count == 0 || s.attached < s.count) {
		if (joining_poll(&s, l) != 0) {
			snprintf(err, errlen,
			         signal_stop ? "interrupted by %s" : "accept on %s: %s",
			         signal_stop ? signals_stop_name() : l->local, strerror(errno));
			rc = EXIT_RUNTIME;
			break;
		}
		if (s.count > 0 && clock_now() >= s.progress + handshake_patience(cfg)) {
			snprintf(err, errlen,
			         "-P: the sender announced %u connections, %u joined in %g s",
			         s.count, s.attached, handshake_patience(cfg));
			rc = EXIT_PEER;
			break;
		}
	}
	sock_set_nonblock(l->fd, 0);
	while (s.npending > 0)
		joining_drop(&s, s.npending - 1, "the session is complete");
	if (rc == 0) {
		joining_done(&s);
		return 0;
	}
	for (unsigned i = 0; i < STRIPE_MAX; i++)
		if (ep->stripe[i] >= 0)
			endpoint_refuse(ep->stripe[i]);
	return rc;
}

/*
 * After a striped session: --verify's answer. The sender compares the
 * receiver's VERDICT with what it sent; the receiver, whenever the sender's
 * END carried the stream's XXH64, compares it with what it wrote. A failure
 * the relay already reported stands.
 */
void stripe_conclude(struct session *s)
{
	struct verify *v = &s->verify;
	const struct flow_stats *mine = s->cfg->listen ? &s->received : &s->sent;
	uint64_t bytes = mine->bytes, digest = digest_final(&mine->digest);

	if (s->exit_status != EXIT_OK || (!s->cfg->verify && !v->end_seen))
		return;
	if (s->cfg->listen && !v->end_seen)
		s->exit_status = log_format(s->error, sizeof s->error, EXIT_VERIFY,
		                            "-P --verify: the sender did not ask for --verify "
		                            "(give --verify at both ends)");
	else if (s->cfg->listen && (v->peer_bytes != bytes || v->peer_digest != digest))
		s->exit_status = log_format(s->error, sizeof s->error, EXIT_VERIFY,
		                            "--verify: wrote %llu bytes (xxh64 %016llx) but the "
		                            "sender sent %llu (xxh64 %016llx)",
		                            (unsigned long long)bytes, (unsigned long long)digest,
		                            (unsigned long long)v->peer_bytes,
		                            (unsigned long long)v->peer_digest);
	else if (!s->cfg->listen && !v->verdict_seen)
		s->exit_status = log_format(s->error, sizeof s->error, EXIT_PEER,
		                            "--verify: the receiver closed without confirming the "
		                            "%llu bytes sent",
		                            (unsigned long long)bytes);
	else if (!s->cfg->listen && (v->confirmed_bytes != bytes || v->confirmed_digest != digest))
		s->exit_status = log_format(s->error, sizeof s->error, EXIT_VERIFY,
		                            "--verify: sent %llu bytes (xxh64 %016llx) but the "
		                            "receiver wrote %llu (xxh64 %016llx)",
		                            (unsigned long long)bytes, (unsigned long long)digest,
		                            (unsigned long long)v->confirmed_bytes,
		                            (unsigned long long)v->confirmed_digest);
	else
		v->verified = 1;
}
