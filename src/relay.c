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

/*
 * Syscalls one flow may make before the loop looks at the other flow and at
 * signals. Large enough that a one-way transfer polls about once per 32
 * chunks, small enough that the other direction is never starved.
 */
#define PUMP_BUDGET 64

enum flow_kind { FLOW_SEND, FLOW_RECEIVE };

/* One direction: bytes read from src wait in buf until dst takes them. */
struct flow {
	enum flow_kind kind;
	int src, dst;
	int enabled;   /* not turned off by -d */
	int discard;   /* --send-only: read the peer's data and drop it */
	int running;   /* enabled and its EOF not yet passed on */
	int src_eof;   /* read() returned 0 */
	int src_ready; /* optimistic: true until read() says EAGAIN */
	int dst_ready; /* optimistic: true until write() says EAGAIN */
	size_t read_size, write_size;
	struct iobuf buf;
	struct flow_stats *stats;
};

enum pump_result { PUMP_BLOCKED, PUMP_BUDGET_USED, PUMP_FINISHED, PUMP_FAILED };

struct relay {
	struct session *s;
	int sock;
	int keep_stdout; /* -k: later connections write to the same stdout */
	struct flow flows[2];
	int moved;            /* some byte moved since the last look at the clock */
	double last_activity; /* for the -w idle timeout */
	double quit_at;       /* -q deadline once stdin is done, 0 = none */
	int saved_flags[2];   /* stdin/stdout file status flags to restore */
};

static void relay_fail(struct relay *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void relay_fail(struct relay *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->s->error, sizeof r->s->error, fmt, ap);
	va_end(ap);
	r->s->exit_status = EXIT_RUNTIME;
}

static int is_transient(int err)
{
	return err == EAGAIN || err == EWOULDBLOCK || err == EINTR;
}

/* The message names the syscall's object and, for a lost send, what did not go out. */
static void flow_fail(struct relay *r, struct flow *f, int is_write, int err)
{
	const char *peer = r->s->ep->peer;

	if (f->kind == FLOW_SEND && !is_write)
		relay_fail(r, "read stdin: %s", strerror(err));
	else if (f->kind == FLOW_SEND)
		relay_fail(r, "send to %s: %s (%zu bytes read from stdin not sent)", peer,
		           strerror(err), iobuf_len(&f->buf));
	else if (!is_write)
		relay_fail(r, "receive from %s: %s", peer, strerror(err));
	else
		relay_fail(r, "write stdout: %s", strerror(err));
}

static int flow_read(struct relay *r, struct flow *f)
{
	ssize_t n = read(f->src, iobuf_tail(&f->buf), f->read_size);

	f->stats->reads++;
	if (n > 0) {
		iobuf_produced(&f->buf, (size_t)n);
		if ((size_t)n > f->stats->max_read)
			f->stats->max_read = (size_t)n;
		r->moved = 1;
	} else if (n == 0) {
		f->src_eof = 1;
	} else if (errno == EAGAIN || errno == EWOULDBLOCK) {
		f->src_ready = 0;
	} else if (errno != EINTR) {
		flow_fail(r, f, 0, errno);
		return -1;
	}
	return 0;
}

static int flow_write(struct relay *r, struct flow *f)
{
	size_t len = iobuf_len(&f->buf);

	if (f->discard) {
		iobuf_consumed(&f->buf, len);
		f->stats->bytes += len;
		return 0;
	}
	ssize_t n = write(f->dst, iobuf_head(&f->buf), len < f->write_size ? len : f->write_size);

	f->stats->writes++;
	if (n > 0) {
		iobuf_consumed(&f->buf, (size_t)n);
		f->stats->bytes += (uint64_t)n;
		if ((size_t)n > f->stats->max_write)
			f->stats->max_write = (size_t)n;
		r->moved = 1;
	} else if (n < 0 && !is_transient(errno)) {
		flow_fail(r, f, 1, errno);
		return -1;
	} else if (n < 0 && errno != EINTR) {
		f->dst_ready = 0;
	}
	return 0;
}

/*
 * Pass a flow's EOF on: the socket is half-closed so the peer sees our EOF
 * while we keep reading its data; stdout is closed so whoever reads it sees
 * the end (replaced by /dev/null, so fd 1 can never become a socket).
 */
