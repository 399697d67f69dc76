/*
 * multicast.c: udp to and from a multicast group (--reliable's many receivers). The sender's
 * socket is not connected, so that every receiver's answer reaches it; its datagrams go with
 * --ttl hops (1: this link only, as a group's traffic should by default) and loop back to
 * receivers on its own host. A listener bound to a group joins it, on --mcast-if or the
 * route's interface.
 */
#include "config.h"

#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "fastcat.h"
#include "net/net.h"

/* Is sa an IPv4 (224.0.0.0/4) or IPv6 (ff00::/8) multicast group? */
int mcast_is_group(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return IN_MULTICAST(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_MULTICAST(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return 0;
}

/* --mcast-if's index, or 0 (the route's). -1: no such interface (the failure set). */
static int interface_index(const struct config *cfg, struct failure *fail)
{
	unsigned index;

	if (cfg->mcast_if == NULL)
		return 0;
	index = if_nametoindex(cfg->mcast_if);
	if (index == 0) {
		failure_set(fail, EXIT_USAGE, "--mcast-if %s: no such interface", cfg->mcast_if);
		return -1;
	}
	return (int)index;
}

static int option_failed(const char *what, struct failure *fail)
{
	failure_set(fail, EXIT_RUNTIME, "multicast: %s: %s", what, strerror(errno));
	return -1;
}

/* The sender's socket for group: hops, loop, interface. 0, or -1 (the failure set). */
int mcast_sender(int fd, const struct sockaddr *group, const struct config *cfg,
                 struct failure *fail)
{
	int hops = cfg->mcast_ttl != 0 ? (int)cfg->mcast_ttl : 1, loop = 1;
	int index = interface_index(cfg, fail);
	unsigned char ttl = (unsigned char)hops, on = 1;
	struct ip_mreqn via = {.imr_ifindex = index};

	if (index < 0)
		return -1;
	if (group->sa_family == AF_INET6) {
		if (setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, &hops, sizeof hops) != 0 ||
		    setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_LOOP, &loop, sizeof loop) != 0)
			return option_failed("IPV6_MULTICAST_HOPS", fail);
		if (index > 0 &&
		    setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_IF, &index, sizeof index) != 0)
			return option_failed("IPV6_MULTICAST_IF", fail);
		return 0;
	}
	if (setsockopt(fd, IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof ttl) != 0 ||
	    setsockopt(fd, IPPROTO_IP, IP_MULTICAST_LOOP, &on, sizeof on) != 0)
		return option_failed("IP_MULTICAST_TTL", fail);
	if (index > 0 && setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &via, sizeof via) != 0)
		return option_failed("IP_MULTICAST_IF", fail);
	return 0;
}

/* A listener bound to group joins it. 0, or -1 (the failure set). */
int mcast_join(int fd, const struct sockaddr *group, const struct config *cfg, struct failure *fail)
{
	int index = interface_index(cfg, fail);
	struct ipv6_mreq m6 = {.ipv6mr_interface = (unsigned)index};
	struct ip_mreqn m4 = {.imr_ifindex = index};

	if (index < 0)
		return -1;
	if (group->sa_family == AF_INET6) {
		m6.ipv6mr_multiaddr = ((const struct sockaddr_in6 *)group)->sin6_addr;
		if (setsockopt(fd, IPPROTO_IPV6, IPV6_JOIN_GROUP, &m6, sizeof m6) != 0)
			return option_failed("IPV6_JOIN_GROUP", fail);
		return 0;
	}
	m4.imr_multiaddr = ((const struct sockaddr_in *)group)->sin_addr;
	if (setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m4, sizeof m4) != 0)
		return option_failed("IP_ADD_MEMBERSHIP", fail);
	return 0;
}
