/* options.c: argv -> one struct config, with every range and combination check, and --help. */
#include "config.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fastcat.h"

/* Values for options that have no short letter. */
enum {
	OPT_READ_SIZE = 256,
	OPT_WRITE_SIZE,
	OPT_EXIT_ON_PEER_EOF,
	OPT_NO_EXIT_ON_PEER_EOF,
	OPT_SEND_ONLY,
	OPT_REPORT,
	OPT_TRANSPORT,
	OPT_DGRAM_SIZE,
	OPT_NO_DGRAM_EOF,
	OPT_CHECKSUM,
	OPT_SEQ,
	OPT_VERIFY,
	OPT_COPY,
	OPT_BENCH,
	OPT_BENCH_TIME,
	OPT_BENCH_TRANSPORTS,
	OPT_BENCH_SIZES,
	OPT_ALLOW,
	OPT_DENY,
	OPT_UNIX_MODE,
	OPT_PROGRESS,
	OPT_INTERVAL,
	OPT_SIZE,
	OPT_RATE_LIMIT,
	OPT_RCVLOWAT,
	OPT_HELP_ALL,
};

static const char short_options[] = ":lk46nvhVB:O:I:w:Nq:duU";

static const struct option long_options[] = {
    {"listen", no_argument, NULL, 'l'},
    {"keep-listening", no_argument, NULL, 'k'},
    {"numeric", no_argument, NULL, 'n'},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, 'h'},
    {"help-all", no_argument, NULL, OPT_HELP_ALL},
    {"version", no_argument, NULL, 'V'},
    {"chunk-size", required_argument, NULL, 'B'},
    {"read-size", required_argument, NULL, OPT_READ_SIZE},
    {"write-size", required_argument, NULL, OPT_WRITE_SIZE},
    {"sndbuf", required_argument, NULL, 'O'},
    {"rcvbuf", required_argument, NULL, 'I'},
    {"timeout", required_argument, NULL, 'w'},
    {"exit-on-peer-eof", no_argument, NULL, OPT_EXIT_ON_PEER_EOF},
    {"no-exit-on-peer-eof", no_argument, NULL, OPT_NO_EXIT_ON_PEER_EOF},
    {"recv-only", no_argument, NULL, 'd'},
    {"send-only", no_argument, NULL, OPT_SEND_ONLY},
    {"report", optional_argument, NULL, OPT_REPORT},
    {"transport", required_argument, NULL, OPT_TRANSPORT},
    {"dgram-size", required_argument, NULL, OPT_DGRAM_SIZE},
    {"no-dgram-eof", no_argument, NULL, OPT_NO_DGRAM_EOF},
    {"checksum", no_argument, NULL, OPT_CHECKSUM},
    {"seq", no_argument, NULL, OPT_SEQ},
    {"verify", no_argument, NULL, OPT_VERIFY},
    {"copy", required_argument, NULL, OPT_COPY},
    {"bench", no_argument, NULL, OPT_BENCH},
    {"bench-time", required_argument, NULL, OPT_BENCH_TIME},
    {"bench-transports", required_argument, NULL, OPT_BENCH_TRANSPORTS},
    {"bench-sizes", required_argument, NULL, OPT_BENCH_SIZES},
    {"allow", required_argument, NULL, OPT_ALLOW},
    {"deny", required_argument, NULL, OPT_DENY},
    {"unix-mode", required_argument, NULL, OPT_UNIX_MODE},
    {"progress", no_argument, NULL, OPT_PROGRESS},
    {"interval", required_argument, NULL, OPT_INTERVAL},
    {"size", required_argument, NULL, OPT_SIZE},
    {"rate-limit", required_argument, NULL, OPT_RATE_LIMIT},
    {"rcvlowat", required_argument, NULL, OPT_RCVLOWAT},
    {NULL, 0, NULL, 0},
};

/*
 * --help: the most-used options on one 80x24 screen (tests/usage.bats checks
 * the size); every option is in usage_all_text and the man page.
 */
static const char usage_text[] =
    "usage: fastcat [options] host port            connect\n"
    "       fastcat -l [options] [address] port    listen (port 0: any free port)\n"
    "       fastcat -U [-l] [options] path|@name   Unix socket (@name: abstract)\n"
    "Connection:  -l listen   -k with -l: serve one connection after another\n"
    "  -4, -6 IPv4 or IPv6 only   -n no DNS   -w SECS connect and idle timeout\n"
    "Transport:   -u udp   -U unix   -Uu unix-dgram\n"
    "  --transport NAME  tcp (default), udp, unix, unix-dgram, unix-seqpacket\n"
    "Speed (SIZE: 64k, 1M, 1G; powers of 1024):\n"
    "  -B, --chunk-size SIZE  bytes per read() and write() (default 96K; unix 1M)\n"
    "  -O, -I SIZE  SO_SNDBUF, SO_RCVBUF (default: the kernel's; TCP autotunes)\n"
    "  --copy=MODE  auto (zero-copy where possible), rw, splice\n"
    "End of data: at stdin EOF the socket is half-closed, and fastcat exits 0\n"
    "  after the peer's EOF.   -q SECS  then wait at most SECS for the peer\n"
    "  -d  do not read stdin   --send-only  do not write stdout\n"
    "  --exit-on-peer-eof  exit at the peer's EOF (default when stdin is a tty)\n"
    "Report:\n"
    "  -v  progress on stderr, and the report at exit   --progress  a live line\n"
    "  --report[=human|json]  the report at exit, and on SIGUSR1\n"
    "  --checksum  XXH64 of each direction   --verify  both ends confirm it\n"
    "Other: -V version, --bench built-in benchmark, --rate-limit RATE\n"
    "Exit status: 0 all data moved, 1 other failure, 2 usage, 3 could not connect,\n"
    "4 timeout, 5 peer reset or closed early, 6 --verify mismatch, 7 stdout write.\n"
    "All options: fastcat --help-all; details: man fastcat\n";

