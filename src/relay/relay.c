/* relay.c: the poll loop that moves stdin -> socket and socket -> stdout, and the EOF rules. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fastcat.h"
#include "net/net.h"
#include "report/report.h"
#include "verify/verify.h"
#include "relay/flow.h"
#include "retry/retry.h"
#include "stripe/stripe.h"

/*
 * The pollfd array by name: each flow's slots (FLOW_SEND, FLOW_RECEIVE: its
 * source and destination, whichever it waits for), then the control
 * socket's. A flow fills its own range, so the loop's shape does not depend
 * on how many fds a flow has.
 */
enum { SLOT_CONTROL = 2, SLOT_GROWTH, SLOT_RETRY, SLOT_KINDS };
/*
 * stdio and sockets of each flow, control; -P auto's connections on their
 * way, its listener; --retry's socket and listener
 */
#define POLL_SLOTS_MAX (2 * (1 + FLOW_NET_MAX) + 1 + STRIPE_MAX + 1 + 2)

struct poll_slots {
	struct pollfd fds[POLL_SLOTS_MAX];
	int first[SLOT_KINDS], count[SLOT_KINDS];
	nfds_t n;
};

struct relay {
	struct session *s;
	struct flow flows[2];
	struct dgverify dg;       /* --verify over datagrams: the control datagrams' state */
	double last_activity;     /* for the -w idle timeout */
	double quit_at;           /* -q deadline once stdin is done, 0 = none */
	int saved_flags[2];       /* stdin/stdout file status flags to restore */
	struct progress progress; /* --progress, --interval */
};

