/*
 * stripe-join.c: -P, the connections on their way into a session: the
 * receiver's accepts (each hears the hello, then must join in time), and
 * with -P auto the ones that join mid-session at both ends, the sender's
 * dials and the receiver's accepts, polled by the relay (struct
 * stripe_growth, stripe-grow.c's agent). A connection that joins comes
 * from the first one's host, or it is a stranger's and refused. The
 * sender's first connection's handshake is in stripe.c.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/compat.h"
#include "fastcat.h"
#include "net/net.h"
#include "stripe/stripe.h"

/* Seconds a handshake may take without -w: a plain peer is told apart by saying nothing. */
#define HANDSHAKE_PATIENCE 5.0

double stripe_patience(const struct config *cfg)
{
	return cfg->timeout_ms >= 0 ? (double)cfg->timeout_ms / 1000 : HANDSHAKE_PATIENCE;
}

/*
 * -P auto, sending: connections that join mid-session. Each connects
 * without blocking the relay, waits for the receiver's hello like the
 * first, and joins with the next index; one that cannot is dropped and
 * the session goes on with what it has.
 */
static void dialing_drop(struct stripe_growth *g, size_t i, const char *why)
{
	log_verbose("-P auto: connection %u did not join: %s", g->pending[i].index + 1, why);
	endpoint_refuse(g->pending[i].fd);
	g->pending[i] = g->pending[--g->npending];
	g->decide.settled = 1; /* the path or the receiver takes no more */
}

/* Start one more connection. 0, or -1 (-v says why) when it could not even start. */
int stripe_growth_dial(struct stripe_growth *g)
{
	struct failure why = {EXIT_OK, ""};
	struct pending *p;
	int fd;

	if (g->npending == STRIPE_AUTO_MAX ||
	    endpoint_connect_start(g->cfg, g->ep, &fd, &why) != 0) {
		log_verbose("-P auto: no more connections: %s",
		            g->npending == STRIPE_AUTO_MAX ? "too many on the way" : why.why);
		g->decide.settled = 1;
		return -1;
	}
	p = &g->pending[g->npending++];
	*p = (struct pending){.fd = fd,
	                      .deadline = clock_now() + stripe_patience(g->cfg),
	                      .connecting = 1,
	                      .index = g->next_index++};
	return 0;
}

/* pending[i] is ready: its connect finished, or its hello came. Its fd once it joined, else -1. */
static int dialing_step(struct stripe_growth *g, size_t i)
{
	struct pending *p = &g->pending[i];
	unsigned char join[STRIPE_JOIN_BYTES];
	int soerr = 0, fd = p->fd;
	socklen_t len = sizeof soerr;
	ssize_t n;

	if (p->connecting) {
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0)
			soerr = errno;
		if (soerr != 0)
			dialing_drop(g, i, strerror(soerr));
		p->connecting = soerr == 0 ? 0 : p->connecting;
		return -1;
	}
	n = recv(fd, p->buf + p->have, STRIPE_HELLO_BYTES - p->have, 0);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return -1;
	if (n <= 0 || stripe_hello_seen(p->buf, p->have + (size_t)n) < 0) {
		dialing_drop(g, i, n < 0 ? strerror(errno) : "no stripe hello");
		return -1;
	}
	p->have += (size_t)n;
	if (p->have < STRIPE_HELLO_BYTES)
		return -1;
	if (stripe_hello_resumes(p->buf) != g->cfg->resume) {
		dialing_drop(g, i, "a stripe hello of another version");
		return -1;
	}
	stripe_join_encode(
	    join, &(struct stripe_join){STRIPE_AUTO, p->index, g->session, g->cfg->resume});
	if (send(fd, join, sizeof join, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof join) {
		dialing_drop(g, i, "its join did not go out at once");
		return -1;
	}
	g->conns->fd[g->conns->n++] = fd;
	g->attached++;
	g->pending[i] = g->pending[--g->npending];
	return fd;
}

/* The address fd's peer connected from. */
static void peer_of(int fd, struct sockaddr_storage *peer)
{
	socklen_t len = sizeof *peer;

	if (getpeername(fd, (struct sockaddr *)peer, &len) != 0)
		memset(peer, 0, sizeof *peer);
}

/*
 * A join for the session from another host is a stranger's, whatever session
 * id it knows: only the host of the first connection may add connections.
 */
static int same_host(int fd, const struct sockaddr_storage *first)
{
	struct sockaddr_storage peer;

	peer_of(fd, &peer);
	return addr_same_host((const struct sockaddr *)&peer, (const struct sockaddr *)first);
}

/* Say hello on a connection just accepted; it then has the patience to join. */
static void joining_add(struct stripe_growth *g, int fd)
{
	struct pending *p;
	size_t room = g->grows ? STRIPE_AUTO_MAX : CONN_MAX;
	const char *hello = g->cfg->resume ? stripe_hello_resume : stripe_hello;

	if (g->npending == room ||
	    send(fd, hello, STRIPE_HELLO_BYTES, MSG_NOSIGNAL | MSG_DONTWAIT) !=
	        (ssize_t)STRIPE_HELLO_BYTES) {
		endpoint_refuse(fd);
		return;
	}
	p = &g->pending[g->npending++];
	*p = (struct pending){.fd = fd, .deadline = clock_now() + stripe_patience(g->cfg)};
}

