/* bench-trial.c: one --bench trial: two child processes on a link, supervised with deadlines. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fastcat.h"
#include "bench/bench.h"

#define GRACE 5.0 /* seconds a trial may overrun its slice before its children are killed */

enum role { SENDER, RECEIVER }; /* also the index of the role's end of a link */

/* A child process of a trial, and what it has told the parent so far. */
struct child {
	pid_t pid;
	int result; /* read end of its result pipe; -1 once its tally is in */
	int ready;  /* the receiver has said that it waits for data */
	size_t got; /* bytes of the tally read */
	struct bench_tally tally;
};

/* The receiver waits for data; the sender waits for the parent's go, then sends for the slice. */
static _Noreturn void child_main(const struct bench_job *j, const struct bench_end *e,
                                 enum role role, int latency, int res)
{
	struct bench_tally t;
	char go;

	memset(&t, 0, sizeof t);
	if (role == RECEIVER) {
		/* Its buffer's pages are faulted in before the clock starts. */
		memset(j->buf, 0, j->size + 1);
		if (write(res, "R", 1) != 1)
			_exit(EXIT_RUNTIME);
		if (latency)
			bench_echo(j, e, &t);
		else
			bench_receive(j, e->in, &t);
	} else if (read(j->ctl, &go, 1) != 1) {
		snprintf(t.what, sizeof t.what, "no start signal from the parent");
	} else if (latency) {
		bench_ping(j, e, &t);
	} else {
		bench_send(j, e->out, &t);
	}
	if (write(res, &t, sizeof t) != (ssize_t)sizeof t)
		_exit(EXIT_RUNTIME);
	_exit(t.what[0] != '\0' ? EXIT_RUNTIME : EXIT_OK);
}

/*
 * Fork the child for role. It keeps only its own end of the link, the read
 * end of ctl (the sender) and the write end of its result pipe; other is the
 * parent's result pipe of the child forked before, -1 if none.
 */
static int spawn(struct child *k, enum role role, const struct bench_job *j,
                 struct bench_end ends[2], const int ctl[2], int other, int latency)
{
	int res[2];

	memset(k, 0, sizeof *k);
	k->result = k->pid = -1;
	k->ready = role == SENDER;
	if (pipe(res) != 0)
		return -1;
	k->pid = fork();
	if (k->pid < 0) {
		close(res[0]), close(res[1]);
		return -1;
	}
	if (k->pid == 0) {
		close(res[0]);
		if (other >= 0)
			close(other);
		bench_end_close(&ends[role == SENDER ? RECEIVER : SENDER]);
		close(ctl[1]);
		if (role == RECEIVER)
			close(ctl[0]);
		child_main(j, &ends[role], role, latency, res[1]);
	}
	close(res[1]);
	k->result = res[0];
	return 0;
}

/* Read what a child has written: the receiver's ready byte, then the tally. */
static int read_child(struct child *k, const char *who, char *err, size_t errlen)
{
	char *into = k->ready ? (char *)&k->tally + k->got : &(char){0};
	size_t want = k->ready ? sizeof k->tally - k->got : 1;
	ssize_t n = read(k->result, into, want);

	if (n < 0 && errno == EINTR)
		return 0;
	if (n <= 0) {
		log_format(err, errlen, -1, "the %s exited without a result", who);
		return -1;
	}
	if (!k->ready)
		k->ready = 1;
	else if ((k->got += (size_t)n) == sizeof k->tally) {
		close(k->result);
		k->result = -1;
	}
	return 0;
}

/* One poll over the children still to report, until deadline. */
static int wait_children(struct child kid[2], double deadline, char *err, size_t errlen)
{
	static const char *const who[2] = {"sender", "receiver"};
	struct pollfd p[2];
	int n, ms = (int)((deadline - clock_now()) * 1000) + 1;

	for (int i = 0; i < 2; i++)
		p[i] = (struct pollfd){.fd = kid[i].result, .events = POLLIN};
	if (ms <= 0) {
		log_format(err, errlen, -1, "no result within %.1f s of the end (children killed)",
		           GRACE);
		return -1;
	}
	n = poll(p, 2, ms);
	if (n < 0 && (errno != EINTR || signal_stop)) {
		log_format(err, errlen, -1, "%s", signal_stop ? "interrupted" : strerror(errno));
		return -1;
	}
	for (int i = 0; i < 2 && n > 0; i++)
		if (p[i].revents != 0 && read_child(&kid[i], who[i], err, errlen) != 0)
			return -1;
	return 0;
}

/*
 * Wait for the receiver's "ready", start the sender, collect both tallies.
 * Every wait has a deadline. Once the receiver has reported, ctl is closed,
 * which tells a datagram sender to stop repeating its end marker.
 */
static int supervise(struct child kid[2], int *ctl, double slice, char *err, size_t errlen)
{
	double deadline = clock_now() + GRACE;

	while (!kid[RECEIVER].ready)
		if (wait_children(kid, deadline, err, errlen) != 0)
			return -1;
	if (write(*ctl, "G", 1) != 1) {
		log_format(err, errlen, -1, "start the sender: %s", strerror(errno));
		return -1;
	}
	deadline = clock_now() + slice + GRACE;
	while (kid[SENDER].result >= 0 || kid[RECEIVER].result >= 0) {
		if (wait_children(kid, deadline, err, errlen) != 0)
			return -1;
		if (kid[RECEIVER].result < 0 && *ctl >= 0) {
			close(*ctl);
			*ctl = -1;
		}
	}
	return 0;
}

