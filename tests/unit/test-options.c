/* test-options.c: the command line fills struct config, and each bad line gets its message. */
#include "config.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fastcat.h"
#include "bench/bench.h"
#include "cli/options.h"
#include "tap.h"

#define ARGV(...) argv_of("fastcat", __VA_ARGS__, (const char *)NULL)

/* A writable argv, as main() gets it, built from string literals. */
static char **argv_of(const char *first, ...)
{
	static char pool[16][80];
	static char *argv[17];
	const char *arg = first;
	va_list ap;
	int n = 0;

	va_start(ap, first);
	for (; arg != NULL && n < 16; n++, arg = va_arg(ap, const char *)) {
		snprintf(pool[n], sizeof pool[n], "%s", arg);
		argv[n] = pool[n];
	}
	va_end(ap);
	argv[n] = NULL;
	return argv;
}

/* Parse argv; the reason of a refusal goes to err (256 bytes). */
static int parse(char **argv, struct config *cfg, char *err)
{
	struct failure fail = {EXIT_OK, ""};
	int argc = 0, rc;

	while (argv[argc] != NULL)
		argc++;
		/* getopt keeps state between calls; glibc resets all of it only for 0. */
#ifdef __GLIBC__
	optind = 0;
#else
	optind = 1;
#endif
	rc = options_parse(argc, argv, cfg, &fail);
	snprintf(err, 256, "%s", fail.why);
	return rc;
}

static void usage_case(char **argv, const char *want)
{
	struct config cfg;
	char err[256];
	int rc = parse(argv, &cfg, err);

	tap_ok(rc == EXIT_USAGE && strcmp(err, want) == 0, "'%s' (got %d '%s')", want, rc, err);
}

/* --help (all = 0) or --help-all (all = 1), as printed, in a static buffer. */
static const char *help_text(int all)
{
	static char text[2][8192];
	FILE *f = tmpfile();
	size_t n = 0;

	if (f != NULL) {
		options_help_write(f, all);
		rewind(f);
		n = fread(text[all], 1, sizeof text[all] - 1, f);
		fclose(f);
	}
	text[all][n] = '\0';
	return text[all];
}

/* Whether text has the option word (e.g. "--seq", "-q") not followed by more of a name. */
static int has_word(const char *text, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = strstr(text, word); p != NULL; p = strstr(p + 1, word)) {
		char next = p[n];
		if (next != '-' && (next < 'a' || next > 'z') && (next < '0' || next > '9'))
			return 1;
	}
	return 0;
}

/*
 * The table against itself and both help texts: letters and names once each;
 * --help-all names every option; every --help piece is on --help, spelled
 * with its option first.
 */
static void table_checks(void)
{
	const char *all = help_text(1), *brief = help_text(0);
	char word[40];
	int dup = 0, briefs = 0, misspelled = 0;

	for (size_t i = 0; i < OPTIONS_COUNT; i++) {
		const struct opt_spec *o = &options_table[i];
		for (size_t j = 0; j < i; j++)
			dup += (o->letter != 0 && o->letter == options_table[j].letter) ||
			       (o->name != NULL && options_table[j].name != NULL &&
			        strcmp(o->name, options_table[j].name) == 0);
		if (o->name != NULL) {
			snprintf(word, sizeof word, "--%s", o->name);
			tap_ok(has_word(all, word), "--help-all names %s", word);
		}
		if (o->letter != 0) {
			snprintf(word, sizeof word, "-%c", o->letter);
			tap_ok(has_word(all, word), "--help-all names %s", word);
		}
		if (o->brief == NULL)
			continue;
		briefs++;
		tap_ok(strstr(brief, o->brief) != NULL, "--help has '%s'", o->brief);
		if (o->letter != 0)
			snprintf(word, sizeof word, "-%c", o->letter);
		else
			snprintf(word, sizeof word, "--%s", o->name);
		misspelled += strncmp(o->brief, word, strlen(word)) != 0;
	}
	tap_ok(dup == 0, "every letter and long name once in options_table (%d twice)", dup);
	tap_ok(briefs >= 20, "%d options have a --help piece", briefs);
	tap_ok(misspelled == 0, "each --help piece starts with its option (%d do not)", misspelled);
	tap_ok(strstr(brief, "?") == NULL, "--help names no option that has no piece");
	tap_ok(options_find("B") != NULL && options_find("B") == options_find("chunk-size") &&
	           options_find("nonesuch") == NULL,
	       "options_find: by letter and by long name");
}

