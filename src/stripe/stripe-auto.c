/*
 * stripe-auto.c: -P auto's decision, from what the connections did since
 * the last tick (pure; stripe-grow.c gathers the figures, tests/unit checks
 * the rules). It opens 3 more connections, then doubles them (4 more at
 * most a step) each time those it has stopped getting faster, while half
 * of them or more are held back by their windows (or lose packets, which
 * more connections make up for too) and the last step raised the goodput
 * by 10 % or more, up to STRIPE_AUTO_MAX; then it settles for good.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>

#include "fastcat.h"
#include "stripe/stripe.h"

/*
 * Below this round trip the path is a LAN or loopback, where one
 * connection's window fills any link: 4 MiB a millisecond is 33 Gbit/s.
 */
#define AUTO_MIN_RTT_MS 1.0
#define AUTO_GAIN       1.10 /* what the last step must have raised the goodput by */
#define AUTO_STEP_MAX   4    /* connections one step opens at most */
#define AUTO_QUEUE_RTT  1.25 /* smoothed RTT over the minimum that says a queue builds */

/*
 * Seconds between ticks: long enough for a new connection's handshake and
 * slow start to show in the goodput (a few round trips), short enough to
 * grow within seconds on a long path.
 */
double stripe_auto_interval(double min_rtt_ms)
{
	double s = isnan(min_rtt_ms) ? 0.25 : 3 * min_rtt_ms / 1000;

	return s < 0.1 ? 0.1 : s > 2.0 ? 2.0 : s;
}

/*
 * One connection was held back by its window, not by the path: its goodput
 * is at least half of what min(SO_SNDBUF, the peer's window) allows at its
 * RTT, and that window is at its ceiling: the send buffer grew as far as
 * autotuning lets it, or the kernel says the peer's window stalled it a
 * quarter of the time. (The kernel's own send-buffer-limited time is no
 * help here: it counts only while cwnd is not the limit, and in slow
 * start, which a lossless path never leaves, cwnd counts as the limit.)
 */
int stripe_auto_conn_limited(const struct auto_conn *c)
{
	const struct tcp_stats *t = c->now;
	double window = c->sndbuf, goodput, rwnd_s;

	if (!(t->min_rtt_ms > 0) || c->seconds <= 0)
		return 0;
	if (t->snd_wnd_bytes < window) /* NAN (not known) compares false */
		window = t->snd_wnd_bytes;
	goodput = (t->bytes_acked - c->before->bytes_acked) / c->seconds;
	rwnd_s = t->rwnd_limited_s - c->before->rwnd_limited_s;
	if (goodput < 0.5 * window / (t->min_rtt_ms / 1000))
		return 0;
	return c->sndbuf >= 0.9 * c->sndbuf_ceiling || rwnd_s >= 0.25 * c->seconds;
}

static unsigned settle(struct auto_state *st, const char *why, unsigned n)
{
	st->settled = 1;
	snprintf(st->why, sizeof st->why, "settled at %u connection%s: %s", n, n == 1 ? "" : "s",
	         why);
	return 0;
}

/* Bytes/s over this tick and the one before: one tick of a few round trips is bursty. */
static double smoothed(const struct auto_state *st, const struct auto_sample *a)
{
	double s = a->seconds + st->prev_s;

	return s > 0 ? (a->acked + st->prev_acked) / s : 0;
}

/*
 * Did the last step help? The goodput since the new connections had their
 * ramp-up ticks, against the goodput before the step. 1: it did, 0: wait a
 * tick more, -1: it did not (st->why says so).
 */
static int judged(struct auto_state *st, const struct auto_sample *a)
{
	double now;

	st->acc_acked += a->acked;
	st->acc_s += a->seconds;
	now = st->acc_s > 0 ? st->acc_acked / st->acc_s : 0;
	if (now >= AUTO_GAIN * st->goodput) {
		st->judging = 0;
		st->acc_acked = st->acc_s = 0;
		return 1;
	}
	/* new connections may still be in slow start: one more tick before it gives up */
	if (st->judging++ < 2)
		return 0;
	snprintf(st->why, sizeof st->why,
	         "settled at %u connections: goodput %.0f -> %.0f Mbit/s, less than 10 %% more",
	         a->n, st->goodput * 8 / 1e6, now * 8 / 1e6);
	st->settled = 1;
	return -1;
}

static unsigned decide(struct auto_state *st, const struct auto_sample *a)
{
	unsigned add;

	if (st->settled)
		return 0;
	if (a->min_rtt_ms < AUTO_MIN_RTT_MS)
		return settle(st, "a round trip under 1 ms: one connection's window fills the path",
		              a->n);
	if (st->skip > 0) {
		st->skip--;
		return 0;
	}
	if (st->judging && judged(st, a) <= 0)
		return 0;
	if (a->n >= STRIPE_AUTO_MAX)
		return settle(st, "the most -P auto opens", a->n);
	/* stdin or the path sets the pace for now (or slow start goes on): look again next tick */
	if (!a->network_bound || (2 * a->limited < a->n && !(a->retransmits > 0)))
		return 0;
	/*
	 * The connections there are still get faster tick by tick (slow start):
	 * what they add up to is not known yet. Only the first step, which
	 * costs a long path nothing, goes before that.
	 */
	if (a->n > 1 && st->prev_s > 0 && a->seconds > 0 &&
	    a->acked / a->seconds >= AUTO_GAIN * (st->prev_acked / st->prev_s))
		return 0;
	/* a queue builds up on the path: it is full, whatever the windows say */
	if (a->rtt_ms > AUTO_QUEUE_RTT * a->min_rtt_ms) {
		char why[96];

		snprintf(why, sizeof why,
		         "the round trip is %.0f %% over its minimum: the path's queue fills",
		         (a->rtt_ms / a->min_rtt_ms - 1) * 100);
		return settle(st, why, a->n);
	}
	/*
	 * The first step goes to 4: one connection's window is all the first
	 * ticks show, and each step costs three ticks of a long path. Then
	 * doubling, but by 4 at most: past 8, each step overshoots a full path less.
	 */
	add = a->n == 1 ? AUTO_STEP_MAX - 1 : a->n < AUTO_STEP_MAX ? a->n : AUTO_STEP_MAX;
	add = add < STRIPE_AUTO_MAX - a->n ? add : STRIPE_AUTO_MAX - a->n;
	st->goodput = smoothed(st, a);
	snprintf(st->why, sizeof st->why, "%u -> %u connections at %.0f Mbit/s", a->n, a->n + add,
	         st->goodput * 8 / 1e6);
	st->judging = 1;
	st->skip = 1; /* a handshake and slow start: judged over the two ticks after */
	return add;
}

/* How many connections to open now (0: none); st->why says why, for -v. */
unsigned stripe_auto_decide(struct auto_state *st, const struct auto_sample *a)
{
	unsigned add;

	st->why[0] = '\0';
	add = decide(st, a);
	st->prev_acked = a->acked;
	st->prev_s = a->seconds;
	return add;
}
