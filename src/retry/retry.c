/*
 * retry.c: --retry, the sender's rules across connections: after a session
 * that ended abnormally (reset, -w, a link down, EPIPE), another one, up to
 * N times in a row without progress, waiting --retry-wait doubled each time
 * up to 8 s; with -P N, a whole striped session each time. cli/transfer.c
 * runs the loop; this says whether, when, and what to tell.
 */
#include "config.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fastcat.h"
#include "net/net.h"
#include "retry/retry.h"

/* The wait before retry n (1, 2, ...): --retry-wait, doubled each time, at most 8 s. */
static double retry_wait(const struct config *cfg, unsigned n)
{
	double w = (double)cfg->retry_wait_ms / 1000;

	for (unsigned i = 1; i < n && w < RETRY_WAIT_MAX; i++)
		w *= 2;
	return w < RETRY_WAIT_MAX ? w : RETRY_WAIT_MAX;
}

/*
 * Seconds the receiver should hold a lost session for us: all our waits,
 * and a connect for each (-w, or the kernel's SYN retries).
 */
static uint32_t hold_seconds(const struct config *cfg)
{
	double connect =
	    cfg->timeout_ms >= 0 ? (double)cfg->timeout_ms / 1000 : RETRY_CONNECT_BOUND;
	double hold = 0;

	for (unsigned n = 1; n <= cfg->retry; n++)
		hold += retry_wait(cfg, n) + connect + 5; /* + the opening's patience */
	return hold < UINT32_MAX ? (uint32_t)hold + 1 : UINT32_MAX;
}

/*
 * The sender's state across its connections: a session id from the kernel's
 * random source, the hold it asks for, and for a pipe the replay buffer (a
 * file on stdin seeks instead, from where it started). NULL when the buffer
 * cannot be had.
 */
struct retry *retry_new(const struct config *cfg)
{
	struct retry *rt = calloc(1, sizeof *rt);
	struct stat st;

	if (rt == NULL)
		return NULL;
	rt->cfg = cfg;
	rt->verify = cfg->verify;
	rt->id = random_id();
	rt->hold = hold_seconds(cfg);
	if (fstat(STDIN_FILENO, &st) == 0 && S_ISREG(st.st_mode) &&
	    (rt->base = lseek(STDIN_FILENO, 0, SEEK_CUR)) >= 0)
		return rt;
	rt->base = -1;
	rt->ring = replay_new((size_t)cfg->replay_buffer);
	if (rt->ring != NULL)
		return rt;
	free(rt);
	return NULL;
}

void retry_free(struct retry *rt)
{
	if (rt == NULL)
		return;
	replay_free(rt->ring);
	free(rt);
}

/* A new connection starts from what the last left: the totals stay, its leftovers go. */
void retry_restart(struct retry *rt)
{
	rt->parted = 0;
	rt->status = RETRY_NEW;
}

/*
 * The opening went through: the first one says where the whole transfer
 * starts. A pipe's --verify digest goes on from the bytes before it (read
 * and dropped there), through each byte the ring keeps.
 */
void retry_opened(struct retry *rt, const struct session *s)
{
	if (!rt->joined && rt->ring != NULL) {
		replay_start(rt->ring, s->resume.offset);
		rt->ring->digesting = rt->cfg->checksum; /* --verify too */
		if (s->prefix.sent > 0)
			rt->ring->digest = s->prefix.digest;
		else
			digest_init(&rt->ring->digest);
	}
	if (!rt->joined)
		rt->confirmed = s->resume.offset;
	rt->joined = 1;
}

/*
 * --verify: the receiver's verdict, the XXH64 of its file up to the end it
 * confirmed, against the stream's: a pipe's as the ring kept it (each byte
 * once, however often it was sent), a file's as this session sent it after
 * the prefix read back at its opening. A verdict that differs is final.
 */
static int retry_judge(struct retry *rt, struct session *s, uint64_t end)
{
	struct verdict *vd = &s->verdict;
	uint64_t mine = digest_final(rt->ring != NULL ? &rt->ring->digest : &s->sent.digest);

	if (!rt->verdict_seen)
		return failure_set(&s->failure, EXIT_PEER,
		                   "--verify: %s closed before its verdict on the %llu bytes",
		                   s->ep->peer, (unsigned long long)end);
	vd->verdict_seen = 1;
	vd->confirmed_bytes = rt->confirmed;
	vd->confirmed_digest = rt->verdict_digest;
	if (rt->confirmed != end || rt->verdict_digest != mine) {
		rt->fatal = 1;
		return failure_set(&s->failure, EXIT_VERIFY,
		                   "--verify: sent %llu bytes (xxh64 %016llx) but the receiver "
		                   "wrote %llu (xxh64 %016llx)",
		                   (unsigned long long)end, (unsigned long long)mine,
		                   (unsigned long long)rt->confirmed,
		                   (unsigned long long)rt->verdict_digest);
	}
	vd->verified = 1;
	return EXIT_OK;
}

