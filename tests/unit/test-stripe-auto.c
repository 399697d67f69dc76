/* test-stripe-auto.c: -P auto's decision, tick by tick, and its per-connection window test. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "fastcat.h"
#include "net/net.h"
#include "stripe/stripe.h"
#include "tap.h"

/* A tick of n connections over a 100 ms path: goodput in Mbit/s, and how many are limited. */
static struct auto_sample tick(unsigned n, double mbit, unsigned limited)
{
	return (struct auto_sample){.n = n,
	                            .seconds = 0.3,
	                            .acked = mbit * 1e6 / 8 * 0.3,
	                            .min_rtt_ms = 100,
	                            .limited = limited,
	                            .network_bound = 1};
}

/*
 * The same tick twice: the first is the one before, the second shows that
 * the connections stopped getting faster; returns the second's decision.
 */
static unsigned plateau(struct auto_state *st, const struct auto_sample *a)
{
	stripe_auto_decide(st, a);
	return stripe_auto_decide(st, a);
}

static void growth_path(void)
{
	struct auto_state st = {0};
	struct auto_sample a = tick(1, 220, 1);

	tap_ok(stripe_auto_decide(&st, &a) == 0 && !st.settled,
	       "the first tick: nothing before it to say it stopped getting faster");
	tap_ok(stripe_auto_decide(&st, &a) == 9,
	       "one window-limited connection at 220 Mbit/s: 10 carry 2 Gbit/s, 9 more (%s)",
	       st.why);
	a = tick(10, 230, 0);
	tap_ok(stripe_auto_decide(&st, &a) == 0,
	       "a tick of slow start for the new ones: not judged");
	tap_ok(stripe_auto_decide(&st, &a) == 0 && !st.settled,
	       "under 10 %% more on the first judged tick: one more chance");
	a = tick(10, 700, 10);
	tap_ok(stripe_auto_decide(&st, &a) == 0 && !st.settled,
	       "it helped, but 700 after 230 still climbs: wait");
	a = tick(10, 720, 10);
	tap_ok(stripe_auto_decide(&st, &a) == 6,
	       "10 at a plateau (720 after 700): double, but only to the most, 16 (%s)", st.why);
	st.skip = 0;
	/* the goodput before is over two ticks, (700 + 720) / 2 = 710: 750 is 5.6 % more */
	a = tick(16, 750, 16);
	tap_ok(stripe_auto_decide(&st, &a) == 0 && !st.settled,
	       "+5.6 %%: one more tick to show it");
	tap_ok(stripe_auto_decide(&st, &a) == 0 && st.settled,
	       "+5.6 %% over both ticks: settled at 16 (%s)", st.why);
	a = tick(8, 100, 8);
	tap_ok(stripe_auto_decide(&st, &a) == 0, "settled: it never grows again");
	memset(&st, 0, sizeof st);
	st.sized = 1;
	a = tick(4, 500, 4);
	stripe_auto_decide(&st, &a);
	tap_ok(stripe_auto_decide(&st, &a) == 4,
	       "4 at a plateau after the sized step, all held back: double to 8");
	memset(&st, 0, sizeof st);
	stripe_auto_decide(&st, &a);
	tap_ok(stripe_auto_decide(&st, &a) == 12,
	       "4 at a plateau (opened at once) at 125 Mbit/s each: the sized step, to 16 (%s)",
	       st.why);
}

/*
 * Recorded paths (the figures a tick of the lab gave, rounded). A 20 ms, 2 Gbit/s path: one
 * connection's 4 MiB window carries 1.1 Gbit/s; its bursts queue at the bottleneck for a
 * moment, so the smoothed RTT is 33 % over the minimum, but its low edge (less the mean
 * deviation) only 2.6 ms: no queue stands, the first step goes to 4.
 */
static void short_path_jitter(void)
{
	struct auto_state st = {0};
	struct auto_sample a = tick(1, 1100, 1);

	a.min_rtt_ms = 20;
	a.rtt_ms = 26.6;
	a.rttvar_ms = 4;
	tap_ok(plateau(&st, &a) == 3 && !st.settled,
	       "20 ms, bursts of one window: 4 connections (%s)", st.why);
	memset(&st, 0, sizeof st);
	a.rttvar_ms = 0.5;
	tap_ok(plateau(&st, &a) == 0 && st.settled,
	       "the same RTT with no deviation: a queue stands, settled (%s)", st.why);
	memset(&st, 0, sizeof st);
	a.rtt_ms = 21.5;
	a.rttvar_ms = 0;
	tap_ok(plateau(&st, &a) == 3, "1.5 ms over 20: host jitter, not a queue");
}

