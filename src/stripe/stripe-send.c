/*
 * flow-stripe.c: -P, a flow whose socket side is several connections: the
 * sender cuts stdin into chunks, each with its stream offset, and gives each
 * chunk to a connection that is free to take it (one that is ready first).
 * Also what both sides share: their state, failures and poll events. The
 * receiving side is flow-stripe-in.c.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/compat.h"
#include "fastcat.h"
#include "relay/flow.h"
#include "retry/retry.h"
#include "stripe/stripe.h"

/* A failure that ends the session: which connection, what it means, what to say. */
int stripe_fail(struct flow *f, int conn, int status, const char *fmt, ...)
{
	struct stripe_flow *s = f->stripe;
	char what[160];
	va_list ap;

	va_start(ap, fmt);
	log_vformat(what, sizeof what, 0, fmt, ap);
	va_end(ap);
	s->failed_conn = conn;
	s->status = status;
	if (f->kind == FLOW_SEND)
		log_format(s->why, sizeof s->why, 0,
		           "-P: connection %d of %u: %s (%llu bytes sent)", conn + 1, s->n, what,
		           (unsigned long long)f->stats->bytes);
	else if (s->scratch == NULL)
		log_format(s->why, sizeof s->why, 0,
		           "-P: connection %d of %u: %s; %llu bytes delivered in order", conn + 1,
		           s->n, what, (unsigned long long)s->offset);
	else
		log_format(s->why, sizeof s->why, 0, "-P: connection %d of %u: %s", conn + 1, s->n,
		           what);
	flow_failed(f, f->kind == FLOW_SEND, EPROTO);
	return -1;
}

/* A socket error on connection i: a reset or a vanished peer is the peer's (exit 5). */
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

/* ---------------------------------------------------------------- sending */

/* A free connection for the next chunk: a ready one first, else any free one; -1: none. */
static int stripe_free_conn(const struct flow *f)
{
	const struct stripe_flow *s = f->stripe;
	int any = -1;

	for (unsigned k = 0; k < s->n; k++) {
		unsigned i = (s->next + k) % s->n;

		if (s->out[i].sent < s->out[i].len || s->out[i].end_queued)
			continue;
		if (f->net.ready[i])
			return (int)i;
		if (any < 0)
			any = (int)i;
	}
	return any;
}

/* --retry from a pipe: the ring has room for more of stdin, or still holds bytes to resend. */
static int stripe_ring_room(const struct flow *f)
{
	return f->replay == NULL || replay_room(f->replay) > 0;
}

/*
 * Read one chunk of stdin for connection i (--retry from a pipe: through
 * the replay buffer, which sends again first what the receiver lacks). 1 if
 * bytes or EOF came, 0 if none now, -1: failed.
 */
static int stripe_read(struct flow *f, unsigned i)
{
	struct stripe_flow *s = f->stripe;
	struct out_conn *o = &s->out[i];
	size_t want = f->read_size;
	ssize_t n;

	if (f->replay != NULL && replay_room(f->replay) < want)
		want = replay_room(f->replay); /* 0: the receiver's confirmations free it */
	if (want == 0 ||
	    (f->limited && (want = ratelimit_allow(&f->limit, clock_now(), want)) == 0))
		return 0;
	n = f->replay != NULL
	        ? retry_replay_read(f->replay, f->stdio, o->buf + STRIPE_CHUNK_BYTES, want)
	        : read(f->stdio, o->buf + STRIPE_CHUNK_BYTES, want);
	f->stats->reads++;
	switch (io_result(n)) {
	case IO_MOVED: break;
	case IO_END: f->src_eof = 1; return 1; /* news too: the ENDs go next */
	case IO_AGAIN:
		s->dry++;
		flow_source_dry(f);
		return 0;
	case IO_INTERRUPTED: return 0;
	case IO_FAILED: flow_failed(f, 0, errno); return -1;
	}
	stripe_chunk_encode(o->buf,
	                    &(struct stripe_chunk){STRIPE_DATA, 0, 0, (uint32_t)n, s->offset});
	if (f->checksum)
		digest_update(&f->stats->digest, o->buf + STRIPE_CHUNK_BYTES, (size_t)n);
	if (f->limited)
		ratelimit_spend(&f->limit, (size_t)n);
	o->len = STRIPE_CHUNK_BYTES + (size_t)n;
	o->sent = 0;
	o->payload = (size_t)n;
	s->offset += (uint64_t)n;
	s->next = (i + 1) % s->n;
	flow_count_read(f, (size_t)n);
	return 1;
}

