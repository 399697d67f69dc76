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
#include <unistd.h>

#include "fastcat.h"
#include "base/base.h"
#include "stripe/stripe.h"
#include "net/net.h"
#include "relay/flow.h"

/* A peer that opens with a -P receiver's hello: the sender must give -P too. */
const struct hello_guard stripe_guard = {STRIPE_HELLO_BYTES, stripe_hello_seen, EXIT_CONNECT,
                                         "the peer is a fastcat -P receiver (one stream over "
                                         "several connections); give -P N at this end"};

/*
 * The sender's side of one connection: the receiver's hello, then our join.
 * 0, or EXIT_CONNECT with the reason in fail (nothing was sent then).
 */
static int join_one(const struct config *cfg, int fd, const struct stripe_join *j, const char *peer,
                    struct failure *fail)
{
	unsigned char hello[STRIPE_HELLO_BYTES], join[STRIPE_JOIN_BYTES];
	double deadline = clock_now() + stripe_patience(cfg);
	size_t got = handshake_move(fd, hello, sizeof hello, 0, deadline);
	int status = signal_stop ? EXIT_RUNTIME : EXIT_CONNECT;

	if (got > 0 && stripe_hello_seen(hello, got) < 0)
		return failure_set(fail, status,
		                   "-P: %s is not a fastcat -P receiver: it sent other data "
		                   "first (give -l -P auto at the other end)",
		                   peer);
	if (got < sizeof hello && errno == 0)
		return failure_set(fail, status,
		                   "-P: %s is not a fastcat -P receiver: it ended its side "
		                   "without a stripe hello (give -l -P auto at the other end)",
		                   peer);
	if (got < sizeof hello && errno == ETIMEDOUT)
		return failure_set(fail, status,
		                   "-P: %s is not a fastcat -P receiver: no stripe hello in "
		                   "%g s (give -l -P auto at the other end)",
		                   peer, stripe_patience(cfg));
	if (got < sizeof hello)
		return failure_set(fail, status,
		                   "-P: %s closed the connection before its stripe hello%s%s", peer,
		                   errno ? ": " : "", errno ? strerror(errno) : "");
	/* version 2 (-P --resume) at one end only: nothing more is sent, and each side says why */
	if (stripe_hello_resumes(hello) != j->resume)
		return failure_set(
		    fail, EXIT_CONNECT,
		    j->resume ? "-P --resume: %s is a fastcat -P receiver without --resume "
		                "(give -l -P auto --resume at the other end)"
		              : "-P: %s is a fastcat -l -P --resume receiver (it goes on "
		                "with a file it has part of); give --resume at this end",
		    peer);
	stripe_join_encode(join, j);
	if (handshake_move(fd, join, sizeof join, 1, deadline) < sizeof join)
		return failure_set(fail, EXIT_CONNECT, "-P: send to %s: %s", peer,
		                   strerror(errno ? errno : EPIPE));
	return 0;
}

/*
 * -P N, sending: ep is connected; tie it and N - 1 more connections to the
 * same address into one session (the session's conns), the others
 * connecting all at once once the first has shown a -P receiver. 0, or an
 * exit status with fail. A refusal resets the connections, so a plain
 * fastcat at the other end does not take the empty stream for a finished
 * one.
 */
int stripe_connect(struct stripe *st, struct session *s, const struct endpoint *ep,
                   struct failure *fail)
{
	const struct config *cfg = s->cfg;
	struct conns *c = &s->conns;
	struct stripe_join j = {.count = cfg->parallel_auto ? STRIPE_AUTO : cfg->parallel,
	                        .session = random_id(),
	                        .resume = cfg->resume};
	unsigned n = cfg->parallel_auto ? 1 : cfg->parallel;
	int rc;

