/*
 * listener.c: the listening socket (IP or Unix), who may use it (--allow/--deny,
 * the socket file's mode), stale Unix socket files, and their removal.
 */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fastcat.h"
#include "net/net.h"

#define LISTEN_BACKLOG 16

static void bind_error(const struct sockaddr *sa, socklen_t len, struct failure *fail)
{
	char where[112];
	int why = errno;

	addr_format(sa, len, where, sizeof where);
	failure_set(fail, EXIT_RUNTIME, "bind %s: %s", where, strerror(why));
}

/*
 * Bind a Unix socket path so that its file is never more open than
 * --unix-mode (0600 by default): bind() creates it with 0777 less the umask,
 * so a umask that takes away what the mode does not give is set around the
 * call; chmod() then sets the mode exactly (a umask cannot add bits, and some
 * systems ignore it for sockets), still before listen(). A file whose mode
 * cannot be set is removed.
 */
static int bind_socket_file(const struct config *cfg, int fd, const struct sockaddr *sa,
                            socklen_t len, struct failure *fail)
{
	mode_t saved = umask(0777 & ~cfg->unix_mode);
	int rc = bind(fd, sa, len);

	umask(saved); /* cannot fail, and leaves errno alone */
	if (rc != 0) {
		bind_error(sa, len, fail);
		return -1;
	}
	if (chmod(cfg->path, cfg->unix_mode) != 0) {
		failure_set(fail, EXIT_RUNTIME, "chmod %s %03o: %s", cfg->path,
		            (unsigned)cfg->unix_mode, strerror(errno));
		unlink(cfg->path);
		return -1;
	}
	return 0;
}

/* Bind, and listen unless the transport is connectionless. */
static int bind_listen(const struct config *cfg, int fd, const struct sockaddr *sa, socklen_t len,
                       struct failure *fail)
{
	int on = 1, rc;

	if (sa->sa_family != AF_UNIX)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
	if (sa->sa_family == AF_UNIX && cfg->path[0] != '@')
		rc = bind_socket_file(cfg, fd, sa, len, fail); /* says why itself */
	else if ((rc = bind(fd, sa, len)) != 0)
		bind_error(sa, len, fail);
	if (rc != 0)
		return -1;
	if (cfg->transport->connectionless || listen(fd, LISTEN_BACKLOG) == 0)
		return 0;
	bind_error(sa, len, fail);
	return -1;
}

/*
 * With no address: one IPv6 socket with V6ONLY off serves both families;
 * where the kernel has no IPv6 (or with -4) an IPv4 socket on 0.0.0.0.
 */
static int listen_any(const struct config *cfg, struct failure *fail)
{
	struct sockaddr_in6 sin6;
	struct sockaddr_in sin;
	int port = 0, fd = -1;

	units_parse_port(cfg->port, 0, &port);
	if (cfg->family != AF_INET) {
		fd = sock_open(cfg, AF_INET6, fail);
		if (fd >= 0) {
			int v6only = cfg->family == AF_INET6;
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only);
			memset(&sin6, 0, sizeof sin6);
			sin6.sin6_family = AF_INET6;
			sin6.sin6_addr = in6addr_any;
			sin6.sin6_port = htons((uint16_t)port);
			if (bind_listen(cfg, fd, (struct sockaddr *)&sin6, sizeof sin6, fail) == 0)
				return fd;
			close(fd);
			return -1;
		}
		if (cfg->family == AF_INET6)
			return -1;
	}
	fd = sock_open(cfg, AF_INET, fail);
	if (fd < 0)
		return -1;
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_ANY);
	sin.sin_port = htons((uint16_t)port);
	if (bind_listen(cfg, fd, (struct sockaddr *)&sin, sizeof sin, fail) == 0)
		return fd;
	close(fd);
	return -1;
}

