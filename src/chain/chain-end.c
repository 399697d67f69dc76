/*
 * chain-end.c: what --chain's sender makes of the results the first node sends back: each node
 * judged against the count and XXH64 the sender read from its stdin. Exit 0 only when every
 * node of the list wrote the whole stream.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "fastcat.h"
#include "base/base.h"
#include "relay/flow.h"
#include "chain/chain.h"

/* The session's relay, either end: one way, the sender's stdin through every node. */
void chain_plug(struct chain *c, struct session *s, struct relay_setup *rs)
{
	s->one_way = 1;
	if (s->cfg->listen) {
		chain_node_plug(c, s, rs);
		return;
	}
	chain_sender_plug(c, s, rs);
}

/* The states as the JSON report names them, by enum chain_state. */
static const char *const state_names[CHAIN_STATES] = {"whole", "write_failed", "not_reached",
                                                      "lost",  "cut",          "short"};

/* Node i, judged against what was sent: its exit status for the transfer, EXIT_OK if whole. */
static int judge(const struct chain_entry *e, uint64_t bytes, uint64_t digest, char *what,
                 size_t size)
{
	switch (e->state) {
	case CHAIN_WHOLE:
		if (e->bytes == bytes && e->digest == digest) {
			snprintf(what, size, "wrote the %llu bytes (xxh64 %016llx)",
			         (unsigned long long)bytes, (unsigned long long)digest);
			return EXIT_OK;
		}
		snprintf(what, size,
		         "wrote %llu bytes (xxh64 %016llx), not the %llu sent (xxh64 %016llx)",
		         (unsigned long long)e->bytes, (unsigned long long)e->digest,
		         (unsigned long long)bytes, (unsigned long long)digest);
		return EXIT_VERIFY;
	case CHAIN_WRITE_FAILED:
		snprintf(what, size, "could not write: %s (after %llu bytes)", strerror(e->err),
		         (unsigned long long)e->bytes);
		return EXIT_PEER_WRITE;
	case CHAIN_NOT_REACHED:
		snprintf(what, size, "not reached: %s",
		         e->err != 0 ? strerror(e->err) : "no address of it answered");
		return EXIT_CONNECT;
	case CHAIN_LOST:
		snprintf(what, size, "lost after %llu bytes forwarded to it: %s",
		         (unsigned long long)e->bytes, strerror(e->err));
		return EXIT_PEER;
	case CHAIN_SHORT:
		snprintf(what, size,
		         "its stream ended without the end mark after %llu bytes (a receiver "
		         "before it is gone)",
		         (unsigned long long)e->bytes);
		return EXIT_PEER;
	default: snprintf(what, size, "cut off behind a lost receiver"); return EXIT_PEER;
	}
}

/* What the report says of one receiver. */
static void keep_outcome(struct receiver_outcome *o, const char *name, const struct chain_entry *e,
                         int exact)
{
	snprintf(o->name, sizeof o->name, "%s", name);
	o->state = state_names[e->state < CHAIN_STATES ? e->state : CHAIN_CUT];
	o->err = e->err;
	o->bytes = e->bytes;
	o->digest = e->digest;
	o->exact = exact;
}

/*
 * The sender's end: every node judged, each one that is not whole named,
 * and the transfer's status the first such node's.
 */
void chain_conclude(struct chain *c, struct session *s)
{
	uint64_t bytes = s->sent.bytes, digest = digest_final(&s->sent.digest);
	unsigned whole = 0;
	int status = EXIT_OK;

	if (s->cfg->listen || s->failure.status != EXIT_OK)
		return;
	if (chain_back_merge(c) != 0) {
		failure_set(&s->failure, EXIT_CONNECT,
		            "--chain: %s sent results this fastcat does not know (%zu bytes)",
		            c->next->peer, c->back_len);
		return;
	}
	for (unsigned i = 0; i < c->list.n; i++) {
		char name[CHAIN_HOST_MAX + 16], what[200];
		struct chain_entry none = {i, CHAIN_CUT, 0, 0, 0};
		int rc = judge(c->results.have[i] ? &c->results.entry[i] : &none, bytes, digest,
		               what, sizeof what);

		chain_node_name(&c->list, i, name, sizeof name);
		keep_outcome(&c->outcome[i], name,
		             c->results.have[i] ? &c->results.entry[i] : &none, rc == EXIT_OK);
		if (rc == EXIT_OK) {
			whole++;
			log_verbose("--chain: receiver %u of %u, %s: %s", i + 1, c->list.n, name,
			            what);
			continue;
		}
		log_error("--chain: receiver %u of %u, %s: %s", i + 1, c->list.n, name, what);
		if (status == EXIT_OK)
			status = rc;
	}
	s->receivers = c->outcome;
	s->nreceivers = c->list.n;
	if (status != EXIT_OK)
		failure_set(&s->failure, status,
		            "--chain: %u of %u receivers have the whole stream", whole, c->list.n);
	else
		log_verbose("--chain: all %u receivers wrote the %llu bytes sent (xxh64 %016llx)",
		            c->list.n, (unsigned long long)bytes, (unsigned long long)digest);
}