/*
 * Every child is killed and waited for. One that has reported is about to
 * exit anyway, and a pid is not reused before it is reaped, so the kill is
 * safe, and waitpid() cannot hang on a child that was stopped (SIGSTOP).
 */
static void reap(struct child *k)
{
	int status;

	if (k->pid <= 0)
		return;
	kill(k->pid, SIGKILL);
	if (k->result >= 0)
		close(k->result);
	while (waitpid(k->pid, &status, 0) < 0 && errno == EINTR)
		;
	k->pid = -1;
}

static int tally_failed(const struct bench_tally *t, const char *who, char *err, size_t errlen)
{
	if (t->what[0] == '\0')
		return 0;
	if (t->err != 0)
		log_format(err, errlen, -1, "%s: %s: %s", who, t->what, strerror(t->err));
	else
		log_format(err, errlen, -1, "%s: %s", who, t->what);
	return -1;
}

/* Turn two tallies into a number, after checking that they agree. */
static int evaluate(const struct bench_cell *c, const struct bench_tally *tx,
                    const struct bench_tally *rx, struct bench_outcome *o, char *err, size_t errlen)
{
	double secs = rx->end - tx->start;

	if (tally_failed(tx, c->latency ? "pinger" : "sender", err, errlen) != 0 ||
	    tally_failed(rx, c->latency ? "echo" : "receiver", err, errlen) != 0)
		return -1;
	if (c->latency) {
		if (tx->messages == 0 || rx->bytes != tx->bytes) {
			log_format(err, errlen, -1, "%llu bytes sent round, %llu echoed",
			           (unsigned long long)tx->bytes, (unsigned long long)rx->bytes);
			return -1;
		}
		o->value = (tx->end - tx->start) / (double)tx->messages * 1e6;
		o->sent = o->received = tx->messages;
		return 0;
	}
	if (rx->bytes == 0 || rx->bytes > tx->bytes ||
	    (!c->link->lossy && rx->bytes != tx->bytes) || secs <= 0) {
		log_format(err, errlen, -1, "%llu bytes sent, %llu received%s",
		           (unsigned long long)tx->bytes, (unsigned long long)rx->bytes,
		           secs <= 0 ? " in no time" : "");
		return -1;
	}
	o->value = (double)rx->bytes / secs / 1e6;
	o->bytes = rx->bytes;
	o->sent = tx->messages;
	o->received = rx->messages;
	return 0;
}

static int memcpy_trial(const struct bench_job *j, struct bench_outcome *o, char *err,
                        size_t errlen)
{
	struct bench_tally t;

	memset(&t, 0, sizeof t);
	bench_memcpy(j, &t);
	if (tally_failed(&t, "memcpy", err, errlen) != 0)
		return -1;
	o->value = (double)t.bytes / (t.end - t.start) / 1e6;
	o->bytes = t.bytes;
	o->sent = o->received = t.messages;
	return 0;
}

/*
 * One trial of a cell: open the link, fork the receiver (or echo side) and the
 * sender (or pinger), let them run, reap both. The parent only waits, in
 * poll() with deadlines, so that nothing a child does can hang the bench.
 * Returns 0 with the outcome, or -1 with the reason in err.
 */
int bench_trial(const struct bench_run *r, const struct bench_cell *c, double slice,
                struct bench_outcome *o, char *err, size_t errlen)
{
	struct bench_job j = {.link = c->link,
	                      .size = c->size,
	                      .slice = slice,
	                      .payload = r->payload,
	                      .buf = r->buf,
	                      .ctl = -1};
	struct bench_end ends[2];
	struct child kid[2] = {{.pid = -1, .result = -1}, {.pid = -1, .result = -1}};
	int ctl[2], rc = -1;

	if (c->link->open == NULL)
		return memcpy_trial(&j, o, err, errlen);
	if (bench_link_open(c->link, c->size, ends, r->payload, r->buf, err, errlen) != 0)
		return -1;
	if (pipe(ctl) != 0) {
		log_format(err, errlen, -1, "pipe: %s", strerror(errno));
		bench_link_close(ends);
		return -1;
	}
	j.ctl = ctl[0];
	if (spawn(&kid[RECEIVER], RECEIVER, &j, ends, ctl, -1, c->latency) != 0 ||
	    spawn(&kid[SENDER], SENDER, &j, ends, ctl, kid[RECEIVER].result, c->latency) != 0)
		log_format(err, errlen, -1, "fork: %s", strerror(errno));
	bench_link_close(ends);
	close(ctl[0]);
	if (kid[SENDER].pid > 0 && supervise(kid, &ctl[1], slice, err, errlen) == 0)
		rc = evaluate(c, &kid[SENDER].tally, &kid[RECEIVER].tally, o, err, errlen);
	if (ctl[1] >= 0)
		close(ctl[1]);
	reap(&kid[SENDER]);
	reap(&kid[RECEIVER]);
	return rc;
}
