/* endpoint.c: the one connected socket, by connect() with a timeout or by listen() and accept(). */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fastcat.h"

#define LISTEN_BACKLOG 16

static void endpoint_describe(struct endpoint *ep)
{
	addr_format_fd(ep->fd, 0, ep->local, sizeof ep->local);
	addr_format_fd(ep->fd, 1, ep->peer, sizeof ep->peer);
	sock_read_buffers(ep->fd, &ep->sndbuf, &ep->rcvbuf);
}

static void format_duration(long ms, char *out, size_t len)
{
	if (ms % 1000 == 0)
		snprintf(out, len, "%ld s", ms / 1000);
	else
		snprintf(out, len, "%.3g s", (double)ms / 1000);
}

/*
 * Wait for a non-blocking connect() to finish. Returns 0 when connected, else
 * an errno value (ETIMEDOUT when -w ran out, EINTR when a stop signal came).
 */
static int connect_wait(int fd, long timeout_ms)
{
	double deadline = report_now() + (double)timeout_ms / 1000;
	struct pollfd pfd = {.fd = fd, .events = POLLOUT};
	socklen_t len = sizeof(int);
	int soerr = 0;

	for (;;) {
		int wait_ms = -1, n;

		if (timeout_ms >= 0) {
			double left = deadline - report_now();
			if (left <= 0)
				return ETIMEDOUT;
			wait_ms = (int)(left * 1000) + 1;
		}
		n = poll(&pfd, 1, wait_ms);
		if (signal_stop)
			return EINTR;
		if (n > 0)
			break;
		if (n < 0 && errno != EINTR)
			return errno;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0)
		return errno;
	return soerr;
}

/* Try one resolved address. Returns the connected fd, or -1 with errno-style *why. */
static int connect_one(const struct config *cfg, const struct addrinfo *ai, int *why, char *err,
                       size_t errlen)
{
	int fd = sock_open(cfg, ai->ai_family, err, errlen);

	*why = 0;
	if (fd < 0)
		return -1;
	sock_set_nonblock(fd, 1);
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
		return fd;
	*why = errno == EINPROGRESS ? connect_wait(fd, cfg->timeout_ms) : errno;
	if (*why == 0)
		return fd;
	close(fd);
	return -1;
}

/* Connect to cfg->host:cfg->port, trying each address in turn. 0 or EXIT_RUNTIME. */
int endpoint_connect(const struct config *cfg, struct endpoint *ep, char *err, size_t errlen)
{
	struct addrinfo *res, *ai;
	char where[80], duration[32];
	int why = 0, fd = -1;

	if (addr_resolve(cfg->host, cfg->port, cfg->family, cfg->transport->socktype,
	                 cfg->numeric ? AI_NUMERICHOST : 0, &res, err, errlen) != 0)
		return EXIT_RUNTIME;
	for (ai = res; ai != NULL && fd < 0; ai = ai->ai_next) {
		err[0] = '\0';
		fd = connect_one(cfg, ai, &why, err, errlen);
		if (fd >= 0 || why == EINTR)
			break;
		addr_format(ai->ai_addr, ai->ai_addrlen, where, sizeof where);
		if (why == ETIMEDOUT && cfg->timeout_ms >= 0) {
			format_duration(cfg->timeout_ms, duration, sizeof duration);
			snprintf(err, errlen, "connect %s: timed out after %s", where, duration);
		} else if (why != 0)
			snprintf(err, errlen, "connect %s: %s", where, strerror(why));
		if (ai->ai_next != NULL)
			log_verbose("%s", err);
	}
	freeaddrinfo(res);
	if (fd < 0) {
		if (why == EINTR)
			snprintf(err, errlen, "interrupted by %s", signals_stop_name());
		return EXIT_RUNTIME;
	}
	ep->fd = fd;
	endpoint_describe(ep);
	log_verbose("connected to %s (%s), SO_SNDBUF %d, SO_RCVBUF %d", ep->peer,
	            cfg->transport->name, ep->sndbuf, ep->rcvbuf);
	return 0;
}

