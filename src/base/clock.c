/* clock.c: the one clock every rate, timeout and retry is measured on. */
#include "config.h"

#include <time.h>

#include "base/base.h"

/* Seconds on CLOCK_MONOTONIC: rates and timeouts must not jump when the wall clock is set. */
double clock_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