/* Send what connection i has waiting. 1 if bytes went, 0 if none could, -1 on failure. */
static int stripe_send(struct flow *f, unsigned i)
{
	struct out_conn *o = &f->stripe->out[i];
	ssize_t n = send(f->net.fd[i], o->buf + o->sent, o->len - o->sent, MSG_NOSIGNAL);

	f->stats->writes++;
	switch (io_result(n)) {
	case IO_MOVED: break;
	case IO_AGAIN: f->net.ready[i] = 0; return 0;
	case IO_END:
	case IO_INTERRUPTED: return 0;
	case IO_FAILED: return stripe_socket_failed(f, (int)i, "send");
	}
	o->sent += (size_t)n;
	if (o->sent == o->len && o->payload > 0) {
		flow_count_write(f, o->payload, o->len);
		o->payload = 0;
	}
	return 1;
}

/* stdin is done: each free connection gets our END, then a half-close once it went. */
static int stripe_end(struct flow *f, unsigned i)
{
	struct stripe_flow *s = f->stripe;
	struct out_conn *o = &s->out[i];

	if (o->shut || o->sent < o->len)
		return 0;
	if (!o->end_queued) {
		struct stripe_chunk end = {STRIPE_END, s->verify ? STRIPE_HAS_DIGEST : 0, s->n,
		                           STRIPE_TRAILER_BYTES, s->offset};

		stripe_chunk_encode(o->buf, &end);
		stripe_trailer_put(o->buf + STRIPE_CHUNK_BYTES,
		                   s->verify ? digest_final(&f->stats->digest) : 0);
		o->len = STRIPE_CHUNK_BYTES + STRIPE_TRAILER_BYTES;
		o->sent = 0;
		o->end_queued = 1;
		return 1;
	}
	if (shutdown(f->net.fd[i], SHUT_WR) != 0 && errno != ENOTCONN)
		return stripe_socket_failed(f, (int)i, "shutdown");
	o->shut = 1;
	s->ended++;
	return 1;
}

static enum pump_result stripe_pump_send(struct flow *f)
{
	struct stripe_flow *s = f->stripe;

	for (int calls = 0; calls < 64; calls++) {
		int moved = 0, rc;

		for (unsigned i = 0; i < s->n; i++) {
			if (s->out[i].sent < s->out[i].len && f->net.ready[i]) {
				if ((rc = stripe_send(f, i)) < 0)
					return PUMP_FAILED;
				moved |= rc;
			}
			if (f->src_eof && (rc = stripe_end(f, i)) != 0) {
				if (rc < 0)
					return PUMP_FAILED;
				moved = 1;
			}
		}
		if (s->ended == s->n) {
			f->running = 0;
			f->stats->finished = clock_now();
			return PUMP_FINISHED;
		}
		int i = f->src_eof || !f->stdio_ready ? -1 : stripe_free_conn(f);
		if (i < 0 && !f->src_eof && f->stdio_ready)
			s->full++; /* -P auto: the connections, not stdin, set the pace */
		if (i >= 0 && (rc = stripe_read(f, (unsigned)i)) != 0) {
			if (rc < 0)
				return PUMP_FAILED;
			moved = 1;
		}
		if (!moved)
			return PUMP_BLOCKED;
	}
	return PUMP_BUDGET_USED;
}

/* ---------------------------------------------------------------- the flow */

enum pump_result flow_stripe_pump(struct flow *f)
{
	if (f->kind == FLOW_SEND)
		return stripe_pump_send(f);
	return f->stripe->scratch != NULL ? stripe_pump_drain(f) : stripe_pump_receive(f);
}

