/* options-check.c: after parsing: the transport, the operands, and the combinations refused. */
#include "config.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fastcat.h"
#include "net/net.h"
#include "chain/chain.h"
#include "cli/options.h"
#include "relay/relay.h"

/* -u, -U and --transport name one transport between them. */
static int choose_transport(struct config *cfg, const struct seen *seen, struct failure *fail)
{
	const struct transport *t;
	int udp = (seen->flags & SEEN_UDP) != 0;

	if (seen->transport == NULL) {
		cfg->transport = seen->flags & SEEN_UNIX
		                     ? (udp ? &transport_unix_dgram : &transport_unix)
		                     : (udp ? &transport_udp : &transport_tcp);
		return 0;
	}
	t = transport_find(seen->transport);
	if (t == NULL)
		return failure_set(fail, EXIT_USAGE, "--transport %s: unknown transport (%s)",
		                   seen->transport, transport_names());
	if (udp && t != &transport_udp && t != &transport_unix_dgram)
		return failure_set(fail, EXIT_USAGE, "-u and --transport %s: pick one", t->name);
	if ((seen->flags & SEEN_UNIX) && t->family != AF_UNIX)
		return failure_set(fail, EXIT_USAGE, "-U and --transport %s: pick one", t->name);
	cfg->transport = t;
	return 0;
}

/* A Unix transport takes one operand: the socket path or @name. */
static int parse_unix_operand(struct config *cfg, int argc, char **argv, struct failure *fail)
{
	if (argc == 0)
		return failure_set(fail, EXIT_USAGE, "missing socket path");
	if (argc > 1)
		return failure_set(fail, EXIT_USAGE, "unexpected argument '%s'", argv[1]);
	cfg->path = argv[0];
	return addr_unix_check(cfg->path, fail) == 0 ? 0 : EXIT_USAGE;
}

/* Positional arguments: "host port" to connect, "[address] port" to listen. */
static int parse_operands(struct config *cfg, const struct seen *seen, struct failure *fail)
{
	int argc = seen->nargs, port;
	char **argv = seen->args;

	if (cfg->transport->family == AF_UNIX)
		return parse_unix_operand(cfg, argc, argv, fail);
	if (argc == 0)
		return failure_set(fail, EXIT_USAGE,
		                   cfg->listen ? "-l: missing port" : "missing host and port");
	if (argc == 1 && !cfg->listen)
		return failure_set(fail, EXIT_USAGE, "missing port");
	if (argc > 2)
		return failure_set(fail, EXIT_USAGE, "unexpected argument '%s'", argv[2]);
	cfg->port = argv[argc - 1];
	cfg->host = argc == 2 ? argv[0] : NULL;
	switch (units_parse_port(cfg->port, cfg->listen ? 0 : 1, &port)) {
	case -1: return failure_set(fail, EXIT_USAGE, "port %s: not a number", cfg->port);
	case -2:
		return failure_set(fail, EXIT_USAGE, "port %s: must be %d to 65535", cfg->port,
		                   cfg->listen ? 0 : 1);
	}
	if (cfg->host != NULL && cfg->host[0] == '\0')
		return failure_set(fail, EXIT_USAGE,
		                   cfg->chain && !cfg->listen
		                       ? "--chain: the list of receivers is empty"
		                       : "empty host name");
	return 0;
}

