/*
 * chain-open.c: --chain's opening. The sender, and each node in turn, reaches the next node of
 * the list that answers: it connects, waits for the node's hello (a plain peer never gets a byte
 * of the protocol), sends the opening with the list, and waits for the answer, which the node
 * sends once the nodes behind it answered. A node that cannot be connected to is named and
 * skipped; a peer that is not a --chain receiver refuses the whole chain (exit 3).
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "fastcat.h"
#include "base/base.h"
#include "net/net.h"
#include "chain/chain.h"

/* A plain fastcat that connected to a node refuses its hello instead of writing it out. */
const struct hello_guard chain_guard = {
    CHAIN_HELLO_BYTES, chain_hello_seen, EXIT_CONNECT,
    "the peer is a fastcat --chain receiver; give --chain with the list of receivers at this "
    "end"};

/*
 * Connect to node i: 0, or -1 with the reason logged and its errno in *err
 * (0: no address of it was found).
 */
static int connect_node(const struct config *cfg, const struct chain *c, unsigned i,
                        struct endpoint *ep, int *err)
{
	struct config to = *cfg;
	struct failure fail = {EXIT_OK, ""};
	char name[CHAIN_HOST_MAX + 16];

	to.listen = 0;
	to.host = c->list.node[i].host;
	to.port = c->list.node[i].port;
	if (to.timeout_ms < 0)
		to.timeout_ms = CHAIN_PATIENCE * 1000;
	*ep = (struct endpoint){.fd = -1};
	if (endpoint_connect(&to, ep, &fail) == 0)
		return 0;
	*err = errno;
	endpoint_close(ep);
	log_error("--chain: receiver %u, %s, not reached: %s", i + 1,
	          chain_node_name(&c->list, i, name, sizeof name), fail.why);
	return -1;
}

/*
 * Lane 0 of the hop to node i, connected, greeted and answered on ep (what
 * the node holds: *held). 0, 1 not connected (its errno logged in *err),
 * -1 with the failure.
 */
static int reach_lane(struct chain *c, const struct config *cfg, unsigned i, int rejoin,
                      struct endpoint *ep, uint64_t *held, int *err, struct failure *fail)
{
	if (connect_node(cfg, c, i, ep, err) != 0)
		return 1;
	if (chain_await_hello(ep->fd, ep->peer, fail) != 0)
		goto failed;
	if (c->lanes_auto) /* the handshake and the hello told the round trip */
		c->tee.down_lanes = chain_lanes_for(c, ep, i);
	if (chain_send_opening(c, i, rejoin, 0, ep->fd, ep->peer, fail) != 0 ||
	    chain_await_answer(c, i, rejoin, ep, held, fail) != 0)
		goto failed;
	return 0;
failed:
	*err = errno != 0 ? errno : EPROTO;
	return -1;
}

/*
 * From node `from` on, the first node that answers, connected on ep (and
 * -P's other lanes), with what it holds in *held (a rejoin's; else 0);
 * those before it are marked not reached (a rejoin's: lost, whatever
 * failed). 0, 1 when none did, -1 with the failure (a peer that is not a
 * node, or a node that failed in its own opening).
 */
int chain_reach(struct chain *c, const struct config *cfg, unsigned from, int rejoin,
                struct endpoint *ep, uint64_t *held, struct failure *fail)
{
	for (unsigned i = from; i < c->list.n; i++) {
		int err = 0;
		int rc = reach_lane(c, cfg, i, rejoin, ep, held, &err, fail);

		if (rc > 0) {
			chain_mark(&c->results, i, rejoin ? CHAIN_LOST : CHAIN_NOT_REACHED, err, 0,
			           0);
			continue;
		}
		if (rc < 0 || chain_reach_lanes(c, cfg, i, rejoin, ep, &err, fail) != 0) {
			if (!rejoin)
				return -1;
			/* a bypass goes on past a node that cannot take over (hung, or late) */
			log_error("%s", fail->why);
			chain_mark(&c->results, i, CHAIN_LOST, err, 0, 0);
			endpoint_close(ep);
			continue;
		}
		c->down_index = i;
		sock_limit_unsent(ep->fd, CHAIN_UNSENT);
		log_verbose("--chain: receiver %u of %u, %s, is ready", i + 1, c->list.n, ep->peer);
		return 0;
	}
	return 1;
}

