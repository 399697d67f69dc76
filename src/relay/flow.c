/*
 * flow.c: one direction of the relay: read from src, buffer, write to dst,
 * pass EOF on. The datagram path (flow-dgram.c), the --verify framing
 * (flow-verify.c) and zero-copy moves (copy.c) are steps this pump calls.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fastcat.h"
#include "relay/flow.h"
#include "retry/retry.h"
#include "verify/verify.h"

/*
 * Syscalls one flow may make before the loop looks at the other flow and at
 * signals. Large enough that a one-way transfer polls about once per 32
 * chunks, small enough that the other direction is never starved.
 */
#define PUMP_BUDGET 64

void flow_failed(struct flow *f, int is_write, int err)
{
	f->err = err;
	f->err_on_write = is_write;
}

/* A write to the destination failed (errno): what it tried to move goes into the message. */
int flow_write_failed(struct flow *f, size_t len)
{
	f->failed_write_len = len;
	flow_failed(f, 1, errno);
	return -1;
}

/* Every read that brought bytes is counted here, whichever way it came. */
void flow_count_read(struct flow *f, size_t n)
{
	if (n > f->stats->max_read)
		f->stats->max_read = n;
	f->moved = 1;
	lowat_read(&f->lowat, n);
}

/*
 * Every write that took bytes: delivered counts the data (not --seq or
 * --verify headers), largest is the biggest single write or datagram.
 */
void flow_count_write(struct flow *f, uint64_t delivered, size_t largest)
{
	f->stats->bytes += delivered;
	if (largest > f->stats->max_write)
		f->stats->max_write = largest;
	f->moved = 1;
}

/* Bytes waiting for the destination, whatever holds them. */
static size_t flow_len(const struct flow *f)
{
	switch (f->method) {
	case METHOD_SPLICE: return f->piped;
	case METHOD_SENDFILE: return f->src_eof ? 0 : f->write_size; /* the file is the buffer */
	default: return flow_is_framed(f) ? flow_verify_len(f) : iobuf_len(&f->buf);
	}
}

/* Bytes written or parked, whatever holds them: 0 when nothing is left to pass on. */
static int flow_drained(const struct flow *f)
{
	const struct verify *v = f->verify;

	if (f->dg != NULL && f->kind == FLOW_SEND)
		return v->hello_seen; /* our END goes after the handshake */
	if (f->method != METHOD_RW || !flow_is_framed(f) || f->kind == FLOW_RECEIVE)
		return 1;
	/* our VERDICT answers the peer's END; a peer that closed without one gets none */
	return iobuf_len(&f->buf) == 0 && f->end_queued &&
	       (f->verdict_queued || (v->peer_done && !v->end_seen));
}

/* Bytes the next read may bring in; sendfile reads and writes in one call, so never. */
static size_t flow_room(const struct flow *f)
{
	switch (f->method) {
	case METHOD_SPLICE: return f->pipe_full ? 0 : f->pipe_cap - f->piped;
	case METHOD_SENDFILE: return 0;
	default: break;
	}
	if (f->replay != NULL) { /* --retry from a pipe: never more than the ring can hold */
		size_t ring = replay_room(f->replay), room = iobuf_room(&f->buf);

		return ring < room ? ring : room;
	}
	return iobuf_room(&f->buf);
}

/* Bytes read from the source that did not reach the destination (for error messages). */
size_t flow_unsent(const struct flow *f)
{
	return f->method == METHOD_SENDFILE ? 0 : flow_len(f);
}

/* splice or sendfile said "not for these fds": carry on with read/write. */
int flow_fall_back(struct flow *f, int is_write)
{
	if (copy_fallback(f) == 0)
		return 0;
	flow_failed(f, is_write, errno);
	return -1;
}

/* The source said EAGAIN: poll() decides when to read again (or the low-water mark's patience). */
void flow_source_dry(struct flow *f)
{
	flow_set_src_ready(f, 0);
	if (lowat_on(&f->lowat))
		lowat_wait(&f->lowat, clock_now());
}

/* Bytes from the source into the buffer: datagrams, a DATA frame, or a plain read. */
static ssize_t flow_source_read(struct flow *f, size_t want, int batch)
{
	if (batch)
		return flow_dgram_recv_batch(f);
	if (flow_is_framed(f) && f->kind == FLOW_SEND)
		return flow_verify_read(f, want);
	if (f->dgram_src)
		return flow_dgram_recv(f, want);
	if (f->replay != NULL)
		return retry_flow_read(f, want);
	return read(flow_src(f), iobuf_tail(&f->buf), want);
}