/* --help-all: every option; tests/completion.bats checks the completions against it. */
static const char usage_all_text[] =
    "usage: fastcat [options] host port          connect\n"
    "       fastcat -l [options] [address] port  listen (port 0: any free port)\n"
    "       fastcat -U [-l] [options] path|@name  Unix socket (@name: abstract)\n"
    "\n"
    "Connection:\n"
    "  -l, --listen             accept one connection instead of connecting\n"
    "  -k, --keep-listening     with -l: serve successive connections, one at a time\n"
    "  -4, -6                   IPv4 only, IPv6 only (default: both)\n"
    "  -n, --numeric            numeric addresses only, never ask DNS\n"
    "  -w, --timeout SECS       connect timeout, and idle timeout once connected\n"
    "      --allow|--deny CIDR  with -l: accept only / refuse these peers\n"
    "      --unix-mode MODE     with -lU: socket file mode, octal (default 600)\n"
    "Transport:\n"
    "      --transport NAME     tcp (default), udp, unix, unix-dgram, unix-seqpacket\n"
    "  -u, -U                   udp; unix (with -u: unix-dgram)\n"
    "      --dgram-size SIZE    cut the stream into datagrams of exactly SIZE bytes\n"
    "                           (default: one datagram per read)\n"
    "      --no-dgram-eof       no zero-length datagram at EOF, and none taken as EOF\n"
    "      --seq                number datagrams; the receiver counts lost,\n"
    "                           duplicated and reordered ones (fastcat at both ends)\n"
    "Speed:\n"
    "  -B, --chunk-size SIZE    bytes per read() and write(), 1 to 64M (default 96K;\n"
    "                           unix: 1M)\n"
    "      --read-size SIZE     bytes per read() only\n"
    "      --write-size SIZE    at most bytes per write() only\n"
    "  -O, --sndbuf SIZE        SO_SNDBUF, before connect/listen (default: kernel's)\n"
    "  -I, --rcvbuf SIZE        SO_RCVBUF, same; setting it turns off TCP autotuning\n"
    "      --copy=MODE          auto (zero-copy splice/sendfile where possible), rw,\n"
    "                           or splice (say when a direction cannot have it)\n"
    "      --rate-limit RATE    at most RATE bytes/s each direction (SIZE suffixes)\n"
    "      --rcvlowat SIZE      tcp: while data queues, wake per SIZE bytes, not per\n"
    "                           packet (SO_RCVLOWAT; default 256K, 0: off)\n"
    "End of data (EOF):\n"
    "  stdin EOF: what is pending is sent, then the socket is half-closed\n"
    "  (shutdown SHUT_WR) and fastcat reads on until the peer's EOF, then exits 0.\n"
    "  Peer EOF: received data is flushed and stdout closed; sending goes on\n"
    "  until stdin ends, as a half-closed peer still reads.\n"
    "      --exit-on-peer-eof   exit once the peer's EOF is flushed (default when\n"
    "                           stdin is a terminal); --no-exit-on-peer-eof: never\n"
    "  -q SECS                  after stdin EOF wait at most SECS for the peer\n"
    "  -d, --recv-only          do not read stdin\n"
    "      --send-only          do not write stdout (the peer's data is dropped)\n"
    "  -N                       accepted for nc compatibility (always on)\n"
    "Report:\n"
    "  -v, --verbose            progress on stderr, and the report at exit\n"
    "      --report[=human|json] throughput report on stderr at exit (and on SIGUSR1)\n"
    "      --checksum           XXH64 of the bytes sent and received, in the report\n"
    "      --verify             both ends confirm byte count and XXH64 (fastcat at\n"
    "                           both ends; exit 6 on a mismatch)\n"
    "      --progress           a live progress line on stderr, if it is a terminal\n"
    "      --interval SECS      a plain progress line every SECS, terminal or not\n"
    "      --size SIZE          bytes expected, for % and ETA (default: stdin's file)\n"
    "Benchmark (no host or port):\n"
    "      --bench              built-in benchmark: MB/s and latency on this machine\n"
    "      --bench-time SECS    the whole run, 1 to 3600 (default 60)\n"
    "      --bench-transports LIST\n"
    "                           pipe,memcpy,tcp,udp,unix,unix-dgram,unix-seqpacket\n"
    "      --bench-sizes LIST   sizes, 1 to 64M (default 1,1k,4k,16k,64k,256k,1M)\n"
    "  -h, --help               the most-used options; --help-all: this list\n"
    "  -V, --version            print the version\n"
    "\n"
    "SIZE takes k/K/KiB, m/M/MiB, g/G/GiB suffixes (powers of 1024).\n"
    "Exit status: 0 all data moved, 1 other failure, 2 usage, 3 could not connect,\n"
    "4 timeout, 5 peer reset or closed early, 6 --verify mismatch, 7 stdout write.\n";