static void joining_drop(struct stripe_growth *g, size_t i, const char *why)
{
	char who[112];

	addr_format_fd(g->pending[i].fd, 1, who, sizeof who);
	log_verbose("-P: refused a connection from %s: %s", who, why);
	endpoint_refuse(g->pending[i].fd);
	g->pending[i] = g->pending[--g->npending];
}

/*
 * A whole join arrived on pending[i]: it belongs to the session (or starts
 * it), or is refused. A fixed session's connections take the slot of their
 * index; an auto session's come one after another, index 0 first.
 */
static int joining_decide(struct stripe_growth *g, size_t i)
{
	struct stripe_join j;
	unsigned slot;
	int fd = g->pending[i].fd;

	if (stripe_join_decode(g->pending[i].buf, &j) != 0) {
		joining_drop(g, i, "not a -P sender");
		return -1;
	}
	if (j.resume != g->cfg->resume) {
		joining_drop(g, i,
		             j.resume ? "a -P --resume sender (give --resume here)"
		                      : "a -P sender without --resume");
		return -1;
	}
	if (g->attached == 0 && g->count == 0 && !g->grows) {
		g->count = j.count;
		g->grows = j.count == STRIPE_AUTO;
		g->session = j.session;
		peer_of(fd, &g->peer);
	} else if (!same_host(fd, &g->peer)) {
		joining_drop(g, i, "not from the host of the session's first connection");
		return -1;
	}
	slot = g->grows ? g->attached : j.index;
	if (j.session != g->session || j.count != g->count || g->taken[j.index] ||
	    (g->grows && (slot >= STRIPE_AUTO_MAX || (slot == 0) != (j.index == 0)))) {
		joining_drop(g, i, "not of this session");
		return -1;
	}
	g->taken[j.index] = 1;
	g->conns->fd[slot] = fd;
	g->attached++;
	if (g->grows) /* slots fill in order: the session has this many */
		g->conns->n = g->attached;
	g->progress = clock_now();
	g->pending[i] = g->pending[--g->npending];
	return fd;
}

/* Read what pending[i] sent of its join; a wrong byte, EOF or error refuses it at once. */
static int joining_read(struct stripe_growth *g, size_t i)
{
	struct pending *p = &g->pending[i];
	ssize_t n = recv(p->fd, p->buf + p->have, sizeof p->buf - p->have, 0);

	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return -1;
	if (n <= 0) {
		joining_drop(g, i, n == 0 ? "closed before its join" : strerror(errno));
		return -1;
	}
	p->have += (size_t)n;
	if (!stripe_join_prefix(p->buf, p->have))
		joining_drop(g, i, "not a -P sender");
	else if (p->have == sizeof p->buf)
		return joining_decide(g, i);
	return -1;
}

/*
 * The fds a growth waits on, at most max: each pending connection, then
 * (receiving, while connections may still join) the listener. Sending, a
 * connect in progress waits to be writable.
 */
int stripe_growth_poll_events(const struct stripe_growth *g, struct pollfd *pfd, int max)
{
	int n = 0;

	for (size_t i = 0; i < g->npending && n < max; i++)
		pfd[n++] = (struct pollfd){.fd = g->pending[i].fd,
		                           .events = g->pending[i].connecting ? POLLOUT : POLLIN};
	if (g->l != NULL && n < max && (g->grows || g->attached == 0 || g->count > 0))
		pfd[n++] = (struct pollfd){.fd = g->l->fd, .events = POLLIN};
	return n;
}

/* The earliest moment a pending connection runs out of patience, or -1. */
double stripe_growth_due(const struct stripe_growth *g)
{
	/* sending: the next tick, until the decision settled (a past tick would spin the relay) */
	double until = g->l == NULL && g->grows && !g->decide.settled ? g->next_tick : -1;

	for (size_t i = 0; i < g->npending; i++)
		if (until < 0 || g->pending[i].deadline < until)
			until = g->pending[i].deadline;
	return until;
}

/*
 * After poll: read the joins (receiving) or the hellos (sending) that came,
 * drop the connections whose patience ran out, and take a waiting new
 * connection. The connections that joined the session go into joined (at
 * most max); returns how many, or -1 when the listener failed.
 */
int stripe_growth_step(struct stripe_growth *g, const struct pollfd *pfd, int npfd, int *joined,
                       int max)
{
	double now = clock_now();
	size_t n = g->npending;
	int got = 0;

	for (size_t i = n; i-- > 0;) {
		int fd = -1;

		if (i < (size_t)npfd && pfd[i].revents != 0)
			fd = g->l != NULL ? joining_read(g, i) : dialing_step(g, i);
		else if (now >= g->pending[i].deadline)
			g->l != NULL ? joining_drop(g, i, "no join in time")
			             : dialing_drop(g, i, "no stripe hello in time");
		if (fd >= 0 && got < max)
			joined[got++] = fd;
	}
	if (g->l != NULL && (size_t)npfd > n && pfd[n].revents != 0) {
		int fd;
		int rc = endpoint_accept_pending(g->cfg, g->l, &fd);

		if (rc < 0)
			return -1;
		if (rc > 0)
			joining_add(g, fd);
	}
	return got;
}

