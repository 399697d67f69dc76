/*
 * stripe-grow.c: -P auto while the relay runs, as a relay agent: the
 * connections on their way in (stripe-join.c) are polled and join both
 * flows; and at the sender, once a tick, each connection's TCP_INFO (never
 * per chunk) is summed into what the session did since the last tick, and
 * the connections stripe-auto.c asks for are dialed.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "fastcat.h"
#include "net/net.h"
#include "relay/flow.h"
#include "stripe/stripe.h"

/* One connection's share of the sample: the growth of its counters since the last tick. */
static void sample_add(struct auto_sample *a, const struct auto_conn *c)
{
	a->acked += c->now->bytes_acked - c->before->bytes_acked;
	a->retransmits += c->now->retransmits - c->before->retransmits;
	if (!isnan(c->now->min_rtt_ms) &&
	    (isnan(a->min_rtt_ms) || c->now->min_rtt_ms < a->min_rtt_ms))
		a->min_rtt_ms = c->now->min_rtt_ms;
	a->limited += (unsigned)stripe_auto_conn_limited(c);
	a->at_ceiling += (unsigned)stripe_auto_conn_at_ceiling(c);
	a->rtt_ms += c->now->rtt_ms / a->n; /* NAN where not known: then not judged by it */
	a->rttvar_ms += c->now->rttvar_ms / a->n;
}

void stripe_grow_tick(struct stripe_growth *g, const struct stripe_flow *s, double now,
                      struct session *session)
{
	const struct conns *c = g->conns;
	struct auto_sample a = {.n = c->n, .seconds = now - g->ticked, .min_rtt_ms = NAN};
	uint64_t full = s->full - g->last_full, dry = s->dry - g->last_dry;
	unsigned add;

	if (now < g->next_tick || g->decide.settled)
		return;
	if (g->sndbuf_ceiling == 0)
		g->sndbuf_ceiling = path_sndbuf_most(g->cfg, g->ep);
	for (unsigned i = 0; i < c->n; i++) {
		struct tcp_stats t = {0};
		int sndbuf, rcvbuf;

		if (tcpinfo_read(c->fd[i], &t) != 0)
			continue;
		sock_read_buffers(c->fd[i], &sndbuf, &rcvbuf);
		/* a connection that joined since the last tick counts from zero: too low, never too
		 * high */
		sample_add(
		    &a, &(struct auto_conn){&t, &g->last[i], a.seconds, sndbuf, g->sndbuf_ceiling});
		g->last[i] = t;
	}
	a.network_bound = full > 0 && full >= dry;
	a.window_most = g->sndbuf_ceiling;
	g->last_full = s->full;
	g->last_dry = s->dry;
	g->ticked = now;
	g->next_tick = now + stripe_auto_interval(a.min_rtt_ms);
	/* connections on the way (a receiver busy before its relay, or a slow path) count from
	 * zero once they join: the decision waits for them */
	if (g->npending > 0)
		return;
	if (isnan(a.acked)) {
		g->decide.settled = 1;
		log_verbose("-P auto: this kernel does not say what was acknowledged; staying at "
		            "%u connections",
		            a.n);
		return;
	}
	add = stripe_auto_decide(&g->decide, &a);
	if (g->decide.why[0] != '\0')
		log_verbose("-P auto: %s", g->decide.why);
	stripe_auto_decision(&g->decide, a.n + add, session->auto_decision,
	                     sizeof session->auto_decision);
	while (add-- > 0 && stripe_growth_dial(g) == 0)
		;
}

/* ---------------------------------------------------------------- the agent */

static int agent_poll_events(void *ctx, const struct relay *r, struct pollfd *pfd, int max,
                             double now)
{
	const struct stripe *st = ctx;

	(void)r;
	(void)now;
	return stripe_growth_poll_events(st->growth, pfd, max);
}

static double agent_due(const void *ctx, const struct relay *r, double now)
{
	const struct stripe *st = ctx;

	(void)r;
	(void)now;
	return stripe_growth_due(st->growth);
}

/*
 * After each poll: connections that joined go into both flows (the sender's
 * drain reads each for its end), and the sender's tick may open more. Once
 * stdin is done (sending) or the ENDs' count joined (receiving), no more
 * come.
 */
static int agent_poll_result(void *ctx, struct relay *r, const struct pollfd *pfd, int npfd,
                             double now)
{
	struct stripe *st = ctx;
	struct stripe_growth *g = st->growth;
	int listen = st->cfg->listen;
	const struct flow *data = relay_flow(r, listen ? FLOW_RECEIVE : FLOW_SEND);
	const struct stripe_flow *sf = &st->flows[listen ? FLOW_RECEIVE : FLOW_SEND];
	int joined[CONN_MAX], n;

	if (!g->grows)
		return 0;
	if (!data->running || (!listen && data->src_eof) ||
	    (sf->expect > 0 && sf->n == sf->expect)) {
		stripe_growth_stop(g, listen ? "the session is complete" : "stdin ended first");
		return 0;
	}
	if ((n = stripe_growth_step(g, pfd, npfd, joined, CONN_MAX)) < 0)
		return failure_set(&relay_session(r)->failure, EXIT_RUNTIME,
		                   "-P auto: accept on %s: %s", relay_session(r)->ep->local,
		                   strerror(errno));
	for (int i = 0; i < n; i++)
		for (int k = 0; k < 2; k++)
			if (stripe_attach(relay_flow(r, (enum flow_kind)k), st->flows[k].n) != 0)
				return failure_set(&relay_session(r)->failure, EXIT_RUNTIME,
				                   "-P auto: no memory for connection %u",
				                   st->flows[k].n + 1);
	if (n > 0)
		log_verbose("-P auto: %u connections", sf->n);
	if (!listen)
		stripe_grow_tick(g, sf, now, relay_session(r));
	return 0;
}

const struct relay_agent stripe_growth_agent = {
    .poll_events = agent_poll_events,
    .poll_result = agent_poll_result,
    .due = agent_due,
};