void options_usage(void)
{
	fputs(usage_text, stdout);
}

/* The name an error message uses for an option: its letter if it has one. */
static void option_label(int val, char *out, size_t len)
{
	if (val > 0 && val < 256) {
		snprintf(out, len, "-%c", val);
		return;
	}
	for (const struct option *o = long_options; o->name != NULL; o++)
		if (o->val == val) {
			snprintf(out, len, "--%s", o->name);
			return;
		}
	snprintf(out, len, "option");
}

/*
 * The option getopt stopped at, as the user typed it: a long option from
 * its argv word (without any "=value"), a short one from its letter. A
 * short option inside a cluster leaves optind on its word, so the word
 * before it is only the option when it is a long one.
 */
static void typed_label(const char *word, int opt, char *out, size_t len)
{
	if (strncmp(word, "--", 2) == 0 && word[2] != '\0')
		snprintf(out, len, "%.*s", (int)strcspn(word, "="), word);
	else
		option_label(opt, out, len);
}

/* getopt's '?': an unknown or ambiguous option, or a value given to one that takes none. */
static int option_refused(const char *word, int opt, char *err, size_t errlen)
{
	int is_long = strncmp(word, "--", 2) == 0 && word[2] != '\0';
	int len = (int)strcspn(word, "=");

	if (is_long && opt == 0)
		return log_format(err, errlen, EXIT_USAGE,
		                  "%.*s: unknown option (or an ambiguous abbreviation)", len, word);
	if (is_long && word[len] == '=')
		return log_format(err, errlen, EXIT_USAGE, "%.*s: takes no value", len, word);
	if (opt > 32 && opt < 127)
		return log_format(err, errlen, EXIT_USAGE, "-%c: unknown option", opt);
	return log_format(err, errlen, EXIT_USAGE, "unknown option");
}

/* A size option: digits, a 1024-based suffix, and a range named in the error. */
static int parse_size_option(const char *label, const char *arg, uint64_t min, uint64_t max,
                             const char *what, const char *range, uint64_t *out, char *err,
                             size_t errlen)
{
	uint64_t v;

	switch (units_parse_size(arg, &v)) {
	case -1:
		return log_format(err, errlen, EXIT_USAGE,
		                  "%s %s: invalid size (digits with an optional k/K/KiB, "
		                  "m/M/MiB or g/G/GiB suffix)",
		                  label, arg);
	case -2: return log_format(err, errlen, EXIT_USAGE, "%s %s: size too large", label, arg);
	}
	if (v < min || v > max)
		return log_format(err, errlen, EXIT_USAGE, "%s %s: %s must be %s", label, arg, what,
		                  range);
	*out = v;
	return 0;
}

static int parse_time_option(const char *label, const char *arg, int zero_ok, long *out, char *err,
                             size_t errlen)
{
	switch (units_parse_millis(arg, out)) {
	case -1:
		return log_format(err, errlen, EXIT_USAGE,
		                  "%s %s: invalid time (seconds, e.g. 5, 0.5 or 500ms)", label,
		                  arg);
	case -2: return log_format(err, errlen, EXIT_USAGE, "%s %s: time too large", label, arg);
	}
	if (!zero_ok && *out == 0)
		return log_format(err, errlen, EXIT_USAGE, "%s %s: timeout must be greater than 0",
		                  label, arg);
	return 0;
}

/*
 * The highest --rate-limit: 1 TiB/s, far above any link, so the limit is a
 * typo check; the bucket's arithmetic (double) is exact well beyond it.
 */
#define RATE_LIMIT_MAX ((uint64_t)1 << 40)

/* --rate-limit RATE: bytes per second, with the size suffixes. */
static int parse_rate_option(const char *label, const char *arg, uint64_t *out, char *err,
                             size_t errlen)
{
	switch (units_parse_size(arg, out)) {
	case -1:
		return log_format(err, errlen, EXIT_USAGE,
		                  "%s %s: invalid rate (bytes per second: digits with an optional "
		                  "k/K/KiB, m/M/MiB or g/G/GiB suffix)",
		                  label, arg);
	case -2: return log_format(err, errlen, EXIT_USAGE, "%s %s: rate too large", label, arg);
	}
	if (*out == 0 || *out > RATE_LIMIT_MAX)
		return log_format(err, errlen, EXIT_USAGE,
		                  "%s %s: rate must be 1 byte/s to 1024G (1 TiB/s)", label, arg);
	return 0;
}

/* --bench's sizes unless --bench-sizes: those of lmbench's and Stevens' tables, and up. */
static const size_t bench_default_sizes[] = {1, KIB, 4 * KIB, 16 * KIB, 64 * KIB, 256 * KIB, MIB};