static int flow_finish(struct relay *r, struct flow *f)
{
	f->running = 0;
	f->stats->finished = report_now();
	if (f->kind == FLOW_SEND) {
		if (shutdown(r->sock, SHUT_WR) != 0 && errno != ENOTCONN) {
			relay_fail(r, "shutdown to %s: %s", r->s->ep->peer, strerror(errno));
			return -1;
		}
		if (r->s->cfg->quit_after_eof_ms >= 0)
			r->quit_at =
			    f->stats->finished + (double)r->s->cfg->quit_after_eof_ms / 1000;
		return 0;
	}
	if (!r->keep_stdout && !f->discard) {
		int devnull = open("/dev/null", O_WRONLY);
		if (devnull >= 0) {
			dup2(devnull, f->dst);
			close(devnull);
		}
	}
	return 0;
}

/*
 * Move data until the flow would block, finishes, or used its budget.
 * A read is made only when a whole read_size fits at the tail (so reads stay
 * full-sized and nothing is moved); a write when a write_size is ready or
 * no more can be read for now.
 */
static enum pump_result flow_pump(struct relay *r, struct flow *f)
{
	for (int calls = 0; calls < PUMP_BUDGET; calls++) {
		size_t len = iobuf_len(&f->buf);
		int can_read = !f->src_eof && f->src_ready && iobuf_room(&f->buf) >= f->read_size;

		if (len > 0 && f->dst_ready && (len >= f->write_size || !can_read)) {
			if (flow_write(r, f) < 0)
				return PUMP_FAILED;
		} else if (can_read) {
			if (flow_read(r, f) < 0)
				return PUMP_FAILED;
		} else if (len == 0 && f->src_eof) {
			return flow_finish(r, f) < 0 ? PUMP_FAILED : PUMP_FINISHED;
		} else {
			return PUMP_BLOCKED;
		}
	}
	return PUMP_BUDGET_USED;
}

/* Poll events follow from the flow's state: wait only for what would unblock it. */
static int flow_poll_events(const struct flow *f, struct pollfd *pfd)
{
	int n = 0;

	if (!f->running)
		return 0;
	if (!f->src_eof && !f->src_ready && iobuf_room(&f->buf) >= f->read_size)
		pfd[n++] = (struct pollfd){.fd = f->src, .events = POLLIN};
	if (iobuf_len(&f->buf) > 0 && !f->dst_ready)
		pfd[n++] = (struct pollfd){.fd = f->dst, .events = POLLOUT};
	return n;
}

/* Any event, error or hangup included, means the next syscall will tell us more. */
static void flow_poll_result(struct flow *f, const struct pollfd *pfd, int n)
{
	for (int i = 0; i < n; i++) {
		if (pfd[i].revents == 0)
			continue;
		if (pfd[i].events & POLLIN)
			f->src_ready = 1;
		else
			f->dst_ready = 1;
	}
}

/* Milliseconds poll() may sleep: until the -w idle limit or the -q deadline. */
static int relay_poll_timeout(const struct relay *r, double now)
{
	double until = -1;
	long idle_ms = r->s->cfg->timeout_ms;

	if (idle_ms >= 0)
		until = r->last_activity + (double)idle_ms / 1000;
	if (r->quit_at > 0 && (until < 0 || r->quit_at < until))
		until = r->quit_at;
	if (until < 0)
		return -1;
	if (until <= now)
		return 0;
	return (int)((until - now) * 1000) + 1;
}

/* Is the session over? Sets the failure reason when a timeout ends it. */
static int relay_done(struct relay *r, double now)
{
	const struct config *cfg = r->s->cfg;
	const struct flow *send = &r->flows[FLOW_SEND], *recv = &r->flows[FLOW_RECEIVE];

	if (!send->running && !recv->running)
		return 1; /* every enabled direction passed its EOF on */
	if (cfg->exit_on_peer_eof && recv->enabled && !recv->running)
		return 1; /* the peer is done and the user asked not to wait for stdin */
	if (r->quit_at > 0 && now >= r->quit_at) {
		log_verbose("-q: the peer did not finish in time after stdin EOF; exiting");
		return 1;
	}
	if (cfg->timeout_ms >= 0 && now - r->last_activity >= (double)cfg->timeout_ms / 1000) {
		relay_fail(r, "idle for %.3g s (-w), giving up", (double)cfg->timeout_ms / 1000);
		return 1;
	}
	return 0;
}