/*
 * A 300 ms path, MTU 1500: slow start takes about 8 round trips (3 ticks of 0.9 s) before
 * one connection fills its window; then 70 Mbit/s each: 16, the most, carry 2 Gbit/s.
 */
static void long_path_slow_start(void)
{
	static const struct {
		double mbit;
		unsigned limited;
		unsigned want;
	} ticks[] = {{2, 0, 0},
	             {9, 0, 0},
	             {35, 0, 0},
	             {70, 1, 0},
	             {72, 1, 15}}; /* one tick at the window: the peer's, still growing */
	struct auto_state st = {0};
	unsigned i;

	for (i = 0; i < sizeof ticks / sizeof ticks[0]; i++) {
		struct auto_sample a = tick(1, ticks[i].mbit, ticks[i].limited);

		a.seconds = 0.9;
		a.acked = ticks[i].mbit * 1e6 / 8 * 0.9;
		a.min_rtt_ms = 300;
		a.rtt_ms = 302;
		if (stripe_auto_decide(&st, &a) != ticks[i].want)
			break;
	}
	tap_ok(i == sizeof ticks / sizeof ticks[0],
	       "300 ms: waits out slow start, then 15 more at once (tick %u: %s)", i, st.why);
	tap_ok(stripe_auto_interval(300) > 0.89 && stripe_auto_interval(300) < 0.91,
	       "300 ms: a tick is 0.9 s");
}

/* A 2 ms path that one connection fills: never held by its window; loss with a queue. */
static void one_fills(void)
{
	struct auto_state st = {0};
	struct auto_sample a = tick(1, 940, 0);

	a.min_rtt_ms = 2;
	a.rtt_ms = 9;
	for (int i = 0; i < 20; i++)
		if (stripe_auto_decide(&st, &a) != 0)
			break;
	tap_ok(!st.settled && st.why[0] == '\0',
	       "2 ms at the link's rate, not window-limited: stays at 1, says nothing");
	a.retransmits = 40;
	a.rttvar_ms = 1;
	tap_ok(stripe_auto_decide(&st, &a) == 0 && st.settled,
	       "2 ms, losses with a queue standing 6 ms: congestion, settled at 1 (%s)", st.why);
}

/* A lossy 100 ms path: random loss keeps each window small, no queue stands. */
static void lossy(void)
{
	struct auto_state st = {0};
	struct auto_sample a = tick(1, 60, 0);
	char said[160];

	a.retransmits = 30;
	a.rtt_ms = 101;
	a.rttvar_ms = 0.5;
	tap_ok(plateau(&st, &a) == 15,
	       "random loss at 60 Mbit/s, no queue: more connections, 16 for 2 Gbit/s (%s)",
	       st.why);
	stripe_auto_decision(&st, 16, said, sizeof said);
	tap_ok(strstr(said, "had grown to 16 connections") != NULL, "the hint's words: %s", said);
	memset(&st, 0, sizeof st);
	stripe_auto_decision(&st, 1, said, sizeof said);
	tap_ok(strstr(said, "kept 1 connection") != NULL, "never grew: %s", said);
	a.min_rtt_ms = 0.04;
	stripe_auto_decide(&st, &a);
	stripe_auto_decision(&st, 1, said, sizeof said);
	tap_ok(strstr(said, "settled at 1 connection: a round trip under 1 ms") != NULL,
	       "settled: why (%s)", said);
}

