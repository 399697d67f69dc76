/* options-value.c: a number option's value read by its kind (size, rate, time) and range-checked,
 * for options.c's getopt loop and options-bench.c's lists. */
#include "config.h"

#include <stdint.h>

#include "fastcat.h"
#include "cli/options.h"

static int parse_millis(const char *arg, uint64_t *out)
{
	long ms;
	int rc = units_parse_millis(arg, &ms);

	if (rc == 0)
		*out = (uint64_t)ms;
	return rc;
}

/* How each kind of number is read, and what its two errors say. */
static const struct {
	int (*parse)(const char *, uint64_t *); /* 0, -1 invalid, -2 too large */
	const char *invalid;
	const char *too_large;
} number_kinds[] = {
    [ARG_SIZE] = {units_parse_size,
                  "invalid size (digits with an optional k/K/KiB, m/M/MiB or g/G/GiB suffix)",
                  "size too large"},
    [ARG_RATE] = {units_parse_size,
                  "invalid rate (bytes per second: digits with an optional k/K/KiB, m/M/MiB "
                  "or g/G/GiB suffix)",
                  "rate too large"},
    [ARG_TIME] = {parse_millis, "invalid time (seconds, e.g. 5, 0.5 or 500ms)", "time too large"},
};

/* A number option's value, range-checked; errors name the option and repeat the value. */
int options_number(enum opt_arg kind, const struct opt_range *range, const char *label,
                   const char *arg, uint64_t *out, struct failure *fail)
{
	uint64_t v;

	switch (number_kinds[kind].parse(arg, &v)) {
	case -1:
		return failure_set(fail, EXIT_USAGE, "%s %s: %s", label, arg,
		                   number_kinds[kind].invalid);
	case -2:
		return failure_set(fail, EXIT_USAGE, "%s %s: %s", label, arg,
		                   number_kinds[kind].too_large);
	}
	if (v < range->min || v > range->max)
		return failure_set(fail, EXIT_USAGE, "%s %s: %s", label, arg, range->message);
	*out = v;
	return 0;
}