static void flow_init(struct flow *f, enum flow_kind kind, int src, int dst, int enabled,
                      const struct config *cfg, struct flow_stats *stats)
{
	memset(f, 0, sizeof *f);
	f->kind = kind;
	f->src = src;
	f->dst = dst;
	f->enabled = f->running = enabled;
	f->src_ready = f->dst_ready = 1;
	f->read_size = cfg->read_size;
	f->write_size = cfg->write_size;
	f->stats = stats;
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

static int relay_setup(struct relay *r, struct session *s, int in_fd, int out_fd)
{
	const struct config *cfg = s->cfg;
	size_t cap = cfg->read_size > cfg->write_size ? cfg->read_size : cfg->write_size;

	memset(r, 0, sizeof *r);
	r->s = s;
	r->sock = s->ep->fd;
	r->keep_stdout = cfg->keep_listening;
	flow_init(&r->flows[FLOW_SEND], FLOW_SEND, in_fd, r->sock, !cfg->recv_only, cfg, &s->sent);
	/*
	 * --send-only still reads the socket, to drop what arrives: closing a
	 * socket with unread data makes the kernel send a reset, and the peer
	 * then loses what we sent that it had not read yet.
	 */
	flow_init(&r->flows[FLOW_RECEIVE], FLOW_RECEIVE, r->sock, out_fd, 1, cfg, &s->received);
	r->flows[FLOW_RECEIVE].discard = cfg->send_only;
	for (int i = 0; i < 2; i++)
		if (r->flows[i].enabled && iobuf_init(&r->flows[i].buf, cap) != 0) {
			relay_fail(r, "cannot allocate a %zu-byte buffer", cap);
			return -1;
		}
	r->last_activity = report_now();
	stdio_nonblock(r, in_fd, out_fd);
	return 0;
}

/* One round: pump each running flow. Returns 1 if a flow still has budgeted work, -1 on failure. */
static int relay_pump_all(struct relay *r)
{
	int busy = 0;

	for (int i = 0; i < 2; i++) {
		if (!r->flows[i].running)
			continue;
		switch (flow_pump(r, &r->flows[i])) {
		case PUMP_FAILED: return -1;
		case PUMP_BUDGET_USED: busy = 1; break;
		case PUMP_BLOCKED:
		case PUMP_FINISHED: break;
		}
	}
	return busy;
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
	struct pollfd pfd[4];

	if (relay_setup(&r, s, in_fd, out_fd) == 0) {
		for (;;) {
			int busy, n = 0, nsend, timeout;
			double now;

			if (signal_stop) {
				relay_fail(&r, "interrupted by %s", signals_stop_name());
				break;
			}
			if (signal_report) {
				signal_report = 0;
				report_print(s, 0);
			}
			busy = relay_pump_all(&r);
			if (busy < 0)
				break;
			now = report_now();
			if (r.moved) {
				r.last_activity = now;
				r.moved = 0;
			}
			if (relay_done(&r, now))
				break;
			nsend = flow_poll_events(&r.flows[FLOW_SEND], pfd);
			n = nsend + flow_poll_events(&r.flows[FLOW_RECEIVE], pfd + nsend);
			if (n == 0)
				continue;
			timeout = busy ? 0 : relay_poll_timeout(&r, now);
			if (poll(pfd, (nfds_t)n, timeout) < 0 && errno != EINTR) {
				relay_fail(&r, "poll: %s", strerror(errno));
				break;
			}
			flow_poll_result(&r.flows[FLOW_SEND], pfd, nsend);
			flow_poll_result(&r.flows[FLOW_RECEIVE], pfd + nsend, n - nsend);
		}
		stdio_restore(&r, in_fd, out_fd);
	}
	for (int i = 0; i < 2; i++)
		iobuf_free(&r.flows[i].buf);
}
