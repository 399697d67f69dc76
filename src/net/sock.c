/*
 * sock.c: socket creation with the buffer sizes (forced past the sysctl cap where the
 * capability allows) and the congestion control applied before connect/listen, and read back.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fastcat.h"
#include "net/net.h"
#include "base/compat.h"

/* One of SO_SNDBUF, SO_RCVBUF: the option, its FORCE twin, and what caps it. */
struct sockbuf {
	int opt, force;
	const char *name, *force_name, *option, *sysctl;
};

static const struct sockbuf sockbuf_snd = {SO_SNDBUF,        SO_SNDBUFFORCE, "SO_SNDBUF",
                                           "SO_SNDBUFFORCE", "--sndbuf",     "net.core.wmem_max"};
static const struct sockbuf sockbuf_rcv = {SO_RCVBUF,        SO_RCVBUFFORCE, "SO_RCVBUF",
                                           "SO_RCVBUFFORCE", "--rcvbuf",     "net.core.rmem_max"};

static void warn_one(const char *, const char *, int, int);

static int sockbuf_get(int fd, const struct sockbuf *b)
{
	int bytes;
	socklen_t len = sizeof bytes;

	return getsockopt(fd, SOL_SOCKET, b->opt, &bytes, &len) == 0 ? bytes : -1;
}

/*
 * Set a buffer to bytes (0: leave the kernel's). An explicit request (-O, -I) that the sysctl
 * capped is forced with SO_SNDBUFFORCE/SO_RCVBUFFORCE, which needs CAP_NET_ADMIN (-v says so);
 * without it, or where the platform has no FORCE (compat.h makes it -1), the capped size stays
 * and a warning says what capped it.
 */
static int sock_set_buffer(int fd, const struct sockbuf *b, int bytes, int requested,
                           struct failure *fail)
{
	int granted;

	if (bytes == 0)
		return 0;
	if (setsockopt(fd, SOL_SOCKET, b->opt, &bytes, sizeof bytes) != 0) {
		failure_set(fail, EXIT_RUNTIME, "setsockopt %s %d: %s", b->name, bytes,
		            strerror(errno));
		return -1;
	}
	if (!requested)
		return 0;
	granted = sockbuf_get(fd, b);
	/* FORCE is Linux's, which doubles: less than twice the request is a cap, even == bytes */
	if (granted >= 0 && granted < 2LL * bytes &&
	    setsockopt(fd, SOL_SOCKET, b->force, &bytes, sizeof bytes) == 0) {
		int capped = granted;
		char size[32];

		granted = sockbuf_get(fd, b);
		units_format_size((uint64_t)bytes, size, sizeof size);
		log_verbose("%s %s: set with %s (CAP_NET_ADMIN), %d bytes; %s would cap it at %d",
		            b->option, size, b->force_name, granted, b->sysctl, capped);
	}
	warn_one(b->option, b->sysctl, bytes, granted);
	return 0;
}

/*
 * --congestion: an algorithm the kernel has (options_check tried it) but does not allow this
 * user (net.ipv4.tcp_allowed_congestion_control, or CAP_NET_ADMIN) fails here.
 */
static int sock_set_congestion(int fd, const char *name, struct failure *fail)
{
	char allowed[256];

	if (name == NULL || tcpinfo_set_congestion(fd, name) == 0)
		return 0;
	if (errno != EPERM) {
		failure_set(fail, EXIT_RUNTIME, "--congestion %s: setsockopt TCP_CONGESTION: %s",
		            name, strerror(errno));
		return -1;
	}
	if (tcpinfo_sysctl("net.ipv4.tcp_allowed_congestion_control", allowed, sizeof allowed) != 0)
		snprintf(allowed, sizeof allowed, "unknown");
	failure_set(fail, EXIT_RUNTIME,
	            "--congestion %s: not allowed without CAP_NET_ADMIN "
	            "(net.ipv4.tcp_allowed_congestion_control: %s)",
	            name, allowed);
	return -1;
}

/*
 * A new close-on-exec socket of the configured transport with SO_SNDBUF,
 * SO_RCVBUF and TCP_CONGESTION already set: TCP fixes its window scale at the
 * handshake, and an accepted socket inherits the listener's congestion control,
 * so they must be in place before connect() or listen(). Returns the fd or -1.
 */
int sock_open(const struct config *cfg, int family, struct failure *fail)
{
	const struct transport *t = cfg->transport;
	int fd = socket(family, t->socktype, t->protocol);

	if (fd < 0) {
		failure_set(fail, EXIT_RUNTIME, "socket: %s", strerror(errno));
		return -1;
	}
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	if (sock_set_buffer(fd, &sockbuf_snd, cfg->sndbuf, cfg->sndbuf != 0, fail) < 0 ||
	    sock_set_buffer(fd, &sockbuf_rcv, cfg->rcvbuf ? cfg->rcvbuf : t->default_rcvbuf,
	                    cfg->rcvbuf != 0, fail) < 0 ||
	    sock_set_congestion(fd, cfg->congestion, fail) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int sock_set_nonblock(int fd, int on)
{
	int flags = fcntl(fd, F_GETFL);

	if (flags < 0)
		return -1;
	flags = on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK;
	return fcntl(fd, F_SETFL, flags);
}

/*
 * tcp: the kernel keeps at most bytes of data not yet sent, so the rest waits
 * in the program (--chain's ring) rather than in the socket. Where the
 * platform cannot (compat.h), the queue stays the kernel's.
 */
void sock_limit_unsent(int fd, int bytes)
{
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &bytes, sizeof bytes);
}

/* The sizes the kernel actually uses (Linux reports double the request). */
void sock_read_buffers(int fd, int *sndbuf, int *rcvbuf)
{
	*sndbuf = sockbuf_get(fd, &sockbuf_snd);
	*rcvbuf = sockbuf_get(fd, &sockbuf_rcv);
}

/*
 * A kernel grants either the request or, like Linux, twice it for its own
 * bookkeeping. Anything else means a cap (net.core.wmem_max/rmem_max) or a
 * floor was applied, and the user should know the buffer is not what they set.
 * What the cap means at the connection's RTT comes at exit, with -v, once the
 * RTT is measured (hint_format_cap).
 */
static void warn_one(const char *option, const char *sysctl, int requested, int granted)
{
	long long doubled = 2LL * requested; /* requests go up to 1 GiB: no int overflow */
	char size[32];

	if (requested == 0 || granted == requested || granted == doubled)
		return;
	units_format_size((uint64_t)requested, size, sizeof size);
	if (granted < requested)
		log_warn("%s %s: the kernel granted only %d bytes (capped by %s)", option, size,
		         granted, sysctl);
	else if (granted < doubled)
		log_warn("%s %s: the kernel granted %d bytes, not %lld (capped by %s)", option,
		         size, granted, doubled, sysctl);
	else
		log_warn("%s %s: the kernel raised it to its minimum, %d bytes", option, size,
		         granted);
}

/* Close *fd (-1 after), and remove the Unix socket file path names, which this end made ("": none).
 */
void sock_close(int *fd, char *path)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
	if (path[0] != '\0')
		unlink(path);
	path[0] = '\0';
}
