/* options-set.c: the options that do more than store one value (chunk sizes, peers, modes). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fastcat.h"
#include "cli/options.h"
#include "net/net.h"

/*
 * -B, --read-size, --write-size: the sizes each one sets (.seen says which),
 * where --read-size and --write-size win over -B in any order. The label of
 * the one that set the read size is kept for fit_datagrams' message.
 */
int options_set_chunk(const struct opt_call *c)
{
	if ((c->o->seen & SEEN_READ_SET) &&
	    ((c->o->seen & SEEN_READ_SIZE) || !(c->seen->flags & SEEN_READ_SIZE))) {
		c->cfg->read_size = (size_t)c->v;
		snprintf(c->seen->size_label, sizeof c->seen->size_label, "%s %s", c->seen->label,
		         c->arg);
	}
	if ((c->o->seen & SEEN_WRITE_SET) &&
	    ((c->o->seen & SEEN_WRITE_SIZE) || !(c->seen->flags & SEEN_WRITE_SIZE)))
		c->cfg->write_size = (size_t)c->v;
	return 0;
}

/* --dgram-size: also what fit_datagrams names when the datagram is too big. */
int options_set_dgram_size(const struct opt_call *c)
{
	c->cfg->dgram_size = (size_t)c->v;
	snprintf(c->seen->size_label, sizeof c->seen->size_label, "%s %s", c->seen->label, c->arg);
	return 0;
}

/* --congestion ALGO: tried after parsing, once the transport is known (check_congestion). */
int options_set_congestion(const struct opt_call *c)
{
	c->cfg->congestion = c->arg;
	return 0;
}

int options_set_mcast_if(const struct opt_call *c)
{
	c->cfg->mcast_if = c->arg;
	return 0;
}

/* --transport NAME: looked up after parsing, once -u and -U are known too. */
int options_set_transport(const struct opt_call *c)
{
	c->seen->transport = c->arg;
	return 0;
}

/* --allow/--deny CIDR (v: 1 for --deny): one more rule, after the ones before it. */
int options_set_acl(const struct opt_call *c)
{
	const char *label = c->seen->label;
	int ipv6 = memchr(c->arg, ':', strcspn(c->arg, "/")) != NULL;

	if (c->seen->acl_label[0] == '\0')
		snprintf(c->seen->acl_label, sizeof c->seen->acl_label, "%s", label);
	if (c->arg[0] == '\0')
		return failure_set(c->fail, EXIT_USAGE, "%s: empty address", label);
	switch (acl_add(&c->cfg->acl, c->arg, (int)c->v)) {
	case -1:
		return failure_set(c->fail, EXIT_USAGE,
		                   "%s %s: not an IPv4 or IPv6 address (ADDRESS or ADDRESS/BITS)",
		                   label, c->arg);
	case -2:
		return failure_set(c->fail, EXIT_USAGE, "%s %s: prefix length must be 0 to %d",
		                   label, c->arg, ipv6 ? 128 : 32);
	case -3:
		return failure_set(c->fail, EXIT_USAGE,
		                   "%s %s: at most %d --allow and --deny rules", label, c->arg,
		                   ACL_MAX);
	}
	return 0;
}

/* --unix-mode MODE: octal digits only, at most 777 (no set-id or sticky bit on a socket). */
int options_set_unix_mode(const struct opt_call *c)
{
	const char *label = c->seen->label;
	size_t n = strlen(c->arg);
	unsigned long mode = 0;
	int octal = n > 0 && strspn(c->arg, "01234567") == n;

	if (n == 0)
		return failure_set(c->fail, EXIT_USAGE, "%s: empty mode (octal, e.g. 660)", label);
	for (const char *p = c->arg; octal && *p != '\0' && mode <= 0777; p++)
		mode = mode * 8 + (unsigned long)(*p - '0');
	if (!octal || mode > 0777)
		return failure_set(c->fail, EXIT_USAGE,
		                   "%s %s: must be an octal mode from 0 to 777 (e.g. 660)", label,
		                   c->arg);
	c->cfg->unix_mode = (mode_t)mode;
	return 0;
}

/* -P N or -P auto: how many connections carry the stream (a listener takes the sender's). */
int options_set_parallel(const struct opt_call *c)
{
	char *end;
	unsigned long n;

	if (c->arg[0] == '-') /* "-l -P --resume": the next option was taken for -P's value */
		return failure_set(c->fail, EXIT_USAGE,
		                   "%s %s: %s takes the connections first (1 to 64, or auto; a "
		                   "receiver takes any: -l -P auto)",
		                   c->seen->label, c->arg, c->seen->label);
	if (strcmp(c->arg, "auto") == 0) {
		c->cfg->parallel = 1;
		c->cfg->parallel_auto = 1;
		return 0;
	}
	n = strtoul(c->arg, &end, 10);
	if (c->arg[0] < '0' || c->arg[0] > '9' || *end != '\0' || n < 1 || n > CONN_MAX)
		return failure_set(c->fail, EXIT_USAGE,
		                   "%s %s: connections must be 1 to %d, or auto", c->seen->label,
		                   c->arg, CONN_MAX);
	c->cfg->parallel = (unsigned)n;
	c->cfg->parallel_auto = 0;
	return 0;
}