static void holds(void)
{
	struct auto_state st = {0};
	struct auto_sample a = tick(1, 3000, 1);

	a.min_rtt_ms = 0.04;
	tap_ok(stripe_auto_decide(&st, &a) == 0 && st.settled,
	       "loopback (RTT 40 us): settled at 1 at once (%s)", st.why);
	memset(&st, 0, sizeof st);
	a = tick(1, 50, 1);
	a.network_bound = 0;
	tap_ok(stripe_auto_decide(&st, &a) == 0 && !st.settled,
	       "stdin ran dry more than the connections filled: wait");
	a = tick(4, 300, 1);
	st.sized = 1;
	tap_ok(stripe_auto_decide(&st, &a) == 0, "1 of 4 limited, no loss: the path sets the pace");
	a.retransmits = 12;
	tap_ok(stripe_auto_decide(&st, &a) == 4, "losing packets, no queue: double");
	memset(&st, 0, sizeof st);
	a = tick(8, 900, 8);
	a.rtt_ms = 160;
	tap_ok(plateau(&st, &a) == 0 && st.settled,
	       "limited, but a queue of 60 ms stands: the path is full (%s)", st.why);
	memset(&st, 0, sizeof st);
	a.rtt_ms = NAN;
	tap_ok(plateau(&st, &a) == 8, "no smoothed RTT: judged by the rest");
	memset(&st, 0, sizeof st);
	a = tick(16, 900, 16);
	tap_ok(plateau(&st, &a) == 0 && st.settled, "16: the most it opens");
	memset(&st, 0, sizeof st);
	a = tick(14, 900, 14);
	tap_ok(plateau(&st, &a) == 2, "14: only 2 more, to 16");
	memset(&st, 0, sizeof st);
	a = tick(1, 220, 1);
	a.min_rtt_ms = NAN;
	tap_ok(plateau(&st, &a) == 9, "no min_rtt (old kernel): judged by the rest");
	tap_ok(stripe_auto_interval(100) > 0.29 && stripe_auto_interval(100) < 0.31,
	       "a tick is 3 round trips");
	tap_ok(stripe_auto_interval(0.05) == 0.1 && stripe_auto_interval(5000) == 2.0 &&
	           stripe_auto_interval(NAN) == 0.25,
	       "ticks: 0.1 s to 2 s, 0.25 s while the RTT is unknown");
	tap_ok(path_conns_for(0, 4, 16) == 16 && path_conns_for(PATH_AIM, 4, 16) == 4 &&
	           path_conns_for(PATH_AIM / 7.5, 1, 16) == 8 &&
	           path_conns_for(PATH_AIM / 7, 1, 16) == 7,
	       "path_conns_for: PATH_AIM over the rate, rounded up, within its bounds");
}

/* One connection over 0.3 s at 100 ms: goodput in Mbit/s against its buffers. */
static int limited(double mbit, int sndbuf, double ceiling, double snd_wnd, double rwnd_s)
{
	struct tcp_stats before = {0}, now = {0};

	now.min_rtt_ms = 100;
	now.bytes_acked = mbit * 1e6 / 8 * 0.3;
	now.snd_wnd_bytes = snd_wnd;
	now.rwnd_limited_s = rwnd_s;
	return stripe_auto_conn_limited(&(struct auto_conn){&now, &before, 0.3, sndbuf, ceiling});
}

/* The same on a full 4 MiB buffer, with its smoothed RTT and congestion window. */
static int limited_cwnd(double mbit, double rtt_ms, double cwnd)
{
	struct tcp_stats before = {0}, now = {0};

	now.min_rtt_ms = 100;
	now.rtt_ms = rtt_ms;
	now.cwnd_bytes = cwnd;
	now.bytes_acked = mbit * 1e6 / 8 * 0.3;
	now.snd_wnd_bytes = 6e6;
	return stripe_auto_conn_limited(&(struct auto_conn){&now, &before, 0.3, 4194304, 4194304});
}

static void windows(void)
{
	/* 4 MiB at 100 ms allow 335 Mbit/s */
	tap_ok(limited(220, 4194304, 4194304, 6e6, 0), "220 Mbit/s on a full 4 MiB send buffer");
	tap_ok(!limited(100, 4194304, 4194304, 6e6, 0), "100 Mbit/s: under half, the path's doing");
	tap_ok(!limited(5, 65536, 4194304, 6e6, 0), "slow start: a small buffer still growing");
	tap_ok(limited(30, 4194304, 4194304, 512e3, 0.2),
	       "the peer's 512 KB window, stalled 2/3 of the tick");
	tap_ok(!limited(30, 1048576, 4194304, 512e3, 0.01),
	       "a small window that did not stall it, a buffer still growing: neither");
	tap_ok(limited(220, 4194304, 4194304, NAN, 0), "no snd_wnd (kernel < 5.4): the buffer");
	tap_ok(!limited_cwnd(220, 110, 3.2e6),
	       "220 Mbit/s at 110 ms is 3.0 MB in flight, its 3.2 MB cwnd full: the path's pace");
	tap_ok(limited_cwnd(220, 110, 8.4e6),
	       "the same with an 8.4 MB cwnd: the window held it back");
	tap_ok(limited_cwnd(220, NAN, 3.2e6), "no smoothed RTT: the window test alone");
}

