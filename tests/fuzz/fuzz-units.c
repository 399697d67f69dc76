/*
 * fuzz-units.c: libFuzzer harness for the command-line number parsers of
 * src/units.c. The input, NUL-terminated, goes to units_parse_size,
 * units_parse_port (min 0 and 1) and units_parse_millis; each answer is
 * compared with an independent reading of the documented grammar:
 *
 *   size:  digits [k|K|KiB|m|M|MiB|g|G|GiB]          -2 when it exceeds 2^64-1
 *   port:  digits, min..65535                       -2 when out of range
 *   time:  digits [. 1-3 digits] [s] | digits ms    -2 when over INT_MAX ms
 *
 * Anything else is -1 ("not a size/number/time"), however many digits it has.
 */
#include "config.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fastcat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_NAME "fuzz-units"
#include "fuzz-check.h"

/* Leading digits of s: how many, and their value saturated at UINT64_MAX (*big set). */
static size_t digits(const char *s, uint64_t *value, int *big)
{
	unsigned __int128 v = 0;
	size_t n = 0;

	*big = 0;
	for (; s[n] >= '0' && s[n] <= '9'; n++) {
		v = v * 10 + (unsigned)(s[n] - '0');
		if (v > UINT64_MAX) {
			*big = 1;
			v = UINT64_MAX;
		}
	}
	*value = (uint64_t)v;
	return n;
}

static int expect_size(const char *s, uint64_t *bytes)
{
	static const struct {
		const char *text;
		unsigned shift;
	} sfx[] = {{"", 0},   {"k", 10},   {"K", 10}, {"KiB", 10}, {"m", 20},
	           {"M", 20}, {"MiB", 20}, {"g", 30}, {"G", 30},   {"GiB", 30}};
	uint64_t v;
	int big;
	size_t n = digits(s, &v, &big);

	if (n == 0)
		return -1;
	for (size_t i = 0; i < sizeof sfx / sizeof sfx[0]; i++) {
		if (strcmp(s + n, sfx[i].text) != 0)
			continue;
		if (big || ((unsigned __int128)v << sfx[i].shift) > UINT64_MAX)
			return -2;
		*bytes = v << sfx[i].shift;
		return 0;
	}
	return -1;
}

static int expect_port(const char *s, int min, int *port)
{
	uint64_t v;
	int big;
	size_t n = digits(s, &v, &big);

	if (n == 0 || s[n] != '\0')
		return -1;
	if (big || v > 65535 || v < (uint64_t)min)
		return -2;
	*port = (int)v;
	return 0;
}

static int expect_millis(const char *s, long *ms)
{
	uint64_t whole, frac = 0;
	unsigned __int128 total;
	int big, fbig;
	size_t n = digits(s, &whole, &big), f = 0;
	const char *p = s + n;

	if (n == 0)
		return -1;
	if (*p == '.') {
		f = digits(++p, &frac, &fbig);
		if (f == 0 || f > 3)
			return -1;
		p += f;
		for (size_t i = f; i < 3; i++)
			frac *= 10;
	}
	if (strcmp(p, "ms") == 0) {
		if (f != 0)
			return -1;
		total = whole;
	} else if (*p == '\0' || strcmp(p, "s") == 0) {
		total = (unsigned __int128)whole * 1000 + frac;
	} else {
		return -1;
	}
	if (big || total > INT_MAX)
		return -2;
	*ms = (long)total;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	uint64_t got_v = 0, want_v = 0;
	long got_ms = 0, want_ms = 0;
	int rc, want, got_p = 0, want_p = 0;

	if (s == NULL)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';

	rc = units_parse_size(s, &got_v);
	want = expect_size(s, &want_v);
	CHECK(rc == want, "size '%s': rc %d, expected %d", s, rc, want);
	CHECK(rc != 0 || got_v == want_v, "size '%s': %llu, expected %llu", s,
	      (unsigned long long)got_v, (unsigned long long)want_v);

	for (int min = 0; min <= 1; min++) {
		rc = units_parse_port(s, min, &got_p);
		want = expect_port(s, min, &want_p);
		CHECK(rc == want, "port '%s' (min %d): rc %d, expected %d", s, min, rc, want);
		CHECK(rc != 0 || got_p == want_p, "port '%s': %d, expected %d", s, got_p, want_p);
	}

	rc = units_parse_millis(s, &got_ms);
	want = expect_millis(s, &want_ms);
	CHECK(rc == want, "time '%s': rc %d, expected %d", s, rc, want);
	CHECK(rc != 0 || got_ms == want_ms, "time '%s': %ld ms, expected %ld", s, got_ms, want_ms);

	free(s);
	return 0;
}
