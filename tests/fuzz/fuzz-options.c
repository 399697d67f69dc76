/*
 * fuzz-options.c: libFuzzer harness for options_parse (src/options.c).
 *
 * The input is split at '\n' and NUL into arguments, each in its own heap
 * block (so ASan sees a read past any one of them), after argv[0] "fastcat".
 * Every run is parsed twice from fresh copies and must give the same answer:
 * that also proves getopt's state is reset. A usage error must be one line
 * (no control character that the arguments do not hold); a success must be a
 * configuration that the rest of fastcat can trust.
 */
#include "config.h"

#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fastcat.h"
#include "net/net.h"
#include "cli/options.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_NAME "fuzz-options"
#include "fuzz-check.h"

/* --help and --version print on stdout: keep libFuzzer's output readable. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	int fd = open("/dev/null", O_WRONLY);

	(void)argc;
	(void)argv;
	if (fd >= 0) {
		dup2(fd, STDOUT_FILENO);
		close(fd);
	}
	return 0;
}

static char *dup_bytes(const uint8_t *p, size_t n)
{
	char *s = malloc(n + 1);

	if (s == NULL)
		abort();
	memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

/* argv[0] = "fastcat", then the input's pieces; NULL-terminated, as getopt wants. */
static char **make_argv(const uint8_t *data, size_t size, int *argc)
{
	size_t n = 2, start = 0, i;
	char **argv;

	for (i = 0; i < size; i++)
		n += data[i] == '\n' || data[i] == '\0';
	argv = calloc(n + 1, sizeof *argv);
	if (argv == NULL)
		abort();
	argv[0] = dup_bytes((const uint8_t *)"fastcat", 7);
	*argc = 1;
	for (i = 0; i <= size; i++)
		if (i == size || data[i] == '\n' || data[i] == '\0') {
			if (i == size && start == size)
				break; /* a final separator ends the last argument */
			argv[(*argc)++] = dup_bytes(data + start, i - start);
			start = i + 1;
		}
	return argv;
}

static void free_argv(char **argv, int argc)
{
	for (int i = 0; i < argc; i++)
		free(argv[i]);
	free(argv);
}

/*
 * getopt keeps its place between calls: optind = 0 makes glibc start over
 * completely (next character, permutation bounds, POSIXLY_CORRECT), where
 * optind = 1 would not reset the position inside a group like "-lk".
 * *argvp stays allocated: host, port and path point into it.
 */
static int parse(const uint8_t *data, size_t size, struct config *cfg, char *err, size_t errlen,
                 char ***argvp, int *argcp)
{
	struct failure fail = {EXIT_OK, ""};
	int rc;

	*argvp = make_argv(data, size, argcp);
	optind = 0;
	rc = options_parse(*argcp, *argvp, cfg, &fail);
	snprintf(err, errlen, "%s", fail.why);
	return rc;
}

/*
 * A usage error is one line that names what it is about (it does not start
 * with the ':' after an empty name), and echoes the arguments without adding
 * control characters.
 */
static void check_message(const uint8_t *data, size_t size, const char *err, size_t errlen)
{
	size_t len = strnlen(err, errlen);

	CHECK(len > 0 && len < errlen, "usage error without a message");
	/* an empty label (": a UDP datagram ..."); a value may itself start with ':' */
	CHECK(strncmp(err, ": ", 2) != 0 || memchr(data, ':', size) != NULL,
	      "a message about nothing: %s", err);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)err[i];
		if (c >= 0x20 && c != 0x7f)
			continue;
		CHECK(c != '\n' && memchr(data, c, size) != NULL,
		      "control character 0x%02x at %zu of the message: %s", c, i, err);
	}
}

