/* options-set.c: the options that do more than store one value (chunk sizes, peers, modes). */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "fastcat.h"
#include "options.h"

/*
 * -B, --read-size, --write-size: the sizes each one sets (.seen says which),
 * where --read-size and --write-size win over -B in any order. The label of
 * the one that set the read size is kept for fit_datagrams' message.
 */
int options_set_chunk(struct config *cfg, struct seen *seen, const struct opt_spec *o,
                      const char *arg, uint64_t v, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	if ((o->seen & SEEN_READ_SET) &&
	    ((o->seen & SEEN_READ_SIZE) || !(seen->flags & SEEN_READ_SIZE))) {
		cfg->read_size = (size_t)v;
		snprintf(seen->size_label, sizeof seen->size_label, "%s %s", seen->label, arg);
	}
	if ((o->seen & SEEN_WRITE_SET) &&
	    ((o->seen & SEEN_WRITE_SIZE) || !(seen->flags & SEEN_WRITE_SIZE)))
		cfg->write_size = (size_t)v;
	return 0;
}

/* --dgram-size: also what fit_datagrams names when the datagram is too big. */
int options_set_dgram_size(struct config *cfg, struct seen *seen, const struct opt_spec *o,
                           const char *arg, uint64_t v, char *err, size_t errlen)
{
	(void)o;
	(void)err;
	(void)errlen;
	cfg->dgram_size = (size_t)v;
	snprintf(seen->size_label, sizeof seen->size_label, "%s %s", seen->label, arg);
	return 0;
}

/* --transport NAME: looked up after parsing, once -u and -U are known too. */
int options_set_transport(struct config *cfg, struct seen *seen, const struct opt_spec *o,
                          const char *arg, uint64_t v, char *err, size_t errlen)
{
	(void)cfg;
	(void)o;
	(void)v;
	(void)err;
	(void)errlen;
	seen->transport = arg;
	return 0;
}

/* --allow/--deny CIDR (v: 1 for --deny): one more rule, after the ones before it. */
int options_set_acl(struct config *cfg, struct seen *seen, const struct opt_spec *o,
                    const char *arg, uint64_t v, char *err, size_t errlen)
{
	const char *label = seen->label;
	int ipv6 = memchr(arg, ':', strcspn(arg, "/")) != NULL;

	(void)o;
	if (seen->acl_label[0] == '\0')
		snprintf(seen->acl_label, sizeof seen->acl_label, "%s", label);
	if (arg[0] == '\0')
		return log_format(err, errlen, EXIT_USAGE, "%s: empty address", label);
	switch (acl_add(&cfg->acl, arg, (int)v)) {
	case -1:
		return log_format(err, errlen, EXIT_USAGE,
		                  "%s %s: not an IPv4 or IPv6 address (ADDRESS or ADDRESS/BITS)",
		                  label, arg);
	case -2:
		return log_format(err, errlen, EXIT_USAGE, "%s %s: prefix length must be 0 to %d",
		                  label, arg, ipv6 ? 128 : 32);
	case -3:
		return log_format(err, errlen, EXIT_USAGE,
		                  "%s %s: at most %d --allow and --deny rules", label, arg,
		                  ACL_MAX);
	}
	return 0;
}

/* --unix-mode MODE: octal digits only, at most 777 (no set-id or sticky bit on a socket). */
int options_set_unix_mode(struct config *cfg, struct seen *seen, const struct opt_spec *o,
                          const char *arg, uint64_t v, char *err, size_t errlen)
{
	const char *label = seen->label;
	size_t n = strlen(arg);
	unsigned long mode = 0;
	int octal = n > 0 && strspn(arg, "01234567") == n;

	(void)o;
	(void)v;
	if (n == 0)
		return log_format(err, errlen, EXIT_USAGE, "%s: empty mode (octal, e.g. 660)",
		                  label);
	for (const char *p = arg; octal && *p != '\0' && mode <= 0777; p++)
		mode = mode * 8 + (unsigned long)(*p - '0');
	if (!octal || mode > 0777)
		return log_format(err, errlen, EXIT_USAGE,
		                  "%s %s: must be an octal mode from 0 to 777 (e.g. 660)", label,
		                  arg);
	cfg->unix_mode = (mode_t)mode;
	return 0;
}
