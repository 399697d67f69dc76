/*
 * stripe-auto.c: -P auto's decision, from what the connections did since
 * the last tick (pure; stripe-grow.c gathers the figures, tests/unit checks
 * the rules). The model (fastcat(1), "-P auto"): a connection held back by
 * its window carries its window per round trip and no more, whatever the
 * path could take; a path is full when a queue stands in it (even the low
 * edge of the round trip sits above its minimum) or when more connections
 * stopped carrying more. So while half of the connections or more are
 * held back by their windows (or lose packets with no queue standing: a
 * random loss, which more connections make up for), it opens more: at
 * once, where the round trip alone says one connection's largest window
 * cannot carry half of PATH_AIM, as many as that bound says; then, once those
 * stopped getting faster, as many as it takes to carry PATH_AIM (2 Gbit/s)
 * at the rate each carried (net/path.c, 4 at least), then doubling, each
 * step judged by the goodput it brought, up to STRIPE_AUTO_MAX; then it
 * settles for good.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>

#include "fastcat.h"
#include "net/net.h"
#include "stripe/stripe.h"

/*
 * Below this round trip the path is a LAN or loopback, where one
 * connection's window fills any link: 4 MiB a millisecond is 33 Gbit/s.
 */
#define AUTO_MIN_RTT_MS 1.0
#define AUTO_GAIN       1.10 /* what the last step must have raised the goodput by */
/*
 * A queue stands when the round trip's low edge (smoothed RTT less its
 * mean deviation) sits this share of the minimum above it, and this many
 * milliseconds: a window-limited connection's bursts queue for a moment
 * at the bottleneck and a busy host adds a few ms; neither fills a path.
 */
#define AUTO_QUEUE_SHARE 0.25
#define AUTO_QUEUE_MS    2.0
#define AUTO_CWND_FULL   0.8 /* in flight over cwnd: the congestion window is the limit */

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
	/*
	 * What it had in flight (goodput times the round trip) filled its
	 * congestion window: the congestion control set its pace, not the window
	 * (cubic after slow start on a full path: the window's rate is only a
	 * bound it has not reached). A window-limited one keeps well under it (a
	 * 4 MiB buffer at 100 ms: 2.9 MB in flight, cwnd 8.4 MB).
	 */
	if (t->cwnd_bytes > 0 && t->rtt_ms > 0 &&
	    goodput * t->rtt_ms / 1000 >= AUTO_CWND_FULL * t->cwnd_bytes)
		return 0;
	return c->sndbuf >= 0.9 * c->sndbuf_ceiling || rwnd_s >= 0.25 * c->seconds;
}

/*
 * Held back by a window that will not grow: the send buffer at its
 * ceiling when it is the smaller, or the peer's window no larger than at
 * the last tick (its autotuning stopped). Such a connection carries no more
 * from now on, so the next step need not wait for a tick that shows it.
 */
int stripe_auto_conn_at_ceiling(const struct auto_conn *c)
{
	double wnd = c->now->snd_wnd_bytes, before = c->before->snd_wnd_bytes;

	if (!stripe_auto_conn_limited(c))
		return 0;
	if (isnan(wnd) || wnd >= c->sndbuf)
		return c->sndbuf >= 0.9 * c->sndbuf_ceiling;
	return before > 0 && wnd <= 1.05 * before;
}

static unsigned settle(struct auto_state *st, const char *why, unsigned n)
{
	st->settled = 1;
	snprintf(st->why, sizeof st->why, "settled at %u connection%s: %s", n, n == 1 ? "" : "s",
	         why);
	snprintf(st->decision, sizeof st->decision, "%s", st->why);
	return 0;
}

/* Milliseconds the round trip's low edge stands above its minimum, 0 when not known. */
static double standing_queue_ms(const struct auto_sample *a)
{
	double low = a->rtt_ms - (a->rttvar_ms > 0 ? a->rttvar_ms : 0);

	return low > a->min_rtt_ms ? low - a->min_rtt_ms : 0; /* NAN compares false */
}

