/* ratelimit.c: --rate-limit's token bucket: how many bytes a write may move now, and when. Pure. */
#include "config.h"

#include <limits.h>

#include "base/base.h"

/*
 * A stream write waits until this many tokens are saved up (or all it
 * wants): 10 ms of the rate, so the flow wakes about 100 times a second, but
 * at most half the bucket, so a wake-up late by up to half a write's worth
 * of time loses no tokens to the cap. Never less than one byte.
 */
#define RATELIMIT_STEP_SECONDS 0.01

/*
 * The tokens a write of want bytes waits for. A datagram cannot be cut: it
 * goes whole as soon as the bucket is out of debt, and leaves it in debt by
 * up to its own size; the bucket starts empty, so the bytes sent never run
 * ahead of the rate by more than that one datagram.
 */
static double ratelimit_threshold(const struct ratelimit *rl, size_t want)
{
	double need = rl->rate * RATELIMIT_STEP_SECONDS;

	if (rl->whole)
		return 0;
	if (need > rl->burst / 2)
		need = rl->burst / 2;
	if (need > (double)want)
		need = (double)want;
	return need < 1 ? 1 : need;
}

/* The tokens the bucket holds at `now`: what it had, plus the rate since, up to one write. */
static double ratelimit_tokens(const struct ratelimit *rl, double now)
{
	double tokens = rl->tokens;

	if (now > rl->last)
		tokens += (now - rl->last) * rl->rate;
	return tokens < rl->burst ? tokens : rl->burst;
}

/*
 * `burst` is the largest write the flow makes; `whole` for a flow whose
 * writes cannot be cut (datagrams). A stream bucket starts full, with one
 * write's worth, a datagram bucket empty (it lends one): either way the
 * first second carries at most the rate and one write. The bucket holds one
 * write, except that a datagram one holds at least a step (10 ms) of the
 * rate: small datagrams at a high rate go out every millisecond or less,
 * and poll() sleeps whole milliseconds, late, so a bucket of one datagram
 * would lose the tokens of every late wake-up (measured: 1000-byte
 * datagrams at 1 MiB/s ran 10-25 % slow). The datagrams still go one per
 * call.
 */
void ratelimit_init(struct ratelimit *rl, uint64_t rate, size_t burst, int whole, double now)
{
	rl->rate = (double)rate;
	rl->burst = (double)(burst > 0 ? burst : 1);
	if (whole && rl->burst < rl->rate * RATELIMIT_STEP_SECONDS)
		rl->burst = rl->rate * RATELIMIT_STEP_SECONDS;
	rl->tokens = whole ? 0 : rl->burst;
	rl->last = now;
	rl->need = 0;
	rl->waiting = 0;
	rl->whole = whole;
}

/*
 * The bytes of `want` that may be written now; 0 when the bucket must refill
 * first (ratelimit_wait_ms says for how long). Nothing is spent until
 * ratelimit_spend is told what the write moved.
 */
size_t ratelimit_allow(struct ratelimit *rl, double now, size_t want)
{
	double need = ratelimit_threshold(rl, want);

	rl->tokens = ratelimit_tokens(rl, now);
	if (now > rl->last)
		rl->last = now;
	rl->waiting = want > 0 && rl->tokens < need;
	rl->need = need;
	if (want == 0 || rl->waiting)
		return 0;
	if (rl->whole || rl->tokens >= (double)want)
		return want;
	return (size_t)rl->tokens;
}

/* A write moved n bytes (at most what ratelimit_allow gave; a datagram may leave a debt). */
void ratelimit_spend(struct ratelimit *rl, size_t n)
{
	rl->tokens -= (double)n;
}

/*
 * Milliseconds until the write ratelimit_allow refused last may go, rounded
 * up, so a poll() that sleeps this long wakes with the tokens there (never
 * 0 while they are short, which would spin); -1 when nothing waits on the
 * bucket.
 */
long ratelimit_wait_ms(const struct ratelimit *rl, double now)
{
	double missing, ms;
	long whole_ms;

	if (!rl->waiting)
		return -1;
	missing = rl->need - ratelimit_tokens(rl, now);
	if (missing <= 0)
		return 0;
	ms = missing / rl->rate * 1000;
	if (ms >= INT_MAX)
		return INT_MAX;
	whole_ms = (long)ms;
	return whole_ms < ms || whole_ms == 0 ? whole_ms + 1 : whole_ms;
}
