/*
 * verify.c: --verify in a session: its state, what it plugs into the relay
 * (the frames over streams, the control exchange over datagrams), and after
 * the relay the conclusion: did both directions arrive whole. -P's end marks
 * carry the same figures, and are judged here too.
 */
#include "config.h"

#include <string.h>

#include "fastcat.h"
#include "net/net.h"
#include "relay/relay.h"
#include "verify/verify.h"

/* A peer that opens with our hello, at an end without --verify: its frames would be data. */
const struct hello_guard verify_guard = {
    VERIFY_HELLO_BYTES, verify_hello, EXIT_VERIFY,
    "--verify: the peer sends --verify frames; give --verify at this end too"};

void verify_start(struct verify *v, struct session *s)
{
	memset(v, 0, sizeof *v);
	v->s = s;
	v->vd = &s->verdict;
	v->datagram = s->cfg->transport->connectionless;
}

/*
 * Both flows frame (streams), or the data goes as --seq datagrams with the
 * control exchange around it. With -d there is no stdin, but the hello, END
 * and VERDICT still go out.
 */
void verify_plug(struct verify *v, struct relay_setup *rs)
{
	struct flow_setup *send = &rs->flows[FLOW_SEND], *recv = &rs->flows[FLOW_RECEIVE];

	send->enabled = !v->s->ep->cannot_send;
	send->ctx = recv->ctx = v;
	if (!v->datagram) {
		send->ops = &verify_send_ops;
		recv->ops = &verify_receive_ops;
		return;
	}
	send->ops = &verify_dgram_send_ops;
	recv->ops = &verify_dgram_receive_ops;
	relay_add_agent(rs, &verify_dgram_agent, v);
}

/*
 * The counts or digests of a direction differ: "--verify: MINE N bytes (xxh64 D) but the THEIRS
 * N (xxh64 D)", exit 6. MINE is what this end did, THEIRS what the peer says it did.
 */
static int differs(struct session *s, const char *mine, uint64_t bytes, uint64_t digest,
                   const char *theirs, uint64_t peer_bytes, uint64_t peer_digest)
{
	return failure_set(
	    &s->failure, EXIT_VERIFY,
	    "--verify: %s %llu bytes (xxh64 %016llx) but the %s %llu (xxh64 %016llx)", mine,
	    (unsigned long long)bytes, (unsigned long long)digest, theirs,
	    (unsigned long long)peer_bytes, (unsigned long long)peer_digest);
}

/*
 * After the relay: did both directions arrive whole? The peer's END says
 * what it sent (compared with what we delivered), its VERDICT what it
 * delivered of ours. A failure the relay already reported stands, unless
 * it is the peer going away before it ever said hello: that peer does not
 * run --verify (or refused ours), which is the clearer message; and it gets
 * a plain close, since a reset could throw away our hello unread, and with
 * it the peer's clear "give --verify here too".
 */
void verify_conclude(struct verify *v, struct session *s)
{
	const struct verdict *vd = v->vd;
	/* with --resume, what this end holds of the whole file: the bytes before it too */
	uint64_t sent = s->sent.bytes + s->prefix.sent,
	         got = s->received.bytes + s->prefix.received;
	uint64_t sent_digest = digest_final(&s->sent.digest);
	uint64_t got_digest = digest_final(&s->received.digest);

	s->close_plainly |= !v->hello_seen;
	if (!v->hello_seen && s->failure.status == EXIT_PEER)
		s->failure.status = EXIT_OK; /* the clearer message replaces it */
	if (!v->hello_seen)
		failure_set(&s->failure, EXIT_VERIFY,
		            "--verify: the peer closed without the verify hello (is --verify given "
		            "at both ends?)");
	else if (!vd->end_seen)
		failure_set(
		    &s->failure, EXIT_PEER,
		    "--verify: the peer's data ended early, without its end mark (%llu bytes "
		    "received)",
		    (unsigned long long)got);
	else if (vd->peer_bytes != got || vd->peer_digest != got_digest)
		differs(s, "received", got, got_digest, "peer sent", vd->peer_bytes,
		        vd->peer_digest);
	else if (!vd->verdict_seen)
		failure_set(&s->failure, EXIT_PEER,
		            "--verify: the peer did not confirm the %llu bytes sent to it",
		            (unsigned long long)sent);
	else if (vd->confirmed_bytes != sent || vd->confirmed_digest != sent_digest)
		differs(s, "sent", sent, sent_digest, "peer wrote", vd->confirmed_bytes,
		        vd->confirmed_digest);
	s->verdict.verified = s->failure.status == EXIT_OK;
}

/*
 * After a striped session (-P): the sender compares the receiver's VERDICT
 * with what it sent; the receiver, whenever the sender's END carried the
 * stream's XXH64, compares it with what it wrote. With --resume both are of
 * the whole file: the L bytes before the session count (and were digested
 * first). A failure the relay already reported stands.
 */
void verify_conclude_striped(struct session *s)
{
	struct verdict *vd = &s->verdict;
	int listen = s->cfg->listen;
	const struct flow_stats *mine = listen ? &s->received : &s->sent;
	uint64_t bytes = mine->bytes + (listen ? s->prefix.received : s->prefix.sent);
	uint64_t digest = digest_final(&mine->digest);

	if (s->failure.status != EXIT_OK || (!s->cfg->verify && !vd->end_seen))
		return;
	if (listen && !vd->end_seen)
		failure_set(&s->failure, EXIT_VERIFY,
		            "-P --verify: the sender did not ask for --verify (give --verify at "
		            "both ends)");
	else if (listen && (vd->peer_bytes != bytes || vd->peer_digest != digest))
		differs(s, "wrote", bytes, digest, "sender sent", vd->peer_bytes, vd->peer_digest);
	else if (!listen && !vd->verdict_seen)
		failure_set(&s->failure, EXIT_PEER,
		            "--verify: the receiver closed without confirming the %llu bytes sent",
		            (unsigned long long)bytes);
	else if (!listen && (vd->confirmed_bytes != bytes || vd->confirmed_digest != digest))
		differs(s, "sent", bytes, digest, "receiver wrote", vd->confirmed_bytes,
		        vd->confirmed_digest);
	vd->verified = s->failure.status == EXIT_OK;
}