/*
 * An ICMP "port unreachable" for something we sent; Linux reports it before
 * datagrams already queued, which must still be read. A lost send shows up
 * on the sending side.
 */
static void flow_unreachable(struct flow *f)
{
	if (f->dg != NULL)
		f->dg->unreachable = 1;
	log_verbose("the peer's port was unreachable for a datagram we sent");
}

static int flow_read(struct flow *f)
{
	size_t room = flow_room(f);
	int batch = f->recv_slot != 0 && room >= 2 * f->recv_slot;
	size_t want = room < f->read_size ? room : f->read_size;
	ssize_t n;

	if (f->sniff_hello) {
		int rc = flow_verify_sniff(f);
		if (rc <= 0)
			return rc;
	}
	if (f->method == METHOD_SPLICE)
		return copy_read(f, want);
	if (flow_is_framed(f) && f->kind == FLOW_SEND && want + FRAME_HEADER > room)
		want = room - FRAME_HEADER; /* read_min keeps room above FRAME_HEADER */
	n = flow_source_read(f, want, batch);
	f->stats->reads++;
	if (n == -2 || (batch && n >= 0)) {
		if (n > 0)
			flow_count_read(f, (size_t)n);
		return 0; /* runts dropped; a batch produced its data and its EOF itself */
	}
	switch (io_result(n)) {
	case IO_MOVED:
		iobuf_produced(&f->buf, (size_t)n);
		flow_count_read(f, (size_t)n);
		break;
	case IO_END: f->src_eof = !f->ignore_empty; break; /* unless --no-dgram-eof */
	case IO_AGAIN: flow_source_dry(f); break;
	case IO_INTERRUPTED: break;
	case IO_FAILED:
		if (errno == ECONNREFUSED && f->soft_refusal) {
			flow_unreachable(f);
			break;
		}
		flow_failed(f, 0, errno);
		return -1;
	}
	return 0;
}

/*
 * The bytes the next write may move, of len waiting: up to write_size (a
 * whole datagram when cutting exact sizes), and with --rate-limit what the
 * bucket holds; 0 when it must refill first.
 */
static size_t flow_write_len(struct flow *f, size_t len)
{
	size_t want = len < f->write_size ? len : f->write_size;

	return f->limited ? ratelimit_allow(&f->limit, clock_now(), want) : want;
}

/* --send-only: what the peer sent is dropped, but counted (and digested) as delivered. */
static void flow_discard(struct flow *f, size_t want)
{
	size_t drop = f->limited ? want : iobuf_len(&f->buf);

	if (f->checksum)
		digest_update(&f->stats->digest, iobuf_head(&f->buf), drop);
	f->stats->bytes += drop;
	iobuf_consumed(&f->buf, drop);
}

/* n bytes of count equal datagrams (or one write) left the buffer's head. */
static void flow_wrote(struct flow *f, size_t n, unsigned count)
{
	uint64_t delivered = n;

	if (f->checksum)
		digest_update(&f->stats->digest, iobuf_head(&f->buf), n);
	if (flow_is_framed(f)) {
		f->gate -= n < f->gate ? n : f->gate;
		delivered = flow_verify_payload(f, n);
	}
	iobuf_consumed(&f->buf, n);
	f->stats->datagrams += f->dgram_dst ? count : 0;
	flow_count_write(f, delivered, n / count); /* a batch holds equal datagrams */
}

/* Write at most want bytes (flow_write_len) to the destination, or drop them. */
static int flow_write(struct flow *f, size_t want)
{
	unsigned count = 1;
	ssize_t n;

	if (f->method != METHOD_RW)
		return copy_write(f, want);
	if (flow_is_framed(f) && f->kind == FLOW_RECEIVE)
		return flow_verify_write(f, want);
	if (f->retry != NULL)
		return retry_flow_confirms(f);
	if (f->discard) {
		flow_discard(f, want);
		return 0;
	}
	/* a batch is many writes in one call: a limited flow makes one at a time */
	if (f->exact && !f->limited && iobuf_len(&f->buf) >= 2 * f->write_size)
		n = flow_dgram_send_batch(f, &count);
	else if (f->seq && f->dgram_dst)
		n = flow_dgram_send(f, want);
	else
		n = write(flow_dst(f), iobuf_head(&f->buf), want);
	f->stats->writes++;
	switch (io_result(n)) {
	case IO_MOVED: flow_wrote(f, (size_t)n, count); break;
	case IO_AGAIN: flow_set_dst_ready(f, 0); break;
	case IO_END:
	case IO_INTERRUPTED: break;
	case IO_FAILED: return flow_write_failed(f, want);
	}
	return 0;
}

