/*
 * hint.c: what limited a transfer, named from its TCP figures at the end (-v prints it), and
 * what the cap of a capped -O/-I means at the measured RTT. Pure: the caller reads TCP_INFO
 * and the sysctls; tests/unit/test-hint.c runs a table of figures through hint_choose.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>

#include "fastcat.h"
#include "net/net.h"
#include "report/report.h"

/*
 * The thresholds (fastcat(1), "What limited the transfer", lists them). A send shorter than
 * HINT_MIN_SECONDS gets no hint: the kernel counts busy time in jiffies, and a short run is
 * mostly slow start. A buffer is named when the kernel says it held the connection back for
 * HINT_LIMITED_SHARE of the time it was busy; the source when the connection had data to send
 * for less than HINT_BUSY_SHARE of the time this end sent; loss when at least HINT_LOSS_MIN
 * segments, and HINT_LOSS_SHARE of those sent, went again, and the loss cost something: 0.01 %
 * is already a limit on a long path: by Mathis' formula (MSS / RTT x 1.22 / sqrt(p)), at 100 ms
 * and 1448-byte segments, a loss-based algorithm gets at most about 140 Mbit/s; but 3 segments
 * of 16,000 at a 0.04 ms round trip allow terabits, and a connection that ran at under
 * HINT_LOSS_COST of that bound was held back by something else. -P is suggested only on a path
 * of HINT_SHORT_MS or more: below it one connection's window fills the path (what -P auto
 * decides there too).
 *
 * The kernel's send-buffer time is a floor, not a measure: it starts only when a send is cut
 * short by a full buffer while every byte queued is already in flight, and stops once a third
 * of the buffer is free (tcp_cwnd_validate, tcp_check_space). A writer whose sends fit the room
 * that poll() reported is never counted, and over a 2 x 20 ms lab a 256 KiB tcp_wmem cap read
 * 0 s of 2.5 s busy. So the windows are also compared: a connection whose congestion window
 * outgrew SO_SNDBUF and that moved HINT_CAP_LOW..HINT_CAP_HIGH of SO_SNDBUF per RTT was held by
 * its buffer; one that moved under HINT_CAP_LOW of what its smaller window carries per RTT
 * waited for its source (a steady slow source keeps data in flight, so it is never idle).
 */
#define HINT_MIN_SECONDS   0.5
#define HINT_LIMITED_SHARE 0.30
#define HINT_BUSY_SHARE    0.50
#define HINT_LOSS_SHARE    0.0001
#define HINT_LOSS_MIN      3
#define HINT_LOSS_COST     0.25
#define HINT_SHORT_MS      1.0
#define HINT_CAP_LOW       0.5
#define HINT_CAP_HIGH      1.5
#define HINT_MSS_GUESS     1448.0 /* bytes a segment when TCP_INFO does not say */

/* a / b, or 0 when either is unknown or b is not positive */
static double fraction(double a, double b)
{
	return isnan(a) || isnan(b) || b <= 0 ? 0 : a / b;
}

/* Segments this end sent, about: the bytes over the segment size. */
static double segments_sent(const struct hint_input *in)
{
	double mss = in->tcp->mss > 0 ? in->tcp->mss : HINT_MSS_GUESS;

	return (double)in->bytes / mss;
}

/* The connections this end sent over (-P), at least 1: the stats add their windows. */
static double streams_of(const struct hint_input *in)
{
	return in->streams > 1 ? in->streams : 1;
}

/* Bytes one connection moved per rtt_ms while it was busy; 0 when a figure is missing. */
static double bytes_per_rtt(const struct hint_input *in, double rtt_ms)
{
	const struct tcp_stats *t = in->tcp;
	double busy = t->busy_s > 0 ? t->busy_s : in->seconds;

	return fraction((double)in->bytes / streams_of(in), busy) * fraction(rtt_ms, 1000);
}

/* The path's own RTT: the minimum seen, or the smoothed one when the kernel has no minimum. */
static double path_rtt(const struct tcp_stats *t)
{
	return t->min_rtt_ms > 0 ? t->min_rtt_ms : t->rtt_ms;
}

/* A path long enough that more connections carry more (-P); below, one window fills it. */
static int long_path(const struct tcp_stats *t)
{
	return path_rtt(t) >= HINT_SHORT_MS;
}

/* One connection's congestion window in bytes; 0 when TCP_INFO did not say. */
static double cwnd_of(const struct hint_input *in)
{
	return fraction(in->tcp->cwnd_bytes, streams_of(in));
}

/* The kernel counted the send buffer (or the peer's window) for most of the busy time. */
static int kernel_limited(double limited_s, const struct tcp_stats *t)
{
	return fraction(limited_s, t->busy_s) >= HINT_LIMITED_SHARE;
}

/* The connection had data to send for less than half the time this end sent. */
static int mostly_idle(const struct hint_input *in)
{
	return !isnan(in->tcp->busy_s) && in->tcp->busy_s < HINT_BUSY_SHARE * in->seconds;
}

