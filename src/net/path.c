/*
 * path.c: what TCP connections carry on a path, as arithmetic that -P auto's decision
 * (stripe-auto.c, and --chain's per hop) and the exit hint (hint.c) share, so that the -P a hint
 * suggests is the count -P auto would open on the same figures.
 */
#include "config.h"

#include <stdio.h>

#include "fastcat.h"
#include "net/net.h"

/* What autotuning may grow ep's send buffer to: tcp_wmem's third figure, or -O's fixed size. */
double path_sndbuf_most(const struct config *cfg, const struct endpoint *ep)
{
	char wmem[64];
	double lo, def, hi;

	if (cfg->sndbuf > 0 || tcpinfo_sysctl("net.ipv4.tcp_wmem", wmem, sizeof wmem) != 0 ||
	    sscanf(wmem, "%lf %lf %lf", &lo, &def, &hi) != 3)
		return ep->sndbuf;
	return hi;
}

/* The most bytes a second a window of this size moves at this round trip; 0 if unknown. */
double path_window_rate(double window, double rtt_ms)
{
	return window > 0 && rtt_ms > 0 ? window / (rtt_ms / 1000) : 0;
}

/*
 * How many connections that each carry per_conn bytes a second it takes to carry PATH_AIM,
 * from at_least to at_most. A connection held back by its window says nothing of what the
 * path behind it can take, so the count aims at the link most long paths end in; -P auto's
 * later steps correct it either way.
 */
unsigned path_conns_for(double per_conn, unsigned at_least, unsigned at_most)
{
	unsigned n = at_most;

	if (per_conn > 0 && PATH_AIM / per_conn < at_most) {
		n = (unsigned)(PATH_AIM / per_conn);
		if (n * per_conn < PATH_AIM)
			n++;
	}
	return n < at_least ? at_least : n > at_most ? at_most : n;
}
