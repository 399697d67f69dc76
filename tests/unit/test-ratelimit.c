/* test-ratelimit.c: the --rate-limit bucket keeps the rate, never saves up more than one write. */
#include "config.h"

#include <stdint.h>

#include "fastcat.h"
#include "relay/flow.h"
#include "tap.h"

#define RATE  (2 * MIB)
#define CHUNK (96 * KIB)

/*
 * A sender as the relay runs it: write what the bucket allows (all of it
 * taken), else sleep ratelimit_wait_ms plus a late wake-up of up to
 * `late_ms` (a fixed pseudo-random sequence). Checks over `seconds`: the
 * bytes moved, the largest write, the most bytes in any one second (from
 * the start), and that no sleep was 0 ms while the bucket was short.
 */
struct sim {
	double bytes;
	size_t max_write;
	double first_second;
	double max_second;
	int zero_sleeps;
	long wakeups;
};

static struct sim simulate(uint64_t rate, size_t chunk, int whole, double seconds, unsigned late_ms)
{
	struct ratelimit rl;
	struct sim s = {0, 0, 0, 0, 0, 0};
	double now = 100, end = now + seconds, second_start = now, in_second = 0;
	unsigned lcg = 12345;

	ratelimit_init(&rl, rate, chunk, whole, now);
	while (now < end) {
		size_t n = ratelimit_allow(&rl, now, chunk);
		long ms;

		if (n > 0) {
			ratelimit_spend(&rl, n);
			s.bytes += (double)n;
			s.max_write = n > s.max_write ? n : s.max_write;
			while (now >= second_start + 1) {
				s.max_second = in_second > s.max_second ? in_second : s.max_second;
				second_start += 1;
				in_second = 0;
			}
			in_second += (double)n;
			if (now < 101)
				s.first_second += (double)n;
			now += 1e-6; /* the write itself */
			continue;
		}
		ms = ratelimit_wait_ms(&rl, now);
		s.zero_sleeps += ms <= 0;
		lcg = lcg * 1103515245 + 12345;
		now += (double)(ms > 0 ? ms : 1) / 1000 +
		       (late_ms ? (double)(lcg >> 8) / (1u << 24) * late_ms / 1000 : 0);
		s.wakeups++;
	}
	s.max_second = in_second > s.max_second ? in_second : s.max_second;
	return s;
}

static void check_rate(uint64_t rate, size_t chunk, int whole, unsigned late_ms)
{
	double seconds = 10, want = (double)rate * seconds;
	struct sim s = simulate(rate, chunk, whole, seconds, late_ms);

	tap_ok(s.bytes >= want * 0.98 && s.bytes <= want + (double)chunk,
	       "rate %llu, %s %zu, wake-ups up to %u ms late: %.0f bytes in 10 s (%.4f of the "
	       "rate)",
	       (unsigned long long)rate, whole ? "datagrams of" : "chunk", chunk, late_ms, s.bytes,
	       s.bytes / want);
	tap_ok(s.max_write <= chunk, "... no write above one chunk (largest %zu)", s.max_write);
	tap_ok(s.first_second <= (double)rate + (double)chunk,
	       "... the first second carries at most rate + one write (%.0f)", s.first_second);
	/* a datagram bucket holds 10 ms of the rate, and lends one datagram */
	tap_ok(s.max_second <= (double)rate + (double)chunk + (whole ? (double)rate / 100 : 0),
	       "... no second carries more than rate + what the bucket holds (most %.0f)",
	       s.max_second);
	tap_ok(s.zero_sleeps == 0, "... never told to sleep 0 ms while short (%d times)",
	       s.zero_sleeps);
	tap_ok(s.wakeups <= (long)(seconds * 1000), "... sleeps, not spins: %ld wake-ups",
	       s.wakeups);
}

