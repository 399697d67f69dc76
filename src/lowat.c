/* lowat.c: fewer wake-ups for a TCP receiver that data queues up for (SO_RCVLOWAT); no stall. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/socket.h>

#include "fastcat.h"

/*
 * Why: on loopback TCP the kernel wakes a waiting receiver for every segment
 * that arrives (about 64 KiB), and each wake-up costs the sending CPU an
 * inter-processor interrupt. With the mark at 1 MiB a 2 GiB transfer woke the
 * receiver 1,200 times instead of 18,000; the receiver's CPU fell from 0.19
 * to 0.11 s/GiB and the pair ran 1.3-1.5x faster (3 Dec 2026, compare.sh,
 * 4 alternating runs of 5 rounds).
 *
 * The kernel wakes a receiver whose mark is set only when that much is
 * queued (or at EOF, an error, or a full window), so a mark would hold back
 * the last bytes of a burst. It goes on only after a read took a whole chunk
 * (data is queuing faster than we wake), and a wait longer than
 * LOWAT_PATIENCE takes it off again: the read then takes whatever is there.
 * A paused sender's last bytes are late by at most that, once.
 */
#define LOWAT_PATIENCE 0.002

static int lowat_set(struct lowat *w, int bytes)
{
	if (setsockopt(w->fd, SOL_SOCKET, SO_RCVLOWAT, &bytes, sizeof bytes) == 0)
		return 0;
	log_verbose("SO_RCVLOWAT %d: %s; waking per arrival", bytes, strerror(errno));
	w->fd = -1; /* this platform or socket has no say in it: never try again */
	return -1;
}

/* fd: the socket, or -1 for a flow this does not apply to; mark 0 = off. */
void lowat_init(struct lowat *w, int fd, size_t mark, size_t chunk)
{
	memset(w, 0, sizeof *w);
	w->fd = mark > 0 ? fd : -1;
	w->mark = mark > INT_MAX ? INT_MAX : (int)mark;
	w->chunk = chunk;
}

/* A read from the socket returned got bytes: a whole chunk says data is queuing. */
void lowat_read(struct lowat *w, size_t got)
{
	w->since = 0;
	if (w->fd < 0 || w->on || got < w->chunk)
		return;
	if (lowat_set(w, w->mark) == 0) {
		w->on = 1;
		if (!w->logged)
			log_verbose("data queues faster than we wake; SO_RCVLOWAT %d while it does",
			            w->mark);
		w->logged = 1;
	}
}

/* A read said EAGAIN: the wait that poll() comes to starts now, if the mark is on. */
void lowat_wait(struct lowat *w, double now)
{
	if (w->on && w->since == 0)
		w->since = now;
}

/* Milliseconds until the mark must come off for the wait to end, or -1. */
long lowat_wait_ms(const struct lowat *w, double now)
{
	double left;

	if (!w->on || w->since == 0)
		return -1;
	left = w->since + LOWAT_PATIENCE - now;
	return left <= 0 ? 0 : (long)(left * 1000) + 1;
}

/* 1 when the wait ran out and the mark is off: read what is there. */
int lowat_expired(struct lowat *w, double now)
{
	if (!w->on || w->since == 0 || now < w->since + LOWAT_PATIENCE)
		return 0;
	w->since = 0;
	w->on = 0;
	lowat_set(w, 1);
	return 1;
}
