/*
 * reliable-drop.c: which receivers the --reliable sender lets go, and what became of each. A
 * unicast receiver that falls silent ends the session; a multicast group goes on without one
 * that falls silent, one that holds the others back (its stdout stopped taking), and with
 * --min-rate the one the group waited for while it took less. The sender's exit names them;
 * the report has a line for each receiver.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "fastcat.h"
#include "relay/flow.h"
#include "reliable/reliable.h"

#define RATE_LOOK 0.5 /* seconds between --min-rate's looks at what the group took */

/*
 * Multicast: a receiver that holds every other one back. New bytes wait for the least room of
 * all, so one whose stdout stopped taking stops the group; once its room has not moved for the
 * silence while another could take more, it is returned, to be dropped. Each receiver's clock
 * runs only while the group waits for it (a stdin with nothing to send stops them all).
 */
static struct reliable_peer *holding_back(struct reliable_send *r, double now)
{
	uint64_t most = 0;
	unsigned live = 0;

	EACH_LIVE(r, p) {
		if (p->room_end > most)
			most = p->room_end;
		live++;
	}
	EACH_LIVE(r, p) {
		int holds = r->group_len > 0 && live > 1 && p->room_end < most &&
		            p->room_end < r->next + r->payload && r->read > r->next;

		if (!holds)
			p->held_since = 0;
		else if (p->held_since == 0)
			p->held_since = now;
		else if (now - p->held_since >= r->silence)
			return p;
	}
	return NULL;
}

/*
 * The receiver the group waits for: the one with the least in order when the store is full,
 * the one with the least room when new bytes wait for room, else the one whose pace every
 * datagram keeps.
 */
static struct reliable_peer *group_holder(struct reliable_send *r)
{
	struct reliable_peer *least_cum = NULL, *least_room = NULL, *slowest = NULL;

	EACH_LIVE(r, p) {
		if (least_cum == NULL || p->log.cum < least_cum->log.cum)
			least_cum = p;
		if (least_room == NULL || p->room_end < least_room->room_end)
			least_room = p;
		if (slowest == NULL || rate_pacing(&p->model) < rate_pacing(&slowest->model))
			slowest = p;
	}
	if (least_cum != NULL && r->read - least_cum->log.cum >= r->size)
		return least_cum;
	if (least_room != NULL && least_room->room_end < r->next + r->payload)
		return least_room;
	return slowest;
}

/*
 * --min-rate: every RATE_LOOK, the bytes every receiver gained. Once that was below the rate
 * for the silence in all, the receiver the group waited for. A look while stdin held the
 * sender back does not count (nor reset the count), nor one after stdin's end with all sent.
 */
static struct reliable_peer *below_min_rate(struct reliable_send *r, double now)
{
	uint64_t cum = peers_cum(r);
	double dt = now - r->rate_at;
	int counts;

	if (!(r->min_rate > 0) || (r->rate_at > 0 && dt < RATE_LOOK))
		return NULL;
	counts = r->rate_at > 0 && !r->stdin_short && !(r->eof && r->next >= r->read);
	if (counts && (double)(cum - r->rate_cum) < r->min_rate * dt)
		r->slow_for += dt;
	else if (counts)
		r->slow_for = 0;
	r->rate_at = now;
	r->rate_cum = cum;
	r->stdin_short = 0;
	if (r->slow_for < r->silence)
		return NULL;
	r->slow_for = 0; /* the next one, if any, gets as long again */
	return group_holder(r);
}

/* The next moment a drop rule has something to look at: a hold's end, --min-rate's look; 0. */
double peers_next_check(const struct reliable_send *r)
{
	double soonest = r->min_rate > 0 && r->rate_at > 0 ? r->rate_at + RATE_LOOK : 0;

	EACH_LIVE(r, p) {
		if (p->held_since > 0 && (soonest == 0 || p->held_since + r->silence < soonest))
			soonest = p->held_since + r->silence;
	}
	return soonest;
}

/*
 * A receiver is lost (why): the session fails, or (multicast) goes on without it, and it is
 * told so (a refusal with its tag, to the group: a socket bound to the group takes nothing
 * else), so that it ends now, not once the group's datagrams stop. 0, or -1.
 */
