/*
 * chain-rejoin.c: a --chain node that dies is bypassed. The node before it (or the sender) is
 * told by its socket, names it, connects to the next node of the list with a rejoin opening,
 * and goes on from what that node holds, which its ring still has (chain-tee.c keeps it). The
 * node behind the dead one saw its upstream end without the end mark: it waits, listening,
 * for that rejoin, and answers it with what it received once its old upstream is over.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fastcat.h"
#include "base/base.h"
#include "net/net.h"
#include "relay/flow.h"
#include "chain/chain.h"

/* Nothing more goes to the next node: those from index `from` on are cut off. */
static void lose_the_rest(struct chain *c, unsigned from)
{
	for (unsigned i = from; i < c->list.n; i++)
		if (!c->results.have[i])
			chain_mark(&c->results, i, CHAIN_CUT, 0, 0, 0);
	endpoint_close(c->next);
	chain_lanes_close(c->tee.down, c->tee.down_lanes);
	c->tee.fwd = c->tee.in;
}

/* A new connection in place of the old one, on the same fd (the sender's is the session's). */
static void next_replace(struct chain *c, struct endpoint *ep, uint64_t held)
{
	struct chain_tee *t = &c->tee;

	if (dup2(ep->fd, c->next->fd) < 0) {
		log_error("--chain: dup2: %s", strerror(errno));
		endpoint_close(ep);
		lose_the_rest(c, c->down_index);
		return;
	}
	close(ep->fd);
	snprintf(c->next->peer, sizeof c->next->peer, "%s", ep->peer);
	t->fwd = held;
	chain_lanes_reset_down(t, held);
	t->next_in = held;
	t->next_heard = clock_now();
	t->behind_in = 0; /* unknown until it confirms: keep all */
	t->least = held;
	c->back_len = 0;
	t->back_eof = t->results_in = t->down_shut = 0;
	t->down_ready = t->back_ready = 1;
}

/*
 * The next node is gone (err): named, and the first of the nodes behind it
 * that answers a rejoin takes its place, from what it holds; if none can,
 * those behind are cut off and this node goes on alone.
 */
void chain_lose(struct chain *c, int err)
{
	char name[CHAIN_HOST_MAX + 16];
	struct chain_tee *t = &c->tee;
	struct endpoint ep = {.fd = -1};
	struct failure fail = {EXIT_OK, ""};
	unsigned lost = c->down_index;
	uint64_t held = 0, oldest = t->top - (t->top < t->ring_size ? t->top : t->ring_size);
	uint64_t data = t->up_eof && t->fwd > t->end ? t->end : t->fwd; /* not the end mark */
	int rc = 1;

	log_error("--chain: receiver %u, %s, lost after %llu bytes forwarded to it: %s", lost + 1,
	          chain_node_name(&c->list, lost, name, sizeof name), (unsigned long long)data,
	          strerror(err));
	chain_mark(&c->results, lost, CHAIN_LOST, err, data, 0);
	chain_lanes_close(t->down, t->down_lanes);
	if (lost + 1 < c->list.n)
		rc = chain_reach(c, c->s->cfg, lost + 1, 1, &ep, &held, &fail);
	if (rc == 0 && (held < oldest || held > t->in)) {
		log_error("--chain: receiver %u holds %llu bytes; this end has %llu to %llu: it "
		          "cannot go on",
		          c->down_index + 1, (unsigned long long)held, (unsigned long long)oldest,
		          (unsigned long long)t->in);
		endpoint_close(&ep);
		rc = -1;
	}
	if (rc != 0) {
		if (rc < 0 && fail.why[0] != '\0')
			log_error("%s", fail.why);
		if (lost + 1 < c->list.n)
			log_error("--chain: the receivers behind receiver %u are cut off",
			          lost + 1);
		lose_the_rest(c, lost + 1);
		return;
	}
	log_error("--chain: receiver %u bypassed: receiver %u, %s, goes on from byte %llu",
	          lost + 1, c->down_index + 1,
	          chain_node_name(&c->list, c->down_index, name, sizeof name),
	          (unsigned long long)held);
	next_replace(c, &ep, held);
}

