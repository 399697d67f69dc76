/*
 * flow-pump.c: the stream pump: one direction of the relay read from its source into a buffer,
 * written to its destination, and its EOF passed on. What a feature changes (frames, a
 * datagram protocol) comes in through the flow's ops; the copy methods are copy.c's, the
 * datagram steps flow-dgram.c's, the bookkeeping flow-book.c's.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fastcat.h"
#include "relay/flow.h"

/*
 * Syscalls one flow may make before the loop looks at the other flow and at
 * signals. Large enough that a one-way transfer polls about once per 32
 * chunks, small enough that the other direction is never starved.
 */
#define PUMP_BUDGET 64

const struct flow_ops flow_plain_ops = {.rw_reason = NULL};

/* Bytes waiting for the destination, whatever holds them. */
static size_t flow_len(const struct flow *f)
{
	switch (f->method) {
	case METHOD_SPLICE: return f->piped;
	case METHOD_SENDFILE: return f->src_eof ? 0 : f->write_size; /* the file is the buffer */
	default: return f->ops->len != NULL ? f->ops->len(f) : iobuf_len(&f->buf);
	}
}

/* Bytes written or parked, whatever holds them: 0 when something is left to pass on. */
static int flow_drained(const struct flow *f)
{
	return f->ops->drained == NULL || f->ops->drained(f);
}

/* Bytes the next read may bring in; sendfile reads and writes in one call, so never. */
static size_t flow_room(const struct flow *f)
{
	size_t room = iobuf_room(&f->buf), source = flow_source_room(f);

	switch (f->method) {
	case METHOD_SPLICE: return f->pipe_full ? 0 : f->pipe_cap - f->piped;
	case METHOD_SENDFILE: return 0;
	default: return source < room ? source : room;
	}
}

/*
 * A sending flow that stopped early: the bytes of stdin the peer never got, as far as they
 * can be known: what the flow holds, and what stdin still has (a regular file's bytes past
 * its offset, which sendfile moves too; what a pipe or terminal has queued).
 */
uint64_t flow_stdin_left(const struct flow *f)
{
	uint64_t held = f->method == METHOD_SENDFILE ? 0 : flow_len(f);
	struct stat st;
	int queued = 0;

	if (fstat(f->stdio, &st) == 0 && S_ISREG(st.st_mode)) {
		off_t at = lseek(f->stdio, 0, SEEK_CUR);

		return held + (at >= 0 && st.st_size > at ? (uint64_t)(st.st_size - at) : 0);
	}
	if (ioctl(f->stdio, FIONREAD, &queued) == 0 && queued > 0)
		held += (uint64_t)queued;
	return held;
}

/* The read steps: stdin or the socket with read(2), or stdin through the flow's source. */
static ssize_t read_plain(struct flow *f, size_t want)
{
	return read(flow_src(f), iobuf_tail(&f->buf), want);
}

static ssize_t read_source(struct flow *f, size_t want)
{
	return flow_source_read(f, iobuf_tail(&f->buf), want);
}

/*
 * An ICMP "port unreachable" for something we sent; Linux reports it before
 * datagrams already queued, which must still be read. A lost send shows up
 * on the sending side.
 */
static void flow_unreachable(struct flow *f)
{
	if (f->ops->unreachable != NULL)
		f->ops->unreachable(f);
	log_verbose("the peer's port was unreachable for a datagram we sent");
}