/*
 * The congestion window outgrew SO_SNDBUF, and about SO_SNDBUF crossed per RTT: at least half
 * of it per smoothed RTT, at most one and a half per minimum RTT (the smoothed RTT at exit
 * swings with the queue: 80 ms on a 40 ms lab whose host was busy).
 */
static int buffer_bound(const struct hint_input *in)
{
	const struct tcp_stats *t = in->tcp;
	double buf = in->sndbuf;

	return buf > 0 && cwnd_of(in) > buf && bytes_per_rtt(in, t->rtt_ms) >= HINT_CAP_LOW * buf &&
	       bytes_per_rtt(in, path_rtt(t)) <= HINT_CAP_HIGH * buf;
}

/*
 * Under half of what the smaller of cwnd and SO_SNDBUF carries crossed per RTT, on a path long
 * enough that a window per RTT means something (at 0.04 ms, 2 MB per RTT is 50 GB/s).
 */
static int window_unused(const struct hint_input *in)
{
	double cwnd = cwnd_of(in), win = in->sndbuf > 0 && in->sndbuf < cwnd ? in->sndbuf : cwnd;
	double per_rtt = bytes_per_rtt(in, in->tcp->rtt_ms);

	return long_path(in->tcp) && win > 0 && per_rtt > 0 && per_rtt < HINT_CAP_LOW * win;
}

/*
 * The connection ran at HINT_LOSS_COST or more of what its loss rate p allows a loss-based
 * window at the path's RTT (Mathis et al.); a figure it lacks keeps the loss in the running.
 */
static int loss_cost(const struct hint_input *in, double p)
{
	const struct tcp_stats *t = in->tcp;
	double mss = t->mss > 0 ? t->mss : HINT_MSS_GUESS, rtt = path_rtt(t);
	double busy = t->busy_s > 0 ? t->busy_s : in->seconds;
	double rate = fraction((double)in->bytes / streams_of(in), busy);

	double allowed = HINT_LOSS_COST * mss / (rtt / 1000) * 1.22; /* ... over sqrt(p) */

	if (!(p > 0) || !(rtt > 0) || !(rate > 0))
		return 1;
	return rate * rate * p >= allowed * allowed; /* rate >= allowed / sqrt(p), without libm */
}

/* Enough segments went again, a large enough share of those sent, and it cost something. */
static int lossy(const struct hint_input *in)
{
	const struct tcp_stats *t = in->tcp;
	double p = fraction(t->retransmits, segments_sent(in));

	return t->retransmits >= HINT_LOSS_MIN && p >= HINT_LOSS_SHARE && loss_cost(in, p);
}

/*
 * The one limit to name, in this order: what the kernel counted against a buffer (it is the
 * fix), a connection that mostly had nothing to send (then nothing in the network matters), a
 * congestion window larger than the send buffer that ran at the buffer's rate (loss cannot have
 * kept a window small that the buffer never let fill), loss, and last a busy connection that
 * used under half its window (its source was slow but steady). HINT_NONE: too little to tell,
 * or nothing but the path's own rate.
 */
enum hint hint_choose(const struct hint_input *in)
{
	const struct tcp_stats *t = in->tcp;

	if (t == NULL || !t->valid || in->bytes == 0 || in->seconds < HINT_MIN_SECONDS)
		return HINT_NONE;
	if (kernel_limited(t->sndbuf_limited_s, t))
		return HINT_SNDBUF;
	if (kernel_limited(t->rwnd_limited_s, t))
		return HINT_RWND;
	if (mostly_idle(in))
		return HINT_SOURCE;
	if (buffer_bound(in))
		return HINT_SNDBUF;
	if (lossy(in))
		return HINT_LOSS;
	if (window_unused(in))
		return HINT_SOURCE;
	return HINT_NONE;
}

/* "40.0 MiB/s (0.336 Gbit/s)": the most bytes a window of this size moves in one RTT. */
static void format_window_rate(char *out, size_t len, double window, double rtt_ms)
{
	double rate = path_window_rate(window, rtt_ms);
	char bytes[32];

	units_format_bytes((uint64_t)rate, bytes, sizeof bytes);
	snprintf(out, len, "%s/s (%.3f Gbit/s)", bytes, rate * 8 / 1e9);
}

/*
 * What more connections would do, for a hint that names a window or loss: with -P auto, what
 * it decided (the hint and the decision speak of the same connections); alone, the -P that
 * -P auto would open at this connection's rate (net/path.c); with a fixed -P N,
 * more than N. Nothing on a path under HINT_SHORT_MS, where one window fills any link.
 */
static void format_more_conns(char *out, size_t len, const struct hint_input *in)
{
	const struct tcp_stats *t = in->tcp;
	double busy = t->busy_s > 0 ? t->busy_s : in->seconds;

	if (in->auto_decision != NULL)
		snprintf(out, len, "; -P auto %s", in->auto_decision);
	else if (!long_path(t))
		snprintf(out, len, "%s", "");
	else if (in->streams > 1)
		snprintf(out, len, "; try more connections than -P %u", in->streams);
	else
		snprintf(out, len, "; try -P %u (-P auto's step at this rate)",
		         path_conns_for(fraction((double)in->bytes, busy), PATH_CONNS_FIRST,
		                        PATH_CONNS_MAX));
}