int peers_lost(struct flow *f, struct reliable_send *r, struct reliable_peer *p, const char *why)
{
	unsigned char no[RELIABLE_HEAD];

	if (r->group_len == 0)
		return flow_fail(f, EXIT_PEER,
		                 "--reliable: the receiver %s: %llu of %llu bytes confirmed", why,
		                 (unsigned long long)p->log.cum, (unsigned long long)r->read);
	p->dropped = 1;
	snprintf(p->why, sizeof p->why, "%s", why);
	log_warn("--reliable: receiver %s dropped: %s, %llu of %llu bytes confirmed", p->name, why,
	         (unsigned long long)p->log.cum, (unsigned long long)r->read);
	reliable_head_encode(
	    no,
	    &(struct reliable_head){.type = RELIABLE_REFUSE, .tag = p->tag, .session = r->session});
	(void)peers_send_small(r, no, sizeof no);
	if (peers_slowest(r) == NULL)
		return flow_fail(f, EXIT_PEER, "--reliable: no receiver is left");
	f->moved = 1;
	return 0;
}

/*
 * Receivers that said nothing for the silence, and (multicast) one that held the others back
 * as long, or the one the group waited for while it took less than --min-rate. 0, or -1 when
 * the session ends for it.
 */
int peers_check_silence(struct flow *f, struct reliable_send *r, double now)
{
	char why[160];
	struct reliable_peer *p;

	for (unsigned i = 0; i < r->npeers; i++) {
		if (r->peers[i].dropped || now - r->peers[i].heard_at < r->silence)
			continue;
		snprintf(why, sizeof why, "said nothing for %.3g s", r->silence);
		if (peers_lost(f, r, &r->peers[i], why) != 0)
			return -1;
	}
	while ((p = holding_back(r, now)) != NULL) {
		snprintf(why, sizeof why,
		         "it took nothing for %.3g s while the others waited for it (its store "
		         "stayed full: its stdout does not drain)",
		         r->silence);
		if (peers_lost(f, r, p, why) != 0)
			return -1;
	}
	if ((p = below_min_rate(r, now)) != NULL) {
		char rate[32];

		units_format_size((uint64_t)r->min_rate, rate, sizeof rate);
		snprintf(why, sizeof why,
		         "the group took less than --min-rate %s/s for %.3g s, waiting for this "
		         "receiver",
		         rate, r->silence);
		if (peers_lost(f, r, p, why) != 0)
			return -1;
	}
	return 0;
}

/*
 * Multicast, once the receivers still served confirmed: exit 0 only when those are every
 * receiver asked for (--receivers); else the failure names those dropped and how many never
 * answered. 0, or -1.
 */
int peers_served(struct flow *f, const struct reliable_send *r)
{
	char lost[512] = "";
	size_t at = 0;
	unsigned served = 0;

	for (unsigned i = 0; i < r->npeers; i++) {
		const struct reliable_peer *p = &r->peers[i];

		if (!p->dropped) {
			served++;
			continue;
		}
		if (at < sizeof lost)
			at += (size_t)snprintf(lost + at, sizeof lost - at, "%s%s (%llu bytes)",
			                       at > 0 ? ", " : "", p->name,
			                       (unsigned long long)p->log.cum);
	}
	if (served == r->wanted)
		return 0;
	if (r->npeers < r->wanted && at < sizeof lost)
		snprintf(lost + at, sizeof lost - at, "%s%u never answered", at > 0 ? "; " : "",
		         r->wanted - r->npeers);
	return flow_fail(f, EXIT_PEER, "--reliable: %u of %u receivers confirmed the stream; %s%s",
	                 served, r->wanted, r->npeers > served ? "dropped: " : "", lost);
}

/*
 * Multicast, for the report: what became of each receiver that answered, in the order they
 * did (malloc'd; NULL if that fails, and the report goes without).
 */
struct receiver_outcome *peers_outcome(const struct reliable_send *r)
{
	struct receiver_outcome *out = calloc(r->npeers > 0 ? r->npeers : 1, sizeof *out);

	for (unsigned i = 0; out != NULL && i < r->npeers; i++) {
		const struct reliable_peer *p = &r->peers[i];
		struct receiver_outcome *o = &out[i];

		snprintf(o->name, sizeof o->name, "%s", p->name);
		o->exact = p->confirmed && p->said.bytes == r->end.bytes &&
		           p->said.digest == r->end.digest;
		o->state = p->dropped     ? "dropped"
		           : o->exact     ? "whole"
		           : p->confirmed ? "mismatch"
		                          : "cut";
		o->bytes = p->confirmed ? p->said.bytes : p->log.cum;
		o->digest = p->said.digest;
		o->why = p->dropped ? p->why : NULL;
		o->reliable = 1;
		o->tag = p->tag;
		o->path = p->model.bw;
		o->rtt = p->log.srtt;
		o->min_rtt = p->log.min_rtt;
		o->acks = p->acks;
		o->gap_acks = p->gap_acks;
		o->lost_bytes = p->lost_bytes;
	}
	return out;
}
