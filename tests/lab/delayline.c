/* delayline.c - the WAN lab's link where the kernel has no netem: a tun device in each of
 * two network namespaces, and every packet forwarded to the other through a model of the
 * link (link.c), each direction on its own. One thread, ppoll(), the monotonic clock.
 *
 *   delayline [options] NETNS_A NETNS_B     (a name under /run/netns, or a path)
 *
 * Prints "ready" on stdout once both devices exist (down, unaddressed: the caller sets them
 * up); SIGTERM or SIGINT stop it, SIGUSR1 prints the counts, which it also prints at exit.
 * Closing the devices deletes them. Linux only: it is a test tool (tests/wanlab.bash). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "delayline.h"

/* Packets read from one device before the loop looks at the other and at the clock. */
#define READ_BATCH 32
/* The queue when none is given is one bandwidth-delay product, but never below this. */
#define QUEUE_MIN (1024u * 1024u)

static volatile sig_atomic_t stop_flag, stats_flag;

static void on_stop(int sig)
{
	stop_flag = sig;
}
static void on_stats(int sig)
{
	stats_flag = sig;
}

static void die(const char *what, const char *why)
{
	fprintf(stderr, "delayline: %s: %s\n", what, why);
	exit(1);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ------------------------------------------------------------------ options */

/* The value kinds: each parses to a double in the option's own unit. */
enum kind { K_RATE, K_MS, K_PROB, K_BYTES };

/* One option with a value for each direction: "V" for both, or "AB,BA". */
struct dopt {
	const char *name;
	enum kind kind;
	double min, max;
	double v[2]; /* A->B, B->A; a negative queue means "one BDP" */
};

static struct dopt dopts[] = {
    {"rate", K_RATE, 1e3, 400e9, {1e9, 1e9}},
    {"delay-ms", K_MS, 0, 60000, {50, 50}},
    {"jitter-ms", K_MS, 0, 60000, {0, 0}},
    {"loss", K_PROB, 0, 1, {0, 0}},
    {"queue", K_BYTES, 2 * PKT_MAX, 1024.0 * 1024 * 1024, {-1, -1}},
};
#define NDOPTS (sizeof(dopts) / sizeof(dopts[0]))

/* Unit suffixes: rates in bit/s with SI prefixes ("100mbit", "1g"), sizes in bytes with
 * binary ones ("4m" = 4 MiB). */
struct suffix {
	const char *s;
	double mul;
};
static const struct suffix rate_sfx[] = {{"", 1},       {"bit", 1},    {"k", 1e3},
                                         {"kbit", 1e3}, {"m", 1e6},    {"mbit", 1e6},
                                         {"g", 1e9},    {"gbit", 1e9}, {NULL, 0}};
static const struct suffix byte_sfx[] = {{"", 1},        {"b", 1},        {"k", 1024}, {"kb", 1024},
                                         {"m", 1048576}, {"mb", 1048576}, {NULL, 0}};

static int parse_one(const struct dopt *o, const char *s, double *out)
{
	const struct suffix *sfx = o->kind == K_RATE    ? rate_sfx
	                           : o->kind == K_BYTES ? byte_sfx
	                                                : NULL;
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno)
		return -1;
	if (sfx == NULL) {
		if (*end != '\0')
			return -1;
	} else {
		while (sfx->s && strcasecmp(end, sfx->s) != 0)
			sfx++;
		if (sfx->s == NULL)
			return -1;
		v *= sfx->mul;
	}
	if (!(v >= o->min && v <= o->max))
		return -1;
	*out = v;
	return 0;
}

static void parse_dopt(struct dopt *o, const char *arg)
{
	char buf[64], *comma;

	if (strlen(arg) >= sizeof(buf))
		die(o->name, "value too long");
	memcpy(buf, arg, strlen(arg) + 1);
	comma = strchr(buf, ',');
	if (comma)
		*comma = '\0';
	if (parse_one(o, buf, &o->v[0]) < 0 ||
	    parse_one(o, comma ? comma + 1 : buf, &o->v[1]) < 0) {
		fprintf(stderr, "delayline: --%s: bad value '%s' (V or AB,BA; range %g to %g)\n",
		        o->name, arg, o->min, o->max);
		exit(2);
	}
}

