/*
 * endpoint.c: one connected socket, by connect() with a timeout or by listen() and accept();
 * and for -P, further connections to the same peer or from the same listener.
 */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fastcat.h"
#include "net/net.h"

static void endpoint_describe(struct endpoint *ep)
{
	addr_format_fd(ep->fd, 0, ep->local, sizeof ep->local);
	if (ep->group_len > 0)
		addr_format((struct sockaddr *)&ep->group, ep->group_len, ep->peer,
		            sizeof ep->peer);
	else
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
	double deadline = clock_now() + (double)timeout_ms / 1000;
	struct pollfd pfd = {.fd = fd, .events = POLLOUT};
	socklen_t len = sizeof(int);
	int soerr = 0;

	for (;;) {
		int wait_ms = -1, n;

		if (timeout_ms >= 0) {
			double left = deadline - clock_now();
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

/*
 * A Unix datagram client needs an address of its own, or the peer could not
 * answer: Linux binds an abstract name when given an empty address
 * ("autobind"); elsewhere a temporary file is bound and removed at close.
 */
static int unix_bind_client(int fd, struct endpoint *ep)
{
	static unsigned serial;
	struct sockaddr_storage ss;
	struct sockaddr_un *sun = (struct sockaddr_un *)&ss;
	const char *tmp = getenv("TMPDIR");
	socklen_t len;
	char path[112];

	memset(&ss, 0, sizeof ss);
	sun->sun_family = AF_UNIX;
	if (bind(fd, (struct sockaddr *)sun, sizeof sun->sun_family) == 0)
		return 0;
	snprintf(path, sizeof path, "%s/fastcat.%ld.%u.sock", tmp ? tmp : "/tmp", (long)getpid(),
	         serial++);
	if (addr_unix(path, &ss, &len) != 0 || bind(fd, (struct sockaddr *)&ss, len) != 0)
		return -1;
	snprintf(ep->bound_path, sizeof ep->bound_path, "%s", path);
	return 0;
}

/*
 * --reliable to a multicast group: the socket stays unconnected, so that every receiver's
 * answer reaches it, and the group is where its datagrams go. The fd, or -1 (the failure set).
 */
static int multicast_sender(const struct config *cfg, struct endpoint *ep, int fd,
                            const struct sockaddr *sa, socklen_t len, struct failure *fail)
{
	struct sockaddr_storage any;

	memset(&any, 0, sizeof any);
	any.ss_family = sa->sa_family; /* the wildcard, port 0: the report names the port */
	if (mcast_sender(fd, sa, cfg, fail) != 0 || bind(fd, (struct sockaddr *)&any, len) != 0) {
		if (fail->status == EXIT_OK)
			failure_set(fail, EXIT_RUNTIME, "bind: %s", strerror(errno));
		close(fd);
		return -1;
	}
	sock_set_nonblock(fd, 1);
	memcpy(&ep->group, sa, len);
	ep->group_len = len;
	return fd;
}

/*
 * Connect one socket to one address. Returns the fd, or -1 with an errno
 * value in *why. IP connects wait at most -w; Unix connects finish at once.
 */
static int connect_addr(const struct config *cfg, struct endpoint *ep, const struct sockaddr *sa,
                        socklen_t len, int *why, struct failure *fail)
{
	int fd = sock_open(cfg, sa->sa_family, fail);

	*why = 0;
	if (fd < 0)
		return -1;
	if (sa->sa_family == AF_UNIX && cfg->transport->connectionless &&
	    unix_bind_client(fd, ep) != 0)
		*why = errno;
	else if (sa->sa_family != AF_UNIX)
		sock_set_nonblock(fd, 1);
	if (*why == 0 && cfg->reliable && mcast_is_group(sa))
		return multicast_sender(cfg, ep, fd, sa, len, fail);
	if (*why == 0 && connect(fd, sa, len) != 0)
		*why = errno == EINPROGRESS ? connect_wait(fd, cfg->timeout_ms) : errno;
	if (*why == 0) {
		sock_set_nonblock(fd, 1);
		return fd;
	}
	close(fd);
	endpoint_close(ep);
	return -1;
}

/*
 * The exit status for a connect that failed with errno why: a timeout, an
 * interruption, or the peer could not be reached. why == 0: the socket itself
 * could not be made (sock_open said why), a local failure.
 */
static int connect_status(int why)
{
	switch (why) {
	case 0:
	case EINTR: return EXIT_RUNTIME;
	case ETIMEDOUT: return EXIT_TIMEOUT;
	default: return EXIT_CONNECT;
	}
}

/* A connect to where failed with errno why (0: the socket failed, and said so): its status. */
static int connect_failed(const struct config *cfg, const char *where, int why,
                          struct failure *fail)
{
	int status = connect_status(why);

	if (why == EINTR)
		return failure_set(fail, status, "interrupted by %s", signals_stop_name());
	if (why == ETIMEDOUT && cfg->timeout_ms >= 0) {
		char duration[32];

		format_duration(cfg->timeout_ms, duration, sizeof duration);
		return failure_set(fail, status, "connect %s: timed out after %s", where, duration);
	}
	if (why != 0)
		return failure_set(fail, status, "connect %s: %s", where, strerror(why));
	return fail->status;
}

/* Connect to the socket path: 0, or an exit status with the reason in fail. */
static int connect_unix(const struct config *cfg, struct endpoint *ep, struct failure *fail)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int why;

	if (addr_unix(cfg->path, &ss, &len) != 0)
		return failure_set(fail, EXIT_USAGE, "%s: not a usable Unix socket path",
		                   cfg->path);
	ep->fd = connect_addr(cfg, ep, (struct sockaddr *)&ss, len, &why, fail);
	if (ep->fd >= 0)
		return 0;
	return connect_failed(cfg, cfg->path, why, fail);
}

/* Try each address the name resolves to: 0, or the exit status of the last failure. */
static int connect_ip(const struct config *cfg, struct endpoint *ep, struct failure *fail)
{
	struct addrinfo *res, *ai;
	char where[80];
	int why = 0, fd = -1, rc;

	rc = addr_resolve(cfg->host, cfg->port, cfg->family, cfg->transport->socktype,
	                  cfg->numeric ? AI_NUMERICHOST : 0, &res, fail);
	if (rc != 0) {
		errno = 0; /* no address: no connect's cause */
		return rc;
	}
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		*fail = (struct failure){EXIT_OK, ""}; /* each address fails on its own */
		fd = connect_addr(cfg, ep, ai->ai_addr, ai->ai_addrlen, &why, fail);
		if (fd >= 0)
			break;
		addr_format(ai->ai_addr, ai->ai_addrlen, where, sizeof where);
		connect_failed(cfg, where, why, fail);
		if (why == EINTR)
			break;
		if (ai->ai_next != NULL)
			log_verbose("%s", fail->why);
	}
	freeaddrinfo(res);
	ep->fd = fd;
	errno = fd >= 0 ? 0 : why; /* the last address's cause, for a caller that keeps it */
	return fd >= 0 ? 0 : fail->status;
}

/*
 * Connect to the configured peer; for datagrams, name it as the one peer.
 * 0, or the exit status (EXIT_CONNECT, EXIT_TIMEOUT, ...) with the reason in fail.
 */
int endpoint_connect(const struct config *cfg, struct endpoint *ep, struct failure *fail)
{
	int rc = cfg->transport->family == AF_UNIX ? connect_unix(cfg, ep, fail)
	                                           : connect_ip(cfg, ep, fail);

	if (rc != 0)
		return rc;
	endpoint_describe(ep);
	log_verbose("connected to %s (%s), SO_SNDBUF %d, SO_RCVBUF %d", ep->peer,
	            cfg->transport->name, ep->sndbuf, ep->rcvbuf);
	return 0;
}

/*
 * Wait for a datagram and peek at its sender (the datagram stays queued).
 * Returns its size, or -1 with the reason in fail (also on SIGINT/SIGTERM).
 */
static ssize_t peek_sender(struct listener *l, struct sockaddr_storage *from, socklen_t *len,
                           struct failure *fail)
{
	char byte;
	ssize_t n;

	do {
		if (signal_stop) {
			failure_set(fail, EXIT_RUNTIME, "interrupted by %s", signals_stop_name());
			return -1;
		}
		*len = sizeof *from;
		n = recvfrom(l->fd, &byte, 1, MSG_PEEK, (struct sockaddr *)from, len);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		failure_set(fail, EXIT_RUNTIME, "receive on %s: %s", l->local, strerror(errno));
	return n;
}

/*
 * A datagram an earlier session left (the listener's stale says which: with
 * -k, --verify's END, VERDICT or DONE sent again after its session here
 * ended) cannot start a session: it is dropped.
 */
static int stale_datagram(const struct listener *l)
{
	unsigned char d[64];
	ssize_t n;

	if (l->stale == NULL)
		return 0;
	n = recv(l->fd, d, sizeof d, MSG_PEEK);
	return n >= 0 && l->stale(d, (size_t)n);
}

/*
 * A connectionless listener has no accept(): it waits for the first datagram
 * from a sender --allow/--deny let in (peeked, so the relay still reads it;
 * the datagrams of refused senders, and stale ones an earlier session
 * left, are read and dropped) and connects to its
 * sender, which makes the kernel drop datagrams from anyone else and sends
 * replies there.
 */
static int accept_first_datagram(const struct config *cfg, struct listener *l, struct endpoint *ep,
                                 struct failure *fail)
{
	struct sockaddr_storage from;
	socklen_t len;
	char byte;

	if (l->served)
		listener_forget_peer(l);
	l->served = 1;
	sock_set_nonblock(l->fd, 0);
	for (;;) {
		int admitted;

		if (peek_sender(l, &from, &len, fail) < 0)
			return EXIT_RUNTIME;
		admitted = listener_admits(cfg, l, (struct sockaddr *)&from, len, "datagram");
		if (admitted && !stale_datagram(l))
			break;
		if (admitted)
			log_verbose("dropped %s", l->stale_name);
		recv(l->fd, &byte, 1, 0); /* the rest of the datagram goes with it */
	}
	ep->fd = dup(l->fd);
	if (ep->fd < 0)
		return failure_set(fail, EXIT_RUNTIME, "dup: %s", strerror(errno));
	addr_format((struct sockaddr *)&from, len, ep->peer, sizeof ep->peer);
	ep->cannot_send = len <= sizeof(sa_family_t); /* an unbound Unix sender */
	if (!ep->cannot_send && connect(ep->fd, (struct sockaddr *)&from, len) != 0)
		return failure_set(fail, EXIT_RUNTIME, "connect %s: %s", ep->peer, strerror(errno));
	if (ep->cannot_send)
		log_warn("the peer has no address; nothing can be sent back to it");
	return 0;
}

/*
 * A refused TCP peer gets a reset, not a FIN: after an orderly close it
 * could not tell the refusal from a listener that took its data and ended,
 * and would exit 0.
 */
void endpoint_refuse(int fd)
{
	struct linger reset = {.l_onoff = 1, .l_linger = 0};

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
	close(fd);
}

/* accept() the next connection that --allow/--deny let in; the others are reset at once. */
static int accept_connection(const struct config *cfg, struct listener *l, struct endpoint *ep,
                             struct failure *fail)
{
	struct sockaddr_storage from;
	socklen_t len;

	for (;;) {
		if (signal_stop)
			return failure_set(fail, EXIT_RUNTIME, "interrupted by %s",
			                   signals_stop_name());
		len = sizeof from;
		ep->fd = accept(l->fd, (struct sockaddr *)&from, &len);
		if (ep->fd < 0 && (errno == EINTR || errno == ECONNABORTED))
			continue;
		if (ep->fd < 0)
			return failure_set(fail, EXIT_RUNTIME, "accept on %s: %s", l->local,
			                   strerror(errno));
		if (listener_admits(cfg, l, (struct sockaddr *)&from, len, "connection"))
			break;
		endpoint_refuse(ep->fd);
		ep->fd = -1;
	}
	addr_format_fd(ep->fd, 1, ep->peer, sizeof ep->peer);
	return 0;
}

/* Wait for the next peer. 0, or EXIT_RUNTIME (also on SIGINT/SIGTERM). */
int endpoint_accept(const struct config *cfg, struct listener *l, struct endpoint *ep,
                    struct failure *fail)
{
	int rc = cfg->transport->connectionless ? accept_first_datagram(cfg, l, ep, fail)
	                                        : accept_connection(cfg, l, ep, fail);

	if (rc != 0)
		return rc;
	sock_set_nonblock(ep->fd, 1);
	addr_format_fd(ep->fd, 0, ep->local, sizeof ep->local);
	sock_read_buffers(ep->fd, &ep->sndbuf, &ep->rcvbuf);
	log_verbose("connection from %s, SO_SNDBUF %d, SO_RCVBUF %d", ep->peer, ep->sndbuf,
	            ep->rcvbuf);
	return 0;
}

/*
 * -P: start another connection of the session to the address the first one
 * reached (not resolved again), without waiting for it, so that the
 * handshakes of all of them overlap. 0 with *fd, or an exit status with fail.
 */
int endpoint_connect_start(const struct config *cfg, const struct endpoint *ep, int *fd,
                           struct failure *fail)
{
	struct sockaddr_storage peer;
	socklen_t len = sizeof peer;
	int why;

	if (getpeername(ep->fd, (struct sockaddr *)&peer, &len) != 0)
		return failure_set(fail, EXIT_RUNTIME, "getpeername: %s", strerror(errno));
	*fd = sock_open(cfg, peer.ss_family, fail);
	if (*fd < 0)
		return EXIT_RUNTIME;
	sock_set_nonblock(*fd, 1);
	if (connect(*fd, (struct sockaddr *)&peer, len) == 0 || errno == EINPROGRESS)
		return 0;
	why = errno;
	close(*fd);
	*fd = -1;
	return connect_failed(cfg, ep->peer, why, fail);
}

/* -P: wait (at most -w) for a connect endpoint_connect_start began. 0, or an exit status. */
int endpoint_connect_finish(const struct config *cfg, const struct endpoint *ep, int fd,
                            struct failure *fail)
{
	int why = connect_wait(fd, cfg->timeout_ms);

	if (why == 0)
		return 0;
	return connect_failed(cfg, ep->peer, why, fail);
}

/*
 * -P: a connection waiting on the (non-blocking) listener, if --allow/--deny
 * let it in; the others are reset. 1 with *fd, 0 when none waits, -1 on error.
 */
int endpoint_accept_pending(const struct config *cfg, struct listener *l, int *fd)
{
	struct sockaddr_storage from;
	socklen_t len = sizeof from;

	*fd = accept(l->fd, (struct sockaddr *)&from, &len);
	if (*fd < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ||
		               errno == ECONNABORTED
		           ? 0
		           : -1;
	if (!listener_admits(cfg, l, (struct sockaddr *)&from, len, "connection")) {
		endpoint_refuse(*fd);
		return 0;
	}
	sock_set_nonblock(*fd, 1);
	return 1;
}

/*
 * A session that failed here ends with a reset rather than a FIN, so a
 * peer that finished sending and waits for our EOF learns that its data
 * did not all arrive (it fails with "connection reset", exit 5) instead of
 * exiting 0. Datagram transports have nothing to reset.
 */
void endpoint_abort(const struct config *cfg, struct endpoint *ep)
{
	struct linger now = {.l_onoff = 1, .l_linger = 0};

	if (ep->fd >= 0 && !cfg->transport->connectionless)
		setsockopt(ep->fd, SOL_SOCKET, SO_LINGER, &now, sizeof now);
}

/* Close, and remove a temporary Unix address this end bound. */
void endpoint_close(struct endpoint *ep)
{
	sock_close(&ep->fd, ep->bound_path);
}
