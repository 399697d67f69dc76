/* test-stripe-auto.c: -P auto's decision, tick by tick, and its per-connection window test. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "fastcat.h"
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

static void growth_path(void)
{
	struct auto_state st = {0};
	struct auto_sample a = tick(1, 220, 1);

	tap_ok(stripe_auto_decide(&st, &a) == 3, "one window-limited connection: 3 more (%s)",
	       st.why);
	a = tick(4, 230, 0);
	tap_ok(stripe_auto_decide(&st, &a) == 0,
	       "a tick of slow start for the new ones: not judged");
	tap_ok(stripe_auto_decide(&st, &a) == 0 && !st.settled,
	       "under 10 %% more on the first judged tick: one more chance");
	a = tick(4, 420, 4);
	tap_ok(stripe_auto_decide(&st, &a) == 0 && !st.settled,
	       "+48 %% over the two ticks: it helped, but 420 after 230 still climbs: wait");
	a = tick(4, 440, 4);
	tap_ok(stripe_auto_decide(&st, &a) == 4, "4 at a plateau (440 after 420): double to 8 (%s)",
	       st.why);
	st.skip = 0;
	a = tick(8, 750, 8);
	tap_ok(stripe_auto_decide(&st, &a) == 0, "8: +75 %%, helped, but still climbing");
	a = tick(8, 780, 8);
	tap_ok(stripe_auto_decide(&st, &a) == 4, "8 at a plateau: 4 more, not more than 4");
	st.skip = 0;
	/* the goodput before is over two ticks, (750 + 780) / 2 = 765: 830 is 8.5 % more */
	a = tick(12, 830, 12);
	tap_ok(stripe_auto_decide(&st, &a) == 0 && !st.settled,
	       "+8.5 %%: one more tick to show it");
	tap_ok(stripe_auto_decide(&st, &a) == 0 && st.settled,
	       "+8.5 %% over both ticks: settled at 12 (%s)", st.why);
	a = tick(8, 100, 8);
	tap_ok(stripe_auto_decide(&st, &a) == 0, "settled: it never grows again");
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
	tap_ok(stripe_auto_decide(&st, &a) == 0, "1 of 4 limited, no loss: the path sets the pace");
	a.retransmits = 12;
	tap_ok(stripe_auto_decide(&st, &a) == 4, "losing packets: more connections help");
	memset(&st, 0, sizeof st);
	a = tick(8, 900, 8);
	a.rtt_ms = 160;
	tap_ok(stripe_auto_decide(&st, &a) == 0 && st.settled,
	       "limited, but the RTT 60 %% over its minimum: the path is full (%s)", st.why);
	memset(&st, 0, sizeof st);
	a.rtt_ms = NAN;
	tap_ok(stripe_auto_decide(&st, &a) == 4, "no smoothed RTT: judged by the rest");
	memset(&st, 0, sizeof st);
	a = tick(16, 900, 16);
	tap_ok(stripe_auto_decide(&st, &a) == 0 && st.settled, "16: the most it opens");
	memset(&st, 0, sizeof st);
	a = tick(14, 900, 14);
	tap_ok(stripe_auto_decide(&st, &a) == 2, "14: only 2 more, to 16");
	memset(&st, 0, sizeof st);
	a = tick(1, 220, 1);
	a.min_rtt_ms = NAN;
	tap_ok(stripe_auto_decide(&st, &a) == 3, "no min_rtt (old kernel): judged by the rest");
	tap_ok(stripe_auto_interval(100) > 0.29 && stripe_auto_interval(100) < 0.31,
	       "a tick is 3 round trips");
	tap_ok(stripe_auto_interval(0.05) == 0.1 && stripe_auto_interval(5000) == 2.0 &&
	           stripe_auto_interval(NAN) == 0.25,
	       "ticks: 0.1 s to 2 s, 0.25 s while the RTT is unknown");
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
}

int main(void)
{
	growth_path();
	holds();
	windows();
	return tap_done();
}
