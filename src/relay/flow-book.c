/*
 * flow-book.c: a flow's bookkeeping, below every step that moves bytes (the stream pump's,
 * the copy methods', the datagram path's, a feature's pump): what was read and written,
 * how the flow failed, and stdin through the flow's source.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <unistd.h>

#include "fastcat.h"
#include "relay/flow.h"

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

/* n bytes of count equal datagrams (or one write) left the buffer's head. */
void flow_wrote(struct flow *f, size_t n, unsigned count)
{
	uint64_t delivered = n;

	if (f->checksum)
		digest_update(&f->stats->digest, iobuf_head(&f->buf), n);
	if (f->ops->wrote != NULL)
		delivered = f->ops->wrote(f, n); /* frames: only their payload is data */
	iobuf_consumed(&f->buf, n);
	f->stats->datagrams += f->dgram_dst ? count : 0;
	flow_count_write(f, delivered, n / count); /* a batch holds equal datagrams */
}

/*
 * What a write step's syscall said, n of want bytes from the buffer's head in count equal
 * datagrams (or one write): counted, or "try again", or the failure. 0, or -1.
 */
int flow_wrote_result(struct flow *f, ssize_t n, size_t want, unsigned count)
{
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

/*
 * After poll: any event, error or hangup included, means the next syscall on that fd will
 * tell more. stdio's slot marks stdio ready; a connection's, its ready flag of the n in fds.
 */
void flow_poll_ready(struct flow *f, const struct pollfd *pfd, int npfd, const int *fds, int *ready,
                     unsigned n)
{
	short conn_events = f->kind == FLOW_SEND ? POLLOUT : POLLIN;

	for (int i = 0; i < npfd; i++) {
		if (pfd[i].revents == 0)
			continue;
		if (pfd[i].events != conn_events)
			f->stdio_ready = 1;
		else
			for (unsigned k = 0; k < n; k++)
				ready[k] |= fds[k] == pfd[i].fd;
	}
}

/* A syscall failed with err: the relay's message names it (and the direction's object). */
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

/*
 * A failure with a reason of its own (a protocol's): the session ends with
 * status. -1 with errno EPROTO, which no syscall's "try again" is taken for.
 */
int flow_fail(struct flow *f, int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	failure_vset(&f->failure, status, fmt, ap);
	va_end(ap);
	flow_failed(f, f->kind == FLOW_SEND, EPROTO);
	errno = EPROTO;
	return -1;
}

/*
 * --sync: what this receiving flow wrote to stdout is on disk (fdatasync)
 * before anyone is told it arrived: the last confirmation, the verdict, the
 * end. 0, or -1: the flow failed ("sync stdout: ...", exit 7).
 */
int flow_sync(struct flow *f)
{
	double start = clock_now();
	int rc;

	if (!f->sync || f->discard || f->kind != FLOW_RECEIVE)
		return 0;
	while ((rc = fdatasync(flow_dst(f))) != 0 && errno == EINTR)
		;
	if (rc != 0) {
		flow_failed(f, 1, errno);
		f->err_on_sync = 1;
		return -1;
	}
	f->stats->syncs++;
	f->stats->sync_seconds += clock_now() - start;
	return 0;
}

/* The source said EAGAIN: poll() decides when to read again (or the low-water mark's patience). */
void flow_source_dry(struct flow *f)
{
	flow_set_src_ready(f, 0);
	if (lowat_on(&f->lowat))
		lowat_wait(&f->lowat, clock_now());
}

/* A sending flow's bytes from stdin, through its source: read(2)'s result. */
ssize_t flow_source_read(struct flow *f, void *buf, size_t want)
{
	if (f->source.read != NULL)
		return f->source.read(f->source.ctx, f->stdio, buf, want);
	return read(f->stdio, buf, want);
}

/* The most the source takes now (--retry's replay buffer may be full), or SIZE_MAX. */
size_t flow_source_room(const struct flow *f)
{
	return f->source.room != NULL ? f->source.room(f->source.ctx) : SIZE_MAX;
}

/* A direction's seconds so far: from the connection to its EOF, or to now. */
double flow_stats_seconds(const struct flow_stats *f, double now)
{
	double end = f->finished > 0 ? f->finished : now;

	return f->started > 0 && end > f->started ? end - f->started : 0;
}

double flow_stats_rate(const struct flow_stats *f, double now)
{
	double secs = flow_stats_seconds(f, now);

	return secs > 0 ? (double)f->bytes / secs : 0;
}