/* EOF to stdout: close it so whoever reads it sees the end; /dev/null keeps fd 1 taken. */
static void flow_close_stdout(struct flow *f)
{
	int devnull = open("/dev/null", O_WRONLY);

	if (devnull >= 0) {
		dup2(devnull, flow_dst(f));
		close(devnull);
	}
}

/*
 * Pass a flow's EOF on. To the socket: a zero-length datagram for
 * connectionless transports, else a half-close, so the peer sees our EOF
 * while we keep reading its data. To stdout: close it.
 * Returns 1 when done, 0 when the socket cannot take the EOF datagram yet.
 */
int flow_finish(struct flow *f)
{
	if (f->dg != NULL && f->kind == FLOW_SEND) {
		f->dg->end_due = 1; /* our END says it (dgverify.c), until the peer's VERDICT */
		f->dg->sent_datagrams = f->next_seq;
	} else if (f->eof_datagram) {
		if (!flow_dst_ready(f))
			return 0;
		ssize_t sent = flow_dgram_send_eof(f);

		if (sent < 0 && io_result(sent) != IO_FAILED) {
			flow_set_dst_ready(f, io_result(sent) == IO_INTERRUPTED);
			return 0;
		}
		if (sent < 0) {
			flow_failed(f, 1, errno);
			return -1;
		}
	} else if (f->kind == FLOW_SEND) {
		if (shutdown(flow_dst(f), SHUT_WR) != 0 && errno != ENOTCONN) {
			flow_failed(f, 1, errno);
			return -1;
		}
	} else if (!f->keep_dst && !f->discard) {
		flow_close_stdout(f);
	}
	if (f->kind == FLOW_RECEIVE && f->verify != NULL)
		f->verify->peer_done = 1;
	if (f->kind == FLOW_RECEIVE && f->dg != NULL) {
		/* every datagram before the peer's END is written: our VERDICT can go */
		f->verify->delivered_bytes = f->stats->bytes;
		f->verify->delivered_digest = digest_final(&f->stats->digest);
		f->dg->verdict_ready = 1;
	}
	f->running = 0;
	f->stats->finished = clock_now();
	return 1;
}

/*
 * --rate-limit: a write, and the tokens it took. The bucket counts the data
 * delivered (stats->bytes), not --seq or --verify headers.
 */
static int flow_write_limited(struct flow *f, size_t want)
{
	uint64_t before = f->stats->bytes;

	if (flow_write(f, want) < 0)
		return -1;
	ratelimit_spend(&f->limit, (size_t)(f->stats->bytes - before));
	return 0;
}

/* --verify over datagrams: no data goes before the peer's hello came. */
static int flow_may_send(const struct flow *f)
{
	return f->dg == NULL || f->kind == FLOW_RECEIVE || f->verify->hello_seen;
}

/*
 * What the pump does before a step: queue --verify trailers, and end a
 * datagram --verify input once the peer's END came and its datagrams are in
 * (or counted lost). -1 when the session failed.
 */
static int flow_before_step(struct flow *f)
{
	if (flow_is_framed(f) && f->kind == FLOW_SEND && flow_verify_queue_trailer(f) < 0)
		return -1;
	/* the clock only once the END came: this runs for every datagram read */
	if (f->dg != NULL && f->kind == FLOW_RECEIVE && !f->src_eof && f->verify->end_seen &&
	    dgverify_input_done(f->dg, &f->stats->seq, clock_now()))
		f->src_eof = 1;
	/* --seq: the EOF datagram came before some of the datagrams it counts */
	if (f->seq_tail > 0 && !f->src_eof && flow_dgram_tail_over(f, clock_now()))
		f->src_eof = 1;
	return 0;
}

/* The buffer's tail is too short for a read, and nothing at its head can go: move it. */
static int flow_needs_compact(const struct flow *f, size_t len)
{
	if (flow_room(f) >= f->read_min)
		return 0;
	if (f->exact)
		return len < f->write_size; /* a part datagram at the very end: rare */
	/* a frame header cut by the buffer's end */
	return flow_is_framed(f) && f->kind == FLOW_RECEIVE && len == 0 && iobuf_len(&f->buf) > 0;
}

