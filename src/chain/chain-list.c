/*
 * chain-list.c: --chain's list of receivers, as the sender types it (h1,h2:9001,[::1]:9002) and
 * as it travels (every node with its port), read and written the same way at every node.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fastcat.h"
#include "base/base.h"
#include "chain/chain.h"

/* A port as typed: digits, 1-65535. */
static int port_ok(const char *p, size_t len)
{
	unsigned long v = 0;

	if (len == 0 || len >= CHAIN_PORT_MAX)
		return 0;
	for (size_t i = 0; i < len; i++) {
		if (p[i] < '0' || p[i] > '9')
			return 0;
		v = v * 10 + (unsigned long)(p[i] - '0');
	}
	return v >= 1 && v <= 65535;
}

/*
 * One element, [a, a + len): host, host:port, [v6], [v6]:port, or a bare
 * IPv6 address (two colons or more: no port). 0, or -1 with the reason.
 */
static int parse_node(const char *a, size_t len, const char *port, struct chain_node *n,
                      struct failure *fail)
{
	const char *host = a, *p = NULL, *colon = memchr(a, ':', len);
	size_t hlen = len, plen = 0;

	if (len > 0 && a[0] == '[') {
		const char *close = memchr(a, ']', len);
		if (close == NULL || (close + 1 < a + len && close[1] != ':'))
			return failure_set(fail, EXIT_USAGE,
			                   "--chain: '%.*s': a ']' must end the address", (int)len,
			                   a);
		host = a + 1;
		hlen = (size_t)(close - host);
		if (close + 1 < a + len) {
			p = close + 2;
			plen = (size_t)(a + len - p);
		}
	} else if (colon != NULL && memchr(colon + 1, ':', len - (size_t)(colon + 1 - a)) == NULL) {
		hlen = (size_t)(colon - a);
		p = colon + 1;
		plen = len - hlen - 1;
	}
	if (hlen == 0)
		return failure_set(fail, EXIT_USAGE,
		                   "--chain: a receiver without a host in the list");
	if (hlen >= CHAIN_HOST_MAX)
		return failure_set(fail, EXIT_USAGE,
		                   "--chain: a host name longer than %d characters",
		                   CHAIN_HOST_MAX - 1);
	if (p == NULL) {
		p = port;
		plen = strlen(port);
	}
	if (!port_ok(p, plen))
		return failure_set(fail, EXIT_USAGE, "--chain: '%.*s': the port must be 1-65535",
		                   (int)len, a);
	memcpy(n->host, host, hlen);
	n->host[hlen] = '\0';
	memcpy(n->port, p, plen);
	n->port[plen] = '\0';
	return 0;
}

/* A node named twice (host compared without case, port as a number): its index, or -1. */
static int named_before(const struct chain_list *l, unsigned i)
{
	for (unsigned k = 0; k < i; k++)
		if (strcasecmp(l->node[k].host, l->node[i].host) == 0 &&
		    strtoul(l->node[k].port, NULL, 10) == strtoul(l->node[i].port, NULL, 10))
			return (int)k;
	return -1;
}

/*
 * The list in text, each element's port defaulting to port (the sender's
 * port operand). 0, or -1 with a usage error: an empty list or element, a
 * bad port, a node named twice, more than CHAIN_MAX nodes.
 */
int chain_list_parse(const char *text, const char *port, struct chain_list *l, struct failure *fail)
{
	const char *a = text;

	l->n = 0;
	if (*text == '\0')
		return failure_set(fail, EXIT_USAGE, "--chain: the list of receivers is empty");
	for (;;) {
		const char *comma = strchr(a, ',');
		size_t len = comma != NULL ? (size_t)(comma - a) : strlen(a);
		int twice;

		if (len == 0)
			return failure_set(fail, EXIT_USAGE,
			                   "--chain: an empty name in the list of receivers");
		if (l->n == CHAIN_MAX)
			return failure_set(fail, EXIT_USAGE,
			                   "--chain: at most %d receivers in the list", CHAIN_MAX);
		if (parse_node(a, len, port, &l->node[l->n], fail) != 0)
			return -1;
		if ((twice = named_before(l, l->n)) >= 0)
			return failure_set(fail, EXIT_USAGE,
			                   "--chain: %.*s is named twice (receivers %d and %u)",
			                   (int)len, a, twice + 1, l->n + 1);
		l->n++;
		if (comma == NULL)
			break;
		a = comma + 1;
	}
	return 0;
}

/* Node i as messages name it: host:port, [v6]:port. */
const char *chain_node_name(const struct chain_list *l, unsigned i, char *buf, size_t size)
{
	const struct chain_node *n = &l->node[i];

	snprintf(buf, size, strchr(n->host, ':') != NULL ? "[%s]:%s" : "%s:%s", n->host, n->port);
	return buf;
}

/* The list as it travels, every node with its port; its length, or 0 when it does not fit. */
size_t chain_list_format(const struct chain_list *l, char *buf, size_t size)
{
	size_t len = 0;

	for (unsigned i = 0; i < l->n; i++) {
		char name[CHAIN_HOST_MAX + CHAIN_PORT_MAX + 4];
		int n = snprintf(buf + len, size - len, "%s%s", i > 0 ? "," : "",
		                 chain_node_name(l, i, name, sizeof name));
		if (n < 0 || (size_t)n >= size - len)
			return 0;
		len += (size_t)n;
	}
	return len;
}