/*
 * After the relay: the session is done when stdin's EOF went out and the
 * receiver confirmed up to it, end (the stream offset of stdin's end). A
 * receiver that said its stdout failed ends the transfer: that, not how
 * the connection then ended, is the news, and no retry would cure it. Its
 * status.
 */
int retry_settle(struct retry *rt, struct session *s, uint64_t end)
{
	if (rt->ring != NULL && rt->ring->digesting) /* the stream's, not this connection's */
		s->sent.digest = rt->ring->digest;
	if (s->failure.status != EXIT_OK)
		retry_stop_read(rt, s);
	if (rt->stop.reason != 0) {
		rt->fatal = 1;
		s->failure.status = EXIT_OK;
		return failure_set(&s->failure, EXIT_PEER_WRITE, "the receiver could not %s: %s",
		                   rt->stop.what == RETRY_FAILED_SYNC ? "sync its file to disk"
		                                                      : "write",
		                   retry_reason_name(rt->stop.reason));
	}
	if (s->failure.status != EXIT_OK)
		return s->failure.status;
	if (s->sent.finished == 0 || rt->confirmed < end)
		return failure_set(&s->failure, EXIT_PEER,
		                   "%s closed before it confirmed the end (%llu bytes)",
		                   s->ep->peer, (unsigned long long)end);
	return rt->verify ? retry_judge(rt, s, end) : EXIT_OK;
}

/*
 * May this failure be retried? Connecting, always (the receiver may not be
 * up yet); the opening, once a receiver took us (before: it is not a
 * --resume receiver, and retrying will not change that), or when it is
 * busy with another sender; the relay, when the receiver keeps listening.
 * A file that differs, a stdin that fails or a stop signal never are.
 */
static int retriable(const struct session *s, const struct retry *rt, enum session_phase phase)
{
	int st = s->failure.status;
	int network = st == EXIT_CONNECT || st == EXIT_TIMEOUT || st == EXIT_PEER;

	if (signal_stop || !network || rt->fatal)
		return 0;
	switch (phase) {
	case PHASE_CONNECT: return 1;
	case PHASE_OPENING: return rt->joined || rt->status == RETRY_BUSY;
	default: return rt->keeps;
	}
}

/* -v: "connection lost after 1.20 GiB (Connection reset by peer); retry 1/5 in 0.5 s". */
static void retry_tell(const struct session *s, const struct retry *rt, enum session_phase phase,
                       double wait)
{
	char at[32];

	units_format_bytes(rt->confirmed, at, sizeof at);
	if (phase == PHASE_RELAY)
		log_verbose("connection lost after %s (%s); retry %u/%u in %.1f s", at,
		            s->lost_errno ? strerror(s->lost_errno) : s->failure.why, rt->tries,
		            s->cfg->retry, wait);
	else
		log_verbose("%s; retry %u/%u in %.1f s", s->failure.why, rt->tries, s->cfg->retry,
		            wait);
}

/*
 * After a session that failed in phase: seconds to wait before the next
 * connection, or -1 to give up. before: what the receiver had confirmed when
 * the session started (N in a row without progress: a long transfer may
 * lose many connections).
 */
double retry_next(struct retry *rt, struct session *s, enum session_phase phase, uint64_t before)
{
	double wait;

	rt->phase = phase;
	if (rt->confirmed > before)
		rt->tries = 0;
	if (!retriable(s, rt, phase) || rt->tries >= s->cfg->retry)
		return -1;
	wait = retry_wait(s->cfg, ++rt->tries);
	s->resume.retries++;
	retry_tell(s, rt, phase, wait);
	return wait;
}

/* Sleep secs, unless a stop signal comes. 0, or -1 when one did. */
int retry_pause(double secs)
{
	double until = clock_now() + secs, left;

	while (!signal_stop && (left = until - clock_now()) > 0)
		poll(NULL, 0, (int)(left * 1000) + 1);
	return signal_stop ? -1 : 0;
}

/*
 * The final word on a transfer that failed: the last connection's failure
 * told again with why no more were tried, and what the receiver has.
 */
void retry_give_up(const struct retry *rt, struct session *s)
{
	struct failure last = s->failure;
	const char *advice = "";
	int ran_out;

	if (last.status == EXIT_OK)
		return;
	if (rt->phase == PHASE_RELAY && !rt->keeps && retriable(s, rt, PHASE_OPENING))
		advice = "; not retried: the receiver does not keep listening (give it -l -k "
		         "--resume)";
	ran_out = rt->tries >= s->cfg->retry && retriable(s, rt, rt->phase);
	s->failure.status = EXIT_OK;
	if (ran_out)
		failure_set(&s->failure, rt->joined ? EXIT_PEER : EXIT_CONNECT,
		            "gave up after %u retries: %s; the receiver confirmed %llu bytes",
		            rt->tries, last.why, (unsigned long long)rt->confirmed);
	else if (rt->joined && !rt->verdict_seen) /* a verdict says what the receiver has */
		failure_set(&s->failure, last.status, "%s%s; the receiver confirmed %llu bytes",
		            last.why, advice, (unsigned long long)rt->confirmed);
	else
		s->failure = last;
}