struct setup {
	const char *ns[2];
	const char *dev;
	int reorder;
	unsigned long long seed;
};

static void usage(FILE *f)
{
	fputs("usage: delayline [--dev NAME] [--rate R] [--delay-ms MS] [--jitter-ms MS] "
	      "[--reorder]\n"
	      "                 [--loss P] [--queue BYTES] [--seed N] NETNS_A NETNS_B\n"
	      "Each of rate, delay-ms, jitter-ms, loss and queue takes V (both directions) or "
	      "AB,BA.\n"
	      "Defaults: --dev wan0 --rate 1gbit --delay-ms 50 --jitter-ms 0 --loss 0 --seed 1,\n"
	      "--queue one bandwidth-delay product (rate x both delays), at least 1 MiB.\n",
	      f);
}

static void parse_args(int argc, char **argv, struct setup *su)
{
	static const struct option longs[] = {
	    {"rate", required_argument, NULL, 0},      {"delay-ms", required_argument, NULL, 0},
	    {"jitter-ms", required_argument, NULL, 0}, {"loss", required_argument, NULL, 0},
	    {"queue", required_argument, NULL, 0},     {"dev", required_argument, NULL, 'd'},
	    {"reorder", no_argument, NULL, 'r'},       {"seed", required_argument, NULL, 's'},
	    {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0}};
	int c, idx;
	char *end;

	su->dev = "wan0";
	su->seed = 1;
	while ((c = getopt_long(argc, argv, "h", longs, &idx)) != -1) {
		if (c == 0)
			parse_dopt(&dopts[idx], optarg); /* longs[] starts with dopts[], in order */
		else if (c == 'd')
			su->dev = optarg;
		else if (c == 'r')
			su->reorder = 1;
		else if (c == 's') {
			errno = 0;
			su->seed = strtoull(optarg, &end, 0);
			if (errno || end == optarg || *end)
				die("--seed", "not a number");
		} else if (c == 'h') {
			usage(stdout);
			exit(0);
		} else {
			usage(stderr);
			exit(2);
		}
	}
	if (argc - optind != 2) {
		usage(stderr);
		exit(2);
	}
	if (strlen(su->dev) >= IFNAMSIZ)
		die("--dev", "name too long");
	su->ns[0] = argv[optind];
	su->ns[1] = argv[optind + 1];
}

/* The model of direction D (0: A->B) from the options. */
static struct link_params params_of(int d, int reorder)
{
	struct link_params p;
	double rtt_s = (dopts[1].v[0] + dopts[1].v[1]) / 1e3, bdp = dopts[0].v[d] / 8 * rtt_s;

	p.rate_bps = (uint64_t)dopts[0].v[d];
	p.delay_ns = (int64_t)(dopts[1].v[d] * 1e6);
	p.jitter_ns = (int64_t)(dopts[2].v[d] * 1e6);
	p.loss = dopts[3].v[d];
	p.queue_bytes = dopts[4].v[d] >= 0 ? (uint64_t)dopts[4].v[d]
	                : bdp > QUEUE_MIN  ? (uint64_t)bdp
	                                   : QUEUE_MIN;
	p.reorder = reorder;
	return p;
}

/* ------------------------------------------------------------------ devices */

/* tun_open: a tun device DEV in network namespace NS (entered, then left for HOME). */
static int tun_open(const char *ns, const char *dev, int home)
{
	char path[PATH_MAX];
	struct ifreq ifr;
	int nsfd, fd;

	if (snprintf(path, sizeof(path), strchr(ns, '/') ? "%s" : "/run/netns/%s", ns) >=
	    (int)sizeof(path))
		die(ns, "namespace path too long");
	nsfd = open(path, O_RDONLY | O_CLOEXEC);
	if (nsfd < 0)
		die(path, strerror(errno));
	if (setns(nsfd, CLONE_NEWNET) < 0)
		die(path, strerror(errno));
	/* the device belongs to the namespace the descriptor is opened in */
	fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		die("/dev/net/tun", strerror(errno));
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
	memcpy(ifr.ifr_name, dev, strlen(dev) + 1);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0)
		die(path, strerror(errno));
	if (setns(home, CLONE_NEWNET) < 0)
		die("setns back", strerror(errno));
	close(nsfd);
	return fd;
}

