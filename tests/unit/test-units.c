/* test-units.c: sizes, ports and times parse as documented, and bad input is refused. */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "fastcat.h"
#include "tap.h"

static void size_ok(const char *s, uint64_t want)
{
	uint64_t v = 0;
	int rc = units_parse_size(s, &v);

	tap_ok(rc == 0 && v == want, "size '%s' = %llu (got rc %d, %llu)", s,
	       (unsigned long long)want, rc, (unsigned long long)v);
}

static void size_bad(const char *s, int want_rc)
{
	uint64_t v = 0;

	tap_ok(units_parse_size(s, &v) == want_rc, "size '%s' refused with %d", s, want_rc);
}

static void port_case(const char *s, int min, int want_rc, int want)
{
	int p = -7, rc = units_parse_port(s, min, &p);

	tap_ok(rc == want_rc && (rc != 0 || p == want), "port '%s' (min %d) -> rc %d port %d", s,
	       min, want_rc, want);
}

static void millis_case(const char *s, int want_rc, long want)
{
	long ms = -7;
	int rc = units_parse_millis(s, &ms);

	tap_ok(rc == want_rc && (rc != 0 || ms == want), "time '%s' -> rc %d, %ld ms (got %d, %ld)",
	       s, want_rc, want, rc, ms);
}

static void format_case(uint64_t n, const char *want, int exact)
{
	char out[32];

	if (exact)
		units_format_size(n, out, sizeof out);
	else
		units_format_bytes(n, out, sizeof out);
	tap_ok(strcmp(out, want) == 0, "format %llu -> '%s' (got '%s')", (unsigned long long)n,
	       want, out);
}

int main(void)
{
	size_ok("1", 1);
	size_ok("4096", 4096);
	size_ok("96k", 96 * 1024);
	size_ok("96K", 96 * 1024);
	size_ok("96KiB", 96 * 1024);
	size_ok("1m", 1 << 20);
	size_ok("64MiB", 64 << 20);
	size_ok("2G", 2ULL << 30);
	size_ok("0", 0);
	size_ok("18446744073709551615", UINT64_MAX);
	size_bad("", -1);
	size_bad("-1", -1);
	size_bad("+5", -1);
	size_bad(" 5", -1);
	size_bad("5 ", -1);
	size_bad("1e3", -1);
	size_bad("0x10", -1);
	size_bad("4kb", -1);
	size_bad("4KB", -1);
	size_bad("k", -1);
	size_bad("1.5M", -1);
	size_bad("18446744073709551616", -2);
	size_bad("17179869184G", -2);

	port_case("9000", 1, 0, 9000);
	port_case("1", 1, 0, 1);
	port_case("65535", 1, 0, 65535);
	port_case("0", 1, -2, 0);
	port_case("0", 0, 0, 0);
	port_case("65536", 1, -2, 0);
	port_case("99999", 0, -2, 0);
	port_case("99999999999999999999999", 1, -2, 0);
	port_case("-1", 1, -1, 0);
	port_case("http", 1, -1, 0);
	port_case("80x", 1, -1, 0);
	port_case("", 1, -1, 0);

	millis_case("5", 0, 5000);
	millis_case("0.5", 0, 500);
	millis_case("0.25", 0, 250);
	millis_case("1.125", 0, 1125);
	millis_case("2s", 0, 2000);
	millis_case("500ms", 0, 500);
	millis_case("0", 0, 0);
	millis_case("-1", -1, 0);
	millis_case("abc", -1, 0);
	millis_case("1.", -1, 0);
	millis_case("1.0001", -1, 0);
	millis_case("1.5ms", -1, 0);
	millis_case("5m", -1, 0);
	millis_case("99999999999", -2, 0);

	format_case(0, "0 B", 0);
	format_case(1023, "1023 B", 0);
	format_case(1024, "1.00 KiB", 0);
	format_case(1536, "1.50 KiB", 0);
	format_case(1073741824, "1.00 GiB", 0);
	format_case(100 << 20, "100.0 MiB", 0);
	format_case(524288, "512 KiB", 1);
	format_case(1 << 20, "1 MiB", 1);
	format_case(1000, "1000 B", 1);
	format_case(1, "1 B", 1);
	return tap_done();
}