static void config_defaults(struct config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->family = AF_UNSPEC;
	cfg->transport = &transport_tcp;
	cfg->dgram_eof = 1;
	cfg->read_size = CHUNK_DEFAULT;
	cfg->write_size = CHUNK_DEFAULT;
	cfg->timeout_ms = -1;
	cfg->quit_after_eof_ms = -1;
	cfg->unix_mode = 0600;
	cfg->exit_on_peer_eof = -1; /* decided after parsing */
	cfg->report = REPORT_NONE;
	cfg->bench_ms = 60 * 1000;
	cfg->bench_links = (1u << BENCH_LINKS) - 1;
	for (size_t i = 0; i < sizeof bench_default_sizes / sizeof bench_default_sizes[0]; i++)
		cfg->bench_sizes[cfg->bench_nsizes++] = bench_default_sizes[i];
}

/* Flags seen on the command line that only matter for the checks after parsing. */
struct seen {
	int read_size, write_size; /* --read-size, --write-size: each overrides -B */
	int read_set, write_set;   /* the read or write size was given, by any of the three */
	int ipv4, ipv6, udp, unix_socket, unix_mode;
	int rcvlowat;          /* --rcvlowat was given */
	const char *transport; /* --transport NAME */
	char acl_label[32];    /* the first --allow or --deny, which needs a TCP or UDP listener */
	char label[32];        /* the option being applied, as typed: "-B" or "--chunk-size" */
	char size_label[64];   /* the last option that set the read size, with its value */
	char bench_only[32];   /* the first --bench-* option, which needs --bench */
	char not_bench[32];    /* the first option --bench cannot take */
};

/*
 * Copy the comma-separated entry at *p into out and move *p past it and its
 * comma. Returns 1 if another entry follows, 0 after the last one, -1 if the
 * entry does not fit out.
 */
static int list_next(const char **p, char *out, size_t len)
{
	size_t n = strcspn(*p, ",");
	int more = (*p)[n] == ',';

	if (n >= len)
		return -1;
	memcpy(out, *p, n);
	out[n] = '\0';
	*p += n + (size_t)more;
	return more;
}

/* --bench-transports pipe,tcp,...: the links to measure, as bits of bench_links[]. */
static int parse_bench_links(struct config *cfg, const char *label, const char *arg, char *err,
                             size_t errlen)
{
	const char *p = arg, *entry;
	char name[32];
	int more, i;

	cfg->bench_links = 0;
	do {
		entry = p;
		more = list_next(&p, name, sizeof name);
		i = more < 0 ? -1 : bench_link_find(name);
		if (i < 0)
			return log_format(err, errlen, EXIT_USAGE,
			                  "%s %s: unknown transport '%.*s' (%s)", label, arg,
			                  (int)strcspn(entry, ","), entry, bench_link_names());
		cfg->bench_links |= 1u << i;
	} while (more);
	return 0;
}

/* --bench-sizes 1k,64k,...: kept in ascending order, each once. */
static int parse_bench_sizes(struct config *cfg, const char *label, const char *arg, char *err,
                             size_t errlen)
{
	const char *p = arg, *entry;
	char text[32];
	uint64_t v;
	size_t i;
	int more, rc;

	cfg->bench_nsizes = 0;
	do {
		entry = p;
		more = list_next(&p, text, sizeof text);
		if (more < 0)
			return log_format(err, errlen, EXIT_USAGE, "%s %.*s: invalid size", label,
			                  (int)strcspn(entry, ","), entry);
		if (text[0] == '\0')
			return log_format(err, errlen, EXIT_USAGE, "%s %s: an empty entry", label,
			                  arg);
		rc = parse_size_option(label, text, 1, CHUNK_MAX, "size", "1 byte to 64 MiB", &v,
		                       err, errlen);
		if (rc != 0)
			return rc;
		for (i = 0; i < cfg->bench_nsizes && cfg->bench_sizes[i] < v; i++)
			;
		if (i < cfg->bench_nsizes && cfg->bench_sizes[i] == v)
			continue;
		if (cfg->bench_nsizes == BENCH_SIZES_MAX)
			return log_format(err, errlen, EXIT_USAGE, "%s %s: at most %d sizes", label,
			                  arg, BENCH_SIZES_MAX);
		memmove(&cfg->bench_sizes[i + 1], &cfg->bench_sizes[i],
		        (cfg->bench_nsizes - i) * sizeof cfg->bench_sizes[0]);
		cfg->bench_sizes[i] = (size_t)v;
		cfg->bench_nsizes++;
	} while (more);
	return 0;
}

/* --allow/--deny CIDR: one more rule, after the ones before it. */
static int parse_acl_option(struct config *cfg, struct seen *seen, int deny, const char *arg,
                            char *err, size_t errlen)
{
	const char *label = seen->label;
	int ipv6 = memchr(arg, ':', strcspn(arg, "/")) != NULL;

	if (seen->acl_label[0] == '\0')
		snprintf(seen->acl_label, sizeof seen->acl_label, "%s", label);
	if (arg[0] == '\0')
		return log_format(err, errlen, EXIT_USAGE, "%s: empty address", label);
	switch (acl_add(&cfg->acl, arg, deny)) {
	case -1:
		return log_format(err, errlen, EXIT_USAGE,
		                  "%s %s: not an IPv4 or IPv6 address (ADDRESS or ADDRESS/BITS)",
		                  label, arg);
	case -2:
		return log_format(err, errlen, EXIT_USAGE, "%s %s: prefix length must be 0 to %d",
		                  label, arg, ipv6 ? 128 : 32);
	case -3:
		return log_format(err, errlen, EXIT_USAGE,
		                  "%s %s: at most %d --allow and --deny rules", label, arg,
		                  ACL_MAX);
	}
	return 0;
}