/*
 * Move data until the flow would block, finishes, or used its budget.
 * A read is made only when read_min bytes of room are left at the tail (for
 * streams a whole read_size, so reads stay full-sized and nothing is moved);
 * a write when a write_size is ready or no more can be read for now. When
 * cutting exact datagrams, only whole datagrams go out until stdin's EOF.
 * With --rate-limit, a write the bucket cannot pay for yet blocks the flow
 * (the relay sleeps until flow_wait_ms), though reading goes on.
 */
enum pump_result flow_pump(struct flow *f)
{
	if (f->stripe != NULL)
		return flow_stripe_pump(f);
	if (!flow_src_ready(f) && f->lowat.since > 0 && lowat_expired(&f->lowat, clock_now()))
		flow_set_src_ready(
		    f, 1); /* a mark held back a paused sender's last bytes: take them */
	for (int calls = 0; calls < PUMP_BUDGET; calls++) {
		if (flow_before_step(f) < 0)
			return PUMP_FAILED;
		size_t len = flow_len(f), want = 0;
		int can_read = !f->src_eof && flow_src_ready(f) && flow_room(f) >= f->read_min;
		int whole = !f->exact || len >= f->write_size || f->src_eof;

		if (len > 0 && flow_dst_ready(f) && whole && (len >= f->write_size || !can_read) &&
		    flow_may_send(f))
			want = flow_write_len(f, len);
		if (want > 0) {
			if ((f->limited ? flow_write_limited(f, want) : flow_write(f, want)) < 0)
				return PUMP_FAILED;
		} else if (can_read) {
			if (flow_read(f) < 0)
				return PUMP_FAILED;
		} else if (flow_needs_compact(f, len)) {
			iobuf_compact(&f->buf);
		} else if (len == 0 && f->src_eof && flow_drained(f)) {
			switch (flow_finish(f)) {
			case -1: return PUMP_FAILED;
			case 0: return PUMP_BLOCKED;
			default: return PUMP_FINISHED;
			}
		} else {
			return PUMP_BLOCKED;
		}
	}
	return PUMP_BUDGET_USED;
}

/*
 * Poll events follow from the flow's state: wait only for what would
 * unblock it: stdio's one slot, then one per connection that said EAGAIN.
 */
int flow_poll_events(const struct flow *f, struct pollfd *pfd)
{
	int sending = f->kind == FLOW_SEND, n = 0;
	int wants_in = !f->src_eof && flow_room(f) >= f->read_min;
	int wants_out = flow_len(f) > 0 || f->src_eof;
	short net_events = sending ? POLLOUT : POLLIN;

	if (f->stripe != NULL)
		return flow_stripe_poll_events(f, pfd);
	if (!f->running)
		return 0;
	if ((sending ? wants_in : wants_out) && !f->stdio_ready)
		pfd[n++] = (struct pollfd){.fd = f->stdio, .events = sending ? POLLIN : POLLOUT};
	for (unsigned i = 0; i < f->net.n && (sending ? wants_out : wants_in); i++)
		if (!f->net.ready[i])
			pfd[n++] = (struct pollfd){.fd = f->net.fd[i], .events = net_events};
	return n;
}

/* Any event, error or hangup included, means the next syscall will tell us more. */
void flow_poll_result(struct flow *f, const struct pollfd *pfd, int n)
{
	short net_events = f->kind == FLOW_SEND ? POLLOUT : POLLIN;

	for (int i = 0; i < n; i++) {
		if (pfd[i].revents == 0)
			continue;
		if (pfd[i].events != net_events)
			f->stdio_ready = 1;
		else
			for (unsigned k = 0; k < f->net.n; k++)
				f->net.ready[k] |= f->net.fd[k] == pfd[i].fd;
	}
}

/*
 * Milliseconds until the flow needs a turn with no fd event, or -1: a
 * --rate-limit bucket pays for the waiting write, a low-water mark runs
 * out of patience, or --seq's stragglers their grace.
 */
long flow_wait_ms(const struct flow *f, double now)
{
	long rate, mark;

	if (!f->running)
		return -1;
	rate = f->limited ? ratelimit_wait_ms(&f->limit, now) : -1;
	mark = flow_src_ready(f) ? -1 : lowat_wait_ms(&f->lowat, now);
	if (f->seq_tail > 0 && !f->src_eof) /* --seq: the stragglers' grace ends */
		mark = f->seq_tail <= now ? 0 : (long)((f->seq_tail - now) * 1000) + 1;
	if (rate < 0 || (mark >= 0 && mark < rate))
		return mark;
	return rate;
}
