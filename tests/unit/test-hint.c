/* test-hint.c: a table of TCP figures at the end of a send, and the hint each one gets. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "fastcat.h"
#include "net/net.h"
#include "tap.h"
#include "report/report.h"

/* One sender's end: how long it sent, what TCP_INFO said, and the hint expected. */
struct row {
	const char *what;
	double seconds, bytes;
	double busy, rwnd, sndbuf, retransmits, mss;
	double cwnd, rtt, min_rtt, so_sndbuf; /* cwnd_bytes, rtt_ms, min_rtt_ms, SO_SNDBUF */
	enum hint want;
};

static const struct row rows[] = {
    /* 100 ms lab, 4 MiB send buffer: full of data in flight most of the time */
    {"send buffer 93 % of the busy time", 38.5, 1073741824, 38.4, 0, 35.7, 0, 8948, 0, 100.2, 100.0,
     4194304, HINT_SNDBUF},
    {"send buffer exactly 30 %", 10, 1e9, 10, 0, 3, 0, 1448, 0, 100.2, 100.0, 4194304, HINT_SNDBUF},
    {"send buffer 29 %: not named", 10, 1e9, 10, 0, 2.9, 0, 1448, 0, 100.2, 100.0, 4194304,
     HINT_NONE},
    {"peer's window 60 %", 20, 1e9, 19.9, 12, 0.1, 0, 1448, 0, 100.2, 100.0, 4194304, HINT_RWND},
    {"both limits: the send buffer first", 20, 1e9, 20, 7, 8, 0, 1448, 0, 100.2, 100.0, 4194304,
     HINT_SNDBUF},
    /* pv -L 1m into a loopback connection: sending 2 ms of every second */
    {"slow source: busy 1 % of the time", 2.0, 2097152, 0.02, 0, 0, 0, 65483, 0, 100.2, 100.0,
     4194304, HINT_SOURCE},
    {"busy 49 % of the time", 10, 1e8, 4.9, 0, 0, 0, 1448, 0, 100.2, 100.0, 4194304, HINT_SOURCE},
    {"busy half the time: not the source", 10, 1e8, 5, 0, 0, 0, 1448, 0, 100.2, 100.0, 4194304,
     HINT_NONE},
    {"idle but send-buffer-limited when busy", 10, 1e8, 2, 0, 1, 0, 1448, 0, 100.2, 100.0, 4194304,
     HINT_SNDBUF},
    /* 0.1 % loss under cubic: busy, no buffer limit, retransmitting */
    {"loss 0.1 %", 60, 1e9, 60, 0, 0.5, 690, 1448, 0, 100.2, 100.0, 4194304, HINT_LOSS},
    {"1 of 10000 segments: fewer than 3", 60, 1448e4, 60, 0, 0, 1, 1448, 0, 100.2, 100.0, 4194304,
     HINT_NONE},
    {"3 of 30000 segments", 60, 1448 * 30000.0, 60, 0, 0, 3, 1448, 0, 100.2, 100.0, 4194304,
     HINT_LOSS},
    {"2 retransmits: too few to name", 60, 1448 * 100.0, 60, 0, 0, 2, 1448, 0, 100.2, 100.0,
     4194304, HINT_NONE},
    {"a slow source with some loss: the source", 10, 1e7, 1, 0, 0, 50, 1448, 0, 100.2, 100.0,
     4194304, HINT_SOURCE},
    {"busy, no limit, no loss: the path", 10, 1e9, 10, 0, 0, 0, 1448, 0, 100.2, 100.0, 4194304,
     HINT_NONE},
    {"a send of 0.4 s: too short to tell", 0.4, 1e9, 0.01, 0, 0, 0, 1448, 0, 100.2, 100.0, 4194304,
     HINT_NONE},
    {"nothing sent (a receiver)", 10, 0, 0, 0, 0, 0, 1448, 0, 100.2, 100.0, 4194304, HINT_NONE},
    /* an old kernel: no busy or limited times; only loss can be told */
    {"kernel < 4.10, lossy", 10, 1e8, NAN, NAN, NAN, 100, 1448, 0, 100.2, 100.0, 4194304,
     HINT_LOSS},
    {"kernel < 4.10, clean", 10, 1e8, NAN, NAN, NAN, 0, 1448, 0, 100.2, 100.0, 4194304, HINT_NONE},
    {"no mss: 1448 assumed", 10, 1448e4, 10, 0, 0, 5, NAN, 0, 100.2, 100.0, 4194304, HINT_LOSS},
    /*
     * tests/hints-wan.bats' labs (2 x 20 ms, 1 Gbit/s), as measured. A 256 KiB tcp_wmem cap
     * and a pipe on stdin: the kernel counted 0 s of send-buffer time, the windows tell.
     */
    {"tcp_wmem cap, kernel says 0 s: the windows say the buffer", 2.53, 16777216, 2.476, 0.04, 0, 0,
     1448, 3075552, 41.3, 40.1, 262144, HINT_SNDBUF},
    {"the same, the smoothed RTT doubled at exit (a busy host)", 2.53, 16777216, 2.476, 0.04, 0.05,
     0, 1448, 3250000, 80.6, 38.5, 262144, HINT_SNDBUF},
    {"cwnd under SO_SNDBUF: not the buffer", 2.53, 16777216, 2.476, 0, 0, 0, 1448, 200000, 41.3,
     40.1, 262144, HINT_NONE},
    /* sendfile queued past SO_SNDBUF (3 buffers a RTT) and overflowed the lab's tun ring */
    {"3 buffers per RTT: not the buffer; the loss", 1.06, 16777216, 1.016, 0.036, 0, 423, 1448,
     1114960, 48.3, 40, 262144, HINT_LOSS},
    /* pv -qL 2m: data in flight 80 % of the time, a fifth of the window used */
    {"a steady slow source: busy, the window mostly unused", 1.98, 4194304, 1.612, 0.04, 0, 0, 1448,
     435848, 41.55, 39.96, 368640, HINT_SOURCE},
    {"1 % loss: cwnd 10 segments, under SO_SNDBUF", 36.9, 16777216, 36.888, 0, 0, 107, 1448, 14480,
     40.56, 40, 414720, HINT_LOSS},
    {"a full window at the path's rate: the path", 10, 1e9, 10, 0, 0, 0, 1448, 4e6, 40, 40, 4194304,
     HINT_NONE},
    /* loopback at 11 Gbit/s, 0.04 ms: 3 of 16397 segments went again, and cost nothing */
    {"loopback, 3 retransmits at 0.04 ms: no loss that cost anything", 1.2, 1073741824, 1.2, 0, 0,
     3, 65483, 2e6, 0.04, 0.03, 2626560, HINT_NONE},
};

