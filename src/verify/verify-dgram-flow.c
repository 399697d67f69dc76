/*
 * verify-dgram-flow.c: --verify over datagrams, as the flows' ops: the sending
 * flow's data waits for the peer's hello and its EOF is our END (the exchange,
 * verify-dgram.c, sends it); the receiving flow takes the control datagrams out
 * of the data and ends at the peer's END. Without --verify, a receiving flow
 * refuses a peer's verify hello.
 */
#include "config.h"

#include "fastcat.h"
#include "relay/flow.h"
#include "verify/verify.h"

/* Sending: no data goes before the peer's hello came, and our END waits for it too. */
static int dgram_hello_seen(const struct flow *f)
{
	const struct verify *v = f->ctx;

	return v->hello_seen;
}

/* Sending, at stdin's EOF: our END says it (the agent sends it), until the peer's VERDICT. */
static int dgram_pass_eof(struct flow *f)
{
	struct verify *v = f->ctx;

	v->dg.end_due = 1;
	v->dg.sent_datagrams = f->next_seq;
	return 1;
}

/* Receiving: the input ends once the peer's END came and its datagrams are in, or lost. */
static int dgram_step(struct flow *f)
{
	struct verify *v = f->ctx;

	/* the clock only once the END came: this runs for every datagram read */
	if (!f->src_eof && v->vd->end_seen &&
	    verify_dgram_input_done(v, &f->stats->seq, clock_now()))
		f->src_eof = 1;
	return 0;
}

/* Receiving: every datagram before the peer's END is written: our VERDICT can go. */
static void dgram_ended(struct flow *f)
{
	struct verify *v = f->ctx;

	v->peer_done = 1;
	v->vd->delivered_bytes = f->stats->bytes;
	v->vd->delivered_digest = digest_final(&f->stats->digest);
	v->dg.verdict_ready = 1;
}

/*
 * A datagram that may be a control datagram: its first CTL_HEADER bytes at
 * head, the rest (len bytes) at body. The peer's data may come only after
 * its hello. 1: taken; 0: data; -1: failed.
 */
static int dgram_control(struct flow *f, const unsigned char *head, const unsigned char *body,
                         size_t len)
{
	struct verify *v = f->ctx;
	struct ctl c;
	int rc = verify_ctl_decode(head, body, len, &c);

	if (rc < 0)
		return flow_fail(f, EXIT_VERIFY,
		                 "--verify: the peer sent a malformed control datagram");
	if (rc == 1) {
		f->moved = 1; /* the peer is alive: not idle for -w */
		if (verify_dgram_receive(v, &c, clock_now()) == 0)
			return 1;
		return flow_fail(f, v->failure.status, "%s", v->failure.why);
	}
	if (v->hello_seen)
		return 0;
	/* a peer without --verify: our hello tells a fastcat one why it fails too */
	verify_ctl_send(flow_src(f), &(struct ctl){.type = CTL_HELLO, .flags = CTL_ANSWER});
	return flow_fail(f, EXIT_VERIFY,
	                 "--verify: the peer's data came without the verify hello (is --verify "
	                 "given at both ends?)");
}

static void dgram_unreachable(struct flow *f)
{
	struct verify *v = f->ctx;

	v->dg.unreachable = 1;
}

const struct flow_ops verify_dgram_send_ops = {
    .may_send = dgram_hello_seen,
    .drained = dgram_hello_seen,
    .pass_eof = dgram_pass_eof,
};

const struct flow_ops verify_dgram_receive_ops = {
    .ends_input = 1,
    .datagram_min = CTL_MAX - CTL_HEADER,
    .step = dgram_step,
    .ended = dgram_ended,
    .datagram = dgram_control,
    .unreachable = dgram_unreachable,
};

/* No --verify here: a peer's verify hello is refused, and told so. */
static int dgram_refuse(struct flow *f, const unsigned char *head, const unsigned char *body,
                        size_t len)
{
	struct ctl c;

	if (verify_ctl_decode(head, body, len, &c) != 1 || c.type != CTL_HELLO)
		return 0;
	verify_ctl_send(flow_src(f), &(struct ctl){.type = CTL_REFUSE});
	return flow_fail(f, EXIT_VERIFY,
	                 "--verify: the peer sends --verify datagrams; give --verify at this end "
	                 "too");
}

const struct flow_ops verify_refuse_ops = {.datagram = dgram_refuse};
