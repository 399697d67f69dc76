/*
 * relay.c: the poll loop that moves stdin -> socket and socket -> stdout, and the EOF rules.
 * It knows two flows and the agents that registered (relay.h); no feature by name.
 */
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
#include "relay/flow.h"

/*
 * The pollfd array: each flow's slots (its stdio and its connections, whichever
 * it waits for), then each agent's. Everyone fills its own range, so the
 * loop's shape does not depend on how many fds anyone has.
 */
#define POLL_SLOTS_MAX 256

struct poll_slots {
	struct pollfd fds[POLL_SLOTS_MAX];
	int first[2 + RELAY_AGENTS_MAX], count[2 + RELAY_AGENTS_MAX]; /* flows, then agents */
	nfds_t n;
};

struct relay {
	struct session *s;
	struct flow flows[2];
	struct relay_agent agents[RELAY_AGENTS_MAX];
	unsigned nagents;
	double last_activity; /* for the -w idle timeout */
	double quit_at;       /* -q deadline once stdin is done, 0 = none */
	int quit_by_q;        /* -q ended the session: said after the agents stopped */
	int saved_flags[2];   /* stdin/stdout file status flags to restore */
};

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

	/* a failure with a reason of its own is no lost connection's errno */
	r->s->lost_errno = f->failure.status != EXIT_OK ? 0 : f->err;
	if (f->failure.status != EXIT_OK)
		failure_set(&r->s->failure, f->failure.status, "%s", f->failure.why);
	else if (f->kind == FLOW_SEND && !f->err_on_write)
		failure_set(&r->s->failure, EXIT_RUNTIME, "read stdin: %s", why);
	else if (f->kind == FLOW_SEND && f->err == EMSGSIZE)
		failure_set(&r->s->failure, EXIT_RUNTIME,
		            "send to %s: a datagram of %zu bytes is too large for %s (%s); "
		            "lower -B or --dgram-size",
		            peer, f->failed_write_len, r->s->cfg->transport->name, why);
	else if (f->kind == FLOW_SEND) /* the count: what stdin held that the peer never got */
		failure_set(&r->s->failure, status,
		            "send to %s: %s (%llu bytes read from stdin not sent)", peer, why,
		            (unsigned long long)flow_stdin_left(f));
	else if (!f->err_on_write)
		failure_set(&r->s->failure, status, "receive from %s: %s", peer, why);
	else {
		r->s->write_errno = f->err;
		r->s->write_synced = f->err_on_sync;
		failure_set(&r->s->failure, EXIT_WRITE, "%s stdout: %s",
		            f->err_on_sync ? "sync" : "write", why);
	}
}

/*
 * A flow failed in an agent's call on it (--retry's sync before a
 * confirmation), not in its pump: the session's failure says why, the same
 * way. Its exit status.
 */
int relay_flow_fail(struct relay *r, enum flow_kind kind)
{
	relay_flow_failed(r, &r->flows[kind]);
	r->flows[kind].running = 0;
	return r->s->failure.status;
}

