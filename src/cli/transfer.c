/*
 * transfer.c: what one run of fastcat does with its sessions: a client's
 * one session; --retry's sessions until one ends well or the retries run
 * out (retry.c says when); a listener's one, or with -k one after another
 * until a stop signal.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fastcat.h"
#include "net/net.h"
#include "reliable/reliable.h"
#include "retry/retry.h"
#include "verify/verify.h"
#include "cli/cli.h"

/* Connect, then one session. Its exit status. */
int transfer_connect(const struct config *cfg)
{
	struct endpoint ep = {.fd = -1};
	struct session_parts parts;
	struct session s;
	enum session_phase phase;
	struct failure fail = {EXIT_OK, ""};

	/* --chain: the session connects to the first of its receivers that answers */
	if (!cfg->chain && endpoint_connect(cfg, &ep, &fail) != 0) {
		endpoint_close(&ep);
		log_fatal(fail.status, "%s", fail.why);
	}
	session_init(&s, cfg, &ep, NULL);
	session_run(&s, &parts, &ep, NULL, &phase);
	return session_end(&s, &parts, &ep);
}

/*
 * One --retry connection: connect, then the session. Its status; *phase
 * says where it stopped.
 */
static int retry_connection(struct session *s, struct session_parts *parts, struct endpoint *ep,
                            struct retry *rt, enum session_phase *phase)
{
	session_restart(s);
	retry_restart(rt);
	memset(parts, 0, sizeof *parts);
	*phase = PHASE_CONNECT;
	if (endpoint_connect(s->cfg, ep, &s->failure) != 0)
		return s->failure.status;
	return session_run(s, parts, ep, rt, phase);
}

/*
 * --retry without -l: sessions until one ends well, or the retries run out.
 * The report totals all connections. Its exit status.
 */
int transfer_retry(const struct config *cfg)
{
	struct endpoint ep = {.fd = -1};
	struct session_parts parts;
	struct session s;
	struct retry *rt = retry_new(cfg);
	enum session_phase phase;
	uint64_t first_offset = 0;
	int status;

	if (rt == NULL) {
		log_error("--replay-buffer: cannot allocate %llu bytes",
		          (unsigned long long)cfg->replay_buffer);
		return EXIT_RUNTIME;
	}
	session_init(&s, cfg, &ep, NULL);
	s.stdin_at = rt->base;
	for (;;) {
		uint64_t before = rt->confirmed;
		int joined = rt->joined;
		double wait;

		int rc = retry_connection(&s, &parts, &ep, rt, &phase);

		if (!joined && rt->joined)
			first_offset = s.resume.offset;
		if (rc == EXIT_OK || (wait = retry_next(rt, &s, phase, before)) < 0)
			break;
		s.close_plainly = 0; /* a lost connection is reset, whatever it was told */
		session_close(&s, &parts, &ep);
		if (retry_pause(wait) != 0) {
			s.failure.status = EXIT_OK; /* the stop is the news now */
			failure_set(&s.failure, EXIT_RUNTIME, "interrupted by %s",
			            signals_stop_name());
			break;
		}
	}
	s.resume.offset = first_offset; /* the report: where the whole transfer started */
	s.resume.on = rt->joined;
	s.resume.confirmed = rt->confirmed;
	retry_give_up(rt, &s);
	status = session_end(&s, &parts, &ep);
	retry_free(rt);
	return status;
}

/*
 * Serve one connection, or with -k one after another until a stop signal.
 * Every way out goes through listener_close, which removes a Unix socket file.
 */
int transfer_listen(const struct config *cfg)
{
	struct listener l = {.fd = -1};
	struct endpoint ep = {.fd = -1};
	struct session_parts parts;
	struct session s;
	enum session_phase phase;
	struct failure fail = {EXIT_OK, ""};
	int status = EXIT_OK;

	if (listener_open(cfg, &l, &fail) != 0)
		log_fatal(fail.status, "%s", fail.why);
	if (cfg->verify) { /* -k: an earlier session's control datagrams start none */
		l.stale = verify_ctl_stale;
		l.stale_name = "an earlier session's --verify control datagram";
	} else if (cfg->reliable && cfg->keep_listening) { /* only a hello starts one */
		l.stale = reliable_stale;
		l.stale_name = "a datagram that is no --reliable hello (only one starts a session)";
	}
	do {
		if (endpoint_accept(cfg, &l, &ep, &fail) != 0) {
			endpoint_close(&ep);
			log_error("%s", fail.why);
			status = fail.status;
			break;
		}
		session_init(&s, cfg, &ep, &l);
		session_run(&s, &parts, &ep, NULL, &phase);
		status = session_end(&s, &parts, &ep);
		/* -k: a stdout that failed (disk full, its reader gone) takes no next session */
	} while (cfg->keep_listening && !signal_stop && s.write_errno == 0);
	listener_close(&l);
	return status;
}