/* --unix-mode MODE: octal digits only, at most 777 (no set-id or sticky bit on a socket). */
static int parse_unix_mode(struct config *cfg, const char *label, const char *arg, char *err,
                           size_t errlen)
{
	size_t n = strlen(arg);
	unsigned long v = 0;
	int octal = n > 0 && strspn(arg, "01234567") == n;

	if (n == 0)
		return log_format(err, errlen, EXIT_USAGE, "%s: empty mode (octal, e.g. 660)",
		                  label);
	for (const char *p = arg; octal && *p != '\0' && v <= 0777; p++)
		v = v * 8 + (unsigned long)(*p - '0');
	if (!octal || v > 0777)
		return log_format(err, errlen, EXIT_USAGE,
		                  "%s %s: must be an octal mode from 0 to 777 (e.g. 660)", label,
		                  arg);
	cfg->unix_mode = (mode_t)v;
	return 0;
}

/* --bench takes -v, --report and the --bench-* options, which need it; it refuses the rest. */
static void note_bench(struct seen *seen, int c)
{
	char *slot = seen->not_bench;

	switch (c) {
	case OPT_BENCH:
	case OPT_REPORT:
	case 'v': return;
	case OPT_BENCH_TIME:
	case OPT_BENCH_TRANSPORTS:
	case OPT_BENCH_SIZES: slot = seen->bench_only; break;
	}
	if (slot[0] == '\0')
		snprintf(slot, sizeof seen->not_bench, "%s", seen->label);
}

