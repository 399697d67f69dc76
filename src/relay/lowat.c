/* lowat.c: fewer wake-ups for a TCP receiver that data queues up for (SO_RCVLOWAT); no stall. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/socket.h>

#include "fastcat.h"
#include "relay/flow.h"

/*
 * Why: on loopback TCP the kernel wakes a waiting receiver for every segment
 * that arrives (about 64 KiB), and each wake-up costs the sending CPU an
 * inter-processor interrupt. With the 256 KiB mark, a 2 GiB loopback
 * transfer from a file woke the receiver 3,900 times instead of 19,000, its
 * CPU fell by a third, and the pair took 0.74 s instead of 0.87 s (medians
 * of 8 alternating runs, 3 Dec 2026; a mark of up to 1 MiB did no better).
 * From a pipe (`dd | fastcat`, a sender that copies) the same mark made the
 * transfer 13 % slower (1.32 against 1.17 s, 12 runs), and a 1 MiB one 25 %;
 * the sender's time then goes to tcp_write_xmit. Why is not understood yet.
 *
 * The kernel wakes a receiver whose mark is set only when that much is
 * queued (or at EOF, an error, or a full window), so a mark would hold back
 * the last bytes of a burst. It goes on only after a read took a whole chunk
 * (data is queuing faster than we wake), and a wait longer than
 * LOWAT_PATIENCE takes it off again: the read then takes whatever is there.
 * A paused sender's last bytes are late by at most that, once.
 *
 * Linux grows the receive buffer to fit twice a mark larger than it holds,
 * and clamps the window to the mark: the window then fills before the mark
 * is reached, every time, and the transfer runs stop-and-go at half speed
 * (a quarter of the runs measured, whenever the mark came before autotuning
 * had grown the buffer). So the mark is at most a quarter of the buffer as
 * it is, and raised towards --rcvlowat as autotuning grows the buffer,
 * looked at every LOWAT_RECHECK whole reads; below LOWAT_MIN it is not worth
 * a system call.
 */
#define LOWAT_PATIENCE 0.002
#define LOWAT_RECHECK  16
#define LOWAT_MIN      (128 * 1024)

static int lowat_set(struct lowat *w, int bytes)
{
	if (setsockopt(w->fd, SOL_SOCKET, SO_RCVLOWAT, &bytes, sizeof bytes) == 0)
		return 0;
	log_verbose("SO_RCVLOWAT %d: %s; waking per arrival", bytes, strerror(errno));
	w->fd = -1; /* this platform or socket has no say in it: never try again */
	return -1;
}

/* The mark the receive buffer has room for now: --rcvlowat, or a quarter of the buffer. */
static int lowat_fitting(struct lowat *w)
{
	int rcvbuf = 0;
	socklen_t len = sizeof rcvbuf;

	if (getsockopt(w->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, &len) != 0) {
		w->fd = -1; /* as for a refused mark: never try again */
		return 0;
	}
	return rcvbuf / 4 < w->mark ? rcvbuf / 4 : w->mark;
}

/* fd: the socket, or -1 for a flow this does not apply to; mark 0 = off. */
void lowat_init(struct lowat *w, int fd, size_t mark, size_t chunk)
{
	memset(w, 0, sizeof *w);
	w->fd = mark > 0 ? fd : -1;
	w->mark = mark > INT_MAX ? INT_MAX : (int)mark;
	w->chunk = chunk;
}

/*
 * A read from the socket returned got bytes: a whole chunk says data is
 * queuing, so the mark goes on, or up if the buffer has grown since.
 */
void lowat_read(struct lowat *w, size_t got)
{
	int fit;

	w->since = 0;
	if (w->fd < 0 || got < w->chunk || w->set == w->mark)
		return;
	if (w->skip > 0) {
		w->skip--;
		return;
	}
	w->skip = LOWAT_RECHECK;
	fit = lowat_fitting(w);
	if (fit <= w->set || (fit < w->mark && fit < LOWAT_MIN) || lowat_set(w, fit) != 0)
		return;
	if (w->set == 0 && !w->logged)
		log_verbose("data queues faster than we wake; SO_RCVLOWAT %d while it does", fit);
	w->logged = 1;
	w->set = fit;
}

/* The mark is set (to w->set bytes). */
int lowat_on(const struct lowat *w)
{
	return w->set != 0;
}

/* A read said EAGAIN: the wait that poll() comes to starts now, if the mark is on. */
void lowat_wait(struct lowat *w, double now)
{
	if (lowat_on(w) && w->since == 0)
		w->since = now;
}

/* Milliseconds until the mark must come off for the wait to end, or -1. */
long lowat_wait_ms(const struct lowat *w, double now)
{
	double left;

	if (!lowat_on(w) || w->since == 0)
		return -1;
	left = w->since + LOWAT_PATIENCE - now;
	return left <= 0 ? 0 : (long)(left * 1000) + 1;
}

/* 1 when the wait ran out and the mark is off: read what is there. */
int lowat_expired(struct lowat *w, double now)
{
	if (!lowat_on(w) || w->since == 0 || now < w->since + LOWAT_PATIENCE)
		return 0;
	w->since = 0;
	w->set = 0;
	w->skip = 0; /* the next whole read may set it again at once */
	lowat_set(w, 1);
	return 1;
}