int main(void)
{
	struct ratelimit rl;
	size_t n;
	long ms;

	ratelimit_init(&rl, RATE, CHUNK, 0, 0);
	tap_ok(ratelimit_wait_ms(&rl, 0) == -1, "nothing refused yet: no wait");
	n = ratelimit_allow(&rl, 0, CHUNK);
	tap_ok(n == CHUNK, "starts full: one chunk at once (got %zu)", n);
	ratelimit_spend(&rl, n);
	tap_ok(ratelimit_allow(&rl, 0, CHUNK) == 0, "spent: the next write waits");
	ms = ratelimit_wait_ms(&rl, 0);
	tap_ok(ms >= 10 && ms <= 11, "... 10 ms, for 20 KiB at 2 MiB/s (got %ld)", ms);
	tap_ok(ratelimit_allow(&rl, 0.005, CHUNK) == 0, "5 ms later: still below the 10 ms step");
	n = ratelimit_allow(&rl, 0.0101, CHUNK);
	tap_ok(n >= 20 * KIB && n < 21 * KIB, "10 ms later: 10 ms of the rate (got %zu)", n);
	tap_ok(ratelimit_wait_ms(&rl, 0.0101) == -1, "allowed: no wait");
	ratelimit_spend(&rl, 100);
	n = ratelimit_allow(&rl, 1000, 10 * CHUNK);
	tap_ok(n == CHUNK, "idle 1000 s: still one chunk saved up, no more (got %zu)", n);
	ratelimit_spend(&rl, n);
	n = ratelimit_allow(&rl, 1000.001, 10);
	tap_ok(n == 10, "a small write goes as soon as its bytes are there (got %zu)", n);
	ratelimit_spend(&rl, n);
	n = ratelimit_allow(&rl, 1000.001, CHUNK);
	tap_ok(n == 0, "... while a chunk-sized one waits for a 10 ms step (got %zu)", n);
	n = ratelimit_allow(&rl, 999, CHUNK);
	tap_ok(n == 0, "a clock that seems to go back adds no tokens (got %zu)", n);

	/* a datagram goes whole, on credit: the bucket starts empty and lends one */
	ratelimit_init(&rl, 1000, 1000, 1, 0);
	n = ratelimit_allow(&rl, 0, 800);
	tap_ok(n == 800, "whole: the first datagram goes at once, whole (got %zu)", n);
	ratelimit_spend(&rl, n);
	n = ratelimit_allow(&rl, 0.5, 800);
	tap_ok(n == 0, "... the next waits while the bucket is in debt (300 bytes left)");
	ms = ratelimit_wait_ms(&rl, 0.5);
	tap_ok(ms >= 300 && ms <= 301, "... wait 300 ms (got %ld)", ms);
	n = ratelimit_allow(&rl, 0.8, 800);
	tap_ok(n == 800, "... then it goes whole (got %zu)", n);

	/* slow rates: a step is at least one byte, and waits are long, not spins */
	ratelimit_init(&rl, 1, CHUNK, 0, 0);
	ratelimit_spend(&rl, ratelimit_allow(&rl, 0, CHUNK));
	tap_ok(ratelimit_allow(&rl, 0.5, CHUNK) == 0, "1 B/s: nothing after 0.5 s");
	ms = ratelimit_wait_ms(&rl, 0.5);
	tap_ok(ms >= 500 && ms <= 501, "... wait 500 ms (got %ld)", ms);
	tap_ok(ratelimit_allow(&rl, 1.0001, CHUNK) == 1, "... one byte after 1 s");

	check_rate(RATE, CHUNK, 0, 0);
	check_rate(RATE, CHUNK, 0, 5);
	check_rate(10 * MIB, CHUNK, 0, 2);
	check_rate(1000, 4096, 0, 20);
	check_rate(100 * MIB, MIB, 0, 1);
	/* datagrams of 1000 bytes at 1 MiB/s: one a millisecond, poll's own granularity */
	check_rate(MIB, 1000, 1, 0);
	check_rate(MIB, 1000, 1, 1);
	check_rate(MIB, 1472, 1, 1);
	return tap_done();
}