/*
 * The first tick on a 200 ms path, before the connection carried anything: a 4 MiB send
 * buffer carries 168 Mbit/s at most there, so it opens the 12 that would carry 2 Gbit/s;
 * what those carry then sizes the next step.
 */
static void early(void)
{
	struct auto_state st = {0};
	struct auto_sample a = tick(1, 3, 0);

	a.min_rtt_ms = 200;
	a.window_most = 4194304;
	tap_ok(stripe_auto_decide(&st, &a) == 11 && strstr(st.why, "at once") != NULL,
	       "200 ms, 4 MiB: 11 more at once (%s)", st.why);
	a = tick(8, 400, 8);
	a.min_rtt_ms = 200;
	a.window_most = 4194304;
	tap_ok(stripe_auto_decide(&st, &a) == 0, "only once, and not judged: the 8 ramp up");
	tap_ok(stripe_auto_decide(&st, &a) == 8,
	       "8 at a plateau, 50 Mbit/s each: 40 would carry 2 Gbit/s, 8 more to 16 (%s)",
	       st.why);
	memset(&st, 0, sizeof st);
	a = tick(1, 3, 0);
	a.min_rtt_ms = 50;
	a.window_most = 4194304;
	tap_ok(stripe_auto_decide(&st, &a) == 2, "50 ms: 671 Mbit/s at most, 3 carry 2 Gbit/s");
	memset(&st, 0, sizeof st);
	a.min_rtt_ms = 20;
	tap_ok(stripe_auto_decide(&st, &a) == 0 && st.looked,
	       "20 ms: 1.7 Gbit/s at most, one may fill the link: it waits to see");
	memset(&st, 0, sizeof st);
	a.min_rtt_ms = 200;
	a.network_bound = 0;
	tap_ok(stripe_auto_decide(&st, &a) == 0, "200 ms but stdin sets the pace: none");
	memset(&st, 0, sizeof st);
	a = tick(1, 3, 0);
	a.min_rtt_ms = NAN;
	a.window_most = 4194304;
	tap_ok(stripe_auto_decide(&st, &a) == 0 && !st.looked,
	       "no round trip yet: it looks at the next tick");
}

/* One connection held back by its window: does that window still grow? */
static int at_ceiling(int sndbuf, double snd_wnd, double snd_wnd_before)
{
	struct tcp_stats before = {0}, now = {0};

	now.min_rtt_ms = 100;
	now.bytes_acked = 220e6 / 8 * 0.3;
	now.snd_wnd_bytes = snd_wnd;
	now.rwnd_limited_s = 0.2;
	before.snd_wnd_bytes = snd_wnd_before;
	return stripe_auto_conn_at_ceiling(
	    &(struct auto_conn){&now, &before, 0.3, sndbuf, 4194304});
}

static void ceilings(void)
{
	struct auto_state st = {0};
	struct auto_sample a = tick(1, 100, 1);

	tap_ok(at_ceiling(4194304, 3e6, 3e6), "the peer's window, as large as a tick ago");
	tap_ok(!at_ceiling(4194304, 3e6, 2e6), "the peer's window grew by half: not yet");
	tap_ok(!at_ceiling(4194304, 3e6, 0), "no window a tick ago (a new connection): not yet");
	tap_ok(at_ceiling(4194304, 6e6, 3e6), "the send buffer, at tcp_wmem's most, the smaller");
	tap_ok(!at_ceiling(1048576, 6e6, 6e6), "a send buffer still growing, the smaller");
	stripe_auto_decide(&st, &a);
	a = tick(1, 200, 1);
	a.at_ceiling = 1;
	tap_ok(stripe_auto_decide(&st, &a) == 9,
	       "twice the last tick, but its window stopped growing: a step now (%s)", st.why);
}

int main(void)
{
	growth_path();
	short_path_jitter();
	long_path_slow_start();
	one_fills();
	lossy();
	holds();
	windows();
	early();
	ceilings();
	return tap_done();
}
