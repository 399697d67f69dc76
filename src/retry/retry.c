/*
 * retry.c: --retry, the sender: connect, resume and relay, and after a
 * connection that ended abnormally (reset, -w, a link down, EPIPE) do it
 * again, up to N times in a row without progress, waiting --retry-wait
 * doubled each time up to 8 s; with -P N, a whole striped session each
 * time. The report totals all connections.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fastcat.h"
#include "retry/retry.h"
#include "stripe/stripe.h"
#include "net/net.h"
#include "relay/relay.h"
#include "report/report.h"
#include "resume/resume.h"

/* Where a connection's attempt stopped. */
enum retry_phase { PHASE_CONNECT, PHASE_OPENING, PHASE_RELAY };

/* A session id no other sender has: 64 random bits (0 is nobody's). */
static uint64_t session_id(void)
{
	uint64_t id = 0;
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (read(fd, &id, sizeof id) != (ssize_t)sizeof id)
			id = 0;
		close(fd);
	}
	if (id == 0) /* no /dev/urandom: the clock and the pid are unlikely to repeat */
		id = ((uint64_t)(clock_now() * 1e9) << 16) ^ (uint64_t)getpid();
	return id ? id : 1;
}

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

/* Sleep secs, unless a stop signal comes. 0, or -1 when one did. */
static int retry_sleep(double secs)
{
	double until = clock_now() + secs, left;

	while (!signal_stop && (left = until - clock_now()) > 0)
		poll(NULL, 0, (int)(left * 1000) + 1);
	return signal_stop ? -1 : 0;
}

/* Each connection starts from what the last left: the totals stay, the outcome goes. */
static void connection_reset(struct session *s, struct retry *rt)
{
	s->exit_status = EXIT_OK;
	s->error[0] = '\0';
	s->resume.on = s->resume.graceful = s->resume.joined = 0;
	s->sent.finished = s->received.finished = 0;
	memset(&s->verify, 0, sizeof s->verify);
	rt->parted = 0;
	rt->lost_errno = 0;
	rt->status = RETRY_NEW;
}

/* The session is done when stdin's EOF went out and the receiver confirmed up to it. */
static int connection_check(struct session *s, const struct retry *rt, uint64_t end)
{
	if (s->exit_status != EXIT_OK)
		return s->exit_status;
	if (s->sent.finished != 0 && rt->confirmed >= end)
		return EXIT_OK;
	return s->exit_status = log_format(s->error, sizeof s->error, EXIT_PEER,
	                                   "%s closed before it confirmed the end (%llu bytes)",
	                                   s->ep->peer, (unsigned long long)end);
}

/*
 * One connection (-P: one striped session): connect, the opening, the
 * relay. Its status; *phase says where it stopped.
 */
static int retry_connection(struct session *s, struct retry *rt, struct endpoint *ep,
                            enum retry_phase *phase)
{
	const struct config *cfg = s->cfg;
	uint64_t start, before;
	int first = !rt->joined;

	connection_reset(s, rt);
	*phase = PHASE_CONNECT;
	if ((s->exit_status = endpoint_connect(cfg, ep, s->error, sizeof s->error)) != 0)
		return s->exit_status;
	*phase = PHASE_OPENING;
	/* -P: the whole striped session again, a new one, joined to the same --retry session */
	if (cfg->parallel != 0 &&
	    (s->exit_status = stripe_connect(cfg, ep, s->error, sizeof s->error)) != 0)
		return s->exit_status;
	if (resume_start(s) != 0)
		return s->exit_status;
	if (first && rt->ring != NULL)
		replay_start(rt->ring, s->resume.offset);
	if (first)
		rt->confirmed = s->resume.offset;
	rt->joined = 1;
	*phase = PHASE_RELAY;
	start = s->resume.offset;
	before = s->sent.bytes;
	relay_run(s, STDIN_FILENO, STDOUT_FILENO);
	return connection_check(s, rt, start + (s->sent.bytes - before));
}

/*
 * May this failure be retried? Connecting, always (the receiver may not be
 * up yet); the opening, once a receiver took us (before: it is not a
 * --resume receiver, and retrying will not change that), or when it is
 * busy with another sender; the relay, when the receiver keeps listening.
 * A file that differs, a stdin that fails or a stop signal never are.
 */
