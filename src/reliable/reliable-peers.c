/*
 * reliable-peers.c: the --reliable sender's receivers. Each has its own record of what is on
 * the way, its own model of the path to it and its own room (a unicast sender has one), and
 * the sender acts on what they come to together: a datagram goes once for all of them, so new
 * bytes wait for the receiver with the least room and leave at the slowest one's pace, a
 * repair goes once for every receiver that lacks it, and the store lets go of a byte only
 * when every receiver has it. Which receivers are dropped, and what became of each:
 * reliable-drop.c.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "fastcat.h"
#include "relay/flow.h"
#include "reliable/reliable.h"

#define START_DGRAMS 16    /* datagrams on the way before the first rate sample */
#define ACK_ROOM     32    /* datagrams on the way at least: two of the receiver's 16 */
#define ACK_LAG      0.001 /* seconds the receiver may hold an acknowledgement */

/* The receiver after p (NULL: the first) that is still served, or NULL (EACH_LIVE's step). */
struct reliable_peer *peers_next_live(const struct reliable_send *r, const struct reliable_peer *p)
{
	struct reliable_peer *q = p == NULL ? r->peers : r->peers + (p - r->peers) + 1;

	while (q < r->peers + r->npeers && q->dropped)
		q++;
	return q < r->peers + r->npeers ? q : NULL;
}

/*
 * The bytes the model lets be on the way to p now: its two round trips' worth, and room for
 * the receiver's way of acknowledging (every 16 datagrams, or after 1 ms), or acknowledgements
 * would come only by its timer and the round trip would hold the rate.
 */
static double inflight_cap(const struct reliable_send *r, const struct reliable_peer *p)
{
	if (!(p->model.bw > 0))
		return (double)(START_DGRAMS * r->payload);
	return rate_inflight(&p->model, ACK_ROOM * (double)r->payload) + 2 * p->model.bw * ACK_LAG;
}

/* How long until p's probe timeout: two round trips and a bit, doubled for each in a row. */
static double probe_wait(const struct reliable_peer *p)
{
	double rtt = p->log.srtt > 0 ? p->log.srtt : 0.25;
	double wait = 2 * rtt + 0.01;

	for (unsigned i = 0; i < p->probes && wait < 5; i++)
		wait *= 2;
	return wait;
}

/*
 * A datagram of the session's own (the end, the last word, a dropped receiver's refusal): to
 * every receiver at once, the group or the one peer.
 */
