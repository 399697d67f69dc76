/*
 * retry-flow.c: what --retry plugs into a session's relay. The receiver
 * confirms the offset it has written (per MiB or 50 ms, whichever comes
 * first) on the connection's other direction, which carries nothing else,
 * and gives way to a new connection while this one is silent (the sender's
 * retry, after a black hole): a relay agent. The sender takes the
 * confirmations (its receiving flow's sink, on one connection or on -P's
 * connection 0), and from a pipe reads stdin through the replay buffer,
 * which keeps what it read until they free it (its sending flow's source).
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/compat.h"
#include "fastcat.h"
#include "net/net.h"
#include "relay/flow.h"
#include "retry/retry.h"

/* ---------------------------------------------------------------- the sender */

/*
 * A read of a pipe sender's stream, at most want bytes (and at most what the
 * ring has room for): what the ring holds past next goes again first, then
 * fd, whose bytes the ring keeps. read()'s result.
 */
static ssize_t replay_source_read(void *ctx, int fd, void *dst, size_t want)
{
	struct replay *r = ctx;
	ssize_t n;

	if (r->next < r->filled)
		return (ssize_t)replay_resend(r, dst, want);
	n = read(fd, dst, want);
	if (n > 0)
		replay_keep(r, dst, (size_t)n);
	return n;
}

static size_t replay_source_room(const void *ctx)
{
	return replay_room(ctx);
}

/*
 * One whole message: a confirmation raises the offset, and the ring drops
 * what it covers; the receiver's last word and its --verify verdict (of the
 * file up to the confirmation before it) are kept for retry_settle. 0, or
 * -1 for bytes that are none of them.
 */
static int take_message(struct retry *rt)
{
	uint64_t offset;

	if (retry_stop_seen(rt->part)) {
		if (retry_stop_decode(rt->part, &rt->stop) != 0)
			return -1;
		if (rt->stop.offset > rt->confirmed)
			rt->confirmed = rt->stop.offset;
		return 0;
	}
	if (retry_verdict_seen(rt->part)) {
		if (!rt->verify || rt->verdict_seen ||
		    retry_verdict_decode(rt->part, &rt->verdict_digest) != 0)
			return -1;
		rt->verdict_seen = 1;
		return 0;
	}
	if (retry_confirm_decode(rt->part, &offset) != 0 ||
	    (rt->ring != NULL && replay_confirm(rt->ring, offset) != 0))
		return -1;
	if (offset > rt->confirmed)
		rt->confirmed = offset;
	return 0;
}

/*
 * The len bytes at p of the receiver's direction are all confirmations, up
 * to its last word, taken whole (a piece cut by a read waits in rt->part);
 * what follows a last word is not looked at. 0, or -1 for bytes that are
 * none of them.
 */
int retry_confirmations_take(struct retry *rt, const unsigned char *p, size_t len)
{
	size_t used = 0;

	while (used < len && rt->stop.reason == 0) {
		size_t take = RETRY_CONFIRM_BYTES - rt->parted;

		if (take > len - used)
			take = len - used;
		memcpy(rt->part + rt->parted, p + used, take);
		rt->parted += take;
		used += take;
		if (rt->parted < RETRY_CONFIRM_BYTES)
			break;
		rt->parted = 0;
		if (take_message(rt) != 0)
			return -1;
	}
	return 0;
}

/* The sender's receiving flow: confirmations; the receiver's last word ends the relay. */
static int confirmations_take(void *ctx, struct flow *f, const unsigned char *p, size_t len)
{
	struct retry *rt = ctx;

	if (retry_confirmations_take(rt, p, len) != 0)
		return flow_fail(
		    f, EXIT_CONNECT,
		    "--retry: the receiver sent a confirmation this fastcat does not know");
	if (rt->stop.reason != 0)
		return flow_fail(f, EXIT_PEER_WRITE, "the receiver stopped: its stdout failed");
	return 0;
}

/*
 * The sender, as a session ends: the bytes the relay did not read (it ended
 * on a failed send, the receiver's reset) may hold the receiver's last
 * word; they are taken as the relay would have.
 */
void retry_stop_read(struct retry *rt, const struct session *s)
{
	unsigned char buf[RETRY_CONFIRM_BYTES * 16];
	ssize_t n;

	while (rt->stop.reason == 0 && (n = recv(s->ep->fd, buf, sizeof buf, MSG_DONTWAIT)) > 0)
		if (retry_confirmations_take(rt, buf, (size_t)n) != 0)
			return;
}

/* ---------------------------------------------------------------- the receiver */

/*
 * The receiver's slots: the socket while a confirmation waits for room,
 * and the listener once the connection has been silent RETRY_STALE (not
 * before: a connection waiting there would wake every poll).
 */
static int agent_poll_events(void *ctx, const struct relay *r, struct pollfd *pfd, int max,
                             double now)
{
	const struct retry *rt = ctx;
	const struct session *s = rt->s;
	int n = 0;

	if (rt->blocked && n < max)
		pfd[n++] = (struct pollfd){.fd = s->ep->fd, .events = POLLOUT};
	if (s->listener != NULL && s->listener->fd >= 0 &&
	    now - relay_idle_since(r) >= RETRY_STALE && n < max)
		pfd[n++] = (struct pollfd){.fd = s->listener->fd, .events = POLLIN};
	return n;
}

static int agent_poll_result(void *ctx, struct relay *r, const struct pollfd *pfd, int n,
                             double now)
{
	struct retry *rt = ctx;

	(void)r;
	(void)now;
	for (int i = 0; i < n; i++) {
		if (pfd[i].revents == 0)
			continue;
		if (pfd[i].fd == rt->s->ep->fd)
			rt->blocked = 0;
		else
			rt->newcomer = 1;
	}
	return 0;
}