static int apply_option(struct config *cfg, struct seen *seen, int c, const char *arg, char *err,
                        size_t errlen)
{
	uint64_t v;
	int rc = 0;

	switch (c) {
	case 'l': cfg->listen = 1; break;
	case 'k': cfg->keep_listening = 1; break;
	case '4':
		seen->ipv4 = 1;
		cfg->family = AF_INET;
		break;
	case '6':
		seen->ipv6 = 1;
		cfg->family = AF_INET6;
		break;
	case 'n': cfg->numeric = 1; break;
	case 'v': cfg->verbose = 1; break;
	case 'N': break;
	case 'd': cfg->recv_only = 1; break;
	case OPT_SEND_ONLY: cfg->send_only = 1; break;
	case OPT_EXIT_ON_PEER_EOF: cfg->exit_on_peer_eof = 1; break;
	case OPT_NO_EXIT_ON_PEER_EOF: cfg->exit_on_peer_eof = 0; break;
	case 'B':
	case OPT_READ_SIZE:
	case OPT_WRITE_SIZE:
		rc = parse_size_option(seen->label, arg, CHUNK_MIN, CHUNK_MAX, "chunk size",
		                       "1 byte to 64 MiB", &v, err, errlen);
		if (rc != 0)
			return rc;
		if (c != OPT_WRITE_SIZE && (c == OPT_READ_SIZE || !seen->read_size)) {
			cfg->read_size = (size_t)v;
			snprintf(seen->size_label, sizeof seen->size_label, "%s %s", seen->label,
			         arg);
		}
		if (c != OPT_READ_SIZE && (c == OPT_WRITE_SIZE || !seen->write_size))
			cfg->write_size = (size_t)v;
		seen->read_set |= c != OPT_WRITE_SIZE;
		seen->write_set |= c != OPT_READ_SIZE;
		seen->read_size |= c == OPT_READ_SIZE;
		seen->write_size |= c == OPT_WRITE_SIZE;
		break;
	case 'O':
	case 'I':
		rc = parse_size_option(seen->label, arg, 1, SOCKBUF_MAX, "socket buffer size",
		                       "1 byte to 1 GiB", &v, err, errlen);
		if (rc == 0)
			*(c == 'O' ? &cfg->sndbuf : &cfg->rcvbuf) = (int)v;
		break;
	case 'w': rc = parse_time_option(seen->label, arg, 0, &cfg->timeout_ms, err, errlen); break;
	case 'q':
		rc = parse_time_option(seen->label, arg, 1, &cfg->quit_after_eof_ms, err, errlen);
		break;
	case 'u': seen->udp = 1; break;
	case 'U': seen->unix_socket = 1; break;
	case OPT_TRANSPORT: seen->transport = arg; break;
	case OPT_NO_DGRAM_EOF: cfg->dgram_eof = 0; break;
	case OPT_CHECKSUM: cfg->checksum = 1; break;
	case OPT_SEQ: cfg->seq = 1; break;
	case OPT_VERIFY: cfg->verify = 1; break;
	case OPT_DGRAM_SIZE:
		rc = parse_size_option(seen->label, arg, CHUNK_MIN, CHUNK_MAX, "datagram size",
		                       "1 byte to 64 MiB", &v, err, errlen);
		if (rc != 0)
			return rc;
		cfg->dgram_size = (size_t)v;
		snprintf(seen->size_label, sizeof seen->size_label, "%s %s", seen->label, arg);
		break;
	case OPT_REPORT:
		if (arg == NULL || strcmp(arg, "human") == 0)
			cfg->report = REPORT_HUMAN;
		else if (strcmp(arg, "json") == 0)
			cfg->report = REPORT_JSON;
		else
			rc = log_format(err, errlen, EXIT_USAGE,
			                "--report=%s: must be human or json", arg);
		break;
	case OPT_COPY:
		if (strcmp(arg, "auto") == 0)
			cfg->copy = COPY_AUTO;
		else if (strcmp(arg, "rw") == 0)
			cfg->copy = COPY_RW;
		else if (strcmp(arg, "splice") == 0)
			cfg->copy = COPY_SPLICE;
		else
			rc = log_format(err, errlen, EXIT_USAGE,
			                "--copy=%s: must be auto, rw or splice", arg);
		break;
	case OPT_BENCH: cfg->bench = 1; break;
	case OPT_BENCH_TIME:
		rc = parse_time_option(seen->label, arg, 1, &cfg->bench_ms, err, errlen);
		if (rc == 0 && (cfg->bench_ms < 1000 || cfg->bench_ms > 3600 * 1000))
			rc = log_format(err, errlen, EXIT_USAGE, "%s %s: must be 1 to 3600 seconds",
			                seen->label, arg);
		break;
	case OPT_BENCH_TRANSPORTS:
		rc = parse_bench_links(cfg, seen->label, arg, err, errlen);
		break;
	case OPT_BENCH_SIZES: rc = parse_bench_sizes(cfg, seen->label, arg, err, errlen); break;
	case OPT_ALLOW:
	case OPT_DENY: rc = parse_acl_option(cfg, seen, c == OPT_DENY, arg, err, errlen); break;
	case OPT_UNIX_MODE:
		seen->unix_mode = 1;
		rc = parse_unix_mode(cfg, seen->label, arg, err, errlen);
		break;
	case OPT_PROGRESS: cfg->progress = 1; break;
	case OPT_INTERVAL:
		rc = parse_time_option(seen->label, arg, 1, &cfg->interval_ms, err, errlen);
		if (rc == 0 && cfg->interval_ms == 0)
			rc = log_format(err, errlen, EXIT_USAGE, "%s %s: must be greater than 0",
			                seen->label, arg);
		break;
	case OPT_SIZE:
		rc = parse_size_option(seen->label, arg, 1, UINT64_MAX, "size", "at least 1 byte",
		                       &v, err, errlen);
		if (rc == 0)
			cfg->size = v;
		break;
	case OPT_RATE_LIMIT:
		rc = parse_rate_option(seen->label, arg, &cfg->rate_limit, err, errlen);
		break;
	case OPT_RCVLOWAT:
		rc = parse_size_option(seen->label, arg, 0, SOCKBUF_MAX, "low-water mark",
		                       "0 (off) to 1 GiB", &v, err, errlen);
		if (rc == 0)
			cfg->rcvlowat = (size_t)v;
		seen->rcvlowat = 1;
		break;
	}
	if (rc == 0)
		note_bench(seen, c);
	return rc;
}

/* --bench opens no connection: no operands, no connection options; its own need it. */
static int check_bench(const struct config *cfg, const struct seen *seen, int argc, char **argv,
                       char *err, size_t errlen)
{
	if (!cfg->bench)
		return seen->bench_only[0] == '\0'
		           ? 0
		           : log_format(err, errlen, EXIT_USAGE, "%s: needs --bench",
		                        seen->bench_only);
	if (seen->not_bench[0] != '\0')
		return log_format(err, errlen, EXIT_USAGE, "--bench and %s: cannot be combined",
		                  seen->not_bench);
	if (argc > 0)
		return log_format(err, errlen, EXIT_USAGE,
		                  "--bench: unexpected argument '%s' (it takes no host, port or "
		                  "path)",
		                  argv[0]);
	return 0;
}

/* -u, -U and --transport name one transport between them. */
static int choose_transport(struct config *cfg, const struct seen *seen, char *err, size_t errlen)
{
	const struct transport *t;

	if (seen->transport == NULL) {
		cfg->transport = seen->unix_socket
		                     ? (seen->udp ? &transport_unix_dgram : &transport_unix)
		                     : (seen->udp ? &transport_udp : &transport_tcp);
		return 0;
	}
	t = transport_find(seen->transport);
	if (t == NULL)
		return log_format(err, errlen, EXIT_USAGE, "--transport %s: unknown transport (%s)",
		                  seen->transport, transport_names());
	if (seen->udp && t != &transport_udp && t != &transport_unix_dgram)
		return log_format(err, errlen, EXIT_USAGE, "-u and --transport %s: pick one",
		                  t->name);
	if (seen->unix_socket && t->family != AF_UNIX)
		return log_format(err, errlen, EXIT_USAGE, "-U and --transport %s: pick one",
		                  t->name);
	cfg->transport = t;
	return 0;
}

