/*
 * reliable-sent.c: the --reliable sender's record of what is on the way, as QUIC's recovery
 * keeps it (RFC 9002): every datagram sent gets a new number, so an acknowledgement times one
 * sending and never a repair's ambiguous pair. An acknowledgement covers what the receiver
 * has (all below cum, and its ranges); a datagram still uncovered three numbers below the
 * largest acknowledged, or 9/8 of a round trip older, is taken for lost and its bytes wait in
 * the repair set, which goes before new bytes. Each acknowledgement that covers the largest
 * number gives a round-trip sample and a delivery-rate sample (bytes acknowledged between that
 * datagram's sending and now) for the pacer's model. Pure.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "reliable/reliable.h"

#define LOSS_PKTS 3     /* numbers below the largest acknowledged: lost */
#define LOSS_TIME 1.125 /* round trips older than the newest acknowledged: lost */

int sent_init(struct sent_log *l, uint64_t cap)
{
	memset(l, 0, sizeof *l);
	l->pkt = calloc((size_t)cap, sizeof l->pkt[0]);
	l->doubt = calloc((size_t)cap, sizeof l->doubt[0]);
	l->cap = cap;
	return l->pkt != NULL && l->doubt != NULL ? 0 : -1;
}

void sent_free(struct sent_log *l)
{
	free(l->pkt);
	free(l->doubt);
	l->pkt = NULL;
	l->doubt = NULL;
}

/* No room to record one more: the oldest one on the way is cap numbers back. */
int sent_full(const struct sent_log *l)
{
	return l->next - l->first >= l->cap;
}

/* A datagram of len bytes at off goes now: its number (the caller saw that it is not full). */
uint64_t sent_add(struct sent_log *l, uint64_t off, uint32_t len, double now)
{
	uint64_t n = l->next++;

	l->pkt[n % l->cap] = (struct sent_pkt){
	    .off = off,
	    .len = len,
	    .live = 1,
	    .at = now,
	    .delivered = l->delivered,
	    .delivered_at = l->delivered_at > 0 ? l->delivered_at : now,
	    .first_sent_at = l->first_sent_at > 0 ? l->first_sent_at : now,
	    .app_limited = l->app_limited != 0,
	};
	return n;
}

/*
 * The sender had nothing to send that the pace allowed (stdin gave less, or the receiver's
 * room was full), with inflight bytes on the way: the datagrams sent until those are
 * delivered measure the sender, not the path, as BBR marks them.
 */
void sent_app_limited(struct sent_log *l, uint64_t inflight)
{
	l->app_limited = l->delivered + inflight + 1;
}

/* The receiver has all of pkt's bytes. */
static int covered(const struct sent_log *l, const struct sent_pkt *p)
{
	return p->off + p->len <= l->cum || rangeset_has(&l->have, p->off, p->off + p->len);
}

/* What the acknowledgement says the receiver has: cum and its ranges beyond. */
static void learn(struct sent_log *l, const struct reliable_ack *a)
{
	if (a->cum > l->cum)
		l->cum = a->cum;
	for (unsigned i = 0; i < a->n; i++)
		if (a->range[i].to > l->cum)
			(void)rangeset_add(&l->have, a->range[i].from, a->range[i].to);
	rangeset_drop_below(&l->have, l->cum);
	rangeset_drop_below(&l->repair, l->cum);
}

/* The samples the acknowledged largest number gives (p: its record, acknowledged just now). */
static void sample(struct sent_log *l, const struct sent_pkt *p, const struct reliable_ack *a,
                   double now, struct sent_news *news)
{
	double rtt = now - p->at - a->delay_us / 1e6, span = now - p->delivered_at;
	double sending = p->at - p->first_sent_at;

	/* as BBR: over the longer of the two spans, so that acknowledgements that come bunched
	 * (a gap filled, a receiver's batch) do not read as more rate than was sent */
	if (sending > span)
		span = sending;

	if (rtt <= 0)
		rtt = now - p->at;
	if (rtt > 0) {
		news->rtt = rtt;
		l->srtt = l->srtt > 0 ? 0.875 * l->srtt + 0.125 * rtt : rtt;
		l->min_rtt = l->min_rtt > 0 && l->min_rtt < rtt ? l->min_rtt : rtt;
	}
	if (span > 0)
		news->rate = (double)(l->delivered - p->delivered) / span;
	news->app_limited = p->app_limited;
}