static int flow_read(struct flow *f)
{
	size_t room = flow_room(f), reserve = f->ops->read_reserve;
	size_t want = room < f->read_size ? room : f->read_size;
	ssize_t n;

	if (f->nguards > 0) {
		int rc = sniff_hello(f);
		if (rc <= 0)
			return rc;
	}
	if (f->method == METHOD_SPLICE)
		return copy_read(f, want);
	if (want + reserve > room)
		want = room - reserve; /* read_min keeps room above the reserve */
	n = f->read(f, want);
	f->stats->reads++;
	if (n == -2)
		return 0; /* the step took care of what it read (datagrams dropped, or a batch) */
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
static int write_discard(struct flow *f, size_t want)
{
	size_t drop = f->limited ? want : iobuf_len(&f->buf);

	if (f->checksum)
		digest_update(&f->stats->digest, iobuf_head(&f->buf), drop);
	f->stats->bytes += drop;
	iobuf_consumed(&f->buf, drop);
	return 0;
}

/* A sink takes what the buffer holds, whole; nothing goes to stdout. */
static int write_sink(struct flow *f, size_t want)
{
	size_t len = iobuf_len(&f->buf);

	(void)want;
	if (f->sink.take(f->sink.ctx, f, (const unsigned char *)iobuf_head(&f->buf), len) != 0)
		return -1;
	iobuf_consumed(&f->buf, len);
	return 0;
}

/* One write(2) of at most want bytes from the buffer's head. */
static int write_plain(struct flow *f, size_t want)
{
	return flow_wrote_result(f, write(flow_dst(f), iobuf_head(&f->buf), want), want, 1);
}

/* The flow's read and write steps, from its role and what plugs into it: once, at set-up. */
void flow_choose_steps(struct flow *f)
{
	if (f->ops->read != NULL)
		f->read = f->ops->read;
	else if (f->dgram_src)
		f->read = flow_dgram_read;
	else if (f->source.read != NULL)
		f->read = read_source;
	else
		f->read = read_plain;
	if (f->ops->write != NULL)
		f->write = f->ops->write;
	else if (f->sink.take != NULL)
		f->write = write_sink;
	else if (f->discard)
		f->write = write_discard;
	else if (f->dgram_dst)
		f->write = flow_dgram_write;
	else
		f->write = write_plain;
}

/* Write at most want bytes (flow_write_len) to the destination, or drop them. */
static int flow_write(struct flow *f, size_t want)
{
	if (f->method != METHOD_RW)
		return copy_write(f, want);
	return f->write(f, want);
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
 * Pass a flow's EOF on the relay's way. To the socket: a zero-length datagram
 * for connectionless transports, else a half-close, so the peer sees our EOF
 * while we keep reading its data. To stdout: close it. 1 when done, 0 when
 * the socket cannot take the EOF datagram yet, -1 when it failed.
 */
static int flow_pass_eof(struct flow *f)
{
	if (f->eof_datagram) {
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
	return 1;
}

/*
 * Pass the flow's EOF on (its feature's way, or the relay's), and stop it;
 * --sync: stdout on disk first. 1, 0 or -1.
 */
int flow_finish(struct flow *f)
{
	int rc;

	if (flow_sync(f) != 0)
		return -1;
	rc = f->ops->pass_eof != NULL ? f->ops->pass_eof(f) : flow_pass_eof(f);
	if (rc <= 0)
		return rc;
	if (f->ops->ended != NULL)
		f->ops->ended(f);
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

/* What the pump does before a step: the feature's (trailers, ends), and --seq's stragglers. */
static int flow_before_step(struct flow *f)
{
	if (f->ops->step != NULL && f->ops->step(f) < 0)
		return -1;
	/* --seq: the EOF datagram came before some of the datagrams it counts */
	if (f->seq_tail > 0 && !f->src_eof && flow_dgram_tail_over(f, clock_now()))
		f->src_eof = 1;
	return 0;
}

/*
 * The buffer's tail is too short for a read, and nothing at its head can go: move it. That
 * is a part datagram at the very end, or received bytes the destination cannot take yet (a
 * frame header cut by the buffer's end).
 */
static int flow_needs_compact(const struct flow *f, size_t len)
{
	if (flow_room(f) >= f->read_min)
		return 0;
	if (f->exact)
		return len < f->write_size;
	return f->kind == FLOW_RECEIVE && len == 0 && iobuf_len(&f->buf) > 0;
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
static enum pump_result flow_pump_stream(struct flow *f)
{
	if (!flow_src_ready(f) && f->lowat.since > 0 && lowat_expired(&f->lowat, clock_now()))
		flow_set_src_ready(
		    f, 1); /* a mark held back a paused sender's last bytes: take them */
	for (int calls = 0; calls < PUMP_BUDGET; calls++) {
		if (flow_before_step(f) < 0)
			return PUMP_FAILED;
		size_t len = flow_len(f), want = 0;
		int can_read = !f->src_eof && flow_src_ready(f) && flow_room(f) >= f->read_min;
		int whole = !f->exact || len >= f->write_size || f->src_eof;
		int may_send = f->ops->may_send == NULL || f->ops->may_send(f);

		if (len > 0 && flow_dst_ready(f) && whole && (len >= f->write_size || !can_read) &&
		    may_send)
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

/* One turn of a flow: its feature's pump, or the stream pump. */
enum pump_result flow_pump(struct flow *f)
{
	return f->ops->pump != NULL ? f->ops->pump(f) : flow_pump_stream(f);
}

/*
 * Poll events follow from the flow's state: wait only for what would
 * unblock it: stdio's slot, and the connection's once it said EAGAIN.
 */
int flow_poll_events(const struct flow *f, struct pollfd *pfd)
{
	int sending = f->kind == FLOW_SEND, n = 0;
	int wants_in = !f->src_eof && flow_room(f) >= f->read_min;
	int wants_out = flow_len(f) > 0 || f->src_eof;

	if (f->ops->poll_events != NULL)
		return f->ops->poll_events(f, pfd);
	if (!f->running)
		return 0;
	if ((sending ? wants_in : wants_out) && !f->stdio_ready)
		pfd[n++] = (struct pollfd){.fd = f->stdio, .events = sending ? POLLIN : POLLOUT};
	if ((sending ? wants_out : wants_in) && !f->sock_ready)
		pfd[n++] = (struct pollfd){.fd = f->sock, .events = sending ? POLLOUT : POLLIN};
	return n;
}

/* What poll said of the flow's slots: its feature's, or stdio's and the connection's. */
void flow_poll_result(struct flow *f, const struct pollfd *pfd, int n)
{
	if (f->ops->poll_result != NULL)
		f->ops->poll_result(f, pfd, n);
	else
		flow_poll_ready(f, pfd, n, &f->sock, &f->sock_ready, 1);
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
	if (f->ops->wait_ms != NULL) /* a pump of its own keeps its own time */
		return f->ops->wait_ms(f, now);
	rate = f->limited ? ratelimit_wait_ms(&f->limit, now) : -1;
	mark = flow_src_ready(f) ? -1 : lowat_wait_ms(&f->lowat, now);
	if (f->seq_tail > 0 && !f->src_eof) /* --seq: the stragglers' grace ends */
		mark = f->seq_tail <= now ? 0 : (long)((f->seq_tail - now) * 1000) + 1;
	if (rate < 0 || (mark >= 0 && mark < rate))
		return mark;
	return rate;
}
