/*
 * session.c: one session, from a connection made (or accepted) to its end: the opening (-P's
 * connections, --resume's offer and answer with --retry's join), the relay with the features
 * plugged in, and the conclusion (-P's ends, --verify, --seq). main() runs it once; --retry
 * once per connection (transfer.c). The one place that names every feature.
 */
#include "config.h"

#include <string.h>
#include <unistd.h>

#include "fastcat.h"
#include "chain/chain.h"
#include "net/net.h"
#include "relay/flow.h"
#include "relay/relay.h"
#include "reliable/reliable.h"
#include "report/report.h"
#include "resume/resume.h"
#include "retry/retry.h"
#include "stripe/stripe.h"
#include "verify/verify.h"
#include "cli/cli.h"

_Static_assert(RETRY_JOIN_BYTES <= RESUME_JOIN_MAX, "--retry's join fits the opening's buffer");

/* What a plain receiver refuses as first bytes: the hellos of the modes it does not run. */
static const struct hello_guard *const guards[] = {&verify_guard, &stripe_guard, &resume_guard,
                                                   &chain_guard};

/*
 * A plain datagram end refuses the hellos of the datagram modes it does not run: --verify's
 * and --reliable's (whose sender then hears no, and says what to give here).
 */
static int refuse_datagram(struct flow *f, const unsigned char *head, const unsigned char *body,
                           size_t len)
{
	if (len + DATAGRAM_HEAD == RELIABLE_HELLO_LEN) {
		unsigned char whole[DATAGRAM_HEAD + RELIABLE_HELLO_LEN];

		memcpy(whole, head, DATAGRAM_HEAD);
		memcpy(whole + DATAGRAM_HEAD, body, len);
		if (reliable_refuse(flow_src(f), whole, RELIABLE_HELLO_LEN))
			return flow_fail(f, EXIT_CONNECT,
			                 "--reliable: the peer sends --reliable datagrams; give "
			                 "--reliable at this end too");
	}
	return verify_refuse_ops.datagram(f, head, body, len);
}

static const struct flow_ops refuse_ops = {.datagram = refuse_datagram};

void session_init(struct session *s, const struct config *cfg, const struct endpoint *ep,
                  struct listener *l)
{
	memset(s, 0, sizeof *s);
	s->cfg = cfg;
	s->ep = ep;
	s->listener = l;
	s->stdin_at = -1;
	s->sent.started = s->received.started = clock_now();
	/* the chunk sizes a flow would pick, for the report of a session refused before the relay
	 */
	s->sent.read_size = s->received.read_size = cfg->read_size;
	s->sent.write_size = s->received.write_size = cfg->write_size;
}

/* --retry: a new connection starts from what the last left: the totals stay, the outcome goes. */
void session_restart(struct session *s)
{
	memset(&s->failure, 0, sizeof s->failure);
	s->resume.on = 0;
	s->close_plainly = 0;
	s->lost_errno = 0;
	s->write_errno = s->write_synced = 0;
	s->sent.finished = s->received.finished = 0;
	memset(&s->verdict, 0, sizeof s->verdict);
	memset(&s->prefix, 0, sizeof s->prefix);
}

/*
 * The opening: -P's connections (the listener takes no other sender once a
 * session without -k has them), then --resume's offer and answer, with
 * --retry's join: the sender's own (rt), or the receiver's from any sender
 * that joins. 0 when the relay may start.
 */
static int session_open(struct session *s, struct session_parts *p, struct endpoint *ep,
                        struct retry *rt)
{
	const struct config *cfg = s->cfg;
	struct resume_join join, *j = NULL;

	if (cfg->parallel != 0) {
		int rc = cfg->listen ? stripe_accept(&p->stripe, s, s->listener, ep, &s->failure)
		                     : stripe_connect(&p->stripe, s, ep, &s->failure);
		p->striped = 1; /* its connections close with the session, opened or not */
		if (rc != 0)
			return rc;
	}
	/* -P auto: more may join; --chain: the node before a lost one may reach this one */
	if (s->listener != NULL && !cfg->keep_listening && p->stripe.growth == NULL && !cfg->chain)
		listener_stop_accepting(cfg, s->listener);
	if (cfg->reliable)
		return reliable_open(&p->reliable, s);
	if (cfg->chain) { /* the sender connects here: to the first receiver that answers */
		p->chained = 1;
		return chain_open(&p->chain, s, ep);
	}
	if (!cfg->resume)
		return 0;
	if (rt != NULL) /* --retry's join and ack after the hellos, and its replay buffer */
		join = (struct resume_join){.ctx = rt,
		                            .send = retry_join_send,
		                            .replays = retry_join_replays,
		                            .rewind = retry_join_rewind};
	else if (cfg->listen) /* a receiver takes any sender's join */
		join = (struct resume_join){.ctx = &p->retry,
		                            .bytes = RETRY_JOIN_BYTES,
		                            .seen = retry_join_seen,
		                            .receive = retry_join_receive};
	if (rt != NULL || cfg->listen)
		j = &join;
	if (resume_start(s, j) != 0)
		return s->failure.status;
	if (rt != NULL)
		retry_opened(rt, s);
	return 0;
}

