/* addr.c: name resolution and printable "address:port" strings. */
#include "config.h"

#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "fastcat.h"
#include "net/net.h"

/*
 * Resolve host and port into a list for socket(). passive: for bind(), a NULL
 * host meaning "any". Returns 0, or EXIT_CONNECT with the reason in fail.
 */
int addr_resolve(const char *host, const char *port, int family, int socktype, int flags,
                 struct addrinfo **res, struct failure *fail)
{
	struct addrinfo hints;
	int rc;

	memset(&hints, 0, sizeof hints);
	hints.ai_family = family;
	hints.ai_socktype = socktype;
	hints.ai_flags = flags | AI_NUMERICSERV;
	rc = getaddrinfo(host, port, &hints, res);
	if (rc == 0)
		return 0;
	if (rc == EAI_NONAME && (flags & AI_NUMERICHOST))
		return failure_set(fail, EXIT_CONNECT, "resolve %s: not a numeric address (-n)",
		                   host);
	if (rc == EAI_ADDRFAMILY || (rc == EAI_NONAME && family != AF_UNSPEC))
		return failure_set(fail, EXIT_CONNECT, "resolve %s: no %s address", host,
		                   family == AF_INET    ? "IPv4"
		                   : family == AF_INET6 ? "IPv6"
		                                        : "usable");
	return failure_set(fail, EXIT_CONNECT, "resolve %s: %s", host, gai_strerror(rc));
}

/* sun_path holds the path and its NUL; an abstract name has a NUL in front instead. */
#define UNIX_PATH_MAX (sizeof(((struct sockaddr_un *)0)->sun_path) - 1)

/* A Unix socket path or "@name" that fits sun_path; 0, or EXIT_USAGE with the reason. */
int addr_unix_check(const char *path, struct failure *fail)
{
	size_t len = strlen(path);

	if (len == 0 || (path[0] == '@' && len == 1))
		return failure_set(fail, EXIT_USAGE, "empty Unix socket path");
	if (len > UNIX_PATH_MAX)
		return failure_set(fail, EXIT_USAGE,
		                   "%s: Unix socket path too long (%zu bytes, at most %zu)", path,
		                   len, UNIX_PATH_MAX);
	return 0;
}

/* Fill a sockaddr_un for a checked path; "@name" is Linux's abstract namespace. */
int addr_unix(const char *path, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_un *sun = (struct sockaddr_un *)ss;
	size_t n = strlen(path);

	if (n > UNIX_PATH_MAX)
		return -1;
	memset(ss, 0, sizeof *ss);
	sun->sun_family = AF_UNIX;
	memcpy(sun->sun_path, path, n);
	if (path[0] == '@') {
		sun->sun_path[0] = '\0'; /* the name's length is in *len, not a NUL */
		*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	} else {
		*len = (socklen_t)sizeof *sun;
	}
	return 0;
}

static void addr_format_unix(const struct sockaddr *sa, socklen_t len, char *out, size_t outlen)
{
	const struct sockaddr_un *sun = (const struct sockaddr_un *)sa;
	size_t off = offsetof(struct sockaddr_un, sun_path);
	size_t n = len > off ? len - off : 0;

	if (n == 0)
		snprintf(out, outlen, "(unnamed)");
	else if (sun->sun_path[0] == '\0')
		snprintf(out, outlen, "@%.*s", (int)(n - 1), sun->sun_path + 1);
	else
		snprintf(out, outlen, "%.*s", (int)strnlen(sun->sun_path, n), sun->sun_path);
}

/* "127.0.0.1:9000", "[::1]:9000"; an IPv4-mapped IPv6 address prints as IPv4. */
void addr_format(const struct sockaddr *sa, socklen_t len, char *out, size_t outlen)
{
	char host[NI_MAXHOST], serv[NI_MAXSERV];
	const char *h = host;

	if (sa->sa_family == AF_UNIX) {
		addr_format_unix(sa, len, out, outlen);
		return;
	}
	if (getnameinfo(sa, len, host, sizeof host, serv, sizeof serv,
	                NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
		snprintf(out, outlen, "?");
		return;
	}
	if (sa->sa_family == AF_INET6 && strncmp(host, "::ffff:", 7) == 0 && strchr(host + 7, '.'))
		h = host + 7;
	else if (sa->sa_family == AF_INET6) {
		snprintf(out, outlen, "[%s]:%s", host, serv);
		return;
	}
	snprintf(out, outlen, "%s:%s", h, serv);
}

/* The printable local (peer == 0) or remote (peer == 1) address of a socket. */
void addr_format_fd(int fd, int peer, char *out, size_t outlen)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof ss;
	int rc = peer ? getpeername(fd, (struct sockaddr *)&ss, &len)
	              : getsockname(fd, (struct sockaddr *)&ss, &len);

	if (rc != 0) {
		snprintf(out, outlen, "?");
		return;
	}
	addr_format((struct sockaddr *)&ss, len, out, outlen);
}

/* Two IP socket addresses with the same family and address (and port, when ports says). */
static int same_ip(const struct sockaddr *a, const struct sockaddr *b, int ports)
{
	struct sockaddr_in a4, b4;
	struct sockaddr_in6 a6, b6;

	if (a->sa_family != b->sa_family)
		return 0;
	switch (a->sa_family) {
	case AF_INET:
		memcpy(&a4, a, sizeof a4);
		memcpy(&b4, b, sizeof b4);
		return (!ports || a4.sin_port == b4.sin_port) &&
		       a4.sin_addr.s_addr == b4.sin_addr.s_addr;
	case AF_INET6:
		memcpy(&a6, a, sizeof a6);
		memcpy(&b6, b, sizeof b6);
		return (!ports || a6.sin6_port == b6.sin6_port) &&
		       a6.sin6_scope_id == b6.sin6_scope_id &&
		       memcmp(&a6.sin6_addr, &b6.sin6_addr, sizeof a6.sin6_addr) == 0;
	}
	return 0;
}

/*
 * Whether two IP socket addresses name the same peer: family, address and
 * port (and the scope of an IPv6 link-local address). 0 for anything else.
 */
int addr_same_peer(const struct sockaddr *a, const struct sockaddr *b)
{
	return same_ip(a, b, 1);
}

/* ... the same host, whatever the ports: each of -P's connections has its own. */
int addr_same_host(const struct sockaddr *a, const struct sockaddr *b)
{
	return same_ip(a, b, 0);
}