static struct tcp_stats stats_of(const struct row *r)
{
	struct tcp_stats t;

	memset(&t, 0, sizeof t);
	t.valid = 1;
	t.rtt_ms = 100.2;
	t.min_rtt_ms = 100.0;
	t.busy_s = r->busy;
	t.rwnd_limited_s = r->rwnd;
	t.sndbuf_limited_s = r->sndbuf;
	t.retransmits = r->retransmits;
	t.mss = r->mss;
	t.cwnd_bytes = r->cwnd;
	t.rtt_ms = r->rtt;
	t.min_rtt_ms = r->min_rtt;
	strcpy(t.congestion, "cubic");
	return t;
}

static void test_table(void)
{
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		const struct row *r = &rows[i];
		struct tcp_stats t = stats_of(r);
		struct hint_input in = {
		    r->seconds, (uint64_t)r->bytes, (int)r->so_sndbuf, &t, NULL, NULL, 1, NULL};
		enum hint got = hint_choose(&in);

		tap_ok(got == r->want, "%s: hint %d (want %d)", r->what, (int)got, (int)r->want);
	}
}

/* -P 4: the stats add four windows and four connections' bytes; each one is buffer-bound. */
static void test_streams(void)
{
	struct row r = {"",   2.53,          4 * 16777216.0, 2.476, 0.04,   0,          0,
	                1448, 4 * 3075552.0, 41.3,           40.1,  262144, HINT_SNDBUF};
	struct tcp_stats t = stats_of(&r);
	struct hint_input in = {r.seconds, (uint64_t)r.bytes, 262144, &t, NULL, NULL, 4, NULL};

	tap_ok(hint_choose(&in) == HINT_SNDBUF, "-P 4, each connection buffer-bound: the buffer");
	in.streams = 1;
	tap_ok(hint_choose(&in) == HINT_NONE,
	       "the same figures as one connection: 4 buffers a RTT");
}