/* What fastcat does after a successful parse relies on all of this. */
static void check_config(const struct config *cfg)
{
	const struct transport *t = cfg->transport;
	int port;

	CHECK(t != NULL, "no transport");
	CHECK(cfg->read_size >= CHUNK_MIN && cfg->read_size <= CHUNK_MAX, "read size %zu",
	      cfg->read_size);
	CHECK(cfg->write_size >= CHUNK_MIN && cfg->write_size <= CHUNK_MAX, "write size %zu",
	      cfg->write_size);
	CHECK(cfg->sndbuf >= 0 && (size_t)cfg->sndbuf <= SOCKBUF_MAX, "sndbuf %d", cfg->sndbuf);
	CHECK(cfg->rcvbuf >= 0 && (size_t)cfg->rcvbuf <= SOCKBUF_MAX, "rcvbuf %d", cfg->rcvbuf);
	CHECK(cfg->timeout_ms == -1 || cfg->timeout_ms > 0, "timeout %ld ms", cfg->timeout_ms);
	CHECK(cfg->quit_after_eof_ms >= -1, "-q %ld ms", cfg->quit_after_eof_ms);
	CHECK(cfg->exit_on_peer_eof == 0 || cfg->exit_on_peer_eof == 1, "exit_on_peer_eof %d",
	      cfg->exit_on_peer_eof);
	CHECK(!cfg->keep_listening || cfg->listen, "-k without -l");
	CHECK(!(cfg->recv_only && cfg->send_only), "-d and --send-only");
	CHECK(cfg->family == AF_UNSPEC || cfg->family == AF_INET || cfg->family == AF_INET6,
	      "family %d", cfg->family);
	CHECK(cfg->dgram_size <= CHUNK_MAX, "dgram size %zu", cfg->dgram_size);
	CHECK(!cfg->seq || t->datagram, "--seq on %s", t->name);
	CHECK(cfg->dgram_size == 0 || t->datagram, "--dgram-size on %s", t->name);
	CHECK(cfg->report == REPORT_NONE || cfg->report == REPORT_HUMAN ||
	          cfg->report == REPORT_JSON,
	      "report %d", (int)cfg->report);
	CHECK(!cfg->verbose || cfg->report != REPORT_NONE, "-v without a report");
	CHECK(cfg->copy == COPY_AUTO || cfg->copy == COPY_RW || cfg->copy == COPY_SPLICE, "copy %d",
	      (int)cfg->copy);
	CHECK(cfg->copy != COPY_SPLICE || (!t->datagram && !cfg->checksum), "--copy=splice");
	if (cfg->bench) {
		CHECK(cfg->bench_ms >= 1000 && cfg->bench_ms <= 3600 * 1000, "bench %ld ms",
		      cfg->bench_ms);
		CHECK(cfg->bench_links != 0 && cfg->bench_links < 1u << BENCH_LINKS,
		      "bench links %#x", cfg->bench_links);
		CHECK(cfg->bench_nsizes >= 1 && cfg->bench_nsizes <= BENCH_SIZES_MAX,
		      "%zu bench sizes", cfg->bench_nsizes);
		for (size_t i = 0; i < cfg->bench_nsizes; i++)
			CHECK(cfg->bench_sizes[i] >= 1 && cfg->bench_sizes[i] <= CHUNK_MAX &&
			          (i == 0 || cfg->bench_sizes[i - 1] < cfg->bench_sizes[i]),
			      "bench size %zu: %zu", i, cfg->bench_sizes[i]);
		return;
	}
	if (t->family == AF_UNIX) {
		CHECK(cfg->path != NULL, "no Unix path");
		CHECK(strlen(cfg->path) >= 1 && strlen(cfg->path) <= 107 &&
		          strcmp(cfg->path, "@") != 0,
		      "Unix path '%s'", cfg->path);
	} else {
		CHECK(cfg->port != NULL, "no port");
		CHECK(units_parse_port(cfg->port, cfg->listen ? 0 : 1, &port) == 0, "port '%s'",
		      cfg->port);
		CHECK(cfg->host != NULL || cfg->listen, "connect without a host");
		CHECK(cfg->host == NULL || cfg->host[0] != '\0', "empty host");
	}
	if (t->max_datagram != 0)
		CHECK((cfg->dgram_size != 0 ? cfg->dgram_size : cfg->read_size) +
		              (cfg->seq ? SEQ_HEADER_BYTES : 0) <=
		          t->max_datagram,
		      "datagram of %zu bytes on %s",
		      cfg->dgram_size != 0 ? cfg->dgram_size : cfg->read_size, t->name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config cfg, again;
	char err[512], err2[512], **argv, **argv2;
	int rc, rc2, argc, argc2;

	rc = parse(data, size, &cfg, err, sizeof err, &argv, &argc);
	CHECK(rc == -1 || rc == 0 || rc == EXIT_USAGE, "options_parse returned %d", rc);
	if (rc == EXIT_USAGE)
		check_message(data, size, err, sizeof err);
	if (rc == 0)
		check_config(&cfg);

	rc2 = parse(data, size, &again, err2, sizeof err2, &argv2, &argc2);
	CHECK(rc2 == rc && (rc != EXIT_USAGE || strcmp(err, err2) == 0),
	      "second parse differs: %d '%s', then %d '%s'", rc, rc == EXIT_USAGE ? err : "", rc2,
	      rc2 == EXIT_USAGE ? err2 : "");
	free_argv(argv, argc);
	free_argv(argv2, argc2);
	return 0;
}