/* ------------------------------------------------------------------ the loop */

/* SIGTERM, SIGINT, SIGHUP and SIGUSR1 are blocked except inside ppoll(), so none is lost
 * between a check of the flags and the wait. */
static void signals_setup(sigset_t *waitmask)
{
	static const int stops[] = {SIGTERM, SIGINT, SIGHUP};
	struct sigaction sa;
	sigset_t block;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&block);
	sa.sa_handler = on_stop;
	for (size_t i = 0; i < sizeof(stops) / sizeof(stops[0]); i++) {
		sigaction(stops[i], &sa, NULL);
		sigaddset(&block, stops[i]);
	}
	sa.sa_handler = on_stats;
	sigaction(SIGUSR1, &sa, NULL);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, waitmask);
}

/* One turn: deliver what is due, read what waits, and say how long the wait may be (ns;
 * 0: poll only, -1: until a packet or a signal). */
static int64_t turn(struct link *l, int64_t now)
{
	int64_t next = INT64_MAX, wait;
	int more = 0;

	for (int d = 0; d < 2; d++)
		link_deliver(&l[d], now);
	for (int d = 0; d < 2; d++) {
		/* the time now, not the turn's start: delivering a burst takes a while, and a
		 * packet read after it stamped with the older time would arrive that much early */
		int r = link_read(&l[d], now_ns(), READ_BATCH);

		if (r < 0)
			die(l[d].name, strerror(errno));
		more |= r;
	}
	for (int d = 0; d < 2; d++) {
		int64_t due = link_next_due(&l[d]);

		next = due < next ? due : next;
	}
	if (more)
		return 0;
	if (next == INT64_MAX)
		return -1;
	wait = next - now_ns();
	return wait > 0 ? wait : 0;
}

static void run(struct link *l, const int *fd, const sigset_t *waitmask)
{
	struct pollfd pfd[2];

	while (!stop_flag) {
		int64_t wait = turn(l, now_ns());
		struct timespec ts = {(time_t)(wait / 1000000000), (long)(wait % 1000000000)};

		if (stats_flag) {
			stats_flag = 0;
			link_print_stats(&l[0]);
			link_print_stats(&l[1]);
		}
		/* device d is link d's input and link 1-d's output */
		for (int d = 0; d < 2; d++) {
			pfd[d].fd = fd[d];
			pfd[d].events = (short)(POLLIN | (l[1 - d].out_blocked ? POLLOUT : 0));
		}
		if (ppoll(pfd, 2, wait < 0 ? NULL : &ts, waitmask) < 0 && errno != EINTR)
			die("ppoll", strerror(errno));
		for (int d = 0; d < 2; d++)
			if (pfd[d].revents & (POLLOUT | POLLERR))
				l[1 - d].out_blocked = 0;
	}
}

int main(int argc, char **argv)
{
	struct setup su = {{NULL, NULL}, NULL, 0, 0};
	struct link l[2];
	struct link_params p;
	sigset_t waitmask;
	int home, fd[2];

	parse_args(argc, argv, &su);
	signals_setup(&waitmask);
	/* ppoll's timeouts to the ns, not rounded up by the default 50 us slack */
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (home < 0)
		die("/proc/self/ns/net", strerror(errno));
	fd[0] = tun_open(su.ns[0], su.dev, home);
	fd[1] = tun_open(su.ns[1], su.dev, home);
	close(home);
	for (int d = 0; d < 2; d++) {
		p = params_of(d, su.reorder);
		if (link_init(&l[d], d ? "B->A" : "A->B", fd[d], fd[1 - d], &p,
		              su.seed + (unsigned)d) < 0)
			die(l[d].name,
			    "cannot allocate the packet store (queue or delay too big?)");
	}
	printf("ready\n");
	fflush(stdout);
	run(l, fd, &waitmask);
	for (int d = 0; d < 2; d++) {
		link_print_stats(&l[d]);
		link_free(&l[d]);
		close(fd[d]);
	}
	return 0;
}