static int retriable(const struct session *s, const struct retry *rt, enum retry_phase phase)
{
	int st = s->exit_status;
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
static void retry_tell(const struct session *s, const struct retry *rt, enum retry_phase phase,
                       unsigned n, double wait)
{
	char at[32];

	units_format_bytes(rt->confirmed, at, sizeof at);
	if (phase == PHASE_RELAY)
		log_verbose("connection lost after %s (%s); retry %u/%u in %.1f s", at,
		            rt->lost_errno ? strerror(rt->lost_errno) : s->error, n, s->cfg->retry,
		            wait);
	else
		log_verbose("%s; retry %u/%u in %.1f s", s->error, n, s->cfg->retry, wait);
}

/* The final word on a session that failed: why, and what the receiver has. */
static void retry_give_up(struct session *s, const struct retry *rt, enum retry_phase phase,
                          unsigned tries)
{
	char why[sizeof s->error];
	const char *advice = "";

	if (s->exit_status == EXIT_OK)
		return;
	if (phase == PHASE_RELAY && !rt->keeps && retriable(s, rt, PHASE_OPENING))
		advice = "; not retried: the receiver does not keep listening (give it -l -k "
		         "--resume)";
	snprintf(why, sizeof why, "%s", s->error);
	if (tries >= s->cfg->retry && retriable(s, rt, phase)) {
		s->exit_status = rt->joined ? EXIT_PEER : EXIT_CONNECT;
		log_format(s->error, sizeof s->error, s->exit_status,
		           "gave up after %u retries: %s; the receiver confirmed %llu bytes", tries,
		           why, (unsigned long long)rt->confirmed);
	} else if (rt->joined) {
		log_format(s->error, sizeof s->error, s->exit_status,
		           "%s%s; the receiver confirmed %llu bytes", why, advice,
		           (unsigned long long)rt->confirmed);
	}
}

static int retry_setup(const struct config *cfg, struct retry *rt)
{
	struct stat st;

	memset(rt, 0, sizeof *rt);
	rt->cfg = cfg;
	rt->id = session_id();
	rt->hold = hold_seconds(cfg);
	if (fstat(STDIN_FILENO, &st) == 0 && S_ISREG(st.st_mode) &&
	    (rt->base = lseek(STDIN_FILENO, 0, SEEK_CUR)) >= 0)
		return 0; /* a file: a new connection seeks to where the receiver stands */
	rt->ring = replay_new((size_t)cfg->replay_buffer);
	return rt->ring != NULL ? 0 : -1;
}

/* --retry without -l: sessions until one ends well, or the retries run out. Its exit status. */
int retry_client(const struct config *cfg)
{
	struct endpoint ep = {.fd = -1};
	struct session s;
	struct retry rt;
	enum retry_phase phase;
	unsigned tries = 0;
	uint64_t first_offset = 0;

	if (retry_setup(cfg, &rt) != 0)
		log_fatal(EXIT_RUNTIME, "--replay-buffer: cannot allocate %llu bytes",
		          (unsigned long long)cfg->replay_buffer);
	memset(&s, 0, sizeof s);
	s.cfg = cfg;
	s.ep = &ep;
	s.retry = &rt;
	s.sent.started = s.received.started = clock_now();
	s.sent.read_size = s.received.read_size = cfg->read_size;
	s.sent.write_size = s.received.write_size = cfg->write_size;
	for (;;) {
		uint64_t progress = rt.confirmed;
		int joined = rt.joined;
		double wait;

		int rc = retry_connection(&s, &rt, &ep, &phase);

		if (!joined && rt.joined)
			first_offset = s.resume.offset;
		if (rc == EXIT_OK)
			break;
		if (rt.confirmed > progress)
			tries = 0; /* N in a row without progress: a long transfer may lose many */
		if (!retriable(&s, &rt, phase) || tries >= cfg->retry)
			break;
		wait = retry_wait(cfg, ++tries);
		s.resume.retries++;
		retry_tell(&s, &rt, phase, tries, wait);
		endpoint_abort(cfg, &ep);
		endpoint_close(&ep);
		if (retry_sleep(wait) != 0) {
			log_format(s.error, sizeof s.error, EXIT_RUNTIME, "interrupted by %s",
			           signals_stop_name());
			s.exit_status = EXIT_RUNTIME;
			break;
		}
	}
	s.resume.offset = first_offset; /* the report: where the whole session started */
	s.resume.on = rt.joined;
	s.resume.confirmed = rt.confirmed;
	retry_give_up(&s, &rt, phase, tries);
	report_print(&s, 1);
	if (s.exit_status != EXIT_OK) {
		log_error("%s", s.error);
		if (ep.fd >= 0 && !s.resume.graceful)
			endpoint_abort(cfg, &ep);
	}
	endpoint_close(&ep);
	replay_free(rt.ring);
	return s.exit_status;
}