/* How the send buffer held the connection back: the kernel's share, or the windows compared. */
static void format_sndbuf(char *out, size_t len, const struct hint_input *in)
{
	const struct tcp_stats *t = in->tcp;
	char how[160], cap[160] = "", more[224];

	if (kernel_limited(t->sndbuf_limited_s, t)) {
		snprintf(how, sizeof how, "back %.0f %% of the time it was busy",
		         100 * fraction(t->sndbuf_limited_s, t->busy_s));
	} else {
		char cwnd[32];

		units_format_bytes((uint64_t)cwnd_of(in), cwnd, sizeof cwnd);
		snprintf(
		    how, sizeof how,
		    "back (its congestion window, %s, outgrew it, and one buffer crossed per RTT)",
		    cwnd);
	}
	if (in->sndbuf > 0 && t->rtt_ms > 0) {
		char size[32], rate[64];

		units_format_bytes((uint64_t)in->sndbuf, size, sizeof size);
		format_window_rate(rate, sizeof rate, in->sndbuf, t->rtt_ms);
		snprintf(cap, sizeof cap,
		         ": SO_SNDBUF %s at rtt %.*f ms carries at most %s on one connection", size,
		         t->rtt_ms < 1 ? 3 : 1, t->rtt_ms, rate);
	}
	format_more_conns(more, sizeof more, in);
	snprintf(out, len,
	         "the send buffer held the connection %s%s; raise net.ipv4.tcp_wmem (now %s) or "
	         "-O%s",
	         how, cap, in->wmem != NULL ? in->wmem : "unknown", more);
}

/* How the source held the connection back: idle most of the time, or its window mostly unused. */
static void format_source(char *out, size_t len, const struct hint_input *in)
{
	const struct tcp_stats *t = in->tcp;
	double busy = fraction(t->busy_s, in->seconds);
	char how[160];

	if (mostly_idle(in)) {
		snprintf(how, sizeof how, "had data to send %s%.0f %% of the %.1f s",
		         busy < 0.01 ? "under " : "only ", busy < 0.01 ? 1 : 100 * busy,
		         in->seconds);
	} else {
		char rate[64];

		format_window_rate(rate, sizeof rate, bytes_per_rtt(in, t->rtt_ms), t->rtt_ms);
		snprintf(
		    how, sizeof how,
		    "carried %s while busy, under half of what its window allowed at rtt %.1f ms",
		    rate, t->rtt_ms);
	}
	snprintf(out, len,
	         "the connection %s: the source (stdin) was slower than the network, so the pipe "
	         "was not the bottleneck",
	         how);
}

/* One line for the hint chosen (without "fastcat: hint: "); empty for HINT_NONE. */
void hint_format(char *out, size_t len, enum hint h, const struct hint_input *in)
{
	const struct tcp_stats *t = in->tcp;
	double segs = segments_sent(in);
	char more[224];

	format_more_conns(more, sizeof more, in);
	switch (h) {
	case HINT_NONE: snprintf(out, len, "%s", ""); break;
	case HINT_SNDBUF: format_sndbuf(out, len, in); break;
	case HINT_RWND:
		snprintf(out, len,
		         "the peer's receive window held the connection back %.0f %% of the time "
		         "it was busy; raise net.ipv4.tcp_rmem at the peer (here %s) or give it -I "
		         "(or the peer's stdout was slow to take the data)",
		         100 * fraction(t->rwnd_limited_s, t->busy_s),
		         in->rmem != NULL ? in->rmem : "unknown");
		break;
	case HINT_SOURCE: format_source(out, len, in); break;
	case HINT_LOSS:
		snprintf(out, len,
		         "%.0f segments sent again (%.2f %% of about %.0f): loss kept the "
		         "congestion window (%s) small%s",
		         t->retransmits, 100 * fraction(t->retransmits, segs), segs,
		         t->congestion[0] != '\0' ? t->congestion : "?", more);
		break;
	}
}

/*
 * What a capped --sndbuf or --rcvbuf means once the RTT is known: "--sndbuf 8 MiB was capped
 * at 4194304 bytes (net.core.wmem_max): at rtt 100.2 ms one connection carries at most ...".
 * Returns 1 with the line in out, 0 when the request was granted (or doubled, as Linux does),
 * raised to a minimum, or the RTT is unknown.
 */
int hint_format_cap(char *out, size_t len, const char *option, const char *sysctl, int requested,
                    int granted, double rtt_ms)
{
	char size[32], rate[64];

	if (requested <= 0 || granted <= 0 || granted == requested || granted >= 2LL * requested ||
	    !(rtt_ms > 0))
		return 0;
	units_format_size((uint64_t)requested, size, sizeof size);
	format_window_rate(rate, sizeof rate, granted, rtt_ms);
	snprintf(out, len,
	         "%s %s was capped at %d bytes (%s): at the measured rtt %.1f ms one connection "
	         "carries at most %s",
	         option, size, granted, sysctl, rtt_ms, rate);
	return 1;
}