/* Option combinations that cannot mean anything, one message each. */
static int check_combinations(struct config *cfg, const struct seen *seen, struct failure *fail)
{
	if (cfg->keep_listening && !cfg->listen)
		return failure_set(fail, EXIT_USAGE, "-k: needs -l");
	if ((seen->flags & SEEN_IPV4) && (seen->flags & SEEN_IPV6))
		return failure_set(fail, EXIT_USAGE, "-4 and -6: pick one");
	if (cfg->size != 0 && !cfg->progress && cfg->interval_ms == 0)
		return failure_set(fail, EXIT_USAGE, "--size: needs --progress or --interval");
	if (cfg->recv_only && cfg->send_only)
		return failure_set(fail, EXIT_USAGE,
		                   "-d (--recv-only) and --send-only: nothing would move");
	if (cfg->seq && !cfg->transport->datagram)
		return failure_set(
		    fail, EXIT_USAGE,
		    "--seq: needs a datagram transport (udp, unix-dgram, unix-seqpacket)");
	if (cfg->dgram_size != 0 && !cfg->transport->datagram)
		return failure_set(fail, EXIT_USAGE,
		                   "--dgram-size: needs a datagram transport (udp, unix-dgram, "
		                   "unix-seqpacket)");
	if (cfg->copy == COPY_SPLICE && cfg->transport->datagram)
		return failure_set(fail, EXIT_USAGE,
		                   "--copy=splice: needs a stream transport (tcp, unix); "
		                   "datagrams are copied whole");
	if (cfg->copy == COPY_SPLICE && cfg->checksum)
		return failure_set(fail, EXIT_USAGE,
		                   "--copy=splice and --checksum: the digest needs the bytes; "
		                   "use --copy=auto or rw");
	if (cfg->verify && cfg->copy == COPY_SPLICE)
		return failure_set(fail, EXIT_USAGE,
		                   "--copy=splice and --verify: the digest needs the bytes; "
		                   "use --copy=auto or rw");
	if (cfg->verify && cfg->dgram_size != 0 && !cfg->transport->connectionless)
		return failure_set(fail, EXIT_USAGE,
		                   "--dgram-size and --verify: frames do not keep datagram sizes");
	/* over udp and unix-dgram the data goes as numbered datagrams (dgverify.c) */
	cfg->seq |= cfg->verify && cfg->transport->connectionless;
	/* after the combination checks, so a wrong combination reads the same in every build */
	if (cfg->copy == COPY_SPLICE && !zerocopy_available())
		return failure_set(fail, EXIT_USAGE,
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
static int check_listener_options(struct config *cfg, const struct seen *seen, struct failure *fail)
{
	int is_unix = cfg->transport->family == AF_UNIX;
	int unix_mode = (seen->flags & SEEN_UNIX_MODE) != 0;

	if (seen->acl_label[0] != '\0' && !cfg->listen)
		return failure_set(fail, EXIT_USAGE, "%s: needs -l", seen->acl_label);
	if (seen->acl_label[0] != '\0' && is_unix)
		return failure_set(fail, EXIT_USAGE,
		                   "%s: needs a tcp or udp listener (Unix peers have no address; "
		                   "see --unix-mode)",
		                   seen->acl_label);
	if (unix_mode && !cfg->listen)
		return failure_set(fail, EXIT_USAGE, "--unix-mode: needs -l");
	if (unix_mode && !is_unix)
		return failure_set(fail, EXIT_USAGE, "--unix-mode: needs a Unix socket path (-U)");
	if (unix_mode && cfg->path[0] == '@')
		return failure_set(fail, EXIT_USAGE,
		                   "--unix-mode: %s is an abstract name, which has no file mode; "
		                   "use a path",
		                   cfg->path);
	return 0;
}

/* --image's sender retries this many times in a row: a minute and more of a link that is down. */
#define IMAGE_RETRY 10

/*
 * --image: what a file between two fastcats should have, each part unless
 * its own option was given (-P 4, --retry 3, --no-sparse, ...): the
 * sender -P auto --retry --verify --sparse, the receiver -k -P auto
 * --resume --verify --sync. The checks after this one judge the result.
 */
static int apply_image(struct config *cfg, const struct seen *seen, struct failure *fail)
{
	unsigned given = seen->flags;

	if (!cfg->image)
		return 0;
	if (cfg->transport != &transport_tcp)
		return failure_set(fail, EXIT_USAGE,
		                   "--image: a tcp transfer between two fastcats, not %s",
		                   cfg->transport->name);
	if (!(given & SEEN_PARALLEL)) {
		cfg->parallel = 1;
		cfg->parallel_auto = 1;
	}
	if (!(given & SEEN_VERIFY))
		cfg->verify = 1;
	if (cfg->listen) {
		cfg->keep_listening = 1;
		cfg->resume = 1;
		cfg->sync |= !(given & SEEN_SYNC);
		return 0;
	}
	cfg->resume = 1; /* with --retry 0 too: the receiver is a --resume one */
	if (!(given & SEEN_RETRY))
		cfg->retry = IMAGE_RETRY;
	if (!(given & SEEN_SPARSE))
		cfg->sparse = 1;
	return 0;
}

/*
 * --chain: one TCP stream through a list of fastcats, one connection a hop (-P N: N); the
 * sender's host operand is the list, read here so that a bad one is a usage error before anything
 * connects.
 */
static int check_chain(struct config *cfg, const struct seen *seen, struct failure *fail)
{
	struct chain_list list;
	char text[CHAIN_TEXT_MAX + 1];
	const char *with;

	(void)seen;
	if (!cfg->chain)
		return 0;
	if (cfg->transport != &transport_tcp)
		return failure_set(fail, EXIT_USAGE,
		                   "--chain: tcp only (each node connects to the next by host and "
		                   "port), not %s",
		                   cfg->transport->name);
	if (cfg->verify && !cfg->image)
		return failure_set(fail, EXIT_USAGE,
		                   "--chain checks each receiver's count and XXH64 itself: leave "
		                   "--verify out");
	if (cfg->parallel != 0 && cfg->listen)
		return failure_set(fail, EXIT_USAGE,
		                   "--chain: a receiver takes the sender's -P: leave -P out here");
	if (cfg->parallel > CHAIN_LANES_MAX)
		return failure_set(fail, EXIT_USAGE, "--chain: -P %u: at most %d connections a hop",
		                   cfg->parallel, CHAIN_LANES_MAX);
	/* the hops' lanes are the chain's own: no stripe session */
	cfg->chain_lanes = cfg->parallel_auto ? 0 : cfg->parallel != 0 ? cfg->parallel : 1;
	cfg->parallel = 0;
	cfg->parallel_auto = 0;
	with = cfg->image            ? "--image"
	       : cfg->retry != 0     ? "--retry"
	       : cfg->resume         ? "--resume"
	       : cfg->keep_listening ? "-k"
	       : cfg->recv_only      ? "-d"
	       : cfg->send_only      ? "--send-only"
	                             : NULL;
	if (with != NULL)
		return failure_set(fail, EXIT_USAGE, "--chain and %s: cannot be combined", with);
	if (cfg->listen)
		return 0;
	if (chain_list_parse(cfg->host, cfg->port, &list, fail) != 0)
		return fail->status;
	if (chain_list_format(&list, text, sizeof text) == 0)
		return failure_set(fail, EXIT_USAGE,
		                   "--chain: the list is too long (at most %d characters with the "
		                   "ports)",
		                   CHAIN_TEXT_MAX);
	return 0;
}

/* -P stripes one TCP stream one way; what it cannot do yet is refused, not half done. */
static int check_parallel(struct config *cfg, const struct seen *seen, struct failure *fail)
{
	(void)seen;
	if (cfg->sparse && cfg->listen)
		return failure_set(fail, EXIT_USAGE,
		                   "--sparse: the sender's; a -P receiver makes holes of the zero "
		                   "runs it gets on its own");
	if (cfg->sparse && cfg->parallel == 0)
		return failure_set(fail, EXIT_USAGE,
		                   "--sparse needs -P N or -P auto: the zero runs travel in -P's "
		                   "chunks (the receiver: -l -P auto)");
	if (cfg->parallel == 0)
		return 0;
	if (cfg->transport != &transport_tcp)
		return failure_set(fail, EXIT_USAGE, "-P needs --transport tcp");
	if (cfg->recv_only || cfg->send_only)
		return failure_set(fail, EXIT_USAGE,
		                   "-P and %s: a striped session is one way, the sender's stdin to "
		                   "the receiver's stdout",
		                   cfg->recv_only ? "-d" : "--send-only");
	return 0;
}

/*
 * --retry: the sender's, and it implies --resume (whose checks follow);
 * its companions need it.
 */
static int check_retry(struct config *cfg, const struct seen *seen, struct failure *fail)
{
	if (cfg->retry == 0 && (seen->flags & (SEEN_RETRY_WAIT | SEEN_REPLAY)))
		return failure_set(fail, EXIT_USAGE, "%s: needs --retry N",
		                   (seen->flags & SEEN_RETRY_WAIT) ? "--retry-wait"
		                                                   : "--replay-buffer");
	if (cfg->retry == 0)
		return 0;
	if (cfg->listen)
		return failure_set(fail, EXIT_USAGE,
		                   "--retry: for the sender; the receiver takes -l -k --resume");
	cfg->resume = 1;
	return 0;
}

/*
 * --sync: the receiver's. Stdout that is no file or disk has nothing to
 * sync: said once, not refused (a pipe's reader decides what becomes of it).
 */
static int check_sync(struct config *cfg, const struct seen *seen, struct failure *fail)
{
	struct stat st;

	if (!cfg->sync && (seen->flags & SEEN_SYNC_EVERY))
		cfg->sync = 1; /* --sync-every says what it syncs per */
	if (!cfg->sync)
		return 0;
	if (!cfg->listen)
		return failure_set(fail, EXIT_USAGE,
		                   "--sync: the receiver's (-l), which writes the file; the sender "
		                   "learns of it through --verify or --retry");
	if (cfg->send_only)
		return failure_set(fail, EXIT_USAGE, "--sync and --send-only: stdout gets nothing");
	if (fstat(STDOUT_FILENO, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
		log_warn("--sync: stdout is not a file or a disk: nothing to sync");
		cfg->sync = 0;
	}
	return 0;
}

/*
 * --resume: one stream, one way, into a file the receiver can append to.
 * Stdout is looked at now, so that `> FILE` or a pipe is refused before
 * anyone connects (a plain `> FILE` has already emptied the file, too).
 */
static int check_resume(struct config *cfg, const struct seen *seen, struct failure *fail)
{
	struct stat st;
	int flags;
	int rc = check_retry(cfg, seen, fail);

	if (rc != 0 || !cfg->resume)
		return rc;
	if (cfg->transport->socktype != SOCK_STREAM)
		return failure_set(fail, EXIT_USAGE,
		                   "--resume: needs a byte stream (tcp, unix), not %s",
		                   cfg->transport->name);
	if (cfg->listen && cfg->send_only)
		return failure_set(fail, EXIT_USAGE,
		                   "--resume and --send-only: the receiver (-l) writes the file");
	if (!cfg->listen && cfg->recv_only)
		return failure_set(fail, EXIT_USAGE,
		                   "--resume and -d: the sender (without -l) reads stdin");
	if (!cfg->listen)
		return 0;
	flags = fcntl(STDOUT_FILENO, F_GETFL);
	if (fstat(STDOUT_FILENO, &st) != 0 || !S_ISREG(st.st_mode) || flags < 0 ||
	    (flags & O_ACCMODE) == O_RDONLY)
		return failure_set(fail, EXIT_USAGE,
		                   "%s needs stdout to be a regular file (use >> FILE)",
		                   cfg->image ? "--image" : "--resume");
	/* > FILE opens write-only and empties the file first: what it held is already gone */
	if ((flags & O_ACCMODE) == O_WRONLY && !(flags & O_APPEND))
		return failure_set(
		    fail, EXIT_USAGE,
		    "--resume needs stdout opened without truncation (>> FILE or 1<> "
		    "FILE): > FILE empties the file");
	return 0;
}

/*
 * The chunk asked for, the one decision of -B's value: what -B,
 * --read-size and --write-size said (options_set_chunk), else the
 * transport's default, which for datagrams fits one datagram (with --seq's
 * header), else CHUNK_DEFAULT. Each flow sizes itself from it (flow_sizes).
 */
static int choose_chunk(struct config *cfg, const struct seen *seen, struct failure *fail)
{
	const struct transport *t = cfg->transport;
	size_t chunk = t->default_chunk != 0 ? t->default_chunk - (cfg->seq ? SEQ_HEADER_BYTES : 0)
	                                     : CHUNK_DEFAULT;

	(void)fail;
	if (!(seen->flags & SEEN_READ_SET))
		cfg->read_size = chunk;
	if (!(seen->flags & SEEN_WRITE_SET))
		cfg->write_size = chunk;
	return 0;
}

/*
 * A size that no datagram of the protocol can carry is refused here rather
 * than failing with EMSGSIZE at the first send.
 */
static int fit_datagrams(struct config *cfg, const struct seen *seen, struct failure *fail)
{
	const struct transport *t = cfg->transport;
	size_t datagram;

	if (!t->datagram)
		return 0;
	datagram = (cfg->dgram_size != 0 ? cfg->dgram_size : cfg->read_size) +
	           (cfg->seq ? SEQ_HEADER_BYTES : 0);
	if (t->max_datagram != 0 && datagram > t->max_datagram)
		return failure_set(fail, EXIT_USAGE,
		                   "%s: a UDP datagram holds at most %zu bytes (%zu over IPv4)",
		                   seen->size_label, t->max_datagram, t->default_chunk);
	return 0;
}

/* --rcvlowat: the transport's default; a transport without a use for it refuses one. */
static int choose_rcvlowat(struct config *cfg, const struct seen *seen, struct failure *fail)
{
	const struct transport *t = cfg->transport;

	if (!(seen->flags & SEEN_RCVLOWAT))
		cfg->rcvlowat = t->rcvlowat;
	else if (t->rcvlowat == 0 && cfg->rcvlowat != 0)
		return failure_set(fail, EXIT_USAGE,
		                   "--rcvlowat: only for tcp (a %s receiver wakes per message "
		                   "or write)",
		                   t->name);
	return 0;
}

/*
 * --congestion: only TCP has a congestion control; an algorithm the kernel does not know is a
 * usage error naming the available ones (tcpinfo_congestion_check tries it on a scratch socket).
 */
static int check_congestion(struct config *cfg, const struct seen *seen, struct failure *fail)
{
	(void)seen;
	if (cfg->congestion == NULL)
		return 0;
	if (cfg->transport != &transport_tcp)
		return failure_set(fail, EXIT_USAGE,
		                   "--congestion: only for tcp (%s has no congestion control)",
		                   cfg->transport->name);
	return tcpinfo_congestion_check(cfg->congestion, fail);
}

/*
 * The checks in order, each after the ones it relies on (the operands need
 * the transport); --bench opens no connection, so it skips the connection's.
 */
static const struct {
	int (*run)(struct config *, const struct seen *, struct failure *);
	int with_bench; /* also when --bench is given */
} checks[] = {
    {options_bench_check, 1},
    {choose_transport, 1},
    {parse_operands, 0},
    {apply_image, 0},
    {check_chain, 0},
    {options_check_reliable, 0},
    {options_check_multicast, 0},
    {check_combinations, 1},
    {check_listener_options, 0},
    {check_parallel, 0},
    {check_resume, 0},
    {check_sync, 0},
    {choose_chunk, 1},
    {fit_datagrams, 0},
    {choose_rcvlowat, 0},
    {check_congestion, 0},
};

/* Returns 0, or EXIT_USAGE with the first check's reason in fail. */
int options_check(struct config *cfg, const struct seen *seen, struct failure *fail)
{
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < sizeof checks / sizeof checks[0]; i++)
		if (checks[i].with_bench || !cfg->bench)
			rc = checks[i].run(cfg, seen, fail);
	return rc;
}
