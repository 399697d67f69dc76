/*
 * flow-stripe.c: -P, a flow whose socket side is several connections. The
 * sender cuts stdin into chunks, each with its stream offset, and gives each
 * chunk to a connection that is free to take it (one that is ready first);
 * the receiver writes stdout strictly in offset order, holding chunks that
 * came early in a bounded reorder memory. When that memory is full it stops
 * reading the connections whose next chunk is ahead: TCP's flow control then
 * slows exactly those. The sender's other direction only drains the
 * connections, to see the receiver's end (or reset) on each.
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

#include "compat.h"
#include "fastcat.h"
#include "flow.h"
#include "stripe.h"

/*
 * Bytes of early chunks the receiver may hold: RSS stays under 64 MiB at
 * -P 8 with the default chunk (the bound), and 32 MiB is 2.5 s of a
 * 100 Mbit/s path's worth of one slow connection falling behind.
 */
#define REORDER_MAX (32 * MIB)

/* A chunk that came before its turn, in the list sorted by offset. */
struct held {
	struct held *next;
	uint64_t offset;
	size_t len, got, written; /* payload bytes; read from the socket; written to stdout */
	unsigned char data[];
};

/* Sending: the chunk on its way on one connection (header, then payload). */
struct out_conn {
	unsigned char *buf;
	size_t len, sent;
	size_t payload; /* of len, the stream's bytes */
	int end_queued; /* our END is in buf (or went) */
	int shut;       /* ... and the connection is half-closed after it */
};

/* Receiving: where one connection's stream of chunks stands. */
struct in_conn {
	unsigned char hdr[STRIPE_CHUNK_BYTES];
	size_t have;        /* header bytes read */
	struct held *chunk; /* the payload being read; NULL: a header comes next */
	int ended;          /* its END came */
	int eof;            /* its EOF came */
	int waiting;        /* its chunk is ahead and the reorder memory is full */
};

struct stripe_flow {
	unsigned n;
	uint64_t offset; /* sending: of the next chunk read; receiving: of the next byte written */
	unsigned next;   /* sending: where the search for a free connection starts */
	struct out_conn out[STRIPE_MAX];
	struct in_conn in[STRIPE_MAX];
	struct held *held; /* receiving: early chunks, by offset */
	size_t held_bytes;
	uint64_t total; /* the stream's length, from the ENDs */
	unsigned ended, eofs;
	int failed_conn;        /* the connection a failure came from, -1 = none */
	int status;             /* ... the exit status it means */
	char why[200];          /* ... and what to say */
	unsigned char *scratch; /* draining: what a receiver should not have sent */
};