/* The sender: the list from the host operand, then the first node that answers. */
static int sender_open(struct chain *c, struct session *s, struct endpoint *ep)
{
	uint64_t held;
	int rc;

	if (chain_list_parse(s->cfg->host, s->cfg->port, &c->list, &s->failure) != 0)
		return -1;
	c->self = c->list.n;
	c->id = random_id();
	c->next = ep;
	c->tee.down_lanes = s->cfg->chain_lanes > 1 ? s->cfg->chain_lanes : 1;
	c->lanes_auto = s->cfg->chain_lanes == 0;
	rc = chain_reach(c, s->cfg, 0, 0, ep, &held, &s->failure);
	if (rc > 0)
		return failure_set(&s->failure, EXIT_CONNECT,
		                   "--chain: none of the %u receivers could be reached", c->list.n);
	return rc;
}

/*
 * A peer that is no --chain sender: our FIN after the hello, and its bytes
 * read and dropped until it closes (2 s at most). A plain fastcat still
 * sending would fail on a reset before it read the hello that tells it why.
 */
static void node_refuse(int fd)
{
	double until = clock_now() + 2.0;
	unsigned char sink[16384];

	shutdown(fd, SHUT_WR);
	while (!signal_stop) {
		double left = until - clock_now();
		ssize_t n = recv(fd, sink, sizeof sink, MSG_DONTWAIT);
		struct pollfd p = {.fd = fd, .events = POLLIN};

		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
			return;
		if (n > 0)
			continue;
		if (left <= 0)
			return;
		poll(&p, 1, (int)(left * 1000) + 1);
	}
}

/*
 * A node: its hello, the opening, the nodes behind it reached, its answer.
 * 0 when the relay may start.
 */
static int node_open(struct chain *c, struct session *s, const struct endpoint *ep)
{
	struct chain_opening o;
	uint64_t held;

	if (chain_greeted(ep->fd, ep->peer, CHAIN_PATIENCE, &c->list, &o, &s->failure) != 0) {
		if (s->failure.status == EXIT_CONNECT) {
			node_refuse(ep->fd);
			s->close_plainly = 1;
		}
		return -1;
	}
	if (o.rejoin || o.lane != 0)
		return failure_set(&s->failure, EXIT_CONNECT,
		                   "--chain: %s asked to go on with a session this receiver does "
		                   "not hold",
		                   ep->peer);
	c->self = o.index;
	c->id = o.id;
	c->tee.up_lanes = c->tee.down_lanes = o.lanes; /* -P N: the sender's count on every hop */
	c->lanes_auto = o.lanes_auto;
	c->next = &c->down;
	c->listener = s->listener;
	if (c->listener != NULL && c->listener->fd >= 0)
		sock_set_nonblock(c->listener->fd,
		                  1); /* a rejoin is taken between the relay's moves */
	log_verbose("--chain: receiver %u of %u, from %s", o.index + 1, o.count, ep->peer);
	if (chain_reach(c, s->cfg, o.index + 1, 0, &c->down, &held, &s->failure) < 0 ||
	    chain_answer(ep->fd, ep->peer, 0, &s->failure) != 0)
		return -1;
	return chain_lanes_accept(c, o.lanes, &s->failure);
}

/*
 * The session's opening, either end: the sender connects ep itself (to the
 * first node that answers). 0, or the failure's status.
 */
int chain_open(struct chain *c, struct session *s, struct endpoint *ep)
{
	memset(c, 0, sizeof *c);
	c->s = s;
	c->down = (struct endpoint){.fd = -1};
	c->tee.rejoin_fd = -1;
	c->tee.up_lanes = c->tee.down_lanes = 1;
	for (unsigned j = 0; j < CHAIN_LANES_MAX; j++)
		c->tee.up[j].fd = c->tee.down[j].fd = -1;
	snprintf(c->up_peer, sizeof c->up_peer, "%s", ep->peer);
	if ((s->cfg->listen ? node_open(c, s, ep) : sender_open(c, s, ep)) != 0)
		return s->failure.status != EXIT_OK ? s->failure.status : EXIT_CONNECT;
	return 0;
}