static int bind_listen(int fd, const struct sockaddr *sa, socklen_t len, char *err, size_t errlen)
{
	char where[80];
	int on = 1;

	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
	if (bind(fd, sa, len) == 0 && listen(fd, LISTEN_BACKLOG) == 0)
		return 0;
	addr_format(sa, len, where, sizeof where);
	snprintf(err, errlen, "bind %s: %s", where, strerror(errno));
	return -1;
}

/*
 * With no address: one IPv6 socket with V6ONLY off serves both families;
 * where the kernel has no IPv6 (or with -4) an IPv4 socket on 0.0.0.0.
 */
static int listen_any(const struct config *cfg, char *err, size_t errlen)
{
	struct sockaddr_in6 sin6;
	struct sockaddr_in sin;
	int port = 0, fd = -1;

	units_parse_port(cfg->port, 0, &port);
	if (cfg->family != AF_INET) {
		fd = sock_open(cfg, AF_INET6, err, errlen);
		if (fd >= 0) {
			int v6only = cfg->family == AF_INET6;
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only);
			memset(&sin6, 0, sizeof sin6);
			sin6.sin6_family = AF_INET6;
			sin6.sin6_addr = in6addr_any;
			sin6.sin6_port = htons((uint16_t)port);
			if (bind_listen(fd, (struct sockaddr *)&sin6, sizeof sin6, err, errlen) ==
			    0)
				return fd;
			close(fd);
			return -1;
		}
		if (cfg->family == AF_INET6)
			return -1;
	}
	fd = sock_open(cfg, AF_INET, err, errlen);
	if (fd < 0)
		return -1;
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_ANY);
	sin.sin_port = htons((uint16_t)port);
	if (bind_listen(fd, (struct sockaddr *)&sin, sizeof sin, err, errlen) == 0)
		return fd;
	close(fd);
	return -1;
}

static int listen_on_host(const struct config *cfg, char *err, size_t errlen)
{
	struct addrinfo *res, *ai;
	int fd = -1;

	if (addr_resolve(cfg->host, cfg->port, cfg->family, cfg->transport->socktype,
	                 AI_PASSIVE | (cfg->numeric ? AI_NUMERICHOST : 0), &res, err, errlen) != 0)
		return -1;
	for (ai = res; ai != NULL && fd < 0; ai = ai->ai_next) {
		fd = sock_open(cfg, ai->ai_family, err, errlen);
		if (fd < 0)
			continue;
		if (ai->ai_family == AF_INET6) {
			int on = 1;
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on);
		}
		if (bind_listen(fd, ai->ai_addr, ai->ai_addrlen, err, errlen) != 0) {
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(res);
	return fd;
}

/* Bind and listen; says where with -v as soon as it listens. 0 or EXIT_RUNTIME. */
int endpoint_listen(const struct config *cfg, struct listener *l, char *err, size_t errlen)
{
	l->fd = cfg->host == NULL ? listen_any(cfg, err, errlen) : listen_on_host(cfg, err, errlen);
	if (l->fd < 0)
		return EXIT_RUNTIME;
	addr_format_fd(l->fd, 0, l->local, sizeof l->local);
	log_verbose("listening on %s", l->local);
	return 0;
}

/* Wait for the next connection. 0, or EXIT_RUNTIME (also on SIGINT/SIGTERM). */
int endpoint_accept(struct listener *l, struct endpoint *ep, char *err, size_t errlen)
{
	int fd;

	do {
		if (signal_stop) {
			snprintf(err, errlen, "interrupted by %s", signals_stop_name());
			return EXIT_RUNTIME;
		}
		fd = accept(l->fd, NULL, NULL);
	} while (fd < 0 && (errno == EINTR || errno == ECONNABORTED));
	if (fd < 0) {
		snprintf(err, errlen, "accept on %s: %s", l->local, strerror(errno));
		return EXIT_RUNTIME;
	}
	sock_set_nonblock(fd, 1);
	ep->fd = fd;
	endpoint_describe(ep);
	log_verbose("connection from %s, SO_SNDBUF %d, SO_RCVBUF %d", ep->peer, ep->sndbuf,
	            ep->rcvbuf);
	return 0;
}

void endpoint_close(struct endpoint *ep)
{
	if (ep->fd >= 0)
		close(ep->fd);
	ep->fd = -1;
}

void listener_close(struct listener *l)
{
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
}
