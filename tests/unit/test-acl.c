/* test-acl.c: --allow/--deny rules parse from text, and match peers as ncat does (deny wins). */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "fastcat.h"
#include "tap.h"

/* A peer's address as accept() or recvfrom() gives it: IPv4 or IPv6 by its spelling. */
static struct sockaddr_storage peer(const char *text)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

	memset(&ss, 0, sizeof ss);
	if (inet_pton(AF_INET, text, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(40000);
	} else if (inet_pton(AF_INET6, text, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(40000);
	}
	return ss;
}

/* Build an ACL from "+CIDR" (--allow) and "-CIDR" (--deny) entries, NULL-terminated. */
static int acl_of(struct acl *acl, const char *const *rules)
{
	memset(acl, 0, sizeof *acl);
	for (; *rules != NULL; rules++)
		if (acl_add(acl, *rules + 1, **rules == '-') != 0)
			return -1;
	return 0;
}

/* Whether the ACL lets the peer in; why names the refusing --deny rule, or "" for none. */
static int permits(const char *const *rules, const char *addr, const char **why)
{
	static struct acl acl;
	struct sockaddr_storage ss = peer(addr);
	const struct acl_rule *rule;
	int ok;

	if (acl_of(&acl, rules) != 0)
		return -1;
	ok = acl_permits(&acl, (struct sockaddr *)&ss, &rule);
	*why = rule != NULL ? rule->text : "";
	return ok;
}

#define RULES(...) ((const char *const[]){__VA_ARGS__, NULL})

static void check(const char *const *rules, const char *addr, int want, const char *want_why,
                  const char *what)
{
	const char *why = "";
	int got = permits(rules, addr, &why);

	tap_ok(got == want && strcmp(why, want_why) == 0, "%s: %s %s (got %d, why '%s')", what,
	       addr, want ? "allowed" : "refused", got, why);
}

static void parse_ok(const char *text, int family, unsigned bits, const char *addr)
{
	struct acl_rule r;
	unsigned char want[16] = {0};
	int rc = acl_parse(text, &r);

	inet_pton(family, addr, want);
	tap_ok(rc == 0 && r.family == family && r.bits == bits && memcmp(r.addr, want, 16) == 0 &&
	           r.text == text,
	       "parse '%s': %s/%u (rc %d, family %d, bits %u)", text, addr, bits, rc, r.family,
	       r.bits);
}

static void parse_bad(const char *text, int want)
{
	struct acl_rule r;
	int rc = acl_parse(text, &r);

	tap_ok(rc == want, "parse '%s': %s (rc %d)", text,
	       want == -1 ? "not an address" : "bad prefix length", rc);
}

int main(void)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	const struct acl_rule *why;
	struct acl acl;
	char text[ACL_MAX + 1][16];

	parse_ok("10.0.0.0/8", AF_INET, 8, "10.0.0.0");
	parse_ok("192.0.2.7", AF_INET, 32, "192.0.2.7");
	parse_ok("10.1.2.3/8", AF_INET, 8, "10.0.0.0");         /* host bits cleared */
	parse_ok("10.255.255.255/9", AF_INET, 9, "10.128.0.0"); /* ... within a byte */
	parse_ok("0.0.0.0/0", AF_INET, 0, "0.0.0.0");
	parse_ok("1.2.3.4/0", AF_INET, 0, "0.0.0.0");
	parse_ok("::1", AF_INET6, 128, "::1");
	parse_ok("2001:db8::/32", AF_INET6, 32, "2001:db8::");
	parse_ok("2001:db8:ffff::1/33", AF_INET6, 33, "2001:db8:8000::");
	parse_ok("::/0", AF_INET6, 0, "::");
	parse_ok("::ffff:10.1.2.3", AF_INET, 32, "10.1.2.3");    /* mapped: the IPv4 rule */
	parse_ok("::ffff:10.0.0.0/104", AF_INET, 8, "10.0.0.0"); /* /96 + 8 */
	parse_ok("::ffff:0.0.0.0/96", AF_INET, 0, "0.0.0.0");    /* every IPv4 peer */
	parse_ok("::ffff:0:0/95", AF_INET6, 95, "::fffe:0:0");   /* wider: stays IPv6 */
	parse_ok("10.0.0.0/08", AF_INET, 8, "10.0.0.0");

	parse_bad("", -1);
	parse_bad("1.2.3", -1);
	parse_bad("a/8", -1);
	parse_bad("/8", -1);
	parse_bad("example.org", -1); /* never resolved */
	parse_bad(" 10.0.0.1", -1);
	parse_bad("10.0.0.1 ", -1);
	parse_bad("fe80::1%lo", -1);
	parse_bad("1.2.3.4.5", -1);
	parse_bad("256.0.0.0", -1);
	parse_bad("10.0.0.0/33", -2);
	parse_bad("::1/129", -2);
	parse_bad("10.0.0.0/-1", -2);
	parse_bad("10.0.0.0/+8", -2);
	parse_bad("10.0.0.0/8x", -2);
	parse_bad("10.0.0.0/", -2);
	parse_bad("10.0.0.0/ 8", -2);
	parse_bad("10.0.0.0/8/8", -2);
	parse_bad("10.0.0.0/0008", -2);
	parse_bad("10.0.0.0/4294967304", -2); /* 2^32 + 8 must not wrap to 8 */

	check(RULES("+10.0.0.0/8"), "10.200.1.1", 1, "", "allow list, a match");
	check(RULES("+10.0.0.0/8"), "11.0.0.1", 0, "", "allow list, no match");
	check(RULES("+10.0.0.0/8"), "9.255.255.255", 0, "", "allow list, just below");
	check(RULES("-10.0.0.0/8"), "10.0.0.1", 0, "10.0.0.0/8", "deny match");
	check(RULES("-10.0.0.0/8"), "192.0.2.1", 1, "", "deny only, no match: let in");
	check(RULES("+10.0.0.0/8", "-10.1.0.0/16"), "10.1.2.3", 0, "10.1.0.0/16",
	      "deny wins over an allow given before it");
	check(RULES("-10.1.0.0/16", "+10.0.0.0/8"), "10.1.2.3", 0, "10.1.0.0/16",
	      "deny wins over an allow given after it");
	check(RULES("+10.0.0.0/8", "-10.1.0.0/16"), "10.2.0.1", 1, "", "allowed, not denied");
	check(RULES("+192.0.2.1", "+198.51.100.0/24"), "198.51.100.77", 1, "",
	      "the second of two allows");
	check(RULES("+192.0.2.1"), "192.0.2.2", 0, "", "a plain address is /32");
	check(RULES("+10.128.0.0/9"), "10.127.255.255", 0, "", "/9 splits a byte: below");
	check(RULES("+10.128.0.0/9"), "10.128.0.0", 1, "", "/9 splits a byte: inside");
	check(RULES("+0.0.0.0/0"), "203.0.113.9", 1, "", "/0 takes every IPv4 peer");
	check(RULES("+0.0.0.0/0"), "::1", 0, "", "... and no IPv6 peer");

	check(RULES("+::1"), "::1", 1, "", "IPv6 allow");
	check(RULES("+::1"), "::2", 0, "", "IPv6 allow, no match");
	check(RULES("-::1"), "::1", 0, "::1", "IPv6 deny");
	check(RULES("+2001:db8::/32"), "2001:db8:ffff::1", 1, "", "IPv6 prefix");
	check(RULES("+2001:db8::/33"), "2001:db8:8000::1", 0, "", "IPv6 /33 splits a byte");
	check(RULES("+::/0"), "2001:db8::1", 1, "", "::/0 takes every IPv6 peer");
	check(RULES("+::/0"), "::ffff:192.0.2.1", 0, "", "... but not an IPv4 one, even mapped");
	check(RULES("+::/0"), "192.0.2.1", 0, "", "... nor a plain IPv4 one");

	check(RULES("+127.0.0.0/8"), "::ffff:127.0.0.1", 1, "", "mapped peer, IPv4 allow");
	check(RULES("-127.0.0.1"), "::ffff:127.0.0.1", 0, "127.0.0.1", "mapped peer, IPv4 deny");
	check(RULES("+127.0.0.2"), "::ffff:127.0.0.1", 0, "", "mapped peer, no match");
	check(RULES("+::ffff:127.0.0.1"), "127.0.0.1", 1, "", "mapped rule, IPv4 peer");
	check(RULES("-::ffff:127.0.0.0/104"), "::ffff:127.9.9.9", 0, "::ffff:127.0.0.0/104",
	      "mapped rule, mapped peer");
	check(RULES("+::"), "0.0.0.0", 0, "", ":: is not 0.0.0.0");

	memset(&acl, 0, sizeof acl);
	tap_ok(acl_permits(&acl, (struct sockaddr *)&sun, &why) == 1 && why == NULL,
	       "no rules: everyone is let in, even a family no rule knows");
	acl_add(&acl, "10.0.0.0/8", 1);
	tap_ok(acl_permits(&acl, (struct sockaddr *)&sun, &why) == 1,
	       "deny only: an address no rule can match is let in");
	acl_add(&acl, "10.0.0.0/8", 0);
	tap_ok(acl_permits(&acl, (struct sockaddr *)&sun, &why) == 0 && why == NULL,
	       "with an allow list: an address no rule can match is refused");

	memset(&acl, 0, sizeof acl);
	for (int i = 0; i <= ACL_MAX; i++)
		snprintf(text[i], sizeof text[i], "10.0.%d.0/24", i);
	for (int i = 0; i < ACL_MAX; i++)
		if (acl_add(&acl, text[i], i % 2) != 0)
			break;
	tap_ok(acl.n == ACL_MAX && acl.allow_listed, "%d rules fit", ACL_MAX);
	tap_ok(acl_add(&acl, text[ACL_MAX], 0) == -3 && acl.n == ACL_MAX,
	       "rule %d: -3 (full), nothing written", ACL_MAX + 1);
	tap_ok(acl_add(&acl, "10.0.0.0/33", 0) == -2, "a bad rule says so before the cap");
	return tap_done();
}
