/* fastcat.c: main() as a table of contents: parse, open the endpoint, relay, report, exit. */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fastcat.h"
#include "bench/bench.h"
#include "net/net.h"
#include "retry/retry.h"
#include "stripe/stripe.h"
#include "relay/relay.h"
#include "report/report.h"
#include "verify/verify.h"
#include "resume/resume.h"
#include "cli/options.h"

/* Relay the data, then conclude what the relay alone cannot: -P's ends, --verify, --seq. */
static void session_relay(struct session *s)
{
	const struct config *cfg = s->cfg;

	relay_run(s, STDIN_FILENO, STDOUT_FILENO);
	if (cfg->parallel)
		stripe_conclude(s);
	else if (cfg->verify)
		verify_conclude(s);
	if (cfg->seq && s->received.seq.lost > 0 && s->exit_status == EXIT_OK) {
		s->exit_status =
		    log_format(s->error, sizeof s->error, EXIT_PEER,
		               "%llu datagrams lost (--seq found gaps in the sequence numbers)",
		               (unsigned long long)s->received.seq.lost);
	}
}

/*
 * How a failed session closes. A refused --resume closes plainly, so that
 * the peer reads the answer that says why. A peer that never said the
 * verify hello gets a plain close too: a reset could throw away our hello
 * unread, and with it the peer's clear "give --verify here too". Any other
 * failure resets, so that the peer fails too instead of taking a short
 * stream for a whole one.
 */
static int session_resets(const struct session *s)
{
	if (s->cfg->resume && !s->resume.on)
		return !s->resume.graceful;
	return !(s->verify.on && !s->verify.hello_seen);
}

/* Relay one connection (from l, with -l) and report it. Returns its exit status. */
static int session_run(const struct config *cfg, struct endpoint *ep, struct listener *l)
{
	struct session s;

	memset(&s, 0, sizeof s);
	s.cfg = cfg;
	s.ep = ep;
	s.listener = l;
	s.verify.on = cfg->verify && !cfg->parallel; /* -P verifies in its own end marks */
	s.verify.datagram = cfg->verify && cfg->transport->connectionless;
	s.sent.started = s.received.started = clock_now();
	/* the chunk sizes flow_sizes would pick, for a report of a session refused before the relay
	 */
	s.sent.read_size = s.received.read_size = cfg->read_size;
	s.sent.write_size = s.received.write_size = cfg->write_size;
	/* --resume: the ends agree where the data starts, or nothing moves */
	if (!cfg->resume || resume_start(&s) == 0)
		session_relay(&s);
	retry_session_end(&s); /* -k --resume: a lost --retry session is held for its sender */
	report_print(&s, 1);
	if (s.received.truncated > 0)
		log_warn("%llu datagrams truncated (larger than the %zu-byte receive buffer)",
		         (unsigned long long)s.received.truncated, s.receive_buffer);
	if (s.exit_status != EXIT_OK) {
		log_error("%s", s.error);
		if (session_resets(&s))
			endpoint_abort(cfg, ep);
	}
	endpoint_close(ep);
	return s.exit_status;
}

static int run_client(const struct config *cfg)
{
	struct endpoint ep = {.fd = -1};
	char err[1024];
	int rc;

	if (cfg->retry > 0)
		return retry_client(cfg);
	rc = endpoint_connect(cfg, &ep, err, sizeof err);

	if (rc == 0 && cfg->parallel)
		rc = stripe_connect(cfg, &ep, err, sizeof err);
	if (rc != 0) {
		endpoint_close(&ep);
		log_fatal(rc, "%s", err);
	}
	return session_run(cfg, &ep, NULL);
}

/*
 * Serve one connection, or with -k one after another until a stop signal.
 * Every way out goes through listener_close, which removes a Unix socket file.
 */
static int run_listener(const struct config *cfg)
{
	struct listener l = {.fd = -1};
	struct endpoint ep = {.fd = -1};
	char err[256];
	int status = EXIT_OK;

	if (listener_open(cfg, &l, err, sizeof err) != 0)
		log_fatal(EXIT_RUNTIME, "%s", err);
	do {
		int rc = endpoint_accept(cfg, &l, &ep, err, sizeof err);

		if (rc == 0 && cfg->parallel)
			rc = stripe_accept(cfg, &l, &ep, err, sizeof err);
		if (rc != 0) {
			endpoint_close(&ep);
			log_error("%s", err);
			status = rc;
			break;
		}
		if (!cfg->keep_listening && ep.growth == NULL) /* -P auto: more may join */
			listener_stop_accepting(cfg, &l);
		status = session_run(cfg, &ep, &l);
	} while (cfg->keep_listening && !signal_stop);
	listener_close(&l);
	return status;
}

int main(int argc, char **argv)
{
	struct config cfg;
	char err[512];
	int rc = options_parse(argc, argv, &cfg, err, sizeof err);

	if (rc < 0)
		return EXIT_OK;
	if (rc != 0)
		log_fatal(EXIT_USAGE, "%s", err);
	log_set_verbose(cfg.verbose);
	signals_init();
	if (cfg.bench)
		return bench_run(&cfg);
	return cfg.listen ? run_listener(&cfg) : run_client(&cfg);
}