/*
 * The relay's flows as the features make them: -P's pumps, --retry's one
 * way with its confirmations, --verify's frames or control datagrams (or,
 * without --verify, the refusal of a peer that sends them), and the
 * progress lines.
 */
static void session_relay(struct session *s, struct session_parts *p, struct retry *rt)
{
	const struct config *cfg = s->cfg;
	struct relay_setup rs;
	struct retry *confirming = rt != NULL ? rt : p->retry;

	relay_plan(&rs, s, STDIN_FILENO, STDOUT_FILENO);
	s->one_way = p->striped || confirming != NULL;
	if (p->striped)
		stripe_plug(&p->stripe, &rs);
	if (confirming != NULL)
		retry_plug(confirming, s, &rs);
	if (cfg->reliable) {
		reliable_plug(&p->reliable, s, &rs);
	} else if (p->chained) {
		chain_plug(&p->chain, s, &rs);
	} else if (cfg->verify && !p->striped &&
	           confirming == NULL) { /* --retry: its own verdict */
		verify_start(&p->verify, s);
		verify_plug(&p->verify, &rs);
	} else if (cfg->transport->datagram) {
		rs.flows[FLOW_RECEIVE].ops = &refuse_ops;
	} else if (!p->striped && rs.flows[FLOW_RECEIVE].sink.take == NULL) {
		for (size_t i = 0; i < sizeof guards / sizeof guards[0]; i++)
			rs.flows[FLOW_RECEIVE].guards[rs.flows[FLOW_RECEIVE].nguards++] = guards[i];
	}
	/* --resume --verify: the digests both ends compare are the whole file's, from byte 0 */
	if (s->prefix.sent > 0)
		rs.flows[FLOW_SEND].digest_from = &s->prefix.digest;
	if (s->prefix.received > 0)
		rs.flows[FLOW_RECEIVE].digest_from = &s->prefix.digest;
	report_plug(&p->progress, &rs);
	relay_run(&rs);
}

/*
 * What the relay alone cannot conclude: -P's ends and --verify, --seq's
 * losses, --retry's end (with --verify, its verdict).
 */
static void session_conclude(struct session *s, struct session_parts *p, struct retry *rt,
                             uint64_t start, uint64_t sent_before)
{
	const struct config *cfg = s->cfg;

	if (cfg->reliable)
		reliable_conclude(&p->reliable, s);
	else if (p->chained)
		chain_conclude(&p->chain, s);
	else if (rt != NULL || p->retry != NULL)
		; /* --retry --verify: the sender judges the receiver's verdict (retry_settle) */
	else if (p->striped)
		verify_conclude_striped(s);
	else if (cfg->verify)
		verify_conclude(&p->verify, s);
	if (cfg->seq && s->received.seq.lost > 0)
		failure_set(&s->failure, EXIT_PEER,
		            "%llu datagrams lost (--seq found gaps in the sequence numbers)",
		            (unsigned long long)s->received.seq.lost);
	if (rt != NULL)
		retry_settle(rt, s, start + (s->sent.bytes - sent_before));
}

/*
 * One session on ep: the opening, the relay, the conclusion; rt: the
 * sender's --retry state across connections, or NULL. Its exit status, and
 * in *phase where it stopped.
 */
int session_run(struct session *s, struct session_parts *p, struct endpoint *ep, struct retry *rt,
                enum session_phase *phase)
{
	uint64_t sent_before = s->sent.bytes;

	memset(p, 0, sizeof *p);
	*phase = PHASE_OPENING;
	if (session_open(s, p, ep, rt) == 0) {
		*phase = PHASE_RELAY;
		session_relay(s, p, rt);
		session_conclude(s, p, rt, s->resume.offset, sent_before);
	}
	/* -k --resume: a lost --retry session is held for its sender */
	retry_end(p->retry, s);
	p->retry = NULL;
	return s->failure.status;
}

/*
 * How a session's connections close. A failed one resets them, so that the
 * peer fails too instead of taking a short stream for a whole one; unless
 * the peer must read our last words (a refused --resume's answer, the hello
 * of a --verify the peer does not run): then a plain close.
 */
void session_close(struct session *s, struct session_parts *p, struct endpoint *ep)
{
	int reset = s->failure.status != EXIT_OK && !s->close_plainly;

	if (reset)
		endpoint_abort(s->cfg, ep);
	reliable_close(&p->reliable);
	if (p->chained)
		chain_close(&p->chain, s->cfg, reset);
	p->chained = 0;
	if (p->striped)
		stripe_close(&p->stripe, reset);
	else if (p->stripe.growth != NULL)
		stripe_growth_free(p->stripe.growth);
	p->striped = 0;
	p->stripe.growth = NULL;
	s->receivers = NULL; /* --chain's, the group's: gone with them */
	s->nreceivers = 0;
	endpoint_close(ep);
}

/* A session's last words: the report, its warnings and its error line; then the close. */
int session_end(struct session *s, struct session_parts *p, struct endpoint *ep)
{
	report_print(s, 1);
	if (s->received.truncated > 0)
		log_warn("%llu datagrams truncated (larger than the %zu-byte receive buffer)",
		         (unsigned long long)s->received.truncated, s->receive_buffer);
	if (s->failure.status != EXIT_OK)
		log_error("%s", s->failure.why);
	session_close(s, p, ep);
	return s->failure.status;
}