static void test_words(void)
{
	struct tcp_stats t = stats_of(&rows[0]);
	struct hint_input in = {
	    38.5, 1073741824, 4194304, &t, "4096 16384 4194304", "4096 131072 6291456", 1, NULL};
	char line[512];

	hint_format(line, sizeof line, HINT_SNDBUF, &in);
	tap_ok(strstr(line, "93 %") != NULL && strstr(line, "SO_SNDBUF 4.00 MiB") != NULL &&
	           strstr(line, "at rtt 100.2 ms carries at most 39.9 MiB/s") != NULL &&
	           strstr(line, "net.ipv4.tcp_wmem (now 4096 16384 4194304)") != NULL &&
	           strstr(line, "try -P 9 (-P auto's step at this rate)") != NULL,
	       "the send buffer hint: size, RTT, cap, tcp_wmem, -P 9 for 223 Mbit/s (%s)", line);
	in.streams = 4;
	hint_format(line, sizeof line, HINT_SNDBUF, &in);
	tap_ok(strstr(line, "try more connections than -P 4") != NULL,
	       "a fixed -P 4: more connections than that (%s)", line);
	in.auto_decision =
	    "settled at 8 connections: goodput 800 -> 810 Mbit/s, less than 10 % more";
	hint_format(line, sizeof line, HINT_SNDBUF, &in);
	tap_ok(strstr(line, "; -P auto settled at 8 connections: goodput") != NULL &&
	           strstr(line, "try") == NULL,
	       "-P auto: the hint names what it decided, and suggests no other -P (%s)", line);
	hint_format(line, sizeof line, HINT_LOSS, &in);
	tap_ok(strstr(line, "; -P auto settled at 8") != NULL && strstr(line, "try") == NULL,
	       "-P auto: the loss hint too (%s)", line);
	in.auto_decision = NULL;
	in.streams = 1;
	t.rwnd_limited_s = 19.2;
	hint_format(line, sizeof line, HINT_RWND, &in);
	tap_ok(strstr(line, "50 %") != NULL && strstr(line, "tcp_rmem at the peer") != NULL &&
	           strstr(line, "4096 131072 6291456") != NULL && strstr(line, "-I") != NULL,
	       "the receive window hint: tcp_rmem at the peer, -I (%s)", line);
	t.busy_s = 3.85;
	hint_format(line, sizeof line, HINT_SOURCE, &in);
	tap_ok(strstr(line, "only 10 % of the 38.5 s") != NULL &&
	           strstr(line, "not the bottleneck") != NULL,
	       "the source hint: how idle, the pipe not the bottleneck (%s)", line);
	t.busy_s = 0.01;
	hint_format(line, sizeof line, HINT_SOURCE, &in);
	tap_ok(strstr(line, "to send under 1 % of the 38.5 s") != NULL,
	       "the source hint: under 1 %% rather than 0 %% (%s)", line);
	t.retransmits = 741;
	hint_format(line, sizeof line, HINT_LOSS, &in);
	tap_ok(strstr(line, "741 segments") != NULL && strstr(line, "cubic") != NULL &&
	           strstr(line, "try -P") != NULL,
	       "the loss hint: retransmits, the algorithm, -P (%s)", line);
	hint_format(line, sizeof line, HINT_NONE, &in);
	tap_ok(line[0] == '\0', "no hint, no words");
}