ssize_t peers_send_small(const struct reliable_send *r, const unsigned char *p, size_t len)
{
	if (r->group_len > 0)
		return sendto(r->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT,
		              (const struct sockaddr *)&r->group, r->group_len);
	return send(r->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* The receiver a datagram from sa with tag came from; a connected socket has only one. */
struct reliable_peer *peers_find(struct reliable_send *r, const struct sockaddr *sa, socklen_t len,
                                 unsigned tag)
{
	if (r->group_len == 0)
		return r->npeers > 0 ? &r->peers[0] : NULL;
	for (unsigned i = 0; i < r->npeers; i++) {
		struct reliable_peer *p = &r->peers[i];

		if (p->tag == tag && p->addr_len == len && memcmp(&p->addr, sa, len) == 0)
			return p;
	}
	return NULL;
}

/* Every byte below it reached every receiver still served: the store may let it go. */
uint64_t peers_cum(const struct reliable_send *r)
{
	uint64_t least = r->read;

	EACH_LIVE(r, p) {
		if (p->log.cum < least)
			least = p->log.cum;
	}
	return least;
}

/* No receiver can hold a byte at or beyond it. */
uint64_t peers_room_end(const struct reliable_send *r)
{
	uint64_t least = UINT64_MAX;

	EACH_LIVE(r, p) {
		if (p->room_end < least)
			least = p->room_end;
	}
	return least == UINT64_MAX ? 0 : least;
}

/* The receiver with the least pace (the one every datagram waits for), or NULL. */
const struct reliable_peer *peers_slowest(const struct reliable_send *r)
{
	const struct reliable_peer *slowest = NULL;

	EACH_LIVE(r, p) {
		if (slowest == NULL || rate_pacing(&p->model) < rate_pacing(&slowest->model))
			slowest = p;
	}
	return slowest;
}

/* The pace: the slowest receiver's. */
double peers_pacing(const struct reliable_send *r)
{
	const struct reliable_peer *p = peers_slowest(r);

	return p != NULL ? rate_pacing(&p->model) : 0;
}

/* The bytes that may still go on the way before some receiver's model says no more. */
double peers_room_to_send(const struct reliable_send *r)
{
	double least = 0;
	int any = 0;

	EACH_LIVE(r, p) {
		double left = inflight_cap(r, p) - (double)p->inflight;

		if (!any || left < least)
			least = left;
		any = 1;
	}
	return least;
}

/* Some receiver's record has no room for one more datagram. */
int peers_full(const struct reliable_send *r)
{
	EACH_LIVE(r, p) {
		if (sent_full(&p->log))
			return 1;
	}
	return 0;
}

int peers_want_repair(const struct reliable_send *r)
{
	EACH_LIVE(r, p) {
		if (p->log.repair.n > 0)
			return 1;
	}
	return 0;
}

/*
 * The next bytes to repair: the lowest any receiver lacks, cut at a datagram and at the
 * ring's end, and taken out of every other receiver's repair set (the one datagram repairs
 * them all). 1, or 0 when no receiver waits for a repair.
 */
int peers_next_repair(struct reliable_send *r, uint64_t *off, size_t *len)
{
	for (;;) {
		struct reliable_peer *first = NULL;

		EACH_LIVE(r, p) {
			if (p->log.repair.n > 0 &&
			    (first == NULL ||
			     p->log.repair.r[0].from < first->log.repair.r[0].from))
				first = p;
		}
		if (first == NULL)
			return 0;
		if (!sent_next_repair(&first->log, r->payload, r->size, off, len))
			continue; /* all it waited for came after all: the next one's */
		EACH_LIVE(r, p) {
			if (p != first)
				(void)rangeset_remove(&p->log.repair, *off, *off + *len);
		}
		return 1;
	}
}

/* stdin held the sender back: what goes now measures stdin, not the paths. */
void peers_app_limited(struct reliable_send *r)
{
	EACH_LIVE(r, p) {
		sent_app_limited(&p->log, p->inflight);
	}
}

/* A datagram went to every receiver: each one's record has it. */
void peers_sent(struct reliable_send *r, uint64_t off, size_t len, double now)
{
	EACH_LIVE(r, p) {
		sent_add(&p->log, off, (uint32_t)len, now);
		p->inflight += len;
		if (p->probe_at == 0)
			p->probe_at = now + probe_wait(p);
	}
}

/* An acknowledgement from p: its record, its room, its model; -v says when its model changes. */
void peers_ack(struct flow *f, struct reliable_send *r, struct reliable_peer *p,
               const struct reliable_ack *a, double now)
{
	struct sent_news news;
	uint64_t gone;

	sent_ack(&p->log, a, now, &news);
	gone = news.acked_bytes + news.lost_bytes;
	p->inflight = gone < p->inflight ? p->inflight - gone : 0;
	if (a->cum + a->room > p->room_end) {
		p->room_end = a->cum + a->room;
		p->held_since = 0; /* it took some: it holds no one back yet */
	}
	r->fig->acks++;
	r->fig->gap_acks += a->n > 0;
	p->acks++;
	p->gap_acks += a->n > 0;
	p->lost_bytes += news.lost_bytes;
	if (news.acked_bytes > 0) {
		p->probes = 0;
		p->probe_at = now + probe_wait(p);
	}
	if (rate_sample(&p->model, now, news.rtt, news.rate, (double)p->inflight, news.app_limited))
		log_verbose("--reliable: %s%s%s", r->group_len ? p->name : "",
		            r->group_len ? ": " : "", p->model.why);
	f->moved = 1;
}

/*
 * No acknowledgement from a receiver for a probe timeout while datagrams are on the way: all
 * of them sent before the last round trip are taken for lost (and each probe in a row waits
 * twice as long).
 */
void peers_probe(struct reliable_send *r, double now)
{
	EACH_LIVE(r, p) {
		uint64_t lost;

		if (p->probe_at == 0 || now < p->probe_at || p->inflight == 0)
			continue;
		lost = sent_expire(&p->log, now - (p->log.srtt > 0 ? p->log.srtt : 0));
		p->inflight = lost < p->inflight ? p->inflight - lost : 0;
		p->probes++;
		r->fig->probes++;
		p->probe_at = now + probe_wait(p);
		log_verbose("--reliable: %s%sno acknowledgement for %.0f ms: %llu bytes on the way "
		            "taken for lost",
		            r->group_len ? p->name : "", r->group_len ? ": " : "",
		            probe_wait(p) * 1e3 / 2, (unsigned long long)lost);
	}
}

/* The soonest probe timeout of a receiver with datagrams on the way, or 0. */
double peers_next_probe(const struct reliable_send *r)
{
	double soonest = 0;

	EACH_LIVE(r, p) {
		if (p->probe_at > 0 && p->inflight > 0 && (soonest == 0 || p->probe_at < soonest))
			soonest = p->probe_at;
	}
	return soonest;
}

/* The longest smoothed round trip of a receiver (the end waits for the farthest). */
double peers_srtt(const struct reliable_send *r)
{
	double most = 0;

	EACH_LIVE(r, p) {
		if (p->log.srtt > most)
			most = p->log.srtt;
	}
	return most;
}

/* Every receiver still served confirmed the stream, and one is served at least. */
int peers_all_confirmed(const struct reliable_send *r)
{
	int any = 0;

	EACH_LIVE(r, p) {
		if (!p->confirmed)
			return 0;
		any = 1;
	}
	return any;
}

/* The number the next datagram gets: every record of a receiver still served numbers alike. */
uint64_t peers_next_pkt(const struct reliable_send *r)
{
	const struct reliable_peer *p = peers_next_live(r, NULL);

	return p != NULL ? p->log.next : 0;
}
