/* ratelimit.c: --rate-limit's token bucket: how many bytes a write may move now, and when. Pure. */
#include "config.h"

#include <limits.h>

#include "fastcat.h"

/*
 * A write waits until this many tokens are saved up (or all it wants): 10 ms
 * of the rate, so the flow wakes about 100 times a second, but at most half
 * the bucket, so a wake-up late by up to half a write's worth of time loses
 * no tokens to the cap. Never less than one byte.
 */
#define RATELIMIT_STEP_SECONDS 0.01

static double ratelimit_threshold(const struct ratelimit *rl, size_t want)
{
	double need = rl->rate * RATELIMIT_STEP_SECONDS;

	if (rl->whole)
		return (double)want; /* a datagram goes whole or not at all */
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
 * Start full, with one write's worth: the first second carries at most the
 * rate and one write. `burst` is the largest write the flow makes; `whole`
 * for a flow whose writes cannot be cut (datagrams).
 */
void ratelimit_init(struct ratelimit *rl, uint64_t rate, size_t burst, int whole, double now)
{
	rl->rate = (double)rate;
	rl->burst = (double)(burst > 0 ? burst : 1);
	rl->tokens = rl->burst;
	rl->last = now;
	rl->need = 0;
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
	if (want == 0 || rl->tokens < need) {
		rl->need = want == 0 ? 0 : need;
		return 0;
	}
	rl->need = 0;
	if (rl->whole || rl->tokens >= (double)want)
		return want;
	return (size_t)rl->tokens;
}

/* A write moved n bytes (at most what ratelimit_allow gave). */
void ratelimit_spend(struct ratelimit *rl, size_t n)
{
	rl->tokens -= (double)n;
	if (rl->tokens < 0)
		rl->tokens = 0;
}

/*
 * Milliseconds until the write ratelimit_allow refused last may go, rounded
 * up, so a poll() that sleeps this long wakes with the tokens there (not a
 * millisecond early, to find the bucket still short and spin); -1 when
 * nothing waits on the bucket.
 */
long ratelimit_wait_ms(const struct ratelimit *rl, double now)
{
	double missing, ms;

	if (rl->need <= 0)
		return -1;
	missing = rl->need - ratelimit_tokens(rl, now);
	if (missing <= 0)
		return 0;
	ms = missing / rl->rate * 1000;
	return ms < INT_MAX - 1 ? (long)ms + 1 : INT_MAX;
}
