/*
 * hint.c: what limited a transfer, named from its TCP figures at the end (-v prints it), and
 * what the cap of a capped -O/-I means at the measured RTT. Pure: the caller reads TCP_INFO
 * and the sysctls; tests/unit/test-hint.c runs a table of figures through hint_choose.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>

#include "fastcat.h"
#include "tcpinfo.h"

/*
 * The thresholds (fastcat(1), "What limited the transfer", lists them). A send shorter than
 * HINT_MIN_SECONDS gets no hint: the kernel counts busy time in jiffies, and a short run is
 * mostly slow start. A buffer is named when it held the connection back for HINT_LIMITED_SHARE
 * of the time it was busy; the source when the connection had data to send for less than
 * HINT_BUSY_SHARE of the time this end sent; loss when at least HINT_LOSS_MIN segments, and
 * HINT_LOSS_SHARE of those sent, went again. 0.01 % is already a limit on a long path: by
 * Mathis' formula (MSS / RTT x 1.22 / sqrt(p)), at 100 ms and 1448-byte segments, a loss-based
 * algorithm gets at most about 140 Mbit/s.
 */
#define HINT_MIN_SECONDS   0.5
#define HINT_LIMITED_SHARE 0.30
#define HINT_BUSY_SHARE    0.50
#define HINT_LOSS_SHARE    0.0001
#define HINT_LOSS_MIN      3
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

/*
 * The one limit to name, in this order: a buffer that held the connection back (it is the
 * fix), a connection that mostly had nothing to send (then nothing in the network matters),
 * loss (a busy, unlimited connection whose window stayed small). HINT_NONE: too little to tell,
 * or nothing but the path's own rate.
 */
enum hint hint_choose(const struct hint_input *in)
{
	const struct tcp_stats *t = in->tcp;
	double busy;

	if (t == NULL || !t->valid || in->bytes == 0 || in->seconds < HINT_MIN_SECONDS)
		return HINT_NONE;
	busy = t->busy_s;
	if (fraction(t->sndbuf_limited_s, busy) >= HINT_LIMITED_SHARE)
		return HINT_SNDBUF;
	if (fraction(t->rwnd_limited_s, busy) >= HINT_LIMITED_SHARE)
		return HINT_RWND;
	if (!isnan(busy) && busy < HINT_BUSY_SHARE * in->seconds)
		return HINT_SOURCE;
	if (t->retransmits >= HINT_LOSS_MIN &&
	    fraction(t->retransmits, segments_sent(in)) >= HINT_LOSS_SHARE)
		return HINT_LOSS;
	return HINT_NONE;
}

/* "40.0 MiB/s (0.336 Gbit/s)": the most bytes a window of this size moves in one RTT. */
static void format_window_rate(char *out, size_t len, double window, double rtt_ms)
{
	double rate = window / (rtt_ms / 1000);
	char bytes[32];

	units_format_bytes((uint64_t)rate, bytes, sizeof bytes);
	snprintf(out, len, "%s/s (%.3f Gbit/s)", bytes, rate * 8 / 1e9);
}

static void format_sndbuf(char *out, size_t len, const struct hint_input *in)
{
	const struct tcp_stats *t = in->tcp;
	char cap[160] = "";

	if (in->sndbuf > 0 && t->rtt_ms > 0) {
		char size[32], rate[64];

		units_format_bytes((uint64_t)in->sndbuf, size, sizeof size);
		format_window_rate(rate, sizeof rate, in->sndbuf, t->rtt_ms);
		snprintf(cap, sizeof cap,
		         ": SO_SNDBUF %s at rtt %.1f ms carries at most %s on one connection", size,
		         t->rtt_ms, rate);
	}
	snprintf(out, len,
	         "the send buffer held the connection back %.0f %% of the time it was busy%s; "
	         "raise net.ipv4.tcp_wmem (now %s) or -O, or try -P 4",
	         100 * fraction(t->sndbuf_limited_s, t->busy_s), cap,
	         in->wmem != NULL ? in->wmem : "unknown");
}

/* One line for the hint chosen (without "fastcat: hint: "); empty for HINT_NONE. */
void hint_format(char *out, size_t len, enum hint h, const struct hint_input *in)
{
	const struct tcp_stats *t = in->tcp;
	double segs = segments_sent(in), busy = fraction(t->busy_s, in->seconds);

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
	case HINT_SOURCE:
		snprintf(out, len,
		         "the connection had data to send %s%.0f %% of the %.1f s: the source "
		         "(stdin) was slower than the network, so the pipe was not the bottleneck",
		         busy < 0.01 ? "under " : "only ", busy < 0.01 ? 1 : 100 * busy,
		         in->seconds);
		break;
	case HINT_LOSS:
		snprintf(out, len,
		         "%.0f segments sent again (%.2f %% of about %.0f): loss kept the "
		         "congestion window (%s) small; try -P, whose connections back off one "
		         "at a time",
		         t->retransmits, 100 * fraction(t->retransmits, segs), segs,
		         t->congestion[0] != '\0' ? t->congestion : "?");
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