int main(void)
{
	struct config cfg;
	char err[256];
	char **v;

	v = ARGV("example.org", "9000");
	tap_ok(parse(v, &cfg, err) == 0 && !cfg.listen && strcmp(cfg.host, "example.org") == 0 &&
	           strcmp(cfg.port, "9000") == 0 && cfg.read_size == CHUNK_DEFAULT &&
	           cfg.write_size == CHUNK_DEFAULT && cfg.timeout_ms == -1 &&
	           cfg.report == REPORT_NONE,
	       "host port: connect with the defaults");

	v = ARGV("-l", "0");
	tap_ok(parse(v, &cfg, err) == 0 && cfg.listen && cfg.host == NULL, "-l 0: listen on any");

	v = ARGV("-B", "4k", "--write-size", "1M", "-w", "1.5", "-v", "h", "1");
	tap_ok(parse(v, &cfg, err) == 0 && cfg.read_size == 4096 && cfg.write_size == 1048576 &&
	           cfg.timeout_ms == 1500 && cfg.report == REPORT_HUMAN,
	       "-B sets both sizes, --write-size overrides one, -v turns on the report");

	v = ARGV("--write-size", "1M", "-B", "4k", "h", "1");
	tap_ok(parse(v, &cfg, err) == 0 && cfg.read_size == 4096 && cfg.write_size == 1048576,
	       "--write-size wins over a later -B");

	v = ARGV("--report=json", "-O", "64k", "-I", "1M", "h", "1");
	tap_ok(parse(v, &cfg, err) == 0 && cfg.report == REPORT_JSON && cfg.sndbuf == 65536 &&
	           cfg.rcvbuf == 1048576,
	       "--report=json, -O and -I");

	v = ARGV("h", "1");
	tap_ok(parse(v, &cfg, err) == 0 && cfg.rcvlowat == 256 * KIB,
	       "tcp: --rcvlowat is 256 KiB by default");
	v = ARGV("--rcvlowat", "0", "h", "1");
	tap_ok(parse(v, &cfg, err) == 0 && cfg.rcvlowat == 0, "--rcvlowat 0: off");
	v = ARGV("-U", "--rcvlowat", "0", "/tmp/x");
	tap_ok(parse(v, &cfg, err) == 0 && cfg.rcvlowat == 0, "unix: no mark, and 0 is accepted");
	usage_case(ARGV("-u", "--rcvlowat", "64k", "h", "1"),
	           "--rcvlowat: only for tcp (a udp receiver wakes per message or write)");
	usage_case(ARGV("--rcvlowat", "2G", "h", "1"),
	           "--rcvlowat 2G: low-water mark must be 0 (off) to 1 GiB");

	usage_case(ARGV("-B", "0", "h", "1"), "-B 0: chunk size must be 1 byte to 64 MiB");
	usage_case(ARGV("-B", "65M", "h", "1"), "-B 65M: chunk size must be 1 byte to 64 MiB");
	usage_case(
	    ARGV("-B", "1e3", "h", "1"),
	    "-B 1e3: invalid size (digits with an optional k/K/KiB, m/M/MiB or g/G/GiB suffix)");
	usage_case(ARGV("-B", "99999999999999999999", "h", "1"),
	           "-B 99999999999999999999: size too large");
	usage_case(ARGV("--read-size", "0", "h", "1"),
	           "--read-size 0: chunk size must be 1 byte to 64 MiB");
	usage_case(ARGV("--sndbuf", "2G", "h", "1"),
	           "--sndbuf 2G: socket buffer size must be 1 byte to 1 GiB");
	usage_case(ARGV("h", "99999"), "port 99999: must be 1 to 65535");
	usage_case(ARGV("h", "0"), "port 0: must be 1 to 65535");
	usage_case(ARGV("-l", "99999"), "port 99999: must be 0 to 65535");
	usage_case(ARGV("h", "http"), "port http: not a number");
	usage_case(ARGV("-w", "abc", "h", "1"),
	           "-w abc: invalid time (seconds, e.g. 5, 0.5 or 500ms)");
	usage_case(ARGV("-w", "0", "h", "1"), "-w 0: timeout must be greater than 0");
	usage_case(ARGV("--frobnicate", "h", "1"),
	           "--frobnicate: unknown option (or an ambiguous abbreviation)");
	usage_case(ARGV("-Z", "h", "1"), "-Z: unknown option");
	usage_case(ARGV("-B"), "-B: option requires an argument");
	usage_case(ARGV("--read-size"), "--read-size: option requires an argument");
	usage_case(argv_of("fastcat", (const char *)NULL), "missing host and port");
	usage_case(ARGV("h"), "missing port");
	usage_case(ARGV("-l"), "-l: missing port");
	usage_case(ARGV("h", "1", "x"), "unexpected argument 'x'");
	usage_case(ARGV("-k", "h", "1"), "-k: needs -l");
	usage_case(ARGV("-4", "-6", "h", "1"), "-4 and -6: pick one");
	usage_case(ARGV("-d", "--send-only", "h", "1"),
	           "-d (--recv-only) and --send-only: nothing would move");
	usage_case(ARGV("--report=xml", "h", "1"), "--report=xml: must be human or json");

	v = ARGV("-l", "--allow", "10.0.0.0/8", "--deny", "10.1.0.0/16", "--allow", "::1", "0");
	tap_ok(parse(v, &cfg, err) == 0 && cfg.acl.n == 3 && cfg.acl.allow_listed &&
	           !cfg.acl.rules[0].deny && cfg.acl.rules[1].deny &&
	           cfg.acl.rules[2].family == AF_INET6,
	       "--allow/--deny: the rules in the order given");
	usage_case(ARGV("-l", "--allow", "10.0.0.0/33", "0"),
	           "--allow 10.0.0.0/33: prefix length must be 0 to 32");
	usage_case(ARGV("-l", "--deny", "::1/129", "0"),
	           "--deny ::1/129: prefix length must be 0 to 128");
	usage_case(ARGV("-l", "--deny", "1.2.3", "0"),
	           "--deny 1.2.3: not an IPv4 or IPv6 address (ADDRESS or ADDRESS/BITS)");
	usage_case(ARGV("-l", "--allow", "", "0"), "--allow: empty address");
	usage_case(ARGV("--allow", "::1", "h", "1"), "--allow: needs -l");
	usage_case(
	    ARGV("-lU", "--deny", "::1", "/tmp/x"),
	    "--deny: needs a tcp or udp listener (Unix peers have no address; see --unix-mode)");
	v = ARGV("-lU", "/tmp/x.sock");
	tap_ok(parse(v, &cfg, err) == 0 && cfg.unix_mode == 0600 && cfg.acl.n == 0,
	       "-lU: the socket file mode is 0600 by default");
	v = ARGV("-lU", "--unix-mode", "0660", "/tmp/x.sock");
	tap_ok(parse(v, &cfg, err) == 0 && cfg.unix_mode == 0660, "--unix-mode 0660 (got '%s')",
	       err);
	usage_case(ARGV("-lU", "--unix-mode", "1777", "/tmp/x"),
	           "--unix-mode 1777: must be an octal mode from 0 to 777 (e.g. 660)");
	usage_case(ARGV("-U", "--unix-mode", "600", "/tmp/x"), "--unix-mode: needs -l");
	usage_case(ARGV("-l", "--unix-mode", "600", "0"),
	           "--unix-mode: needs a Unix socket path (-U)");
	usage_case(ARGV("-lU", "--unix-mode", "600", "@x"),
	           "--unix-mode: @x is an abstract name, which has no file mode; use a path");

	v = ARGV("h", "1");
	tap_ok(parse(v, &cfg, err) == 0 && !cfg.progress && cfg.interval_ms == 0 && cfg.size == 0,
	       "no progress by default");
	v = ARGV("--progress", "--interval", "0.2", "--size", "2G", "h", "1");
	tap_ok(parse(v, &cfg, err) == 0 && cfg.progress && cfg.interval_ms == 200 &&
	           cfg.size == 2 * 1024 * MIB,
	       "--progress --interval 0.2 --size 2G (got '%s')", err);
	usage_case(ARGV("--size", "1M", "h", "1"), "--size: needs --progress or --interval");
	usage_case(ARGV("--progress", "--size", "0", "h", "1"),
	           "--size 0: size must be at least 1 byte");
	usage_case(ARGV("--interval", "0", "h", "1"), "--interval 0: must be greater than 0");
	usage_case(ARGV("--bench", "--progress"), "--bench and --progress: cannot be combined");

	v = ARGV("--bench");
	tap_ok(parse(v, &cfg, err) == 0 && cfg.bench && cfg.bench_ms == 60000 &&
	           cfg.bench_links == (1u << BENCH_LINKS) - 1 && cfg.bench_nsizes == 7 &&
	           cfg.bench_sizes[0] == 1 && cfg.bench_sizes[6] == MIB,
	       "--bench: 60 s, every link, 1 B to 1 MiB");
	v = ARGV("--bench", "--bench-time", "2.5", "--bench-transports", "udp,pipe,udp",
	         "--bench-sizes", "64k,1,64K,4k", "--report=json", "-v");
	tap_ok(parse(v, &cfg, err) == 0 && cfg.bench_ms == 2500 &&
	           cfg.bench_links ==
	               (1u << bench_link_find("udp") | 1u << bench_link_find("pipe")) &&
	           cfg.bench_nsizes == 3 && cfg.bench_sizes[0] == 1 && cfg.bench_sizes[1] == 4096 &&
	           cfg.bench_sizes[2] == 65536 && cfg.report == REPORT_JSON,
	       "--bench-*: time, links as a set, sizes sorted without repeats (got '%s')", err);
	usage_case(ARGV("--bench", "--bench-transports", "tcp,x"),
	           "--bench-transports tcp,x: unknown transport 'x' (pipe, memcpy, tcp, udp, unix, "
	           "unix-dgram, unix-seqpacket)");
	usage_case(ARGV("--bench", "--bench-sizes", "1,,2"), "--bench-sizes 1,,2: an empty entry");
	usage_case(ARGV("--bench", "--bench-sizes", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17"),
	           "--bench-sizes 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17: at most 16 sizes");
	usage_case(ARGV("--bench", "--bench-time", "0"),
	           "--bench-time 0: must be 1 to 3600 seconds");
	usage_case(ARGV("--bench", "h", "1"),
	           "--bench: unexpected argument 'h' (it takes no host, port or path)");
	usage_case(ARGV("--bench", "-k"), "--bench and -k: cannot be combined");
	usage_case(ARGV("--bench-transports", "tcp", "h", "1"),
	           "--bench-transports: needs --bench");
	table_checks();
	return tap_done();
}