/* No more connections join: those on the way are refused, -v saying why. */
void stripe_growth_stop(struct stripe_growth *g, const char *why)
{
	while (g->npending > 0)
		if (g->l != NULL)
			joining_drop(g, g->npending - 1, why);
		else
			dialing_drop(g, g->npending - 1, why);
	g->grows = 0;
}

void stripe_growth_free(struct stripe_growth *g)
{
	if (g == NULL)
		return;
	stripe_growth_stop(g, "the session ended"); /* (a --retry reconnects a new one) */
	if (g->l != NULL)
		sock_set_nonblock(g->l->fd, 0);
	free(g);
}

/* The session's connections are in: the endpoint names the first; -v says how many. */
static void joining_done(struct stripe_growth *g, struct endpoint *ep)
{
	ep->fd = g->conns->fd[0];
	g->conns->n = g->attached;
	addr_format_fd(ep->fd, 0, ep->local, sizeof ep->local);
	addr_format_fd(ep->fd, 1, ep->peer, sizeof ep->peer);
	sock_read_buffers(ep->fd, &ep->sndbuf, &ep->rcvbuf);
	if (g->grows)
		log_verbose("-P auto: a session from %s, %016llx: more connections join as the "
		            "sender opens them",
		            ep->peer, (unsigned long long)g->session);
	else
		log_verbose("-P: %u connections from %s, session %016llx", g->conns->n, ep->peer,
		            (unsigned long long)g->session);
}

/* Until the session is complete: all of a fixed count, or an auto session's first. */
static int joining_complete(const struct stripe_growth *g)
{
	return g->grows ? g->attached > 0 : g->count > 0 && g->attached == g->count;
}

/* One wait for joins and new connections. 0, or -1 when the listener failed or a stop came. */
static int joining_poll(struct stripe_growth *g)
{
	struct pollfd pfd[CONN_MAX + 1];
	int n = stripe_growth_poll_events(g, pfd, CONN_MAX + 1), joined[CONN_MAX];
	double now = clock_now(), until = stripe_growth_due(g);

	if (g->count > 0 && (until < 0 || g->progress + stripe_patience(g->cfg) < until))
		until = g->progress + stripe_patience(g->cfg);
	if (poll(pfd, (nfds_t)n, until < 0 ? -1 : (int)((until - now) * 1000) + 1) < 0 &&
	    errno != EINTR)
		return -1;
	if (signal_stop)
		return -1;
	return stripe_growth_step(g, pfd, n, joined, CONN_MAX) < 0 ? -1 : 0;
}

/*
 * -l -P, receiving: ep->fd was just accepted. Say hello on it and on every
 * connection that follows, until as many as the first sender's join
 * announced have joined its session (the session's conns; with -P auto at
 * the sender, until its first has: the rest join during the session,
 * st->growth). Strangers are reset, and the wait for a sender goes on. 0, or
 * an exit status with fail.
 */
int stripe_accept(struct stripe *st, struct session *s, struct listener *l, struct endpoint *ep,
                  struct failure *fail)
{
	const struct config *cfg = s->cfg;
	struct stripe_growth *g = calloc(1, sizeof *g);
	int rc = 0;

	*st = (struct stripe){.cfg = cfg, .s = s};
	if (g == NULL)
		return failure_set(fail, EXIT_RUNTIME, "-P: out of memory");
	*g = (struct stripe_growth){.cfg = cfg, .conns = &s->conns, .l = l};
	for (unsigned i = 0; i < CONN_MAX; i++)
		s->conns.fd[i] = -1;
	sock_set_nonblock(l->fd, 1);
	joining_add(g, ep->fd);
	ep->fd = -1;
	while (rc == 0 && !joining_complete(g)) {
		if (joining_poll(g) != 0)
			rc = failure_set(fail, EXIT_RUNTIME,
			                 signal_stop ? "interrupted by %s" : "accept on %s: %s",
			                 signal_stop ? signals_stop_name() : l->local,
			                 strerror(errno));
		else if (g->count > 0 && clock_now() >= g->progress + stripe_patience(cfg))
			rc = failure_set(
			    fail, EXIT_PEER,
			    "-P: the sender announced %u connections, %u joined in %g s", g->count,
			    g->attached, stripe_patience(cfg));
	}
	if (rc == 0) {
		joining_done(g, ep);
		st->id = g->session;
		if (g->grows) {
			st->growth = g;
			return 0;
		}
	}
	stripe_growth_free(g);
	for (unsigned i = 0; rc != 0 && i < CONN_MAX; i++)
		if (s->conns.fd[i] >= 0)
			endpoint_refuse(s->conns.fd[i]);
	if (rc != 0)
		s->conns.n = 0;
	return rc;
}
