/*
 * stripe-grow.c: -P auto, sending: once a tick, read each connection's
 * TCP_INFO (never per chunk), sum up what the session did since the last
 * tick, and open the connections stripe-auto.c asks for.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>

#include "fastcat.h"
#include "stripe/stripe.h"
#include "net/net.h"

/* One connection's share of the sample: the growth of its counters since the last tick. */
static void sample_add(struct auto_sample *a, const struct auto_conn *c)
{
	a->acked += c->now->bytes_acked - c->before->bytes_acked;
	a->retransmits += c->now->retransmits - c->before->retransmits;
	if (!isnan(c->now->min_rtt_ms) &&
	    (isnan(a->min_rtt_ms) || c->now->min_rtt_ms < a->min_rtt_ms))
		a->min_rtt_ms = c->now->min_rtt_ms;
	a->limited += (unsigned)stripe_auto_conn_limited(c);
	a->rtt_ms += c->now->rtt_ms / a->n; /* NAN where not known: then not judged by it */
}

/* What autotuning may grow SO_SNDBUF to: tcp_wmem's third figure, or -O's fixed size. */
static double sndbuf_ceiling(const struct stripe_growth *g)
{
	char wmem[64];
	double lo, def, hi;

	if (g->cfg->sndbuf > 0)
		return g->ep->sndbuf;
	if (tcpinfo_sysctl("net.ipv4.tcp_wmem", wmem, sizeof wmem) != 0 ||
	    sscanf(wmem, "%lf %lf %lf", &lo, &def, &hi) != 3)
		return g->ep->sndbuf;
	return hi;
}

void stripe_grow_tick(struct stripe_growth *g, const struct stripe_flow *s, double now)
{
	const struct endpoint *ep = g->ep;
	struct auto_sample a = {.n = ep->stripes, .seconds = now - g->ticked, .min_rtt_ms = NAN};
	uint64_t full = s->full - g->last_full, dry = s->dry - g->last_dry;
	unsigned add;

	if (now < g->next_tick || g->decide.settled)
		return;
	if (g->sndbuf_ceiling == 0)
		g->sndbuf_ceiling = sndbuf_ceiling(g);
	for (unsigned i = 0; i < ep->stripes; i++) {
		struct tcp_stats t = {0};
		int sndbuf, rcvbuf;

		if (tcpinfo_read(ep->stripe[i], &t) != 0)
			continue;
		sock_read_buffers(ep->stripe[i], &sndbuf, &rcvbuf);
		/* a connection that joined since the last tick counts from zero: too low, never too
		 * high */
		sample_add(
		    &a, &(struct auto_conn){&t, &g->last[i], a.seconds, sndbuf, g->sndbuf_ceiling});
		g->last[i] = t;
	}
	a.network_bound = full > 0 && full >= dry;
	g->last_full = s->full;
	g->last_dry = s->dry;
	g->ticked = now;
	g->next_tick = now + stripe_auto_interval(a.min_rtt_ms);
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
	while (add-- > 0 && stripe_growth_dial(g) == 0)
		;
}