/* Datagrams in doubt far enough below the largest acknowledged, or old enough: lost. */
static void find_lost(struct sent_log *l, double now, struct sent_news *news)
{
	double late = LOSS_TIME * (l->srtt > 0 ? l->srtt : 0);
	uint64_t kept = 0;

	for (uint64_t i = 0; i < l->ndoubt; i++) {
		uint64_t n = l->doubt[i];
		struct sent_pkt *p = &l->pkt[n % l->cap];

		if (!p->live)
			continue;
		if ((l->largest_acked - 1 - n < LOSS_PKTS && !(late > 0 && now - p->at > late)) ||
		    rangeset_add(&l->repair, p->off, p->off + p->len) != 0) {
			l->doubt[kept++] = n; /* not yet; or the repair set is full, till later */
			continue;
		}
		p->live = 0;
		news->lost_bytes += p->len;
		l->lost_pkts++;
	}
	l->ndoubt = kept;
}

/* pkt n's bytes arrived: acknowledged. */
static void acked(struct sent_log *l, uint64_t n, struct sent_news *news)
{
	struct sent_pkt *p = &l->pkt[n % l->cap];

	p->live = 0;
	news->acked_bytes += p->len;
	l->delivered += p->len;
	if (p->at > l->first_sent_at)
		l->first_sent_at = p->at;
	if (n + 1 > l->largest_acked)
		l->largest_acked = n + 1;
}

/*
 * What the acknowledgement covers: of the datagrams in doubt, and of those
 * sent since the last scan up to the one it answers (the rest waits for the
 * acknowledgement of a later one), so that each costs once, not once an
 * acknowledgement.
 */
static void cover(struct sent_log *l, const struct reliable_ack *a, struct sent_news *news)
{
	uint64_t upto = a->largest_pkt < l->next ? a->largest_pkt + 1 : l->next;

	for (uint64_t i = 0; i < l->ndoubt; i++)
		if (l->pkt[l->doubt[i] % l->cap].live && covered(l, &l->pkt[l->doubt[i] % l->cap]))
			acked(l, l->doubt[i], news);
	for (; l->scanned < upto; l->scanned++) {
		struct sent_pkt *p = &l->pkt[l->scanned % l->cap];

		if (!p->live)
			continue;
		if (covered(l, p))
			acked(l, l->scanned, news);
		else
			l->doubt[l->ndoubt++] = l->scanned;
	}
}

/* An acknowledgement at now: what it covered, what is now lost, its samples. */
void sent_ack(struct sent_log *l, const struct reliable_ack *a, double now, struct sent_news *news)
{
	struct sent_pkt *newest = NULL;

	memset(news, 0, sizeof *news);
	learn(l, a);
	if (a->largest_pkt < l->next && l->pkt[a->largest_pkt % l->cap].live &&
	    a->largest_pkt >= l->first)
		newest = &l->pkt[a->largest_pkt % l->cap];
	cover(l, a, news);
	if (newest != NULL && newest->live)
		newest = NULL; /* it was not covered after all */
	if (news->acked_bytes > 0)
		l->delivered_at = now;
	if (l->app_limited != 0 && l->delivered + 1 > l->app_limited)
		l->app_limited = 0;
	if (newest != NULL)
		sample(l, newest, a, now, news);
	find_lost(l, now, news);
	while (l->first < l->scanned && !l->pkt[l->first % l->cap].live)
		l->first++;
}

/*
 * The next bytes to repair, at most max and never across a multiple of wrap (the sender's
 * ring: a datagram is one piece of it; 0: no bound), in *off and *len (the receiver's
 * ranges skipped): 1, or 0 when nothing waits.
 */
int sent_next_repair(struct sent_log *l, size_t max, uint64_t wrap, uint64_t *off, size_t *len)
{
	while (l->repair.n > 0) {
		struct reliable_range *r = &l->repair.r[0];
		uint64_t from = rangeset_skip(&l->have, r->from), to = r->to;

		for (unsigned i = 0; i < l->have.n; i++)
			if (l->have.r[i].from > from && l->have.r[i].from < to)
				to = l->have.r[i].from;
		if (from >= r->to) {
			rangeset_join(&l->repair, r->to); /* all of it arrived after all */
			continue;
		}
		if (wrap > 0 && to > (from / wrap + 1) * wrap)
			to = (from / wrap + 1) *
			     wrap; /* the rest stays in the set, for the next piece */
		*off = from;
		*len = (size_t)(to - from < max ? to - from : max);
		r->from = from + *len;
		if (r->from >= r->to)
			rangeset_join(&l->repair, r->to);
		return 1;
	}
	return 0;
}

/*
 * No acknowledgement came for a probe timeout: every datagram still on the way that was sent
 * before `before` is taken for lost, its bytes to go again. The bytes it took.
 */
uint64_t sent_expire(struct sent_log *l, double before)
{
	uint64_t lost = 0;

	for (uint64_t n = l->first; n < l->next; n++) {
		struct sent_pkt *p = &l->pkt[n % l->cap];

		if (!p->live || p->at >= before)
			continue;
		if (rangeset_add(&l->repair, p->off, p->off + p->len) != 0)
			break; /* the repair set is full: the rest at the next timeout */
		p->live = 0;
		lost += p->len;
		l->lost_pkts++;
	}
	return lost;
}
