/*
 * retry-join.c: --retry's part of the --resume opening: after its hello the
 * sender says which session it is (a join), and the receiver answers new,
 * resumed or busy (an ack); a lost connection's session is held for the
 * sender's return, and a pipe sender goes on from its replay buffer
 * (doc/resume-protocol.md, "--retry").
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "fastcat.h"
#include "base/base.h"
#include "net/net.h"
#include "retry/retry.h"

/* Seconds a join and its ack may take: a receiver that took the offer answers at once. */
#define JOIN_PATIENCE 5.0

/* The sender's reading of the ack: busy, unknown, or a pipe's session the receiver forgot. */
static int sender_take_ack(struct retry *rt, struct session *s, const struct retry_ack *a)
{
	rt->status = (int)a->status;
	if (a->status == RETRY_BUSY) {
		s->close_plainly = 1;
		return failure_set(&s->failure, EXIT_CONNECT,
		                   "--retry: %s holds another sender's session (for up to %u s "
		                   "more); it refuses others meanwhile",
		                   s->ep->peer, (unsigned)a->busy);
	}
	if (a->verify != rt->verify) {
		s->close_plainly = 1;
		rt->fatal = 1;
		return failure_set(&s->failure, EXIT_VERIFY,
		                   a->verify ? "--retry: %s runs --verify; give --verify at this "
		                               "end too"
		                             : "--verify: %s runs without --verify (give it -l -k "
		                               "--resume --verify)",
		                   s->ep->peer);
	}
	if (a->status == RETRY_NEW && rt->joined && rt->ring != NULL) {
		rt->forgot = 1;
		log_verbose("--retry: %s no longer holds this session (restarted, or its hold ran "
		            "out): its file's tail is checked against the last bytes it confirmed",
		            s->ep->peer);
	}
	if (!a->keeps && !rt->joined)
		log_warn("--retry: %s does not keep listening: a lost connection cannot be "
		         "retried (give it -l -k --resume)",
		         s->ep->peer);
	rt->keeps = a->keeps;
	return 0;
}

/* The sender, after its hello: the join, then the receiver's ack. 0, or the status. */
int retry_join_send(void *ctx, struct session *s)
{
	struct retry *rt = ctx;
	struct retry_join j = {.verify = rt->verify,
	                       .id = rt->id,
	                       .hold = rt->hold,
	                       .buffer = rt->ring ? (uint32_t)(rt->ring->cap / KIB) : 0};
	unsigned char msg[RETRY_JOIN_BYTES], ack[RETRY_ACK_BYTES];
	struct retry_ack a;
	size_t got;

	retry_join_encode(msg, &j);
	if (handshake_move(s->ep->fd, msg, sizeof msg, 1, clock_now() + JOIN_PATIENCE) !=
	    sizeof msg)
		return failure_set(&s->failure, EXIT_PEER, "--retry: send to %s: %s", s->ep->peer,
		                   strerror(errno ? errno : EPIPE));
	got = handshake_move(s->ep->fd, ack, sizeof ack, 0, clock_now() + JOIN_PATIENCE);
	if (got < sizeof ack && errno == EINTR)
		return failure_set(&s->failure, EXIT_RUNTIME, "interrupted by %s",
		                   signals_stop_name());
	if (got < sizeof ack)
		return failure_set(&s->failure, EXIT_CONNECT,
		                   "--retry: %s did not take the session (%s): it needs a fastcat "
		                   "that knows --retry, with -l -k --resume",
		                   s->ep->peer,
		                   errno == 0           ? "it closed"
		                   : errno == ETIMEDOUT ? "no answer"
		                                        : strerror(errno));
	if (retry_ack_decode(ack, &a) != 0)
		return failure_set(&s->failure, EXIT_CONNECT,
		                   "--retry: %s sent an ack this fastcat does not know",
		                   s->ep->peer);
	return sender_take_ack(rt, s, &a);
}

/* The receiver's --retry state for a join it took; NULL when out of memory. */
static struct retry *retry_from_join(const struct config *cfg, const struct retry_join *j,
                                     enum retry_status status)
{
	struct retry *rt = calloc(1, sizeof *rt);

	if (rt == NULL)
		return NULL;
	rt->cfg = cfg;
	rt->verify = j->verify;
	rt->id = j->id;
	rt->hold = j->hold;
	/* per MiB (--sync: per --sync-every), or 4 times a small replay buffer: a full one
	 * would wait for the delay */
	rt->every = cfg->sync ? cfg->sync_every : RETRY_CONFIRM_EVERY;
	if (j->buffer != 0 && (uint64_t)j->buffer * KIB / 4 < rt->every)
		rt->every = (uint64_t)j->buffer * KIB / 4;
	rt->delay = cfg->sync ? RETRY_SYNC_DELAY : RETRY_CONFIRM_DELAY;
	rt->status = (int)status;
	return rt;
}

/*
 * The receiver, on a join (msg: all its RETRY_JOIN_BYTES): take the
 * session, resume the one held for this sender, or refuse another's while
 * it is held. slot: a struct retry **, which gets the session's --retry
 * state. 0, or the status.
 */
