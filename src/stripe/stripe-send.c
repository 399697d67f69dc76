/*
 * stripe-send.c: -P, sending: the sender cuts stdin into chunks, each with
 * its stream offset, and gives each chunk to a connection that is free to
 * take it (one that is ready first). At stdin's EOF every connection gets
 * our END, with the stream's length (and with --verify its XXH64).
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/compat.h"
#include "fastcat.h"
#include "relay/flow.h"
#include "stripe/stripe.h"

/*
 * --sparse from a file: the bytes from stdin's position to its next data,
 * when they are a hole of at least a block (SEEK_DATA; at most
 * STRIPE_ZERO_CHUNK a chunk). 0: no hole here, or none can be found (a
 * file system without SEEK_DATA reads and packs the zeros instead); stdin's
 * position stays where it was unless a hole is returned.
 */
static off_t stripe_hole_at(struct stripe_flow *s, int fd)
{
	off_t pos = s->src_pos, data, end;
	struct stat st;

	if (pos < s->data_until)
		return 0;
	data = lseek(fd, pos, SEEK_DATA);
	if (data < 0 && errno == ENXIO && fstat(fd, &st) == 0)
		data = st.st_size > pos ? st.st_size : pos; /* a hole to the end, or the end */
	else if (data < 0) {
		s->holes = 0;
		lseek(fd, pos, SEEK_SET);
		return 0;
	}
	if (data - pos >= STRIPE_ZERO_MIN) {
		end = data - pos > (off_t)STRIPE_ZERO_CHUNK ? pos + (off_t)STRIPE_ZERO_CHUNK : data;
		lseek(fd, end, SEEK_SET);
		return end - pos;
	}
	/* data here (or a hole too short to skip): none before its end */
	end = lseek(fd, data, SEEK_HOLE);
	s->data_until = end > data ? end : data + 1;
	lseek(fd, pos, SEEK_SET);
	return 0;
}

/*
 * --sparse: a hole of stdin's file for connection i, as a ZERO chunk,
 * never read. 1 if it took one.
 */
static int stripe_read_hole(struct flow *f, unsigned i)
{
	struct stripe_flow *s = f->ctx;
	struct out_conn *o = &s->out[i];
	struct stat st;
	off_t len;

	if (s->src_pos < 0) { /* the first read: a file read by fastcat itself, or none */
		s->holes = f->source.read == NULL && fstat(f->stdio, &st) == 0 &&
		           S_ISREG(st.st_mode) && (s->src_pos = lseek(f->stdio, 0, SEEK_CUR)) >= 0;
		if (!s->holes)
			s->src_pos = 0;
	}
	if (!s->holes || (len = stripe_hole_at(s, f->stdio)) == 0)
		return 0;
	stripe_chunk_encode(o->buf,
	                    &(struct stripe_chunk){STRIPE_ZERO, 0, 0, (uint32_t)len, s->offset});
	if (f->checksum)
		digest_update_zeros(&f->stats->digest, (uint64_t)len);
	f->stats->zero_bytes += (uint64_t)len;
	o->len = STRIPE_CHUNK_BYTES;
	o->sent = 0;
	o->payload = (size_t)len;
	s->offset += (uint64_t)len;
	s->src_pos += len;
	s->next = (i + 1) % s->n;
	return 1;
}

/*
 * Read one chunk of stdin for connection i (--retry from a pipe: through
 * the replay buffer, which sends again first what the receiver lacks). 1 if
 * bytes or EOF came, 0 if none now, -1: failed.
 */
static int stripe_read(struct flow *f, unsigned i)
{
	struct stripe_flow *s = f->ctx;
	struct out_conn *o = &s->out[i];
	size_t want = f->read_size;
	ssize_t n;

	if (flow_source_room(f) < want)
		want =
		    flow_source_room(f); /* --retry: 0 until the receiver's confirmations free it */
	if (want == 0 ||
	    (f->limited && (want = ratelimit_allow(&f->limit, clock_now(), want)) == 0))
		return 0;
	if (s->sparse && stripe_read_hole(f, i))
		return 1;
	n = flow_source_read(f, o->buf + STRIPE_CHUNK_BYTES, want);
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
	if (f->checksum) /* the stream's bytes, zeros and all, before --sparse packs them */
		digest_update(&f->stats->digest, o->buf + STRIPE_CHUNK_BYTES, (size_t)n);
	if (f->limited)
		ratelimit_spend(&f->limit, (size_t)n);
	s->src_pos += n;
	if (s->sparse) {
		uint64_t zeros;

		o->len = stripe_sparse_pack(o->buf, (size_t)n, s->offset, &zeros);
		f->stats->zero_bytes += zeros;
	} else {
		stripe_chunk_encode(
		    o->buf, &(struct stripe_chunk){STRIPE_DATA, 0, 0, (uint32_t)n, s->offset});
		o->len = STRIPE_CHUNK_BYTES + (size_t)n;
	}
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
	struct stripe_flow *s = f->ctx;
	struct out_conn *o = &s->out[i];
	ssize_t n = send(s->conns->fd[i], o->buf + o->sent, o->len - o->sent, MSG_NOSIGNAL);

	f->stats->writes++;
	switch (io_result(n)) {
	case IO_MOVED: break;
	case IO_AGAIN: s->ready[i] = 0; return 0;
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
	struct stripe_flow *s = f->ctx;
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
	if (shutdown(s->conns->fd[i], SHUT_WR) != 0 && errno != ENOTCONN)
		return stripe_socket_failed(f, (int)i, "shutdown");
	o->shut = 1;
	s->ended++;
	return 1;
}

/*
 * Each connection with a chunk on its way sends on; at stdin's EOF each gets
 * our END and a half-close; a free connection takes stdin's next chunk.
 */
enum pump_result stripe_pump_send(struct flow *f)
{
	struct stripe_flow *s = f->ctx;

	for (int calls = 0; calls < 64; calls++) {
		int moved = 0, rc;

		for (unsigned i = 0; i < s->n; i++) {
			if (s->out[i].sent < s->out[i].len && s->ready[i]) {
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