/* The earlier of two monotonic deadlines, -1 being none. */
static double earliest(double a, double b)
{
	return a < 0 || (b >= 0 && b < a) ? b : a;
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

/* The earliest moment an agent needs a turn with no fd event, or -1. */
static double relay_agents_due(const struct relay *r, double now)
{
	double due = -1;

	for (unsigned i = 0; i < r->nagents; i++)
		if (r->agents[i].due != NULL)
			due = earliest(due, r->agents[i].due(r->agents[i].ctx, r, now));
	return due;
}

/*
 * Milliseconds poll() may sleep: until the -w idle limit, the -q deadline,
 * an agent's deadline, or a flow's own (flow_wait, -1 for none).
 */
static int relay_poll_timeout(const struct relay *r, double now, long flow_wait)
{
	double until = relay_agents_due(r, now);
	long idle_ms = r->s->cfg->timeout_ms, ms;

	if (idle_ms >= 0)
		until = earliest(until, r->last_activity + (double)idle_ms / 1000);
	if (r->quit_at > 0)
		until = earliest(until, r->quit_at);
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

/* No agent holds the session open (--verify over datagrams: until its exchange is done). */
static int relay_agents_settled(const struct relay *r)
{
	for (unsigned i = 0; i < r->nagents; i++)
		if (r->agents[i].busy != NULL && r->agents[i].busy(r->agents[i].ctx, r))
			return 0;
	return 1;
}

/*
 * --exit-on-peer-eof: the peer ended while stdin still went on. Exit 0 means every byte
 * moved, so what stdin still held that the peer never got is a short transfer (exit 5).
 */
static void relay_peer_ended_first(struct relay *r)
{
	const struct flow *send = &r->flows[FLOW_SEND];
	uint64_t left = send->running ? flow_stdin_left(send) : 0;

	if (left > 0)
		failure_set(
		    &r->s->failure, EXIT_PEER,
		    "the peer ended first (--exit-on-peer-eof): %llu bytes of stdin not sent",
		    (unsigned long long)left);
}

/* Is the session over? Sets the failure reason when a timeout ends it. */
static int relay_done(struct relay *r, double now)
{
	const struct config *cfg = r->s->cfg;
	const struct flow *send = &r->flows[FLOW_SEND], *recv = &r->flows[FLOW_RECEIVE];
	int settled = relay_agents_settled(r);

	if (!send->running && !recv->running && settled)
		return 1; /* every enabled direction passed its EOF on */
	if (cfg->exit_on_peer_eof && recv->enabled && !recv->running && settled) {
		relay_peer_ended_first(r);
		return 1; /* the peer is done and the user asked not to wait for stdin */
	}
	if (r->quit_at > 0 && now >= r->quit_at) {
		r->quit_by_q = 1;
		return 1;
	}
	if (cfg->timeout_ms >= 0 && now - r->last_activity >= (double)cfg->timeout_ms / 1000) {
		failure_set(&r->s->failure, EXIT_TIMEOUT, "idle for %.3g s (-w), giving up",
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

/*
 * The relay's own roles: stdin -> socket unless -d, socket -> stdout; a
 * feature changes them before relay_run (a one-way session, frames, a pump).
 * --send-only still reads the socket, to drop what arrives: closing a
 * socket with unread data makes the kernel send a reset, and the peer then
 * loses what we sent that it had not read yet.
 */
void relay_plan(struct relay_setup *rs, struct session *s, int in_fd, int out_fd)
{
	const struct config *cfg = s->cfg;

	memset(rs, 0, sizeof *rs);
	rs->s = s;
	rs->in = in_fd;
	rs->out = out_fd;
	rs->flows[FLOW_SEND].enabled = !cfg->recv_only && !s->ep->cannot_send;
	rs->flows[FLOW_RECEIVE].enabled = 1;
	rs->flows[FLOW_RECEIVE].discard = cfg->send_only;
	rs->flows[FLOW_RECEIVE].keep_dst = cfg->keep_listening;
	rs->flows[FLOW_RECEIVE].sync = cfg->sync && !cfg->send_only;
}

/* One more agent: its table of calls, and the state they get (ctx). */
void relay_add_agent(struct relay_setup *rs, const struct relay_agent *a, void *ctx)
{
	if (rs->nagents == RELAY_AGENTS_MAX)
		return;
	rs->agents[rs->nagents] = *a;
	rs->agents[rs->nagents++].ctx = ctx;
}

static int relay_setup(struct relay *r, const struct relay_setup *rs)
{
	struct session *s = rs->s;
	const struct config *cfg = s->cfg;
	int sock = s->ep->fd;

	memset(r, 0, sizeof *r);
	r->s = s;
	memcpy(r->agents, rs->agents, sizeof r->agents);
	r->nagents = rs->nagents;
	if (flow_init(&r->flows[FLOW_SEND], FLOW_SEND, cfg, &rs->flows[FLOW_SEND], rs->in, sock,
	              &s->sent) != 0 ||
	    flow_init(&r->flows[FLOW_RECEIVE], FLOW_RECEIVE, cfg, &rs->flows[FLOW_RECEIVE], rs->out,
	              sock, &s->received) != 0) {
		failure_set(&r->s->failure, EXIT_RUNTIME, "cannot allocate the relay buffers");
		return -1;
	}
	/* -d: no stdin, but a feature's hello and end may still go out */
	r->flows[FLOW_SEND].src_eof = cfg->recv_only;
	s->receive_buffer = r->flows[FLOW_RECEIVE].read_size;
	r->last_activity = clock_now();
	for (unsigned i = 0; i < r->nagents; i++)
		if (r->agents[i].start != NULL)
			r->agents[i].start(r->agents[i].ctx, r, r->last_activity);
	stdio_nonblock(r, rs->in, rs->out);
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

/* Each agent's turn after the flows moved. 0, or -1 when one ended the session. */
static int relay_agents_turn(struct relay *r, double now)
{
	for (unsigned i = 0; i < r->nagents; i++) {
		const struct relay_agent *a = &r->agents[i];

		if (a->turn != NULL && a->turn(a->ctx, r, now) != 0)
			return -1; /* it said why in the session's failure */
	}
	return 0;
}

/* Fill the slots: what each flow waits for, then each agent. */
static void relay_poll_prepare(struct relay *r, struct poll_slots *p, double now)
{
	p->n = 0;
	for (int i = 0; i < 2; i++) {
		p->first[i] = (int)p->n;
		p->count[i] = flow_poll_events(&r->flows[i], p->fds + p->n);
		p->n += (nfds_t)p->count[i];
	}
	for (unsigned i = 0; i < r->nagents; i++) {
		const struct relay_agent *a = &r->agents[i];

		p->first[2 + i] = (int)p->n;
		p->count[2 + i] =
		    a->poll_events != NULL
		        ? a->poll_events(a->ctx, r, p->fds + p->n, POLL_SLOTS_MAX - (int)p->n, now)
		        : 0;
		p->n += (nfds_t)p->count[2 + i];
	}
}

/*
 * Sleep in poll() until an fd is ready or something is due; busy: a flow
 * still has budgeted work, so only look. 0, or -1 when poll failed.
 */
static int relay_wait(struct relay *r, int busy, double now)
{
	struct poll_slots p;
	long flow_wait;
	int timeout;

	relay_poll_prepare(r, &p, now);
	/* a flow waiting on its --rate-limit bucket or its --rcvlowat patience sleeps here */
	flow_wait = relay_flow_wait(r, now);
	if (p.n == 0 && flow_wait < 0 && relay_agents_due(r, now) < 0)
		return 0;
	timeout = busy ? 0 : relay_poll_timeout(r, now, flow_wait);
	if (poll(p.fds, p.n, timeout) < 0 && errno != EINTR) {
		failure_set(&r->s->failure, EXIT_RUNTIME, "poll: %s", strerror(errno));
		return -1;
	}
	for (int i = 0; i < 2; i++)
		flow_poll_result(&r->flows[i], p.fds + p.first[i], p.count[i]);
	now = clock_now();
	for (unsigned i = 0; i < r->nagents; i++) {
		const struct relay_agent *a = &r->agents[i];

		if (a->poll_result != NULL &&
		    a->poll_result(a->ctx, r, p.fds + p.first[2 + i], p.count[2 + i], now) != 0)
			return -1; /* it said why in the session's failure */
	}
	return 0;
}

/* One turn of the loop. 1 while the session goes on, 0 when it is over. */
static int relay_turn(struct relay *r)
{
	double now;
	int busy;

	if (signal_stop) {
		failure_set(&r->s->failure, EXIT_RUNTIME, "interrupted by %s", signals_stop_name());
		return 0;
	}
	busy = relay_pump_all(r);
	if (busy < 0)
		return 0;
	now = clock_now();
	relay_note_progress(r, now);
	if (relay_agents_turn(r, now) != 0 || relay_done(r, now))
		return 0;
	for (unsigned i = 0; i < r->nagents; i++)
		if (r->agents[i].idle != NULL)
			r->agents[i].idle(r->agents[i].ctx, r, now);
	return relay_wait(r, busy, now) == 0;
}

/*
 * Move data until both directions have passed their EOF on, or until an
 * error, timeout or stop signal; the outcome goes into the session. The fds
 * are tried first and polled only when a syscall said EAGAIN, so a one-way
 * transfer with ready fds costs no poll per chunk.
 */
void relay_run(struct relay_setup *rs)
{
	struct relay r;

	if (relay_setup(&r, rs) == 0) {
		while (relay_turn(&r))
			;
		/* the report or the error line comes next, on a line of its own */
		for (unsigned i = 0; i < r.nagents; i++)
			if (r.agents[i].stop != NULL)
				r.agents[i].stop(r.agents[i].ctx, &r);
		if (r.quit_by_q)
			log_verbose("-q: the peer did not finish in time after stdin EOF; exiting");
		stdio_restore(&r, rs->in, rs->out);
	}
	for (int i = 0; i < 2; i++)
		flow_free(&r.flows[i]);
}

/* For the agents and the features' ops while the relay runs. */
struct flow *relay_flow(struct relay *r, enum flow_kind kind)
{
	return &r->flows[kind];
}

const struct flow *relay_flow_const(const struct relay *r, enum flow_kind kind)
{
	return &r->flows[kind];
}

struct session *relay_session(const struct relay *r)
{
	return r->s;
}

double relay_idle_since(const struct relay *r)
{
	return r->last_activity;
}

/* The peer said something at when (a control datagram): the session is not idle (-w). */
void relay_heard(struct relay *r, double when)
{
	if (when > r->last_activity)
		r->last_activity = when;
}
