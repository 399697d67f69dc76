/*
 * chain-end.c: what --chain's sender makes of the results: it digests what it sends, takes the
 * results the first node sends back (its receiving flow's sink) and judges each node against
 * its own count and XXH64. Exit 0 only when every node of the list wrote the whole stream.
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

/* The sender: it digests what it sends, so no zero-copy. */
static int send_start(struct flow *f)
{
	f->checksum = 1;
	return 0;
}

/*
 * The stream's end: the end mark (the count and XXH64 of what went), then
 * the half-close. 1 done, 0 when the socket cannot take it yet, -1 failed.
 */
static int send_end(struct flow *f)
{
	struct chain *c = f->ctx;

	if (c->mark_sent == 0)
		chain_end_encode(c->mark, f->stats->bytes, digest_final(&f->stats->digest));
	while (c->mark_sent < sizeof c->mark) {
		ssize_t n = send(f->sock, c->mark + c->mark_sent, sizeof c->mark - c->mark_sent,
		                 MSG_NOSIGNAL);

		if (n > 0) {
			c->mark_sent += (size_t)n;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			f->sock_ready = 0;
			return 0;
		}
		if (n < 0 && errno == EINTR)
			continue;
		flow_failed(f, 1, n < 0 ? errno : EPIPE);
		return -1;
	}
	if (shutdown(f->sock, SHUT_WR) != 0 && errno != ENOTCONN) {
		flow_failed(f, 1, errno);
		return -1;
	}
	return 1;
}

static const struct flow_ops send_ops = {
    .rw_reason = "--chain digests what it sends",
    .start = send_start,
    .pass_eof = send_end,
};

/* The sender's receiving flow: the results, whole, or a failure. */
static int results_take(void *ctx, struct flow *f, const unsigned char *p, size_t len)
{
	struct chain *c = ctx;

	if (len > sizeof c->back - c->back_len)
		return flow_fail(f, EXIT_CONNECT, "--chain: %s sent more than its results",
		                 c->s->ep->peer);
	memcpy(c->back + c->back_len, p, len);
	c->back_len += len;
	return 0;
}

/* The session's relay, either end: one way, the sender's stdin through every node. */
void chain_plug(struct chain *c, struct session *s, struct relay_setup *rs)
{
	s->one_way = 1;
	if (s->cfg->listen) {
		chain_node_plug(c, s, rs);
		return;
	}
	rs->flows[FLOW_SEND].ops = &send_ops;
	rs->flows[FLOW_SEND].ctx = c;
	rs->flows[FLOW_RECEIVE].sink = (struct flow_sink){results_take, c};
	rs->flows[FLOW_RECEIVE].discard = 1;
}

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

/*
 * The sender's end: every node judged, each one that is not whole named,
 * and the transfer's status the first such node's.
 */
void chain_conclude(struct chain *c, struct session *s)
{
	uint64_t bytes = s->sent.bytes, digest = digest_final(&s->sent.digest);
	struct chain_results r;
	unsigned whole = 0;
	int status = EXIT_OK;

	if (s->cfg->listen || s->failure.status != EXIT_OK)
		return;
	if (chain_results_decode(c->back, c->back_len, c->list.n, &r) != 0) {
		failure_set(&s->failure, EXIT_CONNECT,
		            "--chain: %s sent results this fastcat does not know (%zu bytes)",
		            s->ep->peer, c->back_len);
		return;
	}
	chain_merge(&c->results, &r);
	for (unsigned i = 0; i < c->list.n; i++) {
		char name[CHAIN_HOST_MAX + 16], what[200];
		struct chain_entry none = {i, CHAIN_CUT, 0, 0, 0};
		int rc = judge(c->results.have[i] ? &c->results.entry[i] : &none, bytes, digest,
		               what, sizeof what);

		chain_node_name(&c->list, i, name, sizeof name);
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
	if (status != EXIT_OK)
		failure_set(&s->failure, status,
		            "--chain: %u of %u receivers have the whole stream", whole, c->list.n);
	else
		log_verbose("--chain: all %u receivers wrote the %llu bytes sent (xxh64 %016llx)",
		            c->list.n, (unsigned long long)bytes, (unsigned long long)digest);
}