static int listen_on_host(const struct config *cfg, struct failure *fail)
{
	struct addrinfo *res, *ai;
	int fd = -1;

	if (addr_resolve(cfg->host, cfg->port, cfg->family, cfg->transport->socktype,
	                 AI_PASSIVE | (cfg->numeric ? AI_NUMERICHOST : 0), &res, fail) != 0)
		return -1;
	for (ai = res; ai != NULL && fd < 0; ai = ai->ai_next) {
		*fail = (struct failure){EXIT_OK, ""}; /* the last address's failure is told */
		fd = sock_open(cfg, ai->ai_family, fail);
		if (fd < 0)
			continue;
		if (ai->ai_family == AF_INET6) {
			int on = 1;
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on);
		}
		if (bind_listen(cfg, fd, ai->ai_addr, ai->ai_addrlen, fail) != 0 ||
		    (cfg->transport->connectionless && mcast_is_group(ai->ai_addr) &&
		     mcast_join(fd, ai->ai_addr, cfg, fail) != 0)) {
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(res);
	return fd;
}

/*
 * Whether a Unix socket file has nobody behind it: connecting to it is
 * refused. The probe uses another socket type than the transport's, so a
 * live listener sees nothing (the kernel answers EPROTOTYPE and queues no
 * connection that the listener would then accept).
 */
static int unix_path_is_stale(const struct config *cfg, const struct sockaddr *sa, socklen_t len)
{
	int type = cfg->transport->socktype == SOCK_DGRAM ? SOCK_STREAM : SOCK_DGRAM;
	int fd = socket(AF_UNIX, type, 0), stale;

	if (fd < 0)
		return 0;
	stale = connect(fd, sa, len) != 0 && errno == ECONNREFUSED;
	close(fd);
	return stale;
}

/*
 * A path that holds a stale socket is reused; a live socket or anything that
 * is not a socket is left alone, with a message saying which.
 */
static int unix_path_prepare(const struct config *cfg, const struct sockaddr *sa, socklen_t len,
                             struct failure *fail)
{
	const char *path = cfg->path;
	struct stat st;

	if (path[0] == '@' || lstat(path, &st) != 0)
		return 0;
	if (!S_ISSOCK(st.st_mode))
		return failure_set(fail, EXIT_RUNTIME,
		                   "%s: exists and is not a socket; not removing it", path);
	if (!unix_path_is_stale(cfg, sa, len))
		return 0; /* bind() will say "Address already in use" */
	if (unlink(path) != 0)
		return failure_set(fail, EXIT_RUNTIME, "%s: cannot remove the stale socket: %s",
		                   path, strerror(errno));
	log_verbose("removed stale socket %s", path);
	return 0;
}

static int listen_unix(const struct config *cfg, struct listener *l, struct failure *fail)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd;

	if (addr_unix(cfg->path, &ss, &len) != 0 ||
	    unix_path_prepare(cfg, (struct sockaddr *)&ss, len, fail) != 0)
		return -1;
	fd = sock_open(cfg, AF_UNIX, fail);
	if (fd < 0)
		return -1;
	if (bind_listen(cfg, fd, (struct sockaddr *)&ss, len, fail) != 0) {
		close(fd);
		return -1;
	}
	if (cfg->path[0] != '@')
		snprintf(l->created_path, sizeof l->created_path, "%s", cfg->path);
	return fd;
}

/*
 * Bind (and listen); says where with -v as soon as it can take a peer. 0, or
 * EXIT_RUNTIME (whatever went wrong: a name that does not resolve too).
 */
int listener_open(const struct config *cfg, struct listener *l, struct failure *fail)
{
	l->created_path[0] = '\0';
	if (cfg->transport->family == AF_UNIX)
		l->fd = listen_unix(cfg, l, fail);
	else if (cfg->host == NULL)
		l->fd = listen_any(cfg, fail);
	else
		l->fd = listen_on_host(cfg, fail);
	if (l->fd < 0)
		return fail->status = EXIT_RUNTIME;
	addr_format_fd(l->fd, 0, l->local, sizeof l->local);
	log_verbose("listening on %s", l->local);
	return 0;
}

/*
 * Whether --allow/--deny let a peer in; what says what it sent ("connection",
 * "datagram"). A refused peer is logged with -v, with the rule that refused
 * it, once for a run of refusals of the same address and port.
 */
int listener_admits(const struct config *cfg, struct listener *l, const struct sockaddr *sa,
                    socklen_t len, const char *what)
{
	const struct acl_rule *why;
	char peer[112];

	if (acl_permits(&cfg->acl, sa, &why)) {
		l->refused[0] = '\0';
		return 1;
	}
	addr_format(sa, len, peer, sizeof peer);
	if (strcmp(peer, l->refused) == 0)
		return 0;
	snprintf(l->refused, sizeof l->refused, "%s", peer);
	if (why != NULL)
		log_verbose("refused %s from %s (--deny %s)", what, peer, why->text);
	else
		log_verbose("refused %s from %s (no --allow matches it)", what, peer);
	return 0;
}

/*
 * After the one connection without -k: no more connections are taken. A
 * connectionless listener is the data socket itself, so it stays open.
 */
void listener_stop_accepting(const struct config *cfg, struct listener *l)
{
	if (!cfg->transport->connectionless && l->fd >= 0) {
		close(l->fd);
		l->fd = -1;
	}
}

/*
 * With -k a connectionless listener drops its previous peer. Linux unbinds a
 * UDP socket whose port was picked by the kernel when it disconnects, so the
 * address is bound again to keep the port the user was told about.
 */
void listener_forget_peer(struct listener *l)
{
	struct sockaddr_storage self, now;
	struct sockaddr unspec = {.sa_family = AF_UNSPEC};
	socklen_t len = sizeof self, nowlen = sizeof now;

	if (getsockname(l->fd, (struct sockaddr *)&self, &len) != 0)
		return;
	connect(l->fd, &unspec, sizeof unspec);
	if (self.ss_family == AF_UNIX ||
	    (getsockname(l->fd, (struct sockaddr *)&now, &nowlen) == 0 &&
	     memcmp(&now, &self, len) == 0))
		return;
	if (bind(l->fd, (struct sockaddr *)&self, len) != 0)
		log_warn("cannot bind %s again after the last peer: %s", l->local, strerror(errno));
}

/* Close, and remove the socket file this listener created (never someone else's). */
void listener_close(struct listener *l)
{
	sock_close(&l->fd, l->created_path);
}

/*
 * -k --resume: seconds other senders are refused for, while the hold of a
 * lost --retry session has not run out (the session's sender may be back).
 */
uint32_t listener_busy_seconds(const struct listener *l)
{
	double left = l->held != 0 ? l->held_until - clock_now() : 0;

	return left > 0 ? (uint32_t)left + 1 : 0;
}