/* A Unix transport takes one operand: the socket path or @name. */
static int parse_unix_operand(struct config *cfg, int argc, char **argv, char *err, size_t errlen)
{
	if (argc == 0)
		return log_format(err, errlen, EXIT_USAGE, "missing socket path");
	if (argc > 1)
		return log_format(err, errlen, EXIT_USAGE, "unexpected argument '%s'", argv[1]);
	cfg->path = argv[0];
	return addr_unix_check(cfg->path, err, errlen) == 0 ? 0 : EXIT_USAGE;
}

/* Positional arguments: "host port" to connect, "[address] port" to listen. */
static int parse_operands(struct config *cfg, int argc, char **argv, char *err, size_t errlen)
{
	int port;

	if (cfg->transport->family == AF_UNIX)
		return parse_unix_operand(cfg, argc, argv, err, errlen);
	if (argc == 0)
		return log_format(err, errlen, EXIT_USAGE,
		                  cfg->listen ? "-l: missing port" : "missing host and port");
	if (argc == 1 && !cfg->listen)
		return log_format(err, errlen, EXIT_USAGE, "missing port");
	if (argc > 2)
		return log_format(err, errlen, EXIT_USAGE, "unexpected argument '%s'", argv[2]);
	cfg->port = argv[argc - 1];
	cfg->host = argc == 2 ? argv[0] : NULL;
	switch (units_parse_port(cfg->port, cfg->listen ? 0 : 1, &port)) {
	case -1: return log_format(err, errlen, EXIT_USAGE, "port %s: not a number", cfg->port);
	case -2:
		return log_format(err, errlen, EXIT_USAGE, "port %s: must be %d to 65535",
		                  cfg->port, cfg->listen ? 0 : 1);
	}
	if (cfg->host != NULL && cfg->host[0] == '\0')
		return log_format(err, errlen, EXIT_USAGE, "empty host name");
	return 0;
}

/* Option combinations that cannot mean anything, one message each. */
static int check_combinations(struct config *cfg, const struct seen *seen, char *err, size_t errlen)
{
	if (cfg->keep_listening && !cfg->listen)
		return log_format(err, errlen, EXIT_USAGE, "-k: needs -l");
	if (seen->ipv4 && seen->ipv6)
		return log_format(err, errlen, EXIT_USAGE, "-4 and -6: pick one");
	if (cfg->size != 0 && !cfg->progress && cfg->interval_ms == 0)
		return log_format(err, errlen, EXIT_USAGE,
		                  "--size: needs --progress or --interval");
	if (cfg->recv_only && cfg->send_only)
		return log_format(err, errlen, EXIT_USAGE,
		                  "-d (--recv-only) and --send-only: nothing would move");
	if (cfg->seq && !cfg->transport->datagram)
		return log_format(
		    err, errlen, EXIT_USAGE,
		    "--seq: needs a datagram transport (udp, unix-dgram, unix-seqpacket)");
	if (cfg->dgram_size != 0 && !cfg->transport->datagram)
		return log_format(err, errlen, EXIT_USAGE,
		                  "--dgram-size: needs a datagram transport (udp, unix-dgram, "
		                  "unix-seqpacket)");
	if (cfg->copy == COPY_SPLICE && cfg->transport->datagram)
		return log_format(err, errlen, EXIT_USAGE,
		                  "--copy=splice: needs a stream transport (tcp, unix); "
		                  "datagrams are copied whole");
	if (cfg->copy == COPY_SPLICE && cfg->checksum)
		return log_format(err, errlen, EXIT_USAGE,
		                  "--copy=splice and --checksum: the digest needs the bytes; "
		                  "use --copy=auto or rw");
	if (cfg->verify && cfg->copy == COPY_SPLICE)
		return log_format(err, errlen, EXIT_USAGE,
		                  "--copy=splice and --verify: the digest needs the bytes; "
		                  "use --copy=auto or rw");
	if (cfg->verify && cfg->dgram_size != 0 && !cfg->transport->connectionless)
		return log_format(err, errlen, EXIT_USAGE,
		                  "--dgram-size and --verify: frames do not keep datagram sizes");
	/* over udp and unix-dgram the data goes as numbered datagrams (dgverify.c) */
	cfg->seq |= cfg->verify && cfg->transport->connectionless;
	/* after the combination checks, so a wrong combination reads the same in every build */
	if (cfg->copy == COPY_SPLICE && !zerocopy_available())
		return log_format(err, errlen, EXIT_USAGE,
		                  "--copy=splice: this build has no splice (configure "
		                  "--disable-splice, or not Linux)");
	cfg->checksum |= cfg->verify; /* the report shows the digests both ends compared */
	if (cfg->exit_on_peer_eof < 0)
		cfg->exit_on_peer_eof = isatty(STDIN_FILENO);
	if (cfg->verbose && cfg->report == REPORT_NONE)
		cfg->report = REPORT_HUMAN;
	return 0;
}

/*
 * --allow/--deny filter the peers of a TCP or UDP listener by address (a Unix
 * peer has none); --unix-mode is the mode of the file a Unix listener creates,
 * so an abstract @name, which has no file, cannot take it.
 */