/* What the flow waits for: stdin while a connection is free, each busy or unread connection. */
int flow_stripe_poll_events(const struct flow *f, struct pollfd *pfd)
{
	const struct stripe_flow *s = f->stripe;
	int sending = f->kind == FLOW_SEND, n = 0;

	if (!f->running)
		return 0;
	if (sending && !f->src_eof && !f->stdio_ready && stripe_free_conn(f) >= 0 &&
	    stripe_ring_room(f))
		pfd[n++] = (struct pollfd){.fd = f->stdio, .events = POLLIN};
	if (!sending && !f->stdio_ready && s->held != NULL && s->held->offset <= s->offset)
		pfd[n++] = (struct pollfd){.fd = f->stdio, .events = POLLOUT};
	for (unsigned i = 0; i < s->n; i++) {
		if (f->net.ready[i])
			continue;
		if (sending && (s->out[i].sent < s->out[i].len || !s->out[i].shut))
			pfd[n++] = (struct pollfd){.fd = f->net.fd[i], .events = POLLOUT};
		else if (!sending && !s->in[i].eof && !s->in[i].waiting)
			pfd[n++] = (struct pollfd){.fd = f->net.fd[i], .events = POLLIN};
	}
	return n;
}

/* The failure a striped flow stopped on, for the relay's message; NULL: none of its own. */
const char *flow_stripe_failure(const struct flow *f, int *status)
{
	if (f->stripe == NULL || f->stripe->failed_conn < 0)
		return NULL;
	*status = f->stripe->status;
	return f->stripe->why;
}

/*
 * The state of a striped flow over n connections, whose stream goes on from
 * offset start (-P --resume; else 0). 0, or -1 when memory runs out.
 */
int flow_stripe_init(struct flow *f, unsigned n, int verify, uint64_t start)
{
	struct stripe_flow *s = calloc(1, sizeof *s);
	size_t room = f->read_size > STRIPE_TRAILER_BYTES ? f->read_size : STRIPE_TRAILER_BYTES;

	if (s == NULL)
		return -1;
	f->stripe = s;
	s->n = n;
	s->offset = s->start = start;
	s->failed_conn = -1;
	s->verify = verify;
	/* the receiver always digests what it writes: a sender's --verify asks at the end */
	f->checksum |= f->kind == FLOW_RECEIVE && !f->discard;
	if (f->kind == FLOW_RECEIVE && f->discard) {
		s->scratch = malloc(4096);
		return s->scratch != NULL ? 0 : -1;
	}
	for (unsigned i = 0; f->kind == FLOW_SEND && i < n; i++)
		if ((s->out[i].buf = malloc(STRIPE_CHUNK_BYTES + room)) == NULL)
			return -1;
	return 0;
}

/* -P auto: connection fd joined the session; it takes the next slot. 0, or -1 (no memory). */
int flow_stripe_attach(struct flow *f, int fd)
{
	struct stripe_flow *s = f->stripe;
	size_t room = f->read_size > STRIPE_TRAILER_BYTES ? f->read_size : STRIPE_TRAILER_BYTES;
	unsigned i = s->n;

	if (i == STRIPE_MAX ||
	    (f->kind == FLOW_SEND && (s->out[i].buf = malloc(STRIPE_CHUNK_BYTES + room)) == NULL))
		return -1;
	f->net.fd[i] = fd;
	f->net.ready[i] = 1;
	f->net.n++;
	s->n++;
	return 0;
}

void flow_stripe_free(struct flow *f)
{
	struct stripe_flow *s = f->stripe;

	if (s == NULL)
		return;
	for (unsigned i = 0; i < s->n; i++) {
		free(s->out[i].buf);
		free(s->in[i].chunk);
	}
	while (s->held != NULL) {
		struct held *h = s->held;
		s->held = h->next;
		free(h);
	}
	free(s->scratch);
	free(s);
	f->stripe = NULL;
}
