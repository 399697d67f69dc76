/*
 * stripe-flow.c: what a striped flow is, sending or receiving: its state,
 * kept per connection of the session, its failures naming the connection,
 * and its poll events (the pumps are stripe-send.c's and stripe-receive.c's;
 * stripe.c puts them in the relay's place).
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fastcat.h"
#include "net/net.h"
#include "relay/flow.h"
#include "stripe/stripe.h"

/* A failure that ends the session: which connection, what it means, what to say. -1. */
int stripe_fail(struct flow *f, int conn, int status, const char *fmt, ...)
{
	struct stripe_flow *s = f->ctx;
	char what[160];
	va_list ap;

	va_start(ap, fmt);
	log_vformat(what, sizeof what, 0, fmt, ap);
	va_end(ap);
	if (f->kind == FLOW_SEND)
		return flow_fail(f, status, "-P: connection %d of %u: %s (%llu bytes sent)",
		                 conn + 1, s->n, what, (unsigned long long)f->stats->bytes);
	if (s->scratch == NULL)
		return flow_fail(f, status,
		                 "-P: connection %d of %u: %s; %llu bytes delivered in order",
		                 conn + 1, s->n, what, (unsigned long long)s->offset);
	return flow_fail(f, status, "-P: connection %d of %u: %s", conn + 1, s->n, what);
}

/* A socket error on connection i: a reset or a vanished peer is the peer's (exit 5). -1. */
int stripe_socket_failed(struct flow *f, int i, const char *op)
{
	int err = errno;
	int peer = err == ECONNRESET || err == EPIPE || err == ECONNABORTED || err == ENOTCONN ||
	           err == ETIMEDOUT;

	return stripe_fail(f, i,
	                   err == ETIMEDOUT ? EXIT_TIMEOUT
	                   : peer           ? EXIT_PEER
	                                    : EXIT_RUNTIME,
	                   "%s: %s", op, strerror(err));
}

/* Sending: a free connection for the next chunk, a ready one first, else any free one; -1: none. */
int stripe_free_conn(const struct flow *f)
{
	const struct stripe_flow *s = f->ctx;
	int any = -1;

	for (unsigned k = 0; k < s->n; k++) {
		unsigned i = (s->next + k) % s->n;

		if (s->out[i].sent < s->out[i].len || s->out[i].end_queued)
			continue;
		if (s->ready[i])
			return (int)i;
		if (any < 0)
			any = (int)i;
	}
	return any;
}

/* What the flow waits for: stdin while a connection is free, each busy or unread connection. */
int stripe_poll_events(const struct flow *f, struct pollfd *pfd)
{
	const struct stripe_flow *s = f->ctx;
	int sending = f->kind == FLOW_SEND, n = 0;

	if (!f->running)
		return 0;
	if (sending && !f->src_eof && !f->stdio_ready && stripe_free_conn(f) >= 0 &&
	    flow_source_room(f) > 0)
		pfd[n++] = (struct pollfd){.fd = f->stdio, .events = POLLIN};
	if (!sending && !f->stdio_ready && s->held != NULL && s->held->offset <= s->offset)
		pfd[n++] = (struct pollfd){.fd = f->stdio, .events = POLLOUT};
	for (unsigned i = 0; i < s->n; i++) {
		if (s->ready[i])
			continue;
		if (sending && (s->out[i].sent < s->out[i].len || !s->out[i].shut))
			pfd[n++] = (struct pollfd){.fd = s->conns->fd[i], .events = POLLOUT};
		else if (!sending && !s->in[i].eof && !s->in[i].waiting)
			pfd[n++] = (struct pollfd){.fd = s->conns->fd[i], .events = POLLIN};
	}
	return n;
}

/* What poll said of stdio and of each of the session's connections this flow has. */
void stripe_poll_result(struct flow *f, const struct pollfd *pfd, int n)
{
	struct stripe_flow *s = f->ctx;

	flow_poll_ready(f, pfd, n, s->conns->fd, s->ready, s->n);
}

/* A sending connection's buffer: a chunk header and a chunk, or an END and its trailer. */
static unsigned char *out_buffer(const struct flow *f)
{
	size_t room = f->read_size > STRIPE_TRAILER_BYTES ? f->read_size : STRIPE_TRAILER_BYTES;

	return malloc(STRIPE_CHUNK_BYTES + room);
}

/*
 * The flow's state over the session's connections so far. The receiver
 * always digests what it writes: a sender's --verify asks at the end. 0, or
 * -1 when memory runs out.
 */
int stripe_start(struct flow *f)
{
	struct stripe_flow *s = f->ctx;

	f->checksum |= f->kind == FLOW_RECEIVE && !f->discard;
	for (unsigned i = 0; i < s->n; i++)
		s->ready[i] = 1;
	if (f->kind == FLOW_RECEIVE && f->discard) {
		s->scratch = malloc(4096);
		return s->scratch != NULL ? 0 : -1;
	}
	for (unsigned i = 0; f->kind == FLOW_SEND && i < s->n; i++)
		if ((s->out[i].buf = out_buffer(f)) == NULL)
			return -1;
	return 0;
}

/*
 * -P auto: the session's connection i (its next) joined; the flow takes it.
 * 0, or -1 (no memory).
 */
int stripe_attach(struct flow *f, size_t i)
{
	struct stripe_flow *s = f->ctx;

	if (i != s->n || i >= CONN_MAX ||
	    (f->kind == FLOW_SEND && (s->out[i].buf = out_buffer(f)) == NULL))
		return -1;
	s->ready[i] = 1;
	s->n++;
	return 0;
}

void stripe_stop(struct flow *f)
{
	struct stripe_flow *s = f->ctx;

	for (unsigned i = 0; i < s->n; i++) {
		free(s->out[i].buf);
		free(s->in[i].chunk);
		s->out[i].buf = NULL;
		s->in[i].chunk = NULL;
	}
	while (s->held != NULL) {
		struct held *h = s->held;
		s->held = h->next;
		free(h);
	}
	free(s->scratch);
	s->scratch = NULL;
}
