/*
 * chain-hop.c: the handshake of each connection of a hop, at either end: the node's hello, the
 * opening, its answer. A -P hop's other connections: the upstream opens them all at once when
 * lane 0 was answered, each opening sent as soon as its connection is up, and the node takes
 * them on its listener in any order; with -P auto each upstream picks its own hop's count from
 * the round trip lane 0's handshake told (chain-lanes.c moves the stream on them).
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <string.h>

#include "fastcat.h"
#include "base/base.h"
#include "net/net.h"
#include "chain/chain.h"

/* Why a handshake read came back short, for a message. */
static const char *short_why(size_t got)
{
	if (errno == ETIMEDOUT)
		return got > 0 ? "it stopped in the middle" : "it sent nothing in time";
	if (errno == 0)
		return "it closed the connection";
	return strerror(errno);
}

/* Node i's hello on fd: 0, or -1 with the failure (the peer is no node). */
int chain_await_hello(int fd, const char *peer, struct failure *fail)
{
	unsigned char hello[CHAIN_HELLO_BYTES];
	size_t got = handshake_move(fd, hello, sizeof hello, 0, clock_now() + CHAIN_PATIENCE);

	if (got < sizeof hello || memcmp(hello, chain_hello, sizeof hello) != 0)
		return failure_set(fail, EXIT_CONNECT,
		                   "--chain: %s is not a --chain receiver (%s); give -l --chain "
		                   "there",
		                   peer, got < sizeof hello ? short_why(got) : "other bytes");
	return 0;
}

/* The opening of lane j to node i on fd: 0, or -1 with the failure. */
int chain_send_opening(const struct chain *c, unsigned i, int rejoin, unsigned j, int fd,
                       const char *peer, struct failure *fail)
{
	unsigned char opening[CHAIN_OPENING_BYTES + CHAIN_TEXT_MAX];
	struct chain_opening o = {.index = i,
	                          .count = c->list.n,
	                          .id = c->id,
	                          .rejoin = rejoin,
	                          .lanes = c->tee.down_lanes,
	                          .lane = j,
	                          .lanes_auto = c->lanes_auto};

	o.text_len =
	    chain_list_format(&c->list, (char *)opening + CHAIN_OPENING_BYTES, CHAIN_TEXT_MAX + 1);
	chain_opening_encode(opening, &o);
	if (handshake_move(fd, opening, CHAIN_OPENING_BYTES + o.text_len, 1,
	                   clock_now() + CHAIN_PATIENCE) != CHAIN_OPENING_BYTES + o.text_len)
		return failure_set(fail, EXIT_PEER, "--chain: send to %s: %s", peer,
		                   strerror(errno ? errno : EPIPE));
	return 0;
}

/*
 * The answer of node i, which comes when the nodes behind it answered:
 * each may take CHAIN_PATIENCE to connect and as long for its hello (a
 * rejoin's, when the node's old upstream ended). *held: what it has.
 */
int chain_await_answer(const struct chain *c, unsigned i, int rejoin, const struct endpoint *ep,
                       uint64_t *held, struct failure *fail)
{
	unsigned char a[CHAIN_ANSWER_BYTES];
	double deadline = clock_now() + 2.0 * CHAIN_PATIENCE * (c->list.n - i) + CHAIN_PATIENCE;
	size_t got = handshake_move(ep->fd, a, sizeof a, 0, deadline);

	if (got < sizeof a)
		return failure_set(fail, EXIT_CONNECT,
		                   "--chain: %s did not answer the opening (%s)", ep->peer,
		                   short_why(got));
	if (chain_answer_decode(a, held) != 0 || (!rejoin && *held != 0))
		return failure_set(fail, EXIT_CONNECT,
		                   "--chain: %s sent an answer this fastcat "
		                   "does not know",
		                   ep->peer);
	return 0;
}

/*
 * A node's side of the opening on fd, from peer: its hello, then the
 * opening with the list and the node's place in it, within patience
 * seconds. 0, or -1 with the failure (the peer is no --chain sender).
 */
int chain_greeted(int fd, const char *peer, double patience, struct chain_list *list,
                  struct chain_opening *o, struct failure *fail)
{
	unsigned char head[CHAIN_OPENING_BYTES];
	char text[CHAIN_TEXT_MAX + 1];
	double deadline = clock_now() + patience;
	size_t got;
	struct failure bad = {EXIT_OK, ""};

	memcpy(head, chain_hello, CHAIN_HELLO_BYTES);
	if (handshake_move(fd, head, CHAIN_HELLO_BYTES, 1, deadline) != CHAIN_HELLO_BYTES)
		return failure_set(fail, EXIT_PEER, "--chain: send to %s: %s", peer,
		                   strerror(errno ? errno : EPIPE));
	got = handshake_move(fd, head, sizeof head, 0, deadline);
	if (got < sizeof head || chain_opening_decode(head, o) != 0)
		return failure_set(fail, EXIT_CONNECT,
		                   "--chain: %s is not a --chain sender (%s); nothing written",
		                   peer, got < sizeof head ? short_why(got) : "other bytes");
	if (handshake_move(fd, (unsigned char *)text, o->text_len, 0, deadline) != o->text_len)
		return failure_set(fail, EXIT_CONNECT, "--chain: %s: the list: %s", peer,
		                   short_why(0));
	text[o->text_len] = '\0';
	if (strlen(text) != o->text_len || chain_list_parse(text, "", list, &bad) != 0 ||
	    list->n != o->count)
		return failure_set(fail, EXIT_CONNECT,
		                   "--chain: %s sent a list this fastcat cannot read%s%s", peer,
		                   bad.why[0] != '\0' ? ": " : "", bad.why);
	return 0;
}

