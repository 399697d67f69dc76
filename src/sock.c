/* sock.c: socket creation with the buffer sizes and the congestion control applied before
 * connect/listen, and read back. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fastcat.h"

static void sock_warn_capped(const struct config *, int, int);

static int sock_set_buffer(int fd, int opt, int bytes, const char *name, char *err, size_t errlen)
{
	if (bytes == 0 || setsockopt(fd, SOL_SOCKET, opt, &bytes, sizeof bytes) == 0)
		return 0;
	snprintf(err, errlen, "setsockopt %s %d: %s", name, bytes, strerror(errno));
	return -1;
}

/*
 * --congestion: an algorithm the kernel has (options_check tried it) but does not allow this
 * user (net.ipv4.tcp_allowed_congestion_control, or CAP_NET_ADMIN) fails here.
 */
static int sock_set_congestion(int fd, const char *name, char *err, size_t errlen)
{
	char allowed[256];

	if (name == NULL || tcpinfo_set_congestion(fd, name) == 0)
		return 0;
	if (errno != EPERM) {
		snprintf(err, errlen, "--congestion %s: setsockopt TCP_CONGESTION: %s", name,
		         strerror(errno));
		return -1;
	}
	if (tcpinfo_sysctl("net.ipv4.tcp_allowed_congestion_control", allowed, sizeof allowed) != 0)
		snprintf(allowed, sizeof allowed, "unknown");
	snprintf(err, errlen,
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
int sock_open(const struct config *cfg, int family, char *err, size_t errlen)
{
	const struct transport *t = cfg->transport;
	int fd = socket(family, t->socktype, t->protocol);

	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	if (sock_set_buffer(fd, SO_SNDBUF, cfg->sndbuf, "SO_SNDBUF", err, errlen) < 0 ||
	    sock_set_buffer(fd, SO_RCVBUF, cfg->rcvbuf ? cfg->rcvbuf : t->default_rcvbuf,
	                    "SO_RCVBUF", err, errlen) < 0 ||
	    sock_set_congestion(fd, cfg->congestion, err, errlen) < 0) {
		close(fd);
		return -1;
	}
	if (cfg->sndbuf != 0 || cfg->rcvbuf != 0) {
		int sndbuf, rcvbuf;
		sock_read_buffers(fd, &sndbuf, &rcvbuf);
		sock_warn_capped(cfg, sndbuf, rcvbuf);
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

/* The sizes the kernel actually uses (Linux reports double the request). */
void sock_read_buffers(int fd, int *sndbuf, int *rcvbuf)
{
	socklen_t len = sizeof *sndbuf;

	if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, sndbuf, &len) != 0)
		*sndbuf = -1;
	len = sizeof *rcvbuf;
	if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, rcvbuf, &len) != 0)
		*rcvbuf = -1;
}

/*
 * A kernel grants either the request or, like Linux, twice it for its own
 * bookkeeping. Anything else means a cap (net.core.wmem_max/rmem_max) or a
 * floor was applied, and the user should know the buffer is not what they set.
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

static void sock_warn_capped(const struct config *cfg, int sndbuf, int rcvbuf)
{
	warn_one("--sndbuf", "net.core.wmem_max", cfg->sndbuf, sndbuf);
	warn_one("--rcvbuf", "net.core.rmem_max", cfg->rcvbuf, rcvbuf);
}
