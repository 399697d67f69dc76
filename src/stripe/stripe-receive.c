/*
 * stripe-receive.c: -P, receiving: write stdout strictly in offset order,
 * holding chunks that came early in a bounded reorder memory. When that
 * memory is full, stop reading the connections whose next chunk is ahead:
 * TCP's flow control then slows exactly those. And the sender's other
 * direction, which only drains the connections to see the receiver's end
 * (or reset) on each.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/compat.h"
#include "fastcat.h"
#include "relay/flow.h"
#include "stripe/stripe.h"

/* The reorder memory freed up, or the turn moved on: waiting connections may read again. */
static void stripe_wake_waiting(struct stripe_flow *s)
{
	for (unsigned i = 0; i < s->n; i++)
		s->in[i].waiting = 0;
}

/* Put a whole chunk in the list; a chunk that overlaps another is the peer's error. */
static int stripe_hold(struct flow *f, unsigned i, struct held *h)
{
	struct stripe_flow *s = f->ctx;
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

/* Connection i's END, trailer and all: every connection's must say the same. */
static int stripe_end_mark(struct flow *f, unsigned i, const struct stripe_chunk *ch)
{
	struct stripe_flow *s = f->ctx;
	struct in_conn *c = &s->in[i];
	uint64_t digest = stripe_trailer_get(c->hdr + STRIPE_CHUNK_BYTES);

	/* -P auto: connections the ENDs count may still be on their way in */
	if (s->grows ? ch->count < s->n || ch->count > STRIPE_AUTO_MAX : ch->count != s->n)
		return stripe_fail(f, (int)i, EXIT_PEER, "an end mark for %u connections, not %u",
		                   ch->count, s->n);
	if (s->ended > 0 && ch->count != s->expect)
		return stripe_fail(f, (int)i, EXIT_PEER, "end marks disagree (%u, %u connections)",
		                   ch->count, s->expect);
	s->expect = ch->count;
	if (s->ended > 0 &&
	    (ch->offset != s->total || ch->flags != s->end_flags || digest != s->end_digest))
		return stripe_fail(f, (int)i, EXIT_PEER, "end marks disagree (%llu, %llu bytes)",
		                   (unsigned long long)ch->offset, (unsigned long long)s->total);
	s->total = ch->offset;
	s->end_flags = ch->flags;
	s->end_digest = digest;
	s->ended++;
	c->ended = 1;
	c->have = 0;
	return 0;
}

/* How many header bytes connection i still needs: an END or VERDICT carries a trailer. */
static size_t stripe_header_want(const struct in_conn *c)
{
	int trailer = c->have >= STRIPE_CHUNK_BYTES &&
	              (c->hdr[0] == STRIPE_END || c->hdr[0] == STRIPE_VERDICT);

	return STRIPE_CHUNK_BYTES + (trailer ? STRIPE_TRAILER_BYTES : 0) - c->have;
}

/* A whole header from connection i: its END, or room for the payload (or a wait for room). */
static int stripe_header(struct flow *f, unsigned i)
{
	struct stripe_flow *s = f->ctx;
	struct in_conn *c = &s->in[i];
	struct stripe_chunk ch;

	if (stripe_chunk_decode(c->hdr, &ch) != 0 || c->ended || ch.type == STRIPE_VERDICT)
		return stripe_fail(f, (int)i, EXIT_PEER, "a malformed chunk header");
	if (ch.type == STRIPE_END)
		return stripe_end_mark(f, i, &ch);
	if (ch.offset < s->offset)
		return stripe_fail(f, (int)i, EXIT_PEER, "a chunk at offset %llu came twice",
		                   (unsigned long long)ch.offset);
	if (ch.type == STRIPE_ZERO) { /* whole with its header: it holds no memory */
		struct held *h = malloc(sizeof *h);

		if (h == NULL)
			return stripe_fail(f, (int)i, EXIT_RUNTIME, "no memory for a zero run");
		*h = (struct held){NULL, ch.offset, ch.len, ch.len, 0, 1};
		c->have = 0;
		return stripe_hold(f, i, h);
	}
	if (ch.offset != s->offset && s->held_bytes + ch.len > REORDER_MAX) {
		c->waiting = 1; /* its turn comes when the memory frees or the stream catches up */
		return 0;
	}
	c->chunk = malloc(sizeof *c->chunk + ch.len);
	if (c->chunk == NULL)
		return stripe_fail(f, (int)i, EXIT_RUNTIME, "no memory for a %u-byte chunk",
		                   ch.len);
	*c->chunk = (struct held){NULL, ch.offset, ch.len, 0, 0, 0};
	s->held_bytes += ch.len;
	c->have = 0;
	return 0;
}

/* Read from connection i: header bytes, or the payload of its chunk. 1 if bytes came. */
static int stripe_recv(struct flow *f, unsigned i)
{
	struct stripe_flow *s = f->ctx;
	struct in_conn *c = &s->in[i];
	struct held *h = c->chunk;
	unsigned char *to = h ? h->data + h->got : c->hdr + c->have;
	size_t want = h ? h->len - h->got : stripe_header_want(c);
	ssize_t n;

	if (h == NULL && want == 0) /* a header that waited for room: decide again */
		return stripe_header(f, i) < 0 ? -1 : !c->waiting;
	n = recv(s->conns->fd[i], to, want, 0);
	f->stats->reads++;
	switch (io_result(n)) {
	case IO_MOVED: break;
	case IO_AGAIN: s->ready[i] = 0; return 0;
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
		return stripe_header_want(c) == 0 && stripe_header(f, i) < 0 ? -1 : 1;
	}
	h->got += (size_t)n;
	if (h->got < h->len)
		return 1;
	c->chunk = NULL;
	return stripe_hold(f, i, h) < 0 ? -1 : 1;
}

/*
 * A ZERO chunk's next len bytes: into a file, past its end, a hole (the
 * file grows, nothing is written); anywhere else, zeros written (a pipe, or
 * a file's old bytes that must become zeros). write(2)'s result.
 */
static ssize_t stripe_write_zeros(struct flow *f, size_t len)
{
	static const unsigned char zeros[64 * KIB];
	struct stat st;
	off_t pos;

	if (f->discard)
		return (ssize_t)len;
	if (fstat(f->stdio, &st) == 0 && S_ISREG(st.st_mode) &&
	    (pos = lseek(f->stdio, 0, SEEK_CUR)) >= st.st_size) {
		if (ftruncate(f->stdio, pos + (off_t)len) != 0 ||
		    lseek(f->stdio, pos + (off_t)len, SEEK_SET) < 0)
			return -1;
		return (ssize_t)len;
	}
	return write(f->stdio, zeros, len < sizeof zeros ? len : sizeof zeros);
}

/* Write the chunk whose turn it is, as far as stdout takes it. 1 if bytes went. */
static int stripe_write(struct flow *f)
{
	struct stripe_flow *s = f->ctx;
	struct held *h = s->held;
	size_t len;
	ssize_t n;

	if (h == NULL || h->offset + h->written != s->offset || !f->stdio_ready)
		return 0;
	len = h->len - h->written;
	if (f->limited && (len = ratelimit_allow(&f->limit, clock_now(), len)) == 0)
		return 0;
	if (h->zero)
		n = stripe_write_zeros(f, len);
	else
		n = f->discard ? (ssize_t)len : write(f->stdio, h->data + h->written, len);
	f->stats->writes += !f->discard;
	switch (io_result(n)) {
	case IO_MOVED: break;
	case IO_AGAIN: f->stdio_ready = 0; return 0;
	case IO_END:
	case IO_INTERRUPTED: return 0;
	case IO_FAILED: return flow_write_failed(f, len);
	}
	if (f->checksum && h->zero)
		digest_update_zeros(&f->stats->digest, (uint64_t)n);
	else if (f->checksum)
		digest_update(&f->stats->digest, h->data + h->written, (size_t)n);
	if (f->limited)
		ratelimit_spend(&f->limit, (size_t)n);
	h->written += (size_t)n;
	s->offset += (uint64_t)n;
	f->stats->zero_bytes += h->zero ? (uint64_t)n : 0;
	flow_count_write(f, (uint64_t)n, h->zero ? 0 : (size_t)n);
	if (h->written == h->len) {
		s->held = h->next;
		s->held_bytes -= h->zero ? 0 : h->len;
		free(h);
		stripe_wake_waiting(s);
	}
	return 1;
}

/*
 * The sender asked (--verify): on connection 0, what we wrote and its XXH64;
 * the sender compares. The END's XXH64 goes to the session for
 * stripe_conclude. A socket with nothing else to send takes the 24 bytes.
 */
static int stripe_send_verdict(struct flow *f)
{
	struct stripe_flow *s = f->ctx;
	unsigned char v[STRIPE_CHUNK_BYTES + STRIPE_TRAILER_BYTES];
	uint64_t digest = digest_final(&f->stats->digest);

	if (flow_sync(f) != 0) /* --sync: the verdict says on disk */
		return -1;
	s->s->verdict.end_seen = 1;
	s->s->verdict.peer_bytes = s->total;
	s->s->verdict.peer_digest = s->end_digest;
	stripe_chunk_encode(
	    v, &(struct stripe_chunk){STRIPE_VERDICT, 0, 0, STRIPE_TRAILER_BYTES, s->offset});
	stripe_trailer_put(v + STRIPE_CHUNK_BYTES, digest);
	if (send(s->conns->fd[0], v, sizeof v, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof v)
		return stripe_socket_failed(f, 0, "send the verdict");
	return 0;
}

/* Every connection ended and closed: the stream is whole, or the peer's END lied. */
static enum pump_result stripe_finish(struct flow *f)
{
	struct stripe_flow *s = f->ctx;

	if (s->offset != s->total || s->held != NULL) {
		stripe_fail(f, 0, EXIT_PEER,
		            "the stream ended at %llu bytes, %llu arrived in order",
		            (unsigned long long)s->total, (unsigned long long)s->offset);
		return PUMP_FAILED;
	}
	/* --resume: the whole file's digest needs its first L bytes, digested with --verify only */
	if (s->end_flags & STRIPE_HAS_DIGEST && s->start != s->s->prefix.received) {
		stripe_fail(f, 0, EXIT_VERIFY,
		            "the sender asks for --verify, which with --resume needs --verify at "
		            "this end too (to digest the file's first %llu bytes)",
		            (unsigned long long)s->start);
		return PUMP_FAILED;
	}
	if (s->end_flags & STRIPE_HAS_DIGEST && stripe_send_verdict(f) < 0)
		return PUMP_FAILED;
	return flow_finish(f) < 0 ? PUMP_FAILED : PUMP_FINISHED;
}

enum pump_result stripe_pump_receive(struct flow *f)
{
	struct stripe_flow *s = f->ctx;

	for (int calls = 0; calls < 64; calls++) {
		int moved, rc;

		if ((moved = stripe_write(f)) < 0)
			return PUMP_FAILED;
		for (unsigned i = 0; i < s->n; i++) {
			struct in_conn *c = &s->in[i];

			if (!s->ready[i] || c->eof || c->waiting)
				continue;
			if ((rc = stripe_recv(f, i)) < 0)
				return PUMP_FAILED;
			moved |= rc;
		}
		/* every connection closed: what is held still goes out, unless a gap stops it */
		if (s->eofs == s->n && s->n == s->expect &&
		    (s->held == NULL || s->held->offset > s->offset))
			return stripe_finish(f);
		if (!moved)
			return PUMP_BLOCKED;
	}
	return PUMP_BUDGET_USED;
}

/*
 * The sender's side: the receiver sends nothing but, when --verify asked
 * for it, its VERDICT on connection 0, kept for the conclusion; a sink the
 * flow has (--retry's confirmations) takes connection 0's bytes instead.
 */
static int stripe_take_verdict(struct flow *f, size_t n)
{
	struct stripe_flow *s = f->ctx;
	struct verdict *vd = &s->s->verdict;
	struct in_conn *c = &s->in[0];
	size_t take = sizeof c->hdr - c->have < n ? sizeof c->hdr - c->have : n;
	struct stripe_chunk ch;

	if (vd->verdict_seen || take < n)
		return stripe_fail(f, 0, EXIT_PEER, "data from the receiver, which sends none");
	memcpy(c->hdr + c->have, s->scratch, take);
	c->have += take;
	if (c->have < sizeof c->hdr)
		return 0;
	if (stripe_chunk_decode(c->hdr, &ch) != 0 || ch.type != STRIPE_VERDICT)
		return stripe_fail(f, 0, EXIT_PEER, "a malformed verdict");
	vd->verdict_seen = 1;
	vd->confirmed_bytes = ch.offset;
	vd->confirmed_digest = stripe_trailer_get(c->hdr + STRIPE_CHUNK_BYTES);
	return 0;
}

/* The sender's receiving side: the receiver sends nothing; its EOF (or reset) is what counts. */
enum pump_result stripe_pump_drain(struct flow *f)
{
	struct stripe_flow *s = f->ctx;

	for (int calls = 0; calls < 64; calls++) {
		int moved = 0;

		for (unsigned i = 0; i < s->n; i++) {
			ssize_t n;

			if (!s->ready[i] || s->in[i].eof)
				continue;
			n = recv(s->conns->fd[i], s->scratch, 4096, 0);
			switch (io_result(n)) {
			case IO_MOVED:
				if (i == 0 &&
				    (f->sink.take != NULL
				         ? f->sink.take(f->sink.ctx, f, s->scratch, (size_t)n)
				         : stripe_take_verdict(f, (size_t)n)) < 0)
					return PUMP_FAILED;
				moved = 1;
				break;
			case IO_END:
				s->in[i].eof = 1;
				s->eofs++;
				moved = 1;
				break;
			case IO_AGAIN: s->ready[i] = 0; break;
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