/* When the receiver needs a turn with no event: a confirmation's 50 ms, the silence's 1 s. */
static double agent_due(const void *ctx, const struct relay *r, double now)
{
	const struct retry *rt = ctx;
	const struct session *s = rt->s;
	double due = -1, stale = relay_idle_since(r) + RETRY_STALE;

	if (rt->pending_since > 0)
		due = rt->pending_since + rt->delay;
	if (s->listener != NULL && s->listener->fd >= 0 && stale > now && (due < 0 || stale < due))
		due = stale;
	return due;
}

/* Send what is left of the confirmation on its way; the socket's failures are the relay's. */
static void confirm_push(struct retry *rt, int last)
{
	int fd = rt->s->ep->fd;
	unsigned char *p = rt->out + RETRY_CONFIRM_BYTES - rt->out_left;
	ssize_t n;

	if (last) { /* the sender waits for the end's before it calls the session done */
		handshake_move(fd, p, rt->out_left, 1, clock_now() + 2);
		rt->out_left = 0;
		return;
	}
	n = send(fd, p, rt->out_left, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n > 0)
		rt->out_left -= (size_t)n;
	else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		rt->blocked = 1;
	else if (n < 0 && errno != EINTR)
		rt->out_left = 0; /* the connection is gone: the receive side says why */
}

/*
 * --verify, after the end's confirmation: the XXH64 of the file up to it (the
 * bytes before this connection read back at its opening, then what it wrote),
 * waited for; the sender compares.
 */
static void verdict_send(struct retry *rt, struct relay *r)
{
	struct session *s = rt->s;
	const struct flow *f = relay_flow(r, FLOW_RECEIVE);
	unsigned char msg[RETRY_VERDICT_BYTES];

	s->verdict.delivered_bytes = s->resume.offset + s->received.bytes;
	s->verdict.delivered_digest = digest_final(&f->stats->digest);
	retry_verdict_encode(msg, s->verdict.delivered_digest);
	handshake_move(s->ep->fd, msg, sizeof msg, 1, clock_now() + 2);
	rt->verdict_sent = 1;
}

/* A confirmation of written on its way: written passed the last one told. */
static void confirm_queue(struct retry *rt, uint64_t written)
{
	retry_confirm_encode(rt->out, written);
	rt->out_left = RETRY_CONFIRM_BYTES;
	rt->told = written;
}

/*
 * The receiver's turn: confirm what it wrote when a MiB has passed, 50 ms
 * went by, or the sender's EOF came (then at once, and waited for); give
 * way to a new connection while this one is silent.
 */
static int agent_turn(void *ctx, struct relay *r, double now)
{
	struct retry *rt = ctx;
	const struct session *s = rt->s;
	uint64_t written = s->resume.offset + s->received.bytes;

	if (rt->newcomer)
		return failure_set(&relay_session(r)->failure, EXIT_PEER,
		                   "--retry: nothing from %s for %g s, and a new connection is "
		                   "waiting: taken for the sender's retry",
		                   s->ep->peer, RETRY_STALE);
	if (!relay_flow(r, FLOW_RECEIVE)->running) {
		/* the sender's EOF came (the flow synced at its end): what is on its way, then the
		 * end, waited for */
		if (rt->out_left > 0)
			confirm_push(rt, 1);
		if (written > rt->told) {
			confirm_queue(rt, written);
			confirm_push(rt, 1);
		}
		if (rt->verify && !rt->verdict_sent && relay_flow(r, FLOW_RECEIVE)->err == 0 &&
		    relay_session(r)->failure.status == EXIT_OK)
			verdict_send(rt, r);
		return 0;
	}
	if (written > rt->told && rt->pending_since == 0)
		rt->pending_since = now;
	if (rt->out_left == 0 && written > rt->told &&
	    (written - rt->told >= rt->every || now - rt->pending_since >= rt->delay)) {
		/* --sync: what it confirms is on disk */
		if (flow_sync(relay_flow(r, FLOW_RECEIVE)) != 0)
			return relay_flow_fail(r, FLOW_RECEIVE);
		confirm_queue(rt, written);
		rt->pending_since = 0;
	}
	if (rt->out_left > 0 && !rt->blocked)
		confirm_push(rt, 0);
	return 0;
}

/* The loop is over: a receiver whose stdout failed says so (retry-stop.c). */
static void agent_stop(void *ctx, struct relay *r)
{
	struct retry *rt = ctx;

	(void)r;
	if (rt->s->write_errno != 0)
		retry_stop_send(rt, rt->s);
}

static const struct relay_agent confirm_agent = {
    .turn = agent_turn,
    .stop = agent_stop,
    .poll_events = agent_poll_events,
    .poll_result = agent_poll_result,
    .due = agent_due,
};

/* ---------------------------------------------------------------- both */

/*
 * A --retry session goes one way: the receiver's stdin is not read, the
 * sender's stdout not written. The sender takes the confirmations, and from
 * a pipe reads through the replay buffer; the receiver confirms.
 */
void retry_plug(struct retry *rt, struct session *s, struct relay_setup *rs)
{
	struct flow_setup *send = &rs->flows[FLOW_SEND], *recv = &rs->flows[FLOW_RECEIVE];
	int listen = s->cfg->listen;

	rt->s = s;
	send->enabled = send->enabled && !listen;
	recv->discard = recv->discard || !listen;
	if (listen) {
		relay_add_agent(rs, &confirm_agent, rt);
		return;
	}
	recv->sink = (struct flow_sink){confirmations_take, rt};
	if (rt->ring != NULL)
		send->source = (struct flow_source){
		    replay_source_read, replay_source_room, rt->ring,
		    "--retry keeps what it reads from a pipe in its replay buffer"};
}