/*
 * A connection on a node's listener while it relays: a rejoin of this
 * session from a new upstream is kept until the old one is over; anything
 * else is closed. The relay waits for the opening meanwhile, so a rejoin
 * gets a second (its upstream sends the opening as soon as the hello came).
 */
void chain_rejoin_accept(struct chain *c)
{
	struct chain_tee *t = &c->tee;
	struct chain_list list;
	struct chain_opening o;
	struct failure fail = {EXIT_OK, ""};
	char peer[112];
	int fd;

	if (endpoint_accept_pending(c->s->cfg, c->listener, &fd) <= 0)
		return;
	addr_format_fd(fd, 1, peer, sizeof peer);
	if (chain_greeted(fd, peer, CHAIN_REJOIN_PATIENCE, &list, &o, &fail) != 0 || !o.rejoin ||
	    o.id != c->id || o.index != c->self || o.lane != 0 || t->rejoin_fd >= 0 || t->up_eof) {
		log_verbose("--chain: %s refused: %s", peer,
		            fail.why[0] != '\0' ? fail.why : "not a rejoin of this session");
		endpoint_refuse(fd);
		return;
	}
	t->rejoin_fd = fd;
	t->rejoin_lanes = o.lanes;
	snprintf(t->rejoin_peer, sizeof t->rejoin_peer, "%s", peer);
}

/*
 * The new upstream's other lanes (-P), which connect once lane 0 was
 * answered; every lane goes on from what this node has. 0, or -1: they did
 * not come, and lane 0 is shut so that the new upstream learns it.
 */
static int adopt_lanes(struct chain *c)
{
	struct chain_tee *t = &c->tee;
	struct failure fail = {EXIT_OK, ""};

	chain_lanes_close(t->up, t->up_lanes);
	t->up_lanes = t->rejoin_lanes;
	if (chain_lanes_accept(c, t->up_lanes, &fail) != 0) {
		log_error("%s", fail.why);
		chain_lanes_close(t->up, t->up_lanes);
		shutdown(c->flow->sock, SHUT_RDWR);
		t->up_lanes = 1;
		return -1;
	}
	chain_lanes_reset_up(t);
	return 0;
}

/*
 * An orphan (its upstream ended without the mark, or failed) takes the
 * rejoin that came, answering with what it has. 1 it did, 0 it waits, -1
 * the wait is over (the upstream's end stands).
 */
int chain_rejoin_adopt(struct chain *c, double now)
{
	struct chain_tee *t = &c->tee;
	struct flow *f = c->flow;
	struct failure fail = {EXIT_OK, ""};
	int fd = t->rejoin_fd;

	if (fd < 0)
		return now < t->orphan_until ? 0 : -1;
	t->rejoin_fd = -1;
	if (chain_answer(fd, t->rejoin_peer, t->in, &fail) != 0 || dup2(fd, f->sock) < 0) {
		log_error("%s", fail.why[0] != '\0' ? fail.why : strerror(errno));
		close(fd);
		return now < t->orphan_until ? 0 : -1;
	}
	close(fd);
	log_error("--chain: the stream goes on from %s at byte %llu (%s is gone)", t->rejoin_peer,
	          (unsigned long long)t->in, c->up_peer);
	snprintf(c->up_peer, sizeof c->up_peer, "%s", t->rejoin_peer);
	if (adopt_lanes(c) != 0)
		return now < t->orphan_until ? 0 : -1;
	t->orphan_until = 0;
	t->up_err = 0;
	t->up_heard = now;
	t->acked_in = t->acked_next = t->acked_least = 0;
	t->ack_left = 0;
	flow_set_src_ready(f, 1);
	return 1;
}
