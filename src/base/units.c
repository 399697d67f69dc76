/* units.c: parse sizes, ports and times from the command line; format byte counts. Pure. */
#include "config.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"

struct suffix {
	const char *text;
	unsigned shift;
};

/* Powers of 1024 only: "k" means KiB, as in dd, nc -I and iperf3. */
static const struct suffix size_suffixes[] = {
    {"", 0},   {"k", 10},   {"K", 10}, {"KiB", 10}, {"m", 20},
    {"M", 20}, {"MiB", 20}, {"g", 30}, {"G", 30},   {"GiB", 30},
};

/*
 * Read the leading decimal digits of s into *value. Returns the number of
 * digits, 0 when s does not start with one. *big is set when they do not fit
 * in 64 bits; they are counted all the same, so that the caller still checks
 * what follows: "99999999999999999999x" is not a number rather than too large.
 * Signs, spaces and "0x" are not digits, so "-1", " 5" and "0x10" are rejected
 * by the caller.
 */
static size_t parse_digits(const char *s, uint64_t *value, int *big)
{
	uint64_t v = 0;
	size_t n = 0;

	*big = 0;
	for (; s[n] >= '0' && s[n] <= '9'; n++) {
		unsigned d = (unsigned)(s[n] - '0');
		if (*big || v > (UINT64_MAX - d) / 10)
			*big = 1;
		else
			v = v * 10 + d;
	}
	*value = v;
	return n;
}

/* "4096", "96k", "1MiB" -> bytes. 0 ok, -1 not a size, -2 too large. */
int units_parse_size(const char *s, uint64_t *bytes)
{
	uint64_t v;
	int big;
	size_t n = parse_digits(s, &v, &big);

	if (n == 0)
		return -1;
	for (size_t i = 0; i < sizeof size_suffixes / sizeof size_suffixes[0]; i++) {
		const struct suffix *sf = &size_suffixes[i];
		if (strcmp(s + n, sf->text) != 0)
			continue;
		if (big || v > (UINT64_MAX >> sf->shift))
			return -2;
		*bytes = v << sf->shift;
		return 0;
	}
	return -1;
}

/*
 * A port in decimal, min..65535. 0 ok, -1 not a number, -2 out of range.
 * Done here because getaddrinfo quietly takes 99999 as 34463.
 */
int units_parse_port(const char *s, int min, int *port)
{
	uint64_t v;
	int big;
	size_t n = parse_digits(s, &v, &big);

	if (n == 0 || s[n] != '\0')
		return -1;
	if (big || v > 65535 || v < (uint64_t)min)
		return -2;
	*port = (int)v;
	return 0;
}

/*
 * "5", "0.25", "2s", "500ms" -> milliseconds. 0 ok, -1 not a time, -2 too
 * large: over INT_MAX milliseconds, as poll() takes them in an int.
 */
int units_parse_millis(const char *s, long *ms)
{
	uint64_t whole, frac = 0, unit;
	int big, frac_big;
	size_t n = parse_digits(s, &whole, &big), f = 0;
	const char *p = s + n;

	if (n == 0)
		return -1;
	if (*p == '.') {
		f = parse_digits(++p, &frac, &frac_big);
		if (f == 0 || f > 3)
			return -1; /* milliseconds are the resolution */
		for (size_t i = f; i < 3; i++)
			frac *= 10;
		p += f;
	}
	if (strcmp(p, "ms") == 0 && f == 0)
		unit = 1;
	else if (*p == '\0' || strcmp(p, "s") == 0)
		unit = 1000;
	else
		return -1;
	if (big || whole > INT_MAX || whole * unit + frac > INT_MAX)
		return -2;
	*ms = (long)(whole * unit + frac);
	return 0;
}

/* Human-readable approximation: "512 B", "1.5 KiB", "2.00 GiB". */
void units_format_bytes(uint64_t n, char *out, size_t len)
{
	static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
	double v = (double)n;
	size_t i = 0;

	if (n < 1024) {
		snprintf(out, len, "%llu B", (unsigned long long)n);
		return;
	}
	while (v >= 1024 && i + 1 < sizeof names / sizeof names[0]) {
		v /= 1024;
		i++;
	}
	snprintf(out, len, v < 10 ? "%.2f %s" : "%.1f %s", v, names[i]);
}

/* Exact size with the largest unit that divides it: "512 KiB", "1 MiB", "1000 B". */
void units_format_size(uint64_t n, char *out, size_t len)
{
	if (n != 0 && n % MIB == 0)
		snprintf(out, len, "%llu MiB", (unsigned long long)(n / MIB));
	else if (n != 0 && n % KIB == 0)
		snprintf(out, len, "%llu KiB", (unsigned long long)(n / KIB));
	else
		snprintf(out, len, "%llu B", (unsigned long long)n);
}
