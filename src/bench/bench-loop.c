/* bench-loop.c: the loops of --bench's processes: send, receive, ping, echo, and memcpy. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "fastcat.h"
#include "bench/bench.h"
#include "net/net.h"

#define IDLE_MS       1000 /* a datagram receiver gives up this long after the last arrival */
#define MARKER_MS     2    /* a datagram sender repeats its end marker this often ... */
#define MARKER_TRIES  1000 /* ... at most this many times */
#define REPLY_TIMEOUT 1    /* seconds a pinger waits for its echo before calling it lost */
#define PING_WARMUP   16   /* untimed round trips before a latency trial's clock starts */

/* The first failure is the one reported. */
static void tally_error(struct bench_tally *t, const char *what)
{
	if (t->what[0] != '\0')
		return;
	t->err = errno;
	snprintf(t->what, sizeof t->what, "%s", what);
}

/* EINTR: go on unless a stop signal came. */
static int interrupted(struct bench_tally *t)
{
	if (errno != EINTR)
		return 0;
	if (signal_stop)
		tally_error(t, "interrupted");
	return !signal_stop;
}

/* One message: a datagram is sent whole; a stream write may be partial and is finished. */
static int send_message(const struct bench_job *j, int fd, const unsigned char *p, size_t size,
                        struct bench_tally *t)
{
	size_t done = 0;

	while (done < size) {
		ssize_t n = write(fd, p + done, size - done);
		if (n < 0 && (interrupted(t) || errno == ENOBUFS))
			continue;
		if (n < 0) {
			tally_error(t, "send");
			return -1;
		}
		if (bench_link_datagram(j->link) && (size_t)n != size) {
			errno = 0;
			tally_error(t, "send: the datagram was cut short");
			return -1;
		}
		done += (size_t)n;
	}
	return 0;
}

/*
 * Tell the receiver that the data has ended. A stream or seqpacket socket and
 * a pipe are closed; a connectionless socket sends zero-length datagrams, again
 * every MARKER_MS until the parent closes ctl (the receiver has reported), as
 * UDP may drop some. The receiver's idle timeout is the last resort.
 */
static void send_end(const struct bench_job *j, int fd)
{
	struct pollfd p = {.fd = j->ctl, .events = POLLIN};

	if (!bench_link_marker(j->link)) {
		close(fd);
		return;
	}
	sock_set_nonblock(fd, 1);
	for (int i = 0; i < MARKER_TRIES && !signal_stop; i++) {
		if (send(fd, "", 0, 0) < 0 && errno != EAGAIN && errno != ENOBUFS && errno != EINTR)
			break; /* the receiver is gone: it had its marker or its timeout */
		if (j->ctl < 0 || poll(&p, 1, MARKER_MS) != 0)
			break;
	}
}

/*
 * The sender: size-byte messages from the payload for j->slice seconds. The
 * clock is read after every message, or every 16 below 1 KiB, where a
 * clock_gettime would be a noticeable share of a send.
 */
void bench_send(const struct bench_job *j, int fd, struct bench_tally *t)
{
	unsigned every = j->size >= KIB ? 1 : 16;
	double end;

	t->start = clock_now();
	end = t->start + j->slice;
	do {
		for (unsigned i = 0; i < every; i++) {
			if (send_message(j, fd, j->payload, j->size, t) != 0)
				return;
			t->messages++;
			t->bytes += j->size;
		}
	} while (clock_now() < end && !signal_stop);
	t->end = clock_now();
	send_end(j, fd);
}

/* A stream read: count it, and check its first byte against the payload at that offset. */
static int check_stream(const struct bench_job *j, ssize_t n, struct bench_tally *t)
{
	if (j->buf[0] != j->payload[t->bytes % j->size]) {
		errno = 0; /* the message says it all */
		tally_error(t, "the data read differs from the data sent");
		return -1;
	}
	t->bytes += (uint64_t)n;
	t->messages++;
	return 0;
}

/* A datagram must be exactly one message: its size, its first and last bytes. */
static int check_datagram(const struct bench_job *j, ssize_t n, struct bench_tally *t)
{
	if ((size_t)n != j->size) {
		snprintf(t->what, sizeof t->what, "a datagram of %zd bytes arrived, expected %zu",
		         n, j->size);
		return -1;
	}
	if (j->buf[0] != j->payload[0] || j->buf[n - 1] != j->payload[n - 1]) {
		errno = 0; /* the message says it all */
		tally_error(t, "a datagram differs from the one sent");
		return -1;
	}
	t->bytes += (uint64_t)n;
	t->messages++;
	return 0;
}

/*
 * The receiver of a stream, a pipe or seqpacket: blocking reads of the message
 * size until EOF. The end time is the EOF's.
 */
static void receive_stream(const struct bench_job *j, int fd, struct bench_tally *t)
{
	int datagram = bench_link_datagram(j->link);
	size_t want = datagram ? j->size + 1 : j->size; /* room to see an oversized datagram */

	for (;;) {
		ssize_t n = read(fd, j->buf, want);
		if (n < 0 && interrupted(t))
			continue;
		if (n < 0) {
			tally_error(t, "read");
			return;
		}
		if (n == 0)
			break;
		if ((datagram ? check_datagram(j, n, t) : check_stream(j, n, t)) != 0)
			return;
	}
	t->end = clock_now();
}