static int stripe_fail(struct flow *f, int conn, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* A failure that ends the session: which connection, what it means, what to say. */
static int stripe_fail(struct flow *f, int conn, int status, const char *fmt, ...)
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
static int stripe_socket_failed(struct flow *f, int i, const char *op)
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

/* Read one chunk of stdin for connection i. 1 if bytes came, 0 if none now, -1 on failure. */
static int stripe_read(struct flow *f, unsigned i)
{
	struct stripe_flow *s = f->stripe;
	struct out_conn *o = &s->out[i];
	size_t want = f->read_size;
	ssize_t n;

	if (f->limited && (want = ratelimit_allow(&f->limit, clock_now(), want)) == 0)
		return 0;
	n = read(f->stdio, o->buf + STRIPE_CHUNK_BYTES, want);
	f->stats->reads++;
	switch (io_result(n)) {
	case IO_MOVED: break;
	case IO_END: f->src_eof = 1; return 0;
	case IO_AGAIN: flow_source_dry(f); return 0;
	case IO_INTERRUPTED: return 0;
	case IO_FAILED: flow_failed(f, 0, errno); return -1;
	}
	stripe_chunk_encode(o->buf, &(struct stripe_chunk){STRIPE_DATA, (uint32_t)n, s->offset});
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
		stripe_chunk_encode(o->buf, &(struct stripe_chunk){STRIPE_END, 0, s->offset});
		o->len = STRIPE_CHUNK_BYTES;
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

/* -------------------------------------------------------------- receiving */

/* The reorder memory freed up, or the turn moved on: waiting connections may read again. */
static void stripe_wake_waiting(struct stripe_flow *s)
{
	for (unsigned i = 0; i < s->n; i++)
		s->in[i].waiting = 0;
}

/* Put a whole chunk in the list; a chunk that overlaps another is the peer's error. */
static int stripe_hold(struct flow *f, unsigned i, struct held *h)
{
	struct stripe_flow *s = f->stripe;
	struct held **p = &s->held, *prev = NULL;

	while (*p != NULL && (*p)->offset < h->offset) {
		prev = *p;
		p = &(*p)->next;
	}
	if ((*p != NULL && h->offset + h->len > (*p)->offset) ||
	    (prev != NULL && prev->offset + prev->len > h->offset)) {
		uint64_t at = h->offset;

		free(h);
		return stripe_fail(f, (int)i, EXIT_PEER, "overlapping chunks at offset %llu",
		                   (unsigned long long)at);
	}
	h->next = *p;
	*p = h;
	return 0;
}

/* A whole header from connection i: its END, or room for the payload (or a wait for room). */
static int stripe_header(struct flow *f, unsigned i)
{
	struct stripe_flow *s = f->stripe;
	struct in_conn *c = &s->in[i];
	struct stripe_chunk ch;

	if (stripe_chunk_decode(c->hdr, &ch) != 0 || c->ended)
		return stripe_fail(f, (int)i, EXIT_PEER, "a malformed chunk header");
	if (ch.type == STRIPE_END) {
		if (s->ended > 0 && ch.offset != s->total)
			return stripe_fail(
			    f, (int)i, EXIT_PEER, "end marks disagree (%llu, %llu bytes)",
			    (unsigned long long)ch.offset, (unsigned long long)s->total);
		s->total = ch.offset;
		s->ended++;
		c->ended = 1;
		c->have = 0;
		return 0;
	}
	if (ch.offset < s->offset)
		return stripe_fail(f, (int)i, EXIT_PEER, "a chunk at offset %llu came twice",
		                   (unsigned long long)ch.offset);
	if (ch.offset != s->offset && s->held_bytes + ch.len > REORDER_MAX) {
		c->waiting = 1; /* its turn comes when the memory frees or the stream catches up */
		return 0;
	}
	c->chunk = malloc(sizeof *c->chunk + ch.len);
	if (c->chunk == NULL)
		return stripe_fail(f, (int)i, EXIT_RUNTIME, "no memory for a %u-byte chunk",
		                   ch.len);
	*c->chunk = (struct held){NULL, ch.offset, ch.len, 0, 0};
	s->held_bytes += ch.len;
	c->have = 0;
	return 0;
}

/* Read from connection i: header bytes, or the payload of its chunk. 1 if bytes came. */
static int stripe_recv(struct flow *f, unsigned i)
{
	struct stripe_flow *s = f->stripe;
	struct in_conn *c = &s->in[i];
	struct held *h = c->chunk;
	unsigned char *to = h ? h->data + h->got : c->hdr + c->have;
	size_t want = h ? h->len - h->got : STRIPE_CHUNK_BYTES - c->have;
	ssize_t n;

	if (h == NULL && want == 0) /* a header that waited for room: decide again */
		return stripe_header(f, i) < 0 ? -1 : !c->waiting;
	n = recv(f->net.fd[i], to, want, 0);
	f->stats->reads++;
	switch (io_result(n)) {
	case IO_MOVED: break;
	case IO_AGAIN: f->net.ready[i] = 0; return 0;
	case IO_INTERRUPTED: return 0;
	case IO_FAILED: return stripe_socket_failed(f, (int)i, "receive");
	case IO_END:
		if (!c->ended || h != NULL || c->have > 0)
			return stripe_fail(f, (int)i, EXIT_PEER, "closed before its end mark");
		c->eof = 1;
		s->eofs++;
		return 1;
	}
	if (c->ended)
		return stripe_fail(f, (int)i, EXIT_PEER, "data after its end mark");
	flow_count_read(f, (size_t)n);
	if (h == NULL) {
		c->have += (size_t)n;
		return c->have == STRIPE_CHUNK_BYTES && stripe_header(f, i) < 0 ? -1 : 1;
	}
	h->got += (size_t)n;
	if (h->got < h->len)
		return 1;
	c->chunk = NULL;
	return stripe_hold(f, i, h) < 0 ? -1 : 1;
}

/* Write the chunk whose turn it is, as far as stdout takes it. 1 if bytes went. */
static int stripe_write(struct flow *f)
{
	struct stripe_flow *s = f->stripe;
	struct held *h = s->held;
	size_t len;
	ssize_t n;

	if (h == NULL || h->offset + h->written != s->offset || !f->stdio_ready)
		return 0;
	len = h->len - h->written;
	if (f->limited && (len = ratelimit_allow(&f->limit, clock_now(), len)) == 0)
		return 0;
	n = f->discard ? (ssize_t)len : write(f->stdio, h->data + h->written, len);
	f->stats->writes += !f->discard;
	switch (io_result(n)) {
	case IO_MOVED: break;
	case IO_AGAIN: f->stdio_ready = 0; return 0;
	case IO_END:
	case IO_INTERRUPTED: return 0;
	case IO_FAILED:
		f->failed_write_len = len;
		flow_failed(f, 1, errno);
		return -1;
	}
	if (f->checksum)
		digest_update(&f->stats->digest, h->data + h->written, (size_t)n);
	if (f->limited)
		ratelimit_spend(&f->limit, (size_t)n);
	h->written += (size_t)n;
	s->offset += (uint64_t)n;
	flow_count_write(f, (uint64_t)n, (size_t)n);
	if (h->written == h->len) {
		s->held = h->next;
		s->held_bytes -= h->len;
		free(h);
		stripe_wake_waiting(s);
	}
	return 1;
}

/* Every connection ended and closed: the stream is whole, or the peer's END lied. */
static enum pump_result stripe_finish(struct flow *f)
{
	struct stripe_flow *s = f->stripe;

	if (s->offset != s->total || s->held != NULL) {
		stripe_fail(f, 0, EXIT_PEER,
		            "the stream ended at %llu bytes, %llu arrived in order",
		            (unsigned long long)s->total, (unsigned long long)s->offset);
		return PUMP_FAILED;
	}
	return flow_finish(f) < 0 ? PUMP_FAILED : PUMP_FINISHED;
}

static enum pump_result stripe_pump_receive(struct flow *f)
{
	struct stripe_flow *s = f->stripe;

	for (int calls = 0; calls < 64; calls++) {
		int moved, rc;

		if ((moved = stripe_write(f)) < 0)
			return PUMP_FAILED;
		for (unsigned i = 0; i < s->n; i++) {
			struct in_conn *c = &s->in[i];

			if (!f->net.ready[i] || c->eof || c->waiting)
				continue;
			if ((rc = stripe_recv(f, i)) < 0)
				return PUMP_FAILED;
			moved |= rc;
		}
		/* every connection closed: what is held still goes out, unless a gap stops it */
		if (s->eofs == s->n && (s->held == NULL || s->held->offset > s->offset))
			return stripe_finish(f);
		if (!moved)
			return PUMP_BLOCKED;
	}
	return PUMP_BUDGET_USED;
}

/* The sender's receiving side: the receiver sends nothing; its EOF (or reset) is what counts. */
static enum pump_result stripe_pump_drain(struct flow *f)
{
	struct stripe_flow *s = f->stripe;

	for (int calls = 0; calls < 64; calls++) {
		int moved = 0;

		for (unsigned i = 0; i < s->n; i++) {
			ssize_t n;

			if (!f->net.ready[i] || s->in[i].eof)
				continue;
			n = recv(f->net.fd[i], s->scratch, 4096, 0);
			switch (io_result(n)) {
			case IO_MOVED: moved = 1; break; /* not ours to write: -P is one way */
			case IO_END:
				s->in[i].eof = 1;
				s->eofs++;
				moved = 1;
				break;
			case IO_AGAIN: f->net.ready[i] = 0; break;
			case IO_INTERRUPTED: break;
			case IO_FAILED:
				stripe_socket_failed(f, (int)i, "receive");
				return PUMP_FAILED;
			}
		}
		if (s->eofs == s->n) {
			f->running = 0;
			f->stats->finished = clock_now();
			return PUMP_FINISHED;
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
	if (sending && !f->src_eof && !f->stdio_ready && stripe_free_conn(f) >= 0)
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

/* The state of a striped flow over n connections. 0, or -1 when memory runs out. */
int flow_stripe_init(struct flow *f, unsigned n)
{
	struct stripe_flow *s = calloc(1, sizeof *s);

	if (s == NULL)
		return -1;
	f->stripe = s;
	s->n = n;
	s->failed_conn = -1;
	if (f->kind == FLOW_RECEIVE && f->discard) {
		s->scratch = malloc(4096);
		return s->scratch != NULL ? 0 : -1;
	}
	for (unsigned i = 0; f->kind == FLOW_SEND && i < n; i++)
		if ((s->out[i].buf = malloc(STRIPE_CHUNK_BYTES + f->read_size)) == NULL)
			return -1;
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