int retry_join_receive(void *slot, struct session *s, const unsigned char *msg)
{
	struct listener *l = s->listener;
	uint32_t busy = l != NULL ? listener_busy_seconds(l) : 0;
	struct retry_ack a = {.keeps = s->cfg->keep_listening, .verify = s->cfg->verify};
	unsigned char ack[RETRY_ACK_BYTES];
	struct retry_join j;
	struct retry *rt;
	uint64_t held;

	if (retry_join_decode(msg, &j) != 0)
		return failure_set(&s->failure, EXIT_CONNECT,
		                   "--retry: %s sent a join this fastcat does not know",
		                   s->ep->peer);
	held = l != NULL ? l->held : 0;
	a.status = busy == 0 ? RETRY_NEW : j.id == held ? RETRY_RESUMED : RETRY_BUSY;
	a.busy = a.status == RETRY_BUSY ? busy : 0;
	retry_ack_encode(ack, &a);
	if (handshake_move(s->ep->fd, ack, sizeof ack, 1, clock_now() + JOIN_PATIENCE) !=
	    sizeof ack)
		return failure_set(&s->failure, EXIT_PEER, "--retry: send to %s: %s", s->ep->peer,
		                   strerror(errno ? errno : EPIPE));
	if (a.status == RETRY_BUSY) {
		s->close_plainly = 1;
		return failure_set(&s->failure, EXIT_CONNECT,
		                   "--retry: refused %s: another sender's session is held for its "
		                   "retry (up to %u s more)",
		                   s->ep->peer, (unsigned)busy);
	}
	if (j.verify != a.verify) { /* the sender reads our ack and says the same */
		s->close_plainly = 1;
		return failure_set(&s->failure, EXIT_VERIFY,
		                   j.verify
		                       ? "--verify: %s asks for --verify; give --verify at this "
		                         "end too"
		                       : "--verify: %s runs --retry without --verify; give "
		                         "--verify at both ends",
		                   s->ep->peer);
	}
	if ((rt = retry_from_join(s->cfg, &j, a.status)) == NULL)
		return failure_set(&s->failure, EXIT_RUNTIME, "--retry: out of memory");
	*(struct retry **)slot = rt;
	if (l != NULL) {
		l->held = j.id;
		l->held_until = 0; /* held while it is connected; the hold starts when it is lost */
		l->held_digest_ok &= a.status == RETRY_RESUMED;
	}
	log_verbose("--retry: %s session %016llx from %s",
	            a.status == RETRY_NEW ? "new" : "resumed", (unsigned long long)j.id,
	            s->ep->peer);
	return 0;
}

/* The sender from a pipe, on a connection after the first: the replay buffer has the data. */
int retry_join_replays(const void *ctx)
{
	const struct retry *rt = ctx;

	return rt->ring != NULL && rt->joined;
}

/*
 * ... from the receiver's length on; no stdin is read. The offer's window
 * (the file's last bytes) is checked against the buffer where it holds them:
 * always for a receiver that forgot the session (restarted), whose file may
 * be anyone's. 0, -1 when the window differs, or the status (the file ends
 * outside what the buffer holds, or a forgetful receiver's window is not in
 * it).
 */
int retry_join_rewind(void *ctx, struct session *s, uint64_t length, uint32_t window,
                      uint64_t digest)
{
	struct retry *rt = ctx;
	struct replay *r = rt->ring;
	uint64_t held;

	if (window <= length && replay_digest(r, length - window, window, &held) == 0) {
		if (held != digest) {
			s->close_plainly = 1;
			rt->fatal = 1;
			return -1;
		}
	} else if (rt->forgot && length >= r->oldest && length <= r->filled) {
		s->close_plainly = 1;
		rt->fatal = 1;
		return failure_set(
		    &s->failure, EXIT_PEER,
		    "--retry: %s no longer holds this session and its file's last "
		    "%u bytes before %llu are not all in the replay buffer (it "
		    "holds %llu to %llu), so the file cannot be checked; nothing sent",
		    s->ep->peer, (unsigned)window, (unsigned long long)length,
		    (unsigned long long)r->oldest, (unsigned long long)r->filled);
	}
	if (replay_rewind(r, length) == 0)
		return 0;
	s->close_plainly = 1;
	rt->fatal = 1;
	if (length > r->filled)
		return failure_set(&s->failure, EXIT_PEER,
		                   "--retry: the receiver's file (%llu bytes) is longer than what "
		                   "was sent (%llu); nothing sent",
		                   (unsigned long long)length, (unsigned long long)r->filled);
	return failure_set(&s->failure, EXIT_PEER,
	                   "--retry: the receiver's file ends at %llu, before the oldest byte the "
	                   "replay buffer holds (%llu): those bytes are gone; nothing sent",
	                   (unsigned long long)length, (unsigned long long)r->oldest);
}

/*
 * The receiver, as a session ends: a complete one lets the next sender in;
 * a lost one is held for its sender's return, for as long as it said it
 * may take, and the file is kept. rt is freed.
 */
void retry_end(struct retry *rt, const struct session *s)
{
	struct listener *l = s->listener;

	if (rt == NULL)
		return;
	/* a new session that failed before any data, or whose stdout failed, is nobody's to come
	 * back to */
	if (l != NULL && (s->failure.status == EXIT_OK || s->write_errno != 0 ||
	                  (!s->resume.on && rt->status == RETRY_NEW))) {
		l->held = 0;
		l->held_digest_ok = 0;
	} else if (l != NULL) {
		l->held_until = clock_now() + rt->hold;
		/* --verify: what its relay wrote, digested from byte 0 (the prefix read back or
		 * held); a connection lost before its relay changed nothing */
		if (s->resume.on) {
			l->held_digest_ok = rt->verify && s->prefix.received == s->resume.offset;
			l->held_length = s->resume.offset + s->received.bytes;
			l->held_digest = s->received.digest;
		}
		if (s->cfg->keep_listening)
			log_warn(
			    "--retry: the connection from %s was lost at byte %llu; the file is "
			    "kept for its retry, other senders refused for up to %u s",
			    s->ep->peer, (unsigned long long)(s->resume.offset + s->received.bytes),
			    (unsigned)rt->hold);
	}
	free(rt);
}
