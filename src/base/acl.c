/* acl.c: --allow/--deny: address prefixes parsed from text and matched against a peer's address. */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "base/base.h"

/* The first 12 bytes of an IPv4-mapped IPv6 address, ::ffff:a.b.c.d. */
static const unsigned char v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

/*
 * A dual-stack listener sees IPv4 peers as ::ffff:a.b.c.d, and a rule may be
 * written that way too: both become plain IPv4, so that one IPv4 rule covers
 * a peer whichever socket it came in on. A mapped prefix shorter than /96
 * reaches beyond the mapped range and stays IPv6.
 */
static void unmap_v4(int *family, unsigned char addr[16], unsigned *bits)
{
	if (*family != AF_INET6 || memcmp(addr, v4mapped, sizeof v4mapped) != 0 || *bits < 96)
		return;
	*family = AF_INET;
	*bits -= 96;
	memmove(addr, addr + 12, 4);
	memset(addr + 4, 0, 12);
}

/* Zero the bits past the prefix, so that 10.1.2.3/8 is 10.0.0.0/8 (as ncat and iptables take it).
 */
static void clear_host_bits(unsigned char addr[16], unsigned bits)
{
	for (unsigned i = 0; i < 16; i++) {
		if (bits >= 8 * (i + 1))
			continue;
		addr[i] &= bits <= 8 * i ? 0 : (unsigned char)(0xff << (8 - (bits - 8 * i)));
	}
}

/* "/BITS": decimal digits only (no sign, no space, no suffix), at most max. */
static int parse_bits(const char *s, unsigned max, unsigned *bits)
{
	size_t n = strlen(s);
	unsigned v = 0;

	if (n == 0 || n > 3 || strspn(s, "0123456789") != n)
		return -1;
	for (; *s != '\0'; s++)
		v = v * 10 + (unsigned)(*s - '0');
	if (v > max)
		return -1;
	*bits = v;
	return 0;
}

/*
 * "ADDRESS" or "ADDRESS/BITS", IPv4 or IPv6, numeric only (never a name: no
 * resolver is asked); a plain address is /32 or /128. Returns 0, -1 when
 * ADDRESS is not an address, -2 when BITS is not 0 to 32 (IPv4) or 0 to 128.
 */
int acl_parse(const char *text, struct acl_rule *rule)
{
	char host[INET6_ADDRSTRLEN];
	const char *slash = strchr(text, '/');
	size_t n = slash != NULL ? (size_t)(slash - text) : strlen(text);

	memset(rule, 0, sizeof *rule);
	rule->text = text;
	if (n == 0 || n >= sizeof host)
		return -1;
	memcpy(host, text, n);
	host[n] = '\0';
	if (inet_pton(AF_INET, host, rule->addr) == 1)
		rule->family = AF_INET;
	else if (inet_pton(AF_INET6, host, rule->addr) == 1)
		rule->family = AF_INET6;
	else
		return -1;
	rule->bits = rule->family == AF_INET ? 32 : 128;
	if (slash != NULL && parse_bits(slash + 1, rule->bits, &rule->bits) != 0)
		return -2;
	clear_host_bits(rule->addr, rule->bits);
	unmap_v4(&rule->family, rule->addr, &rule->bits);
	return 0;
}

/* Append a rule. 0, -1 or -2 as acl_parse, or -3 when ACL_MAX rules are there already. */
int acl_add(struct acl *acl, const char *text, int deny)
{
	struct acl_rule rule;
	int rc = acl_parse(text, &rule);

	if (rc != 0)
		return rc;
	if (acl->n == ACL_MAX)
		return -3;
	rule.deny = deny;
	acl->rules[acl->n++] = rule;
	acl->allow_listed |= !deny;
	return 0;
}

/* A peer's address as the rules see it. 0, or -1 for a family no rule can match. */
static int peer_key(const struct sockaddr *sa, int *family, unsigned char addr[16])
{
	struct sockaddr_in sin;
	struct sockaddr_in6 sin6;
	unsigned bits = 128;

	memset(addr, 0, 16);
	switch (sa->sa_family) {
	case AF_INET:
		memcpy(&sin, sa, sizeof sin);
		memcpy(addr, &sin.sin_addr, 4);
		*family = AF_INET;
		return 0;
	case AF_INET6:
		memcpy(&sin6, sa, sizeof sin6);
		memcpy(addr, &sin6.sin6_addr, 16);
		*family = AF_INET6;
		unmap_v4(family, addr, &bits);
		return 0;
	}
	return -1;
}

static int rule_matches(const struct acl_rule *r, int family, const unsigned char addr[16])
{
	unsigned whole = r->bits / 8, rest = r->bits % 8;

	if (r->family != family || memcmp(r->addr, addr, whole) != 0)
		return 0;
	return rest == 0 || ((r->addr[whole] ^ addr[whole]) & (0xff << (8 - rest))) == 0;
}

/*
 * Whether the rules let a peer in, as ncat decides: a peer that any --deny
 * matches is refused (deny wins over allow); when some --allow was given,
 * only a peer that one of them matches is let in. Returns 1 or 0; when 0,
 * *why is the --deny rule that matched, or NULL when no --allow did.
 */
int acl_permits(const struct acl *acl, const struct sockaddr *sa, const struct acl_rule **why)
{
	unsigned char addr[16];
	int family, allowed = !acl->allow_listed;

	*why = NULL;
	if (acl->n == 0)
		return 1;
	if (peer_key(sa, &family, addr) != 0)
		return allowed;
	for (size_t i = 0; i < acl->n; i++) {
		const struct acl_rule *r = &acl->rules[i];

		if (!rule_matches(r, family, addr))
			continue;
		if (r->deny) {
			*why = r;
			return 0;
		}
		allowed = 1;
	}
	return allowed;
}
