/*
 * retry-relay.c: --retry while the relay runs. The receiver confirms the
 * offset it has written (per MiB or 50 ms, whichever comes first) on the
 * connection's other direction, which carries nothing else; the sender
 * takes the confirmations, and from a pipe keeps what it read in the
 * replay buffer until they free it. A receiver whose connection went
 * silent gives way to a new one: the sender's retry, after a black hole.
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
#include "base/base.h"
#include "relay/flow.h"
#include "retry/retry.h"

/*
 * A read of a pipe sender's stream, at most want bytes (and at most what the
 * ring has room for): what the ring holds past next goes again first, then
 * fd, whose bytes the ring keeps. read()'s result.
 */
ssize_t retry_replay_read(struct replay *r, int fd, void *dst, size_t want)
{
	ssize_t n;

	if (r->next < r->filled)
		return (ssize_t)replay_resend(r, dst, want);
	n = read(fd, dst, want);
	if (n > 0)
		replay_keep(r, dst, (size_t)n);
	return n;
}

/* The send flow from a pipe, into its buffer. */
ssize_t retry_flow_read(struct flow *f, size_t want)
{
	return retry_replay_read(f->replay, f->stdio, iobuf_tail(&f->buf), want);
}

/* One whole confirmation: the offset goes up, and the ring drops what it covers. */
static int take_confirmation(struct flow *f, struct retry *rt)
{
	uint64_t offset;

	if (retry_confirm_decode(rt->part, &offset) == 0 &&
	    (rt->ring == NULL || replay_confirm(rt->ring, offset) == 0)) {
		if (offset > rt->confirmed)
			rt->confirmed = offset;
		return 0;
	}
	snprintf(f->verify->why, sizeof f->verify->why,
	         "--retry: the receiver sent a confirmation this fastcat does not know");
	f->verify->why_status = EXIT_CONNECT;
	flow_failed(f, 0, EPROTO);
	return -1;
}

/*
 * The sender's receive flow: the len bytes at p, all confirmations, taken
 * whole (a piece cut by a read waits in rt->part); on one connection, or
 * on a striped session's connection 0. 0, or -1 for bytes that are not a
 * confirmation.
 */
int retry_take_confirms(struct flow *f, const unsigned char *p, size_t len)
{
	struct retry *rt = f->retry;
	size_t used = 0;

	while (used < len) {
		size_t take = RETRY_CONFIRM_BYTES - rt->parted;

		if (take > len - used)
			take = len - used;
		memcpy(rt->part + rt->parted, p + used, take);
		rt->parted += take;
		used += take;
		if (rt->parted < RETRY_CONFIRM_BYTES)
			break;
		rt->parted = 0;
		if (take_confirmation(f, rt) != 0)
			return -1;
	}
	return 0;
}

/* One connection: what the buffer holds is confirmations; nothing goes to stdout. */
int retry_flow_confirms(struct flow *f)
{
	size_t len = iobuf_len(&f->buf);

	if (retry_take_confirms(f, (const unsigned char *)iobuf_head(&f->buf), len) != 0)
		return -1;
	iobuf_consumed(&f->buf, len);
	return 0;
}

/* Only the receiver's side of a --retry session has slots, timers and a tick. */
static struct retry *receiving(const struct session *s)
{
	return s->cfg->listen ? s->retry : NULL;
}

/*
 * The receiver's slots: the socket while a confirmation waits for room,
 * and the listener once the connection has been silent RETRY_STALE (not
 * before: a connection waiting there would wake every poll).
 */
int retry_poll_events(const struct session *s, double idle_since, double now, struct pollfd *pfd)
{
	const struct retry *rt = receiving(s);
	int n = 0;

	if (rt == NULL)
		return 0;
	if (rt->blocked)
		pfd[n++] = (struct pollfd){.fd = s->ep->fd, .events = POLLOUT};
	if (s->listener != NULL && s->listener->fd >= 0 && now - idle_since >= RETRY_STALE)
		pfd[n++] = (struct pollfd){.fd = s->listener->fd, .events = POLLIN};
	return n;
}

void retry_poll_result(struct session *s, const struct pollfd *pfd, int n)
{
	struct retry *rt = receiving(s);

	for (int i = 0; rt != NULL && i < n; i++) {
		if (pfd[i].revents == 0)
			continue;
		if (pfd[i].fd == s->ep->fd)
			rt->blocked = 0;
		else
			rt->newcomer = 1;
	}
}

/* When the receiver needs a turn with no event: a confirmation's 50 ms, the silence's 1 s. */
double retry_due(const struct session *s, double idle_since)
{
	const struct retry *rt = receiving(s);
	double due = -1, stale = idle_since + RETRY_STALE;

	if (rt == NULL)
		return -1;
	if (rt->pending_since > 0)
		due = rt->pending_since + RETRY_CONFIRM_DELAY;
	if (s->listener != NULL && s->listener->fd >= 0 && stale > clock_now() &&
	    (due < 0 || stale < due))
		due = stale;
	return due;
}

/* Send what is left of the confirmation on its way; the socket's failures are the relay's. */
static void confirm_push(struct session *s, struct retry *rt, int last)
{
	unsigned char *p = rt->out + RETRY_CONFIRM_BYTES - rt->out_left;
	ssize_t n;

	if (last) { /* the sender waits for the end's before it calls the session done */
		handshake_move(s->ep->fd, p, rt->out_left, 1, clock_now() + 2);
		rt->out_left = 0;
		return;
	}
	n = send(s->ep->fd, p, rt->out_left, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n > 0)
		rt->out_left -= (size_t)n;
	else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		rt->blocked = 1;
	else if (n < 0 && errno != EINTR)
		rt->out_left = 0; /* the connection is gone: the receive side says why */
}

/*
 * The receiver's turn: confirm what it wrote when a MiB has passed, 50 ms
 * went by, or the sender's EOF came (then at once, and waited for); give
 * way to a new connection while this one is silent. 0, or the status that
 * ends the session with the reason in why.
 */
int retry_tick(struct session *s, int running, double now, char *why, size_t whylen)
{
	struct retry *rt = receiving(s);
	uint64_t written;

	if (rt == NULL)
		return 0;
	if (rt->newcomer)
		return log_format(why, whylen, EXIT_PEER,
		                  "--retry: nothing from %s for %g s, and a new connection is "
		                  "waiting: taken for the sender's retry",
		                  s->ep->peer, RETRY_STALE);
	written = s->resume.offset + s->received.bytes;
	if (!running) { /* the sender's EOF came: what is on its way, then the end, waited for */
		if (rt->out_left > 0)
			confirm_push(s, rt, 1);
		if (written > rt->told) {
			retry_confirm_encode(rt->out, written);
			rt->out_left = RETRY_CONFIRM_BYTES;
			rt->told = written;
			confirm_push(s, rt, 1);
		}
		return 0;
	}
	if (written > rt->told && rt->pending_since == 0)
		rt->pending_since = now;
	if (rt->out_left == 0 && written > rt->told &&
	    (written - rt->told >= rt->every || now - rt->pending_since >= RETRY_CONFIRM_DELAY)) {
		retry_confirm_encode(rt->out, written);
		rt->out_left = RETRY_CONFIRM_BYTES;
		rt->told = written;
		rt->pending_since = 0;
	}
	if (rt->out_left > 0 && !rt->blocked)
		confirm_push(s, rt, 0);
	return 0;
}
