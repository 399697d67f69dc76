/*
 * reliable.c: --reliable in a session: the opening on its udp socket, its pump in the relay's
 * place for the one way the data goes (the other flow is off), and the figures the report
 * prints. The pumps are reliable-send.c's and reliable-recv.c's.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "fastcat.h"
#include "net/net.h"
#include "relay/relay.h"
#include "reliable/reliable.h"

int reliable_open(struct reliable *rel, struct session *s)
{
	memset(rel, 0, sizeof *rel);
	rel->listening = s->cfg->listen;
	rel->opened = 1;
	return rel->listening ? reliable_accept(&rel->recv, s) : reliable_connect(&rel->send, s);
}

/* The data goes one way: the sender's stdin to the receiver's stdout. */
void reliable_plug(struct reliable *rel, struct session *s, struct relay_setup *rs)
{
	struct flow_setup *send = &rs->flows[FLOW_SEND], *recv = &rs->flows[FLOW_RECEIVE];

	s->one_way = 1;
	if (rel->listening) {
		send->enabled = 0;
		recv->ops = &reliable_recv_ops;
		recv->ctx = &rel->recv;
	} else {
		recv->enabled = 0;
		send->ops = &reliable_send_ops;
		send->ctx = &rel->send;
	}
}

/*
 * The sender's exit 0 says the receiver confirmed the stream's count and XXH64; the report
 * says it as --verify does, and to a group what became of each receiver.
 */
void reliable_conclude(struct reliable *rel, struct session *s)
{
	struct reliable_send *r = &rel->send;
	const struct reliable_recv *v = &rel->recv;

	if (!rel->listening && r->group_len > 0 && r->outcome == NULL &&
	    (r->outcome = peers_outcome(r)) != NULL) {
		s->receivers = r->outcome;
		s->nreceivers = r->npeers;
	}
	if (s->failure.status != EXIT_OK)
		return;
	if (!rel->listening && r->confirmed) {
		s->verdict.confirmed_bytes = r->end.bytes; /* every receiver wrote the same */
		s->verdict.confirmed_digest = r->end.digest;
		s->verdict.verified = 1;
	} else if (rel->listening && v->confirmed) {
		s->verdict.peer_bytes = v->end.bytes;
		s->verdict.peer_digest = v->end.digest;
		s->verdict.verified = 1;
	}
}

void reliable_close(struct reliable *rel)
{
	if (!rel->opened)
		return;
	reliable_send_free(&rel->send);
	reliable_recv_free(&rel->recv);
	rel->opened = 0;
}