static int check_listener_options(const struct config *cfg, const struct seen *seen, char *err,
                                  size_t errlen)
{
	int is_unix = cfg->transport->family == AF_UNIX;

	if (seen->acl_label[0] != '\0' && !cfg->listen)
		return log_format(err, errlen, EXIT_USAGE, "%s: needs -l", seen->acl_label);
	if (seen->acl_label[0] != '\0' && is_unix)
		return log_format(err, errlen, EXIT_USAGE,
		                  "%s: needs a tcp or udp listener (Unix peers have no address; "
		                  "see --unix-mode)",
		                  seen->acl_label);
	if (seen->unix_mode && !cfg->listen)
		return log_format(err, errlen, EXIT_USAGE, "--unix-mode: needs -l");
	if (seen->unix_mode && !is_unix)
		return log_format(err, errlen, EXIT_USAGE,
		                  "--unix-mode: needs a Unix socket path (-U)");
	if (seen->unix_mode && cfg->path[0] == '@')
		return log_format(err, errlen, EXIT_USAGE,
		                  "--unix-mode: %s is an abstract name, which has no file mode; "
		                  "use a path",
		                  cfg->path);
	return 0;
}

/*
 * Datagram transports get a default that fits one datagram, and an explicit
 * size that no datagram of the protocol can carry is refused here rather than
 * failing with EMSGSIZE at the first send.
 */
static int fit_datagrams(struct config *cfg, const struct seen *seen, char *err, size_t errlen)
{
	const struct transport *t = cfg->transport;
	size_t datagram;

	size_t chunk = t->default_chunk - (cfg->seq ? SEQ_HEADER_BYTES : 0);

	if (t->default_chunk != 0 && !seen->read_set)
		cfg->read_size = chunk;
	if (t->default_chunk != 0 && !seen->write_set)
		cfg->write_size = chunk;
	if (!t->datagram)
		return 0;
	datagram = (cfg->dgram_size != 0 ? cfg->dgram_size : cfg->read_size) +
	           (cfg->seq ? SEQ_HEADER_BYTES : 0);
	if (t->max_datagram != 0 && datagram > t->max_datagram)
		return log_format(err, errlen, EXIT_USAGE,
		                  "%s: a UDP datagram holds at most %zu bytes (%zu over IPv4)",
		                  seen->size_label, t->max_datagram, t->default_chunk);
	return 0;
}

/* --rcvlowat: the transport's default; a transport without a use for it refuses one. */
static int choose_rcvlowat(struct config *cfg, const struct seen *seen, char *err, size_t errlen)
{
	const struct transport *t = cfg->transport;

	if (!seen->rcvlowat)
		cfg->rcvlowat = t->rcvlowat;
	else if (t->rcvlowat == 0 && cfg->rcvlowat != 0)
		return log_format(err, errlen, EXIT_USAGE,
		                  "--rcvlowat: only for tcp (a %s receiver wakes per message "
		                  "or write)",
		                  t->name);
	return 0;
}

/*
 * Fill cfg from argv. Returns 0 to go on, EXIT_USAGE with the reason in err,
 * or -1 when --help or --version was answered and fastcat should exit 0.
 */
int options_parse(int argc, char **argv, struct config *cfg, char *err, size_t errlen)
{
	struct seen seen;
	char label[32];
	int c, rc, longindex;

	config_defaults(cfg);
	memset(&seen, 0, sizeof seen);
	opterr = 0;
	while ((longindex = -1,
	        c = getopt_long(argc, argv, short_options, long_options, &longindex)) != -1) {
		switch (c) {
		case 'h': options_usage(); return -1;
		case OPT_HELP_ALL: fputs(usage_all_text, stdout); return -1;
		case 'V': printf("fastcat %s\n", FASTCAT_VERSION); return -1;
		case ':':
			typed_label(argv[optind - 1], optopt, label, sizeof label);
			return log_format(err, errlen, EXIT_USAGE,
			                  "%s: option requires an argument", label);
		case '?': return option_refused(argv[optind - 1], optopt, err, errlen);
		default:
			if (longindex >= 0)
				snprintf(seen.label, sizeof seen.label, "--%s",
				         long_options[longindex].name);
			else
				option_label(c, seen.label, sizeof seen.label);
			rc = apply_option(cfg, &seen, c, optarg, err, errlen);
			if (rc != 0)
				return rc;
		}
	}
	rc = check_bench(cfg, &seen, argc - optind, argv + optind, err, errlen);
	if (rc == 0)
		rc = choose_transport(cfg, &seen, err, errlen);
	if (rc == 0 && !cfg->bench)
		rc = parse_operands(cfg, argc - optind, argv + optind, err, errlen);
	if (rc == 0)
		rc = check_combinations(cfg, &seen, err, errlen);
	if (rc == 0 && !cfg->bench)
		rc = check_listener_options(cfg, &seen, err, errlen);
	if (rc == 0 && !cfg->bench)
		rc = fit_datagrams(cfg, &seen, err, errlen);
	if (rc == 0 && !cfg->bench)
		rc = choose_rcvlowat(cfg, &seen, err, errlen);
	return rc;
}