static int queue_stands(const struct auto_sample *a)
{
	double q = standing_queue_ms(a);

	return q > AUTO_QUEUE_MS && q > AUTO_QUEUE_SHARE * a->min_rtt_ms;
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
	snprintf(st->decision, sizeof st->decision, "%s", st->why);
	st->settled = 1;
	return -1;
}

/*
 * The first tick, once the handshake told the round trip: a connection
 * carries at most its largest send buffer per round trip, so where that
 * cannot be half of PATH_AIM (4 MiB over 33 ms) one connection is known to
 * be too few before it has carried anything, and waiting out its slow
 * start (seconds on a long path) to learn how few costs that long at one
 * connection's rate. It opens as many as that bound says, so they
 * slow-start together (opened a step later, bbr's new connections cost the
 * ones running more than they brought: at 200 ms, 8 then 16 read 76 % of
 * -P 16, 12 at once 99 %); what they then carry sizes the next step.
 */
static unsigned early_step(struct auto_state *st, const struct auto_sample *a)
{
	double most = path_window_rate(a->window_most, a->min_rtt_ms);
	unsigned n;

	if (a->n != 1 || !a->network_bound || !(most > 0) || most >= PATH_AIM / 2)
		return 0;
	n = path_conns_for(most, 1, STRIPE_AUTO_MAX);
	snprintf(st->why, sizeof st->why,
	         "1 -> %u connections at once: at a %.0f ms round trip a %.1f MiB send buffer "
	         "carries %.0f Mbit/s at most",
	         n, a->min_rtt_ms, a->window_most / 1048576, most * 8 / 1e6);
	return n - 1;
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
	if (!st->looked && a->min_rtt_ms > 0) {
		st->looked = 1;
		if ((add = early_step(st, a)) > 0)
			return add;
	}
	if (st->judging && judged(st, a) <= 0)
		return 0;
	if (a->n >= STRIPE_AUTO_MAX)
		return settle(st, "the most -P auto opens", a->n);
	/* stdin or the path sets the pace for now (or slow start goes on): look again next tick */
	if (!a->network_bound || (2 * a->limited < a->n && !(a->retransmits > 0)))
		return 0;
	/*
	 * The connections there are still get faster tick by tick (slow start,
	 * or the peer's window still growing: at the first ticks one connection
	 * can look held back by it at 2 Mbit/s): what they carry is not known
	 * yet, and the next step is sized by it. So it waits for a tick that
	 * carried no more than 10 % over the one before, or for half of them
	 * held back by windows that stopped growing, which says the same a
	 * tick sooner (three round trips: 0.6 s at 200 ms).
	 */
	if (!(st->prev_s > 0) || !(a->seconds > 0) ||
	    (a->acked / a->seconds >= AUTO_GAIN * (st->prev_acked / st->prev_s) &&
	     2 * a->at_ceiling < a->n))
		return 0;
	if (queue_stands(a)) {
		char why[128];

		snprintf(why, sizeof why,
		         "a queue stands in the path: the round trip stays %.1f ms over its "
		         "minimum of %.1f ms",
		         standing_queue_ms(a), a->min_rtt_ms);
		return settle(st, why, a->n);
	}
	st->goodput = smoothed(st, a);
	/* one connection's rate: this tick's, as the one before may be slow start's */
	add = st->sized++ ? a->n
	                  : path_conns_for(a->acked / a->seconds / a->n, PATH_CONNS_FIRST,
	                                   STRIPE_AUTO_MAX) -
	                        a->n;
	add = add < STRIPE_AUTO_MAX - a->n ? add : STRIPE_AUTO_MAX - a->n;
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

/*
 * What -P auto decided, for the exit hint: why it settled, or where it stood
 * when the data ended first.
 */
void stripe_auto_decision(const struct auto_state *st, unsigned n, char *out, size_t len)
{
	if (st->settled)
		snprintf(out, len, "%s", st->decision);
	else if (n <= 1)
		snprintf(out, len,
		         "kept 1 connection: its window never held it back while stdin kept it "
		         "busy, so more would not carry more");
	else
		snprintf(out, len,
		         "had grown to %u connections and was still growing when the data "
		         "ended",
		         n);
}