/*
 * The receiver of connectionless datagrams, reading until a zero-length end
 * marker or IDLE_MS of silence. Its reads do not block, so that it can note
 * when it found the queue empty: a marker that arrives after a wait (a resent
 * one, the first having been dropped) dates the end from that moment, not
 * from its own late arrival.
 */
static void receive_datagrams(const struct bench_job *j, int fd, struct bench_tally *t)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	double emptied = 0;

	sock_set_nonblock(fd, 1);
	for (;;) {
		ssize_t n = recv(fd, j->buf, j->size + 1, 0);
		if (n > 0) {
			emptied = 0;
			if (check_datagram(j, n, t) != 0)
				return;
			continue;
		}
		if (n == 0) {
			t->end = emptied > 0 ? emptied : clock_now();
			return;
		}
		if (interrupted(t))
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			tally_error(t, "recv");
			return;
		}
		if (emptied == 0)
			emptied = clock_now();
		n = poll(&p, 1, IDLE_MS);
		if (n < 0 && !interrupted(t)) {
			tally_error(t, "poll");
			return;
		}
		if (n == 0) {
			t->end = emptied;
			return;
		}
	}
}

void bench_receive(const struct bench_job *j, int fd, struct bench_tally *t)
{
	if (bench_link_marker(j->link))
		receive_datagrams(j, fd, t);
	else
		receive_stream(j, fd, t);
}

static void set_timeout(int fd, int opt, long secs)
{
	struct timeval tv = {.tv_sec = secs};

	setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof tv);
}

/* One byte out on e->out and the same byte back on e->in. */
static int round_trip(const struct bench_end *e, unsigned char out, struct bench_tally *t)
{
	unsigned char back;
	ssize_t n;

	while ((n = write(e->out, &out, 1)) < 0 && interrupted(t))
		;
	if (n != 1) {
		tally_error(t, "send");
		return -1;
	}
	while ((n = read(e->in, &back, 1)) < 0 && interrupted(t))
		;
	if (n == 1 && back == out)
		return 0;
	if (n == 1)
		errno = 0; /* the message says it all */
	tally_error(t, n == 1   ? "the echo differs from the byte sent"
	               : n == 0 ? "the echo side closed early"
	                        : "waiting for the echo");
	return -1;
}

/*
 * The pinger: PING_WARMUP round trips untimed (the first ones after a fork
 * pay for page faults and cold caches), then as many as fit j->slice, with
 * blocking calls as lmbench's lat_* use. A datagram link waits REPLY_TIMEOUT
 * for each echo: a lost datagram ends the trial.
 */
void bench_ping(const struct bench_job *j, const struct bench_end *e, struct bench_tally *t)
{
	double end;
	int i;

	if (bench_link_marker(j->link))
		set_timeout(e->in, SO_RCVTIMEO, REPLY_TIMEOUT);
	for (i = 0; i < PING_WARMUP; i++)
		if (round_trip(e, j->payload[i], t) != 0)
			return;
	t->start = clock_now();
	end = t->start + j->slice;
	do {
		if (round_trip(e, j->payload[(PING_WARMUP + t->messages) % 4096], t) != 0)
			return;
		t->messages++;
	} while ((t->end = clock_now()) < end && !signal_stop);
	t->bytes = PING_WARMUP + t->messages; /* what the echo side counts */
	if (e->in != e->out)
		close(e->in);
	send_end(j, e->out);
}

/* The echo side: every byte (or one-byte datagram) straight back, until EOF or the end marker. */
void bench_echo(const struct bench_job *j, const struct bench_end *e, struct bench_tally *t)
{
	unsigned char b[2];

	if (bench_link_marker(j->link))
		set_timeout(e->in, SO_RCVTIMEO, IDLE_MS / 1000);
	for (;;) {
		ssize_t n = read(e->in, b, sizeof b);
		if (n < 0 && interrupted(t))
			continue;
		if (n < 0 && bench_link_marker(j->link) &&
		    (errno == EAGAIN || errno == EWOULDBLOCK))
			break; /* idle: the pinger's end marker was lost */
		if (n > 1)
			errno = 0;
		if (n < 0 || n > 1) {
			tally_error(t, n > 1 ? "more than the one byte to echo arrived" : "read");
			return;
		}
		if (n == 0)
			break;
		while ((n = write(e->out, b, 1)) < 0 && interrupted(t))
			;
		if (n != 1) {
			tally_error(t, "write");
			return;
		}
		t->messages++;
	}
	t->bytes = t->messages;
	t->end = clock_now();
}

/*
 * memcpy, one process: the payload copied to j->buf over and over for
 * j->slice seconds. The call goes through a volatile pointer so that the
 * compiler cannot drop copies it can see are repeated; the clock is read about
 * every 256 KiB copied. The copy is compared with the payload at the end.
 */
void bench_memcpy(const struct bench_job *j, struct bench_tally *t)
{
	void *(*volatile copy)(void *, const void *, size_t) = memcpy;
	size_t every = j->size >= 256 * KIB ? 1 : 256 * KIB / j->size;
	double end;

	t->start = clock_now();
	end = t->start + j->slice;
	do {
		for (size_t i = 0; i < every; i++)
			copy(j->buf, j->payload, j->size);
		t->messages += every;
		t->bytes += (uint64_t)every * j->size;
	} while ((t->end = clock_now()) < end && !signal_stop);
	if (memcmp(j->buf, j->payload, j->size) != 0) {
		errno = 0; /* the message says it all */
		tally_error(t, "the copy differs from the payload");
	}
}
