/*
 * stripe.c: -P, one stream over several TCP connections: the handshake that
 * ties the connections into one session (doc/stripe-protocol.md; the wire
 * format is coded in stripe-wire.c, the receiver's accepts and -P auto's
 * later connections are in stripe-join.c).
 *
 * The receiver speaks first, on every connection it accepts: a plain peer
 * of a -P sender (nc, socat, fastcat without -P) never says that hello, so
 * the sender gives up before it has sent a single byte to it.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fastcat.h"
#include "base/base.h"
#include "stripe/stripe.h"
#include "verify/verify.h"
#include "net/net.h"

/* Seconds a handshake may take without -w: a plain peer is told apart by saying nothing. */
#define HANDSHAKE_PATIENCE 5.0

double stripe_patience(const struct config *cfg)
{
	return cfg->timeout_ms >= 0 ? (double)cfg->timeout_ms / 1000 : HANDSHAKE_PATIENCE;
}

/* A session id no other sender picks: the clock and the pid, mixed (no randomness needed). */
static uint64_t session_id(void)
{
	struct timespec ts;
	uint64_t x;

	clock_gettime(CLOCK_REALTIME, &ts);
	x = (uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec ^ (uint64_t)getpid() << 32;
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	return x ^ x >> 33;
}

/*
 * The sender's side of one connection: the receiver's hello, then our join.
 * 0, or EXIT_CONNECT with the reason in err (nothing was sent then).
 */
static int join_one(const struct config *cfg, int fd, const struct stripe_join *j, const char *peer,
                    char *err, size_t errlen)
{
	unsigned char hello[STRIPE_HELLO_BYTES], join[STRIPE_JOIN_BYTES];
	double deadline = clock_now() + stripe_patience(cfg);
	size_t got = handshake_move(fd, hello, sizeof hello, 0, deadline);

	if (got < sizeof hello || stripe_hello_seen(hello, got) != 1) {
		if (got > 0 && stripe_hello_seen(hello, got) < 0)
			snprintf(err, errlen,
			         "-P: %s is not a fastcat -P receiver: it sent other data "
			         "first (give -l -P at the other end)",
			         peer);
		else if (errno == 0)
			snprintf(err, errlen,
			         "-P: %s is not a fastcat -P receiver: it ended its side "
			         "without a stripe hello (give -l -P at the other end)",
			         peer);
		else if (errno == ETIMEDOUT)
			snprintf(err, errlen,
			         "-P: %s is not a fastcat -P receiver: no stripe hello in "
			         "%g s (give -l -P at the other end)",
			         peer, stripe_patience(cfg));
		else
			snprintf(err, errlen,
			         "-P: %s closed the connection before its stripe hello%s%s", peer,
			         errno ? ": " : "", errno ? strerror(errno) : "");
		return signal_stop ? EXIT_RUNTIME : EXIT_CONNECT;
	}
	/* version 2 (-P --resume) at one end only: nothing more is sent, and each side says why */
	if (stripe_hello_resumes(hello) != j->resume) {
		snprintf(err, errlen,
		         j->resume ? "-P --resume: %s is a fastcat -P receiver without --resume "
		                     "(give -l -P --resume at the other end)"
		                   : "-P: %s is a fastcat -l -P --resume receiver (it goes on with "
		                     "a file it has part of); give --resume at this end",
		         peer);
		return EXIT_CONNECT;
	}
	stripe_join_encode(join, j);
	if (handshake_move(fd, join, sizeof join, 1, deadline) < sizeof join) {
		snprintf(err, errlen, "-P: send to %s: %s", peer, strerror(errno ? errno : EPIPE));
		return EXIT_CONNECT;
	}
	return 0;
}

/*
 * -P N, sending: ep->fd is connected; tie it and N - 1 more connections to
 * the same address into one session, the others connecting all at once
 * once the first has shown a -P receiver. 0, or an exit status with err. A
 * refusal resets the connection, so a plain fastcat at the other end does
 * not take the empty stream for a finished one.
 */
int stripe_connect(const struct config *cfg, struct endpoint *ep, char *err, size_t errlen)
{
	struct stripe_join j = {.count = cfg->parallel_auto ? STRIPE_AUTO : cfg->parallel,
	                        .session = session_id(),
	                        .resume = cfg->resume};
	unsigned n = cfg->parallel_auto ? 1 : cfg->parallel;
	int rc;

	ep->stripe[0] = ep->fd;
	ep->stripes = 1;
	/* the first one tells a -P receiver from a plain peer before any other connects */
	rc = join_one(cfg, ep->fd, &j, ep->peer, err, errlen);
	for (unsigned i = 1; rc == 0 && i < n; i++) {
		rc = endpoint_connect_start(cfg, ep, &ep->stripe[i], err, errlen);
		ep->stripes += rc == 0;
	}
	for (unsigned i = 1; rc == 0 && i < n; i++) {
		j.index = i;
		rc = endpoint_connect_finish(cfg, ep, ep->stripe[i], err, errlen);
		if (rc == 0)
			rc = join_one(cfg, ep->stripe[i], &j, ep->peer, err, errlen);
	}
	if (rc == 0 && cfg->parallel_auto && (ep->growth = calloc(1, sizeof *ep->growth)) == NULL)
		rc = log_format(err, errlen, EXIT_RUNTIME, "-P auto: out of memory");
	if (rc != 0) {
		endpoint_abort(cfg, ep);
		return rc;
	}
	if (ep->growth != NULL) {
		*ep->growth = (struct stripe_growth){.cfg = cfg,
		                                     .ep = ep,
		                                     .grows = 1,
		                                     .attached = 1,
		                                     .session = j.session,
		                                     .next_index = 1,
		                                     .ticked = clock_now(),
		                                     .next_tick = clock_now() + 0.25};
		log_verbose("-P auto: 1 connection to %s, session %016llx; more join while they "
		            "raise the goodput",
		            ep->peer, (unsigned long long)j.session);
		return 0;
	}
	log_verbose("-P: %u connections to %s, session %016llx", ep->stripes, ep->peer,
	            (unsigned long long)j.session);
	return 0;
}

/*
 * After a striped session: --verify's answer. The sender compares the
 * receiver's VERDICT with what it sent; the receiver, whenever the sender's
 * END carried the stream's XXH64, compares it with what it wrote. With
 * --resume both are of the whole file: the L bytes before the session count
 * (and were digested first). A failure the relay already reported stands.
 */
void stripe_conclude(struct session *s)
{
	struct verify *v = &s->verify;
	const struct flow_stats *mine = s->cfg->listen ? &s->received : &s->sent;
	uint64_t bytes = mine->bytes + (s->cfg->listen ? v->prefix_received : v->prefix_sent);
	uint64_t digest = digest_final(&mine->digest);

	if (s->exit_status != EXIT_OK || (!s->cfg->verify && !v->end_seen))
		return;
	if (s->cfg->listen && !v->end_seen)
		s->exit_status = log_format(s->error, sizeof s->error, EXIT_VERIFY,
		                            "-P --verify: the sender did not ask for --verify "
		                            "(give --verify at both ends)");
	else if (s->cfg->listen && (v->peer_bytes != bytes || v->peer_digest != digest))
		s->exit_status = verify_differs(s, "wrote", bytes, digest, "sender sent",
		                                v->peer_bytes, v->peer_digest);
	else if (!s->cfg->listen && !v->verdict_seen)
		s->exit_status = log_format(s->error, sizeof s->error, EXIT_PEER,
		                            "--verify: the receiver closed without confirming the "
		                            "%llu bytes sent",
		                            (unsigned long long)bytes);
	else if (!s->cfg->listen && (v->confirmed_bytes != bytes || v->confirmed_digest != digest))
		s->exit_status = verify_differs(s, "sent", bytes, digest, "receiver wrote",
		                                v->confirmed_bytes, v->confirmed_digest);
	else
		v->verified = 1;
}