/* On a path under 1 ms one connection's window fills it: no hint suggests -P there. */
static void test_short_path_words(void)
{
	struct tcp_stats t = stats_of(&rows[0]);
	struct hint_input in = {38.5, 1073741824, 4194304, &t, "4096 16384 4194304", NULL, 1, NULL};
	char line[512];

	t.rtt_ms = t.min_rtt_ms = 0.04;
	hint_format(line, sizeof line, HINT_SNDBUF, &in);
	tap_ok(strstr(line, "-P") == NULL && strstr(line, "-O") != NULL,
	       "the send buffer hint at 0.04 ms: -O, no -P (%s)", line);
	t.retransmits = 741;
	hint_format(line, sizeof line, HINT_LOSS, &in);
	tap_ok(strstr(line, "741 segments") != NULL && strstr(line, "-P") == NULL,
	       "the loss hint at 0.04 ms: no -P (%s)", line);
}

/* The hints the windows give (the kernel counted too little): what was compared, and the fix. */
static void test_window_words(void)
{
	struct tcp_stats t = stats_of(&rows[0]);
	struct hint_input in = {2.53, 16777216, 262144, &t, "4096 16384 262144", NULL, 1, NULL};
	char line[512];

	t.busy_s = 2.476;
	t.sndbuf_limited_s = 0;
	t.cwnd_bytes = 3075552;
	t.rtt_ms = 41.3;
	t.min_rtt_ms = 40.1;
	hint_format(line, sizeof line, HINT_SNDBUF, &in);
	tap_ok(strstr(line, "congestion window, 2.93 MiB, outgrew it") != NULL &&
	           strstr(line, "SO_SNDBUF 256.0 KiB at rtt 41.3 ms") != NULL &&
	           strstr(line, "tcp_wmem (now 4096 16384 262144)") != NULL &&
	           strstr(line, "% of the time") == NULL,
	       "the send buffer from the windows: cwnd, the cap, tcp_wmem, no share (%s)", line);
	in.bytes = 4194304;
	in.seconds = 1.98;
	in.sndbuf = 368640;
	t.busy_s = 1.612;
	t.cwnd_bytes = 435848;
	t.rtt_ms = 41.55;
	hint_format(line, sizeof line, HINT_SOURCE, &in);
	tap_ok(strstr(line, "carried 2.48 MiB/s (0.021 Gbit/s) while busy, under half of what its "
	                    "window allowed at rtt 41.5 ms") != NULL &&
	           strstr(line, "the pipe was not the bottleneck") != NULL,
	       "the source from the windows: its rate, the RTT (%s)", line);
}

static void test_cap(void)
{
	char line[512];

	tap_ok(hint_format_cap(line, sizeof line, "--sndbuf", "net.core.wmem_max", 8388608, 8388608,
	                       100) == 0,
	       "a granted request: no note");
	tap_ok(hint_format_cap(line, sizeof line, "--sndbuf", "net.core.wmem_max", 8388608,
	                       16777216, 100) == 0,
	       "a doubled request (Linux): no note");
	tap_ok(hint_format_cap(line, sizeof line, "--sndbuf", "net.core.wmem_max", 8388608, 425984,
	                       NAN) == 0,
	       "no RTT measured: no note");
	tap_ok(hint_format_cap(line, sizeof line, "--rcvbuf", "net.core.rmem_max", 8388608, 425984,
	                       100) == 1 &&
	           strstr(line, "--rcvbuf 8 MiB was capped at 425984 bytes (net.core.rmem_max)") !=
	               NULL &&
	           strstr(line, "rtt 100.0 ms") != NULL && strstr(line, "4.06 MiB/s") != NULL,
	       "a capped request: what the cap carries at the RTT (%s)", line);
}

int main(void)
{
	test_table();
	test_streams();
	test_words();
	test_short_path_words();
	test_window_words();
	test_cap();
	return tap_done();
}