static void relay_fail(struct relay *r, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The first failure is the one reported: later ones are its consequences. */
static void relay_fail(struct relay *r, int status, const char *fmt, ...)
{
	va_list ap;

	if (r->s->exit_status != EXIT_OK)
		return;
	va_start(ap, fmt);
	r->s->exit_status = log_vformat(r->s->error, sizeof r->s->error, status, fmt, ap);
	va_end(ap);
}

/* What a socket error says about the transfer, as an exit status. */
static int socket_error_status(int err)
{
	switch (err) {
	case ECONNRESET:
	case ECONNABORTED:
	case ECONNREFUSED: /* a datagram peer that went away */
	case EPIPE:
	case ENOTCONN: return EXIT_PEER;
	case ETIMEDOUT: return EXIT_TIMEOUT;
	default: return EXIT_RUNTIME;
	}
}

/* The message names the syscall's object and, for a lost send, what did not go out. */
static void relay_flow_failed(struct relay *r, const struct flow *f)
{
	const char *peer = r->s->ep->peer, *why = strerror(f->err);
	int status = socket_error_status(f->err);
	const char *stripe_why = flow_stripe_failure(f, &status);

	if (r->s->retry != NULL)
		r->s->retry->lost_errno = f->err == EPROTO ? 0 : f->err; /* for "connection lost" */
	if (stripe_why != NULL)
		relay_fail(r, status, "%s", stripe_why);
	else if (f->err == EPROTO && f->verify->why[0] != '\0')
		relay_fail(r, f->verify->why_status ? f->verify->why_status : EXIT_VERIFY, "%s",
		           f->verify->why);
	else if (f->kind == FLOW_SEND && !f->err_on_write)
		relay_fail(r, EXIT_RUNTIME, "read stdin: %s", why);
	else if (f->kind == FLOW_SEND && f->err == EMSGSIZE)
		relay_fail(r, EXIT_RUNTIME,
		           "send to %s: a datagram of %zu bytes is too large for %s (%s); "
		           "lower -B or --dgram-size",
		           peer, f->failed_write_len, r->s->cfg->transport->name, why);
	else if (f->kind == FLOW_SEND)
		relay_fail(r, status, "send to %s: %s (%zu bytes read from stdin not sent)", peer,
		           why, flow_unsent(f));
	else if (!f->err_on_write)
		relay_fail(r, status, "receive from %s: %s", peer, why);
	else
		relay_fail(r, EXIT_WRITE, "write stdout: %s", why);
}

/* Milliseconds until a flow needs a turn with no fd event (flow_wait_ms); -1: none does. */
static long relay_flow_wait(const struct relay *r, double now)
{
	long wait = -1;

	for (int i = 0; i < 2; i++) {
		long w = flow_wait_ms(&r->flows[i], now);
		if (w >= 0 && (wait < 0 || w < wait))
			wait = w;
	}
	return wait;
}

/*
 * Milliseconds poll() may sleep: until the -w idle limit, the -q deadline,
 * the next progress line, or a flow's own deadline (flow_wait, -1 for none).
 */
static int relay_poll_timeout(const struct relay *r, double now, long flow_wait)
{
	double until = -1, drawing = progress_due(&r->progress);
	double control = dgverify_due(r->s->verify.dg, r->flows[FLOW_RECEIVE].running, now);
	double growth = r->s->ep->growth ? stripe_growth_due(r->s->ep->growth) : -1;
	double retry = retry_due(r->s, r->last_activity);
	long idle_ms = r->s->cfg->timeout_ms, ms;

	if (idle_ms >= 0)
		until = r->last_activity + (double)idle_ms / 1000;
	if (r->quit_at > 0 && (until < 0 || r->quit_at < until))
		until = r->quit_at;
	if (drawing > 0 && (until < 0 || drawing < until))
		until = drawing;
	if (control >= 0 && (until < 0 || control < until))
		until = control;
	if (growth >= 0 && (until < 0 || growth < until))
		until = growth;
	if (retry >= 0 && (until < 0 || retry < until))
		until = retry;
	if (until < 0)
		ms = -1;
	else if (until <= now)
		ms = 0;
	else
		ms = (long)((until - now) * 1000) + 1;
	if (flow_wait >= 0 && (ms < 0 || flow_wait < ms))
		ms = flow_wait;
	return (int)ms;
}

/* Is the session over? Sets the failure reason when a timeout ends it. */
static int relay_done(struct relay *r, double now)
{
	const struct config *cfg = r->s->cfg;
	const struct flow *send = &r->flows[FLOW_SEND], *recv = &r->flows[FLOW_RECEIVE];

	int confirmed = !r->s->verify.datagram || dgverify_finished(r->s->verify.dg);

	if (!send->running && !recv->running && confirmed)
		return 1; /* every enabled direction passed its EOF on */
	if (cfg->exit_on_peer_eof && recv->enabled && !recv->running && confirmed)
		return 1; /* the peer is done and the user asked not to wait for stdin */
	if (r->quit_at > 0 && now >= r->quit_at) {
		progress_clear(&r->progress);
		log_verbose("-q: the peer did not finish in time after stdin EOF; exiting");
		return 1;
	}
	if (cfg->timeout_ms >= 0 && now - r->last_activity >= (double)cfg->timeout_ms / 1000) {
		relay_fail(r, EXIT_TIMEOUT, "idle for %.3g s (-w), giving up",
		           (double)cfg->timeout_ms / 1000);
		return 1;
	}
	return 0;
}

/* Non-blocking stdio for the loop; the flags are shared with the shell, so they come back after. */
static void stdio_nonblock(struct relay *r, int in_fd, int out_fd)
{
	r->saved_flags[0] = r->flows[FLOW_SEND].enabled ? fcntl(in_fd, F_GETFL) : -1;
	r->saved_flags[1] = r->flows[FLOW_RECEIVE].discard ? -1 : fcntl(out_fd, F_GETFL);
	if (r->saved_flags[0] >= 0)
		fcntl(in_fd, F_SETFL, r->saved_flags[0] | O_NONBLOCK);
	if (r->saved_flags[1] >= 0)
		fcntl(out_fd, F_SETFL, r->saved_flags[1] | O_NONBLOCK);
}

static void stdio_restore(const struct relay *r, int in_fd, int out_fd)
{
	if (r->saved_flags[0] >= 0)
		fcntl(in_fd, F_SETFL, r->saved_flags[0]);
	if (r->saved_flags[1] >= 0)
		fcntl(out_fd, F_SETFL, r->saved_flags[1]);
}

/* -P and --retry sessions go one way, over the connections and buffers the session holds. */
static void setup_one_way(const struct session *s, struct flow_setup *send, struct flow_setup *recv)
{
	int listen = s->cfg->listen;

	if (s->ep->stripes > 0) {
		/* -P: the sender drains the connections for their ends */
		send->net = recv->net = s->ep->stripe;
		send->nnet = recv->nnet = s->ep->stripes;
		send->enabled = !listen;
		recv->discard = !listen;
		/* -P --resume: the chunks' offsets go on from the receiver's file length */
		send->start = recv->start = s->resume.on ? s->resume.offset : 0;
	}
	if (s->retry != NULL) {
		/* the receiver's stdin is not read, the sender's stdout not written */
		send->enabled = send->enabled && !listen;
		recv->discard = recv->discard || !listen;
		send->replay = listen ? NULL : s->retry->ring;
		recv->retry = listen ? NULL : s->retry;
	}
}

static int relay_setup(struct relay *r, struct session *s, int in_fd, int out_fd)
{
	const struct config *cfg = s->cfg;
	int sock = s->ep->fd;
	/*
	 * --send-only still reads the socket, to drop what arrives: closing a
	 * socket with unread data makes the kernel send a reset, and the peer
	 * then loses what we sent that it had not read yet.
	 */
	struct flow_setup send = {.cfg = cfg,
	                          .kind = FLOW_SEND,
	                          .src = in_fd,
	                          .dst = sock,
	                          .enabled =
	                              (!cfg->recv_only || cfg->verify) && !s->ep->cannot_send,
	                          .verify = &s->verify};
	struct flow_setup recv = {.cfg = cfg,
	                          .kind = FLOW_RECEIVE,
	                          .src = sock,
	                          .dst = out_fd,
	                          .enabled = 1,
	                          .discard = cfg->send_only,
	                          .keep_dst = cfg->keep_listening,
	                          .verify = &s->verify};

	memset(r, 0, sizeof *r);
	r->s = s;
	setup_one_way(s, &send, &recv);
	if (s->verify.datagram) {
		r->dg.v = &s->verify;
		s->verify.dg = send.dg = recv.dg = &r->dg;
	}
	if (flow_init(&r->flows[FLOW_SEND], &send, &s->sent) != 0 ||
	    flow_init(&r->flows[FLOW_RECEIVE], &recv, &s->received) != 0) {
		relay_fail(r, EXIT_RUNTIME, "cannot allocate the relay buffers");
		return -1;
	}
	for (int i = 0; i < 2 && s->ep->growth != NULL; i++)
		if (r->flows[i].stripe != NULL)
			r->flows[i].stripe->grows = 1;
	/* --verify with -d: no stdin, but the hello, END and VERDICT still go out */
	r->flows[FLOW_SEND].src_eof = cfg->recv_only;
	s->receive_buffer = r->flows[FLOW_RECEIVE].read_size;
	r->last_activity = clock_now();
	if (s->verify.datagram)
		dgverify_start(&r->dg, cfg, s->ep, r->last_activity);
	progress_start(&r->progress, s, in_fd);
	stdio_nonblock(r, in_fd, out_fd);
	return 0;
}

/* After the round, note progress and the moment stdin's EOF went out (for -q). */
static void relay_note_progress(struct relay *r, double now)
{
	struct flow *send = &r->flows[FLOW_SEND];
	long quit_ms = r->s->cfg->quit_after_eof_ms;

	for (int i = 0; i < 2; i++)
		if (r->flows[i].moved) {
			r->last_activity = now;
			r->flows[i].moved = 0;
		}
	if (quit_ms >= 0 && r->quit_at == 0 && send->enabled && !send->running)
		r->quit_at = send->stats->finished + (double)quit_ms / 1000;
}

/*
 * One round: pump each running flow. Returns 1 if a flow still has budgeted
 * work, -1 on failure. Receiving goes first: with --verify, what the peer
 * said (its hello, its END) is what lets our sending go on in the same round.
 */
static int relay_pump_all(struct relay *r)
{
	int busy = 0;

	for (int i = 1; i >= 0; i--) {
		if (!r->flows[i].running)
			continue;
		switch (flow_pump(&r->flows[i])) {
		case PUMP_FAILED: relay_flow_failed(r, &r->flows[i]); return -1;
		case PUMP_BUDGET_USED: busy = 1; break;
		case PUMP_BLOCKED:
		case PUMP_FINISHED: break;
		}
	}
	return busy;
}

/*
 * --verify over datagrams: the control datagrams' round (dgverify.c). What
 * the peer said counts as activity for -w. 0, or -1 when the session failed.
 */
static int relay_control(struct relay *r, double now)
{
	struct verify *v = &r->s->verify;
	int status;

	if (!v->datagram)
		return 0;
	status = dgverify_tick(r->s, r->flows[FLOW_RECEIVE].running, now);
	if (r->dg.last_heard > r->last_activity)
		r->last_activity = r->dg.last_heard;
	if (status == 0)
		return 0;
	relay_fail(r, status, "%s", v->why);
	return -1;
}

/*
 * --retry, the receiver: confirm what was written, give way to a new
 * connection while this one is silent (retry-relay.c). 0, or -1 when the
 * session ends.
 */
static int relay_retry(struct relay *r, double now)
{
	char why[sizeof r->s->error];
	int status;

	/* what moved this round counts: the idle time is since the last byte */
	for (int i = 0; i < 2; i++)
		if (r->flows[i].moved)
			r->last_activity = now;
	status = retry_tick(r->s, r->flows[FLOW_RECEIVE].running, now, why, sizeof why);
	if (status == 0)
		return 0;
	relay_fail(r, status, "%s", why);
	return -1;
}

/* Fill the named slots: what each flow waits for, then the control socket. */
static void relay_poll_prepare(struct relay *r, struct poll_slots *p)
{
	int receiving = r->flows[FLOW_RECEIVE].running;

	p->n = 0;
	for (int i = 0; i < 2; i++) {
		p->first[i] = (int)p->n;
		p->count[i] = flow_poll_events(&r->flows[i], p->fds + p->n);
		p->n += (nfds_t)p->count[i];
	}
	p->first[SLOT_CONTROL] = (int)p->n;
	p->count[SLOT_CONTROL] = dgverify_wants_read(r->s->verify.dg, receiving);
	if (p->count[SLOT_CONTROL])
		p->fds[p->n++] = (struct pollfd){.fd = r->s->ep->fd, .events = POLLIN};
	p->first[SLOT_GROWTH] = (int)p->n;
	p->count[SLOT_GROWTH] =
	    r->s->ep->growth ? stripe_growth_poll_events(r->s->ep->growth, p->fds + p->n) : 0;
	p->n += (nfds_t)p->count[SLOT_GROWTH];
	p->first[SLOT_RETRY] = (int)p->n;
	p->count[SLOT_RETRY] =
	    retry_poll_events(r->s, r->last_activity, clock_now(), p->fds + p->n);
	p->n += (nfds_t)p->count[SLOT_RETRY];
}

/*
 * -P auto: connections that joined since the last turn go into both flows
 * (the sender's drain reads each for its end); the sender's tick may open
 * more. Once stdin is done (sending) or the ENDs' count joined (receiving),
 * no more come. 0, or -1 when the session failed.
 */
static int relay_grow(struct relay *r, const struct pollfd *pfd, int npfd, double now)
{
	struct stripe_growth *g = r->s->ep->growth;
	struct flow *data = &r->flows[r->s->cfg->listen ? FLOW_RECEIVE : FLOW_SEND];
	int joined[STRIPE_MAX], n;

	if (g == NULL || !g->grows)
		return 0;
	if (!data->running || (data->kind == FLOW_SEND && data->src_eof) ||
	    (data->stripe->expect > 0 && data->stripe->n == data->stripe->expect)) {
		stripe_growth_stop(g,
		                   g->l != NULL ? "the session is complete" : "stdin ended first");
		return 0;
	}
	if ((n = stripe_growth_step(g, pfd, npfd, joined, STRIPE_MAX)) < 0) {
		relay_fail(r, EXIT_RUNTIME, "-P auto: accept on %s: %s", r->s->ep->local,
		           strerror(errno));
		return -1;
	}
	for (int i = 0; i < n; i++)
		for (int k = 0; k < 2; k++)
			if (r->flows[k].stripe != NULL &&
			    flow_stripe_attach(&r->flows[k], joined[i]) != 0) {
				relay_fail(r, EXIT_RUNTIME, "-P auto: no memory for connection %u",
				           r->flows[k].stripe->n + 1);
				return -1;
			}
	if (n > 0)
		log_verbose("-P auto: %u connections", data->stripe->n);
	if (data->kind == FLOW_SEND)
		stripe_grow_tick(g, data->stripe, now);
	return 0;
}

/*
 * Sleep in poll() until an fd is ready or something is due; busy: a flow
 * still has budgeted work, so only look. 0, or -1 when poll failed. The
 * control socket's readiness needs no note: dgverify_tick reads it anyway.
 */
static int relay_wait(struct relay *r, int busy, double now)
{
	struct poll_slots p;
	long flow_wait;
	int timeout;

	relay_poll_prepare(r, &p);
	/* a flow waiting on its --rate-limit bucket or its --rcvlowat patience sleeps here */
	flow_wait = relay_flow_wait(r, now);
	if (p.n == 0 && flow_wait < 0 &&
	    dgverify_due(r->s->verify.dg, r->flows[FLOW_RECEIVE].running, now) < 0)
		return 0;
	timeout = busy ? 0 : relay_poll_timeout(r, now, flow_wait);
	if (poll(p.fds, p.n, timeout) < 0 && errno != EINTR) {
		relay_fail(r, EXIT_RUNTIME, "poll: %s", strerror(errno));
		return -1;
	}
	for (int i = 0; i < 2; i++)
		flow_poll_result(&r->flows[i], p.fds + p.first[i], p.count[i]);
	retry_poll_result(r->s, p.fds + p.first[SLOT_RETRY], p.count[SLOT_RETRY]);
	return relay_grow(r, p.fds + p.first[SLOT_GROWTH], p.count[SLOT_GROWTH], clock_now());
}

/* One turn of the loop. 1 while the session goes on, 0 when it is over. */
static int relay_turn(struct relay *r)
{
	struct session *s = r->s;
	double now;
	int busy;

	if (signal_stop) {
		relay_fail(r, EXIT_RUNTIME, "interrupted by %s", signals_stop_name());
		return 0;
	}
	if (signal_report) {
		signal_report = 0;
		progress_clear(&r->progress);
		report_print(s, 0);
	}
	busy = relay_pump_all(r);
	if (busy < 0)
		return 0;
	now = clock_now();
	if (relay_control(r, now) != 0 || relay_retry(r, now) != 0)
		return 0;
	relay_note_progress(r, now);
	if (relay_done(r, now))
		return 0;
	progress_tick(&r->progress, now);
	return relay_wait(r, busy, now) == 0;
}

/*
 * Move data until both directions have passed their EOF on, or until an
 * error, timeout or stop signal; the outcome goes into s. The fds are tried
 * first and polled only when a syscall said EAGAIN, so a one-way transfer
 * with ready fds costs no poll per chunk.
 */
void relay_run(struct session *s, int in_fd, int out_fd)
{
	struct relay r;

	if (relay_setup(&r, s, in_fd, out_fd) == 0) {
		while (relay_turn(&r))
			;
		/* the report or the error line comes next, on a line of its own */
		progress_clear(&r.progress);
		stdio_restore(&r, in_fd, out_fd);
	}
	for (int i = 0; i < 2; i++)
		flow_free(&r.flows[i]);
	s->verify.dg = NULL; /* it lived in r */
}
