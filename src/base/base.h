/*
 * base.h: the bottom layer: exit statuses, messages, the clock, units, digests, big-endian
 * numbers, buffers, the rate limit, address rules, signal flags. Nothing here knows a socket
 * session, a flow or an option; every other layer may use it.
 */
#ifndef FASTCAT_BASE_H
#define FASTCAT_BASE_H

#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

/* Exit statuses: the whole contract with scripts (--help, README and fastcat(1) list them). */
#define EXIT_OK         0
#define EXIT_RUNTIME    1 /* any other network or system failure; stopped by a signal */
#define EXIT_USAGE      2 /* bad command line */
#define EXIT_CONNECT    3 /* could not connect: refused, unreachable, no such name; the wrong peer */
#define EXIT_TIMEOUT    4 /* timed out: -w (connecting, or idle), or the kernel's TCP timeout */
#define EXIT_PEER       5 /* the peer reset or closed early: a short transfer; --seq losses */
#define EXIT_VERIFY     6 /* --verify: count or digest differs; --resume: the file is no prefix */
#define EXIT_WRITE      7 /* writing stdout failed: disk full, file too large, reader gone */
#define EXIT_PEER_WRITE 8 /* --retry: the receiver said its stdout failed (no retry cures it) */

/*
 * A failure: the exit status it means and the one line that says why. The first one set is
 * kept (later ones are its consequences); status EXIT_OK: none yet.
 */
struct failure {
	int status;
	char why[1024]; /* long enough for a 300-character host name and its reason */
};

#define KIB ((size_t)1024)
#define MIB (1024 * KIB)

/* Streaming XXH64 state (digest.c). */
struct digest {
	uint64_t v[4];
	uint64_t total;
	unsigned char hold[32]; /* bytes waiting for a whole 32-byte stripe */
	size_t held;
};

/* --seq bookkeeping on the receiving side (seqtrack.c). */
struct seqtrack {
	uint64_t next;       /* the sequence number expected next */
	uint64_t lost;       /* gaps not filled (yet) */
	uint64_t duplicated; /* seen twice, or too old to tell */
	uint64_t reordered;  /* arrived after a later one */
	uint64_t seen[16];   /* which of the last 1024 numbers arrived */
};

/* Fixed-size buffer: data lives in [head, tail); never moved, reset when empty (iobuf.c). */
struct iobuf {
	char *data;
	size_t cap;
	size_t head;
	size_t tail;
};

/* --rate-limit: a token bucket that holds at most one write (ratelimit.c). */
struct ratelimit {
	double rate;   /* bytes per second */
	double burst;  /* the most tokens saved up: the flow's largest write */
	double tokens; /* bytes that may be written now */
	double last;   /* monotonic seconds when tokens was brought up to date */
	double need;   /* tokens the last refused write waits for ... */
	int waiting;   /* ... if the last write was refused */
	int whole;     /* a write goes whole or waits (datagrams), and may leave a debt */
};

/* --allow/--deny: at most this many rules, together (no allocation). */
#define ACL_MAX 64

/* One --allow or --deny rule: an address prefix (acl.c). */
struct acl_rule {
	const char *text;       /* as typed, for messages */
	int deny;               /* --deny; else --allow */
	int family;             /* AF_INET or AF_INET6; ::ffff:a.b.c.d is kept as IPv4 */
	unsigned bits;          /* the prefix length */
	unsigned char addr[16]; /* the prefix, in network order, bits past it zero */
};

/* Who a TCP or UDP listener takes: the rules in the order given. */
struct acl {
	struct acl_rule rules[ACL_MAX];
	size_t n;
	int allow_listed; /* an --allow was given: only the peers one matches get in */
};

/* acl.c */
int acl_parse(const char *, struct acl_rule *);
int acl_add(struct acl *, const char *, int);
int acl_permits(const struct acl *, const struct sockaddr *, const struct acl_rule **);

/* clock.c */
double clock_now(void);

/* digest.c */
void digest_init(struct digest *);
void digest_update(struct digest *, const void *, size_t);
void digest_update_zeros(struct digest *, uint64_t);
uint64_t digest_final(const struct digest *);

/* iobuf.c */
int iobuf_init(struct iobuf *, size_t);
void iobuf_free(struct iobuf *);
size_t iobuf_len(const struct iobuf *);
size_t iobuf_room(const struct iobuf *);
char *iobuf_head(struct iobuf *);
char *iobuf_tail(struct iobuf *);
void iobuf_produced(struct iobuf *, size_t);
void iobuf_consumed(struct iobuf *, size_t);
void iobuf_compact(struct iobuf *);

/* log.c */
void log_set_verbose(int);
void log_verbose(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_error(const char *, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void log_fatal(int, const char *, ...) __attribute__((format(printf, 2, 3)));
int log_vformat(char *, size_t, int, const char *, va_list) __attribute__((format(printf, 4, 0)));
int log_format(char *, size_t, int, const char *, ...) __attribute__((format(printf, 4, 5)));
int failure_set(struct failure *, int, const char *, ...) __attribute__((format(printf, 3, 4)));
int failure_vset(struct failure *, int, const char *, va_list)
    __attribute__((format(printf, 3, 0)));

/* random-getrandom.c or random-urandom.c, chosen by configure */
uint64_t random_id(void);

/* ratelimit.c */
void ratelimit_init(struct ratelimit *, uint64_t, size_t, int, double);
size_t ratelimit_allow(struct ratelimit *, double, size_t);
void ratelimit_spend(struct ratelimit *, size_t);
long ratelimit_wait_ms(const struct ratelimit *, double);

/* seqtrack.c */
void seqtrack_init(struct seqtrack *);
void seqtrack_add(struct seqtrack *, uint64_t);

/* signals.c: the handlers only set these */
extern volatile sig_atomic_t signal_stop;
extern volatile sig_atomic_t signal_report;
void signals_init(void);
const char *signals_stop_name(void);

/* units.c */
int units_parse_size(const char *, uint64_t *);
int units_parse_port(const char *, int, int *);
int units_parse_millis(const char *, long *);
void units_format_bytes(uint64_t, char *, size_t);
void units_format_size(uint64_t, char *, size_t);

/* wire.c: big-endian numbers of every wire format */
void wire_put(unsigned char *, uint64_t, int);
uint64_t wire_get(const unsigned char *, int);
int wire_match(const unsigned char *, size_t, const void *, size_t);

#endif