	*st = (struct stripe){.cfg = cfg, .s = s, .id = j.session};
	c->fd[0] = ep->fd;
	c->n = 1;
	/* the first one tells a -P receiver from a plain peer before any other connects */
	rc = join_one(cfg, ep->fd, &j, ep->peer, fail);
	for (unsigned i = 1; rc == 0 && i < n; i++) {
		rc = endpoint_connect_start(cfg, ep, &c->fd[i], fail);
		c->n += rc == 0;
	}
	for (unsigned i = 1; rc == 0 && i < n; i++) {
		j.index = i;
		rc = endpoint_connect_finish(cfg, ep, c->fd[i], fail);
		if (rc == 0)
			rc = join_one(cfg, c->fd[i], &j, ep->peer, fail);
	}
	if (rc == 0 && cfg->parallel_auto && (st->growth = calloc(1, sizeof *st->growth)) == NULL)
		rc = failure_set(fail, EXIT_RUNTIME, "-P auto: out of memory");
	if (rc != 0)
		return rc;
	if (st->growth != NULL) {
		*st->growth = (struct stripe_growth){.cfg = cfg,
		                                     .ep = ep,
		                                     .conns = c,
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
	log_verbose("-P: %u connections to %s, session %016llx", c->n, ep->peer,
	            (unsigned long long)j.session);
	return 0;
}

/*
 * The session's connections but the endpoint's own (its caller closes
 * that), and the ones still joining. abort: a failed session resets them,
 * so that the peer fails too instead of taking a short stream for a whole
 * one.
 */
void stripe_close(struct stripe *st, int abort)
{
	struct conns *c = &st->s->conns;
	struct linger now = {.l_onoff = 1, .l_linger = 0};

	stripe_growth_free(st->growth);
	st->growth = NULL;
	for (unsigned i = 1; i < c->n; i++) {
		if (abort)
			setsockopt(c->fd[i], SOL_SOCKET, SO_LINGER, &now, sizeof now);
		close(c->fd[i]);
	}
	c->n = 0;
}

/* The relay's place for the striped pumps; the sender's receiving flow drains. */
#define STRIPE_OPS(pump_fn)                                                                        \
	{                                                                                          \
		.rw_reason = "-P cuts the stream into chunks", .start = stripe_start,              \
		.stop = stripe_stop, .pump = pump_fn, .poll_events = stripe_poll_events,           \
		.poll_result = stripe_poll_result,                                                 \
	}

static const struct flow_ops send_ops = STRIPE_OPS(stripe_pump_send);
static const struct flow_ops receive_ops = STRIPE_OPS(stripe_pump_receive);
static const struct flow_ops drain_ops = STRIPE_OPS(stripe_pump_drain);

/*
 * A striped session goes one way, the sender's stdin to the receiver's
 * stdout, over the session's connections; the sender's other direction
 * drains them for the receiver's ends (and --verify's VERDICT). With
 * --resume the chunks' offsets go on from the receiver's file length.
 */
void stripe_plug(struct stripe *st, struct relay_setup *rs)
{
	struct session *s = st->s;
	int listen = st->cfg->listen;
	uint64_t start = s->resume.on ? s->resume.offset : 0;

	for (int k = 0; k < 2; k++) {
		struct stripe_flow *sf = &st->flows[k];

		memset(sf, 0, sizeof *sf);
		sf->conns = &s->conns;
		sf->n = s->conns.n;
		sf->offset = sf->start = start;
		sf->verify =
		    st->cfg->verify && st->cfg->retry == 0; /* --retry: a verdict of its own */
		sf->grows = st->growth != NULL;
		sf->sparse = st->cfg->sparse;
		sf->src_pos = -1;
		sf->s = s;
		rs->flows[k].ctx = sf;
	}
	rs->flows[FLOW_SEND].ops = &send_ops;
	rs->flows[FLOW_RECEIVE].ops = listen ? &receive_ops : &drain_ops;
	rs->flows[FLOW_SEND].enabled = !listen;
	rs->flows[FLOW_RECEIVE].discard = !listen;
	if (st->growth != NULL)
		relay_add_agent(rs, &stripe_growth_agent, st);
}