/* The answer to an opening: the node and those behind it are ready; it holds held bytes. */
int chain_answer(int fd, const char *peer, uint64_t held, struct failure *fail)
{
	unsigned char a[CHAIN_ANSWER_BYTES];

	chain_answer_encode(a, held);
	if (handshake_move(fd, a, sizeof a, 1, clock_now() + CHAIN_PATIENCE) != sizeof a)
		return failure_set(fail, EXIT_PEER, "--chain: send to %s: %s", peer,
		                   strerror(errno ? errno : EPIPE));
	return 0;
}

/*
 * Lanes 1 on of the hop to node i, once lane 0 was answered: all connects
 * at once, each opening sent as soon as its connection is up (lane 0's
 * hello told what listens there), then each one's hello and answer, so that
 * the round trips of N handshakes overlap. 0, or -1 with the failure.
 */
int chain_reach_lanes(struct chain *c, const struct config *cfg, unsigned i, int rejoin,
                      const struct endpoint *ep0, int *err, struct failure *fail)
{
	struct chain_tee *t = &c->tee;
	struct config to = *cfg;
	struct endpoint lane = *ep0;
	uint64_t held;
	unsigned j;

	if (to.timeout_ms < 0)
		to.timeout_ms = CHAIN_PATIENCE * 1000;
	for (j = 1; j < t->down_lanes; j++)
		if (endpoint_connect_start(&to, ep0, &t->down[j].fd, fail) != 0)
			goto failed;
	for (j = 1; j < t->down_lanes; j++)
		if (endpoint_connect_finish(&to, ep0, t->down[j].fd, fail) != 0 ||
		    chain_send_opening(c, i, rejoin, j, t->down[j].fd, ep0->peer, fail) != 0)
			goto failed;
	for (j = 1; j < t->down_lanes; j++) {
		lane.fd = t->down[j].fd;
		if (chain_await_hello(lane.fd, lane.peer, fail) != 0 ||
		    chain_await_answer(c, i, rejoin, &lane, &held, fail) != 0)
			goto failed;
		sock_limit_unsent(lane.fd, CHAIN_UNSENT);
	}
	return 0;
failed:
	*err = errno != 0 ? errno : EPROTO;
	log_verbose("--chain: connection %u of %u to receiver %u failed", j + 1, t->down_lanes,
	            i + 1);
	chain_lanes_close(t->down, t->down_lanes);
	return -1;
}

/* Wait for a connection on the node's listener until deadline: its fd, or -1. */
static int accept_by(struct chain *c, double deadline)
{
	while (!signal_stop) {
		struct pollfd p = {.fd = c->listener->fd, .events = POLLIN};
		double left = deadline - clock_now();
		int fd;

		if (endpoint_accept_pending(c->s->cfg, c->listener, &fd) > 0)
			return fd;
		if (left <= 0)
			break;
		poll(&p, 1, (int)(left * 1000) + 1);
	}
	errno = ETIMEDOUT;
	return -1;
}

/*
 * A node: lanes 1 to n-1 of its upstream's hop, which connect at once when
 * lane 0 was answered, in any order; a connection that is none of them (or
 * one twice) is refused. 0, or -1 with the failure.
 */
int chain_lanes_accept(struct chain *c, unsigned n, struct failure *fail)
{
	double deadline = clock_now() + CHAIN_PATIENCE;

	for (unsigned j = 1; j < n;) {
		struct chain_list list;
		struct chain_opening o;
		struct failure bad = {EXIT_OK, ""};
		char peer[112];
		int fd = c->listener != NULL && c->listener->fd >= 0 ? accept_by(c, deadline) : -1;

		if (fd < 0)
			return failure_set(fail, EXIT_PEER,
			                   "--chain: connection %u of %u from %s did not come (%s)",
			                   j + 1, n, c->up_peer,
			                   strerror(errno ? errno : ENOTCONN));
		addr_format_fd(fd, 1, peer, sizeof peer);
		if (chain_greeted(fd, peer, CHAIN_PATIENCE, &list, &o, &bad) != 0 ||
		    o.id != c->id || o.lanes != n || o.lane == 0 || c->tee.up[o.lane].fd >= 0 ||
		    chain_answer(fd, peer, 0, &bad) != 0) {
			log_verbose("--chain: %s refused: %s", peer,
			            bad.why[0] != '\0' ? bad.why : "not a lane of this hop");
			endpoint_refuse(fd);
			continue;
		}
		c->tee.up[o.lane].fd = fd;
		j++;
	}
	if (n > 1)
		log_verbose("--chain: %u connections from %s", n, c->up_peer);
	return 0;
}

/*
 * -P auto: the connections the hop to node i on ep needs, from the round
 * trip its handshake and hello told: one connection carries at most its
 * largest send buffer a round trip, and as many are opened as carry
 * PATH_AIM (as -P auto's first step does), at most CHAIN_LANES_MAX.
 */
unsigned chain_lanes_for(const struct chain *c, const struct endpoint *ep, unsigned i)
{
	struct tcp_stats st = {0};
	double window = path_sndbuf_most(c->s->cfg, ep), most;
	unsigned n = 1;

	if (tcpinfo_read(ep->fd, &st) != 0 || !(st.min_rtt_ms > 0))
		return 1;
	most = path_window_rate(window, st.min_rtt_ms);
	if (most > 0 && most < PATH_AIM)
		n = path_conns_for(most, 1, CHAIN_LANES_MAX);
	log_verbose("--chain: -P auto: %u connection%s to receiver %u: at a %.3g ms round trip a "
	            "%.1f MiB send buffer carries %.0f Mbit/s at most",
	            n, n == 1 ? "" : "s", i + 1, st.min_rtt_ms, window / 1048576, most * 8 / 1e6);
	return n;
}
