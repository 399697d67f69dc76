/*
 * tcpinfo-none.c: the stand-in where the platform has no Linux-style TCP_INFO and
 * TCP_CONGESTION (configure picks it): no "tcp" figures, and --congestion is refused.
 */
#include "config.h"

#include <errno.h>

#include "fastcat.h"
#include "net/net.h"

int tcpinfo_read(int fd, struct tcp_stats *st)
{
	(void)fd;
	(void)st;
	errno = ENOPROTOOPT;
	return -1;
}

int tcpinfo_set_congestion(int fd, const char *name)
{
	(void)fd;
	(void)name;
	errno = ENOPROTOOPT;
	return -1;
}

int tcpinfo_congestion_check(const char *name, struct failure *fail)
{
	return failure_set(fail, EXIT_USAGE,
	                   "--congestion %s: this build cannot choose the congestion control "
	                   "(no TCP_CONGESTION)",
	                   name);
}

int tcpinfo_sysctl(const char *name, char *out, size_t len)
{
	(void)name;
	(void)out;
	(void)len;
	return -1;
}
