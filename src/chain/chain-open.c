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

/* Why a handshake read came back short, for a message. */
static const char *short_why(size_t got)
{
	if (errno == ETIMEDOUT)
		return got > 0 ? "it stopped in the middle" : "it sent nothing in time";
	if (errno == 0)
		return "it closed the connection";
	return strerror(errno);
}

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

/* Node i's hello, then the opening: 0, or -1 with the failure (the peer is no node). */
static int greet_node(const struct chain *c, unsigned i, int rejoin, const struct endpoint *ep,
                      struct failure *fail)
{
	unsigned char hello[CHAIN_HELLO_BYTES], opening[CHAIN_OPENING_BYTES + CHAIN_TEXT_MAX];
	struct chain_opening o = {.index = i, .count = c->list.n, .id = c->id, .rejoin = rejoin};
	size_t got = handshake_move(ep->fd, hello, sizeof hello, 0, clock_now() + CHAIN_PATIENCE);

	if (got < sizeof hello || memcmp(hello, chain_hello, sizeof hello) != 0)
		return failure_set(fail, EXIT_CONNECT,
		                   "--chain: %s is not a --chain receiver (%s); give -l --chain "
		                   "there",
		                   ep->peer, got < sizeof hello ? short_why(got) : "other bytes");
	o.text_len =
	    chain_list_format(&c->list, (char *)opening + CHAIN_OPENING_BYTES, CHAIN_TEXT_MAX + 1);
	chain_opening_encode(opening, &o);
	if (handshake_move(ep->fd, opening, CHAIN_OPENING_BYTES + o.text_len, 1,
	                   clock_now() + CHAIN_PATIENCE) != CHAIN_OPENING_BYTES + o.text_len)
		return failure_set(fail, EXIT_PEER, "--chain: send to %s: %s", ep->peer,
		                   strerror(errno ? errno : EPIPE));
	return 0;
}

/*
 * The answer of node i, which comes when the nodes behind it answered:
 * each may take CHAIN_PATIENCE to connect and as long for its hello (a
 * rejoin's, when the node's old upstream ended). *held: what it has.
 */
static int await_answer(const struct chain *c, unsigned i, int rejoin, const struct endpoint *ep,
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
 * From node `from` on, the first node that answers, connected on ep, with
 * what it holds in *held (a rejoin's; else 0); those before it are marked
 * not reached (a rejoin's: lost, whatever failed). 0, 1 when none did, -1
 * with the failure (a peer that is not a node, or a node that failed in its
 * own opening).
 */
int chain_reach(struct chain *c, const struct config *cfg, unsigned from, int rejoin,
                struct endpoint *ep, uint64_t *held, struct failure *fail)
{
	for (unsigned i = from; i < c->list.n; i++) {
		int err = 0;

		if (connect_node(cfg, c, i, ep, &err) != 0) {
			chain_mark(&c->results, i, rejoin ? CHAIN_LOST : CHAIN_NOT_REACHED, err, 0,
			           0);
			continue;
		}
		if (greet_node(c, i, rejoin, ep, fail) != 0 ||
		    await_answer(c, i, rejoin, ep, held, fail) != 0) {
			if (!rejoin)
				return -1;
			/* a bypass goes on past a node that cannot take over (hung, or late) */
			err = errno != 0 ? errno : EPROTO;
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
	rc = chain_reach(c, s->cfg, 0, 0, ep, &held, &s->failure);
	if (rc > 0)
		return failure_set(&s->failure, EXIT_CONNECT,
		                   "--chain: none of the %u receivers could be reached", c->list.n);
	return rc;
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
	if (o.rejoin)
		return failure_set(&s->failure, EXIT_CONNECT,
		                   "--chain: %s asked to go on with a session this receiver does "
		                   "not hold",
		                   ep->peer);
	c->self = o.index;
	c->id = o.id;
	c->next = &c->down;
	c->listener = s->listener;
	if (c->listener != NULL && c->listener->fd >= 0)
		sock_set_nonblock(c->listener->fd,
		                  1); /* a rejoin is taken between the relay's moves */
	log_verbose("--chain: receiver %u of %u, from %s", o.index + 1, o.count, ep->peer);
	if (chain_reach(c, s->cfg, o.index + 1, 0, &c->down, &held, &s->failure) < 0)
		return -1;
	return chain_answer(ep->fd, ep->peer, 0, &s->failure);
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
	snprintf(c->up_peer, sizeof c->up_peer, "%s", ep->peer);
	if ((s->cfg->listen ? node_open(c, s, ep) : sender_open(c, s, ep)) != 0)
		return s->failure.status != EXIT_OK ? s->failure.status : EXIT_CONNECT;
	return 0;
}
