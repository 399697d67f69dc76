/* progress.c: --progress (a live line on a terminal) and --interval (one plain line per interval).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fastcat.h"
#include "report/report.h"

#define LIVE_PERIOD 0.5 /* seconds between redraws of the live line, at least */

/*
 * The bytes a transfer is expected to move, for the percentage and the ETA:
 * --size, or what is left of a regular file on stdin. It counts the sent
 * direction, or with -d (nothing sent) the received one. 0 = unknown.
 */
static uint64_t expected_bytes(const struct config *cfg, int in_fd)
{
	struct stat st;
	off_t at;

	if (cfg->size != 0 || cfg->recv_only)
		return cfg->size;
	if (fstat(in_fd, &st) != 0 || !S_ISREG(st.st_mode))
		return 0;
	at = lseek(in_fd, 0, SEEK_CUR);
	return at >= 0 && st.st_size > at ? (uint64_t)(st.st_size - at) : 0;
}

static int terminal_columns(void)
{
	struct winsize ws;

	return ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 ? ws.ws_col : 0;
}

static struct progress_mark mark_now(const struct session *s, double now)
{
	struct progress_mark m = {now, s->sent.bytes, s->received.bytes};

	return m;
}

/* Get ready to draw for session s, whose stdin is in_fd; nothing is drawn yet. */
void progress_start(struct progress *p, const struct session *s, int in_fd)
{
	const struct config *cfg = s->cfg;
	double now = clock_now();

	int in = p->in;

	memset(p, 0, sizeof *p);
	p->s = s;
	p->in = in;
	if (!cfg->progress && cfg->interval_ms == 0)
		return;
	p->total = expected_bytes(cfg, in_fd);
	p->count_received = cfg->recv_only;
	p->live = cfg->progress && isatty(STDERR_FILENO);
	p->columns = p->live ? terminal_columns() : 0;
	p->live_mark = p->plain_mark = mark_now(s, now);
	if (p->live)
		p->next_live = now + LIVE_PERIOD;
	if (cfg->interval_ms > 0)
		p->next_plain = now + (double)cfg->interval_ms / 1000;
}

/* Monotonic seconds when progress_tick has a line to draw, 0 = never: the relay's poll wakes then.
 */
double progress_due(const struct progress *p)
{
	if (p->next_live > 0 && (p->next_plain == 0 || p->next_live < p->next_plain))
		return p->next_live;
	return p->next_plain;
}

/* Seconds: "12.3 s" while short, "754 s" later. */
static void format_seconds(double secs, char *out, size_t len)
{
	snprintf(out, len, secs < 100 ? "%.1f s" : "%.0f s", secs);
}

/* "sent 1.20 GiB (98.1 MiB/s)": the rate since the mark, left out while nothing moved at all. */
static int format_direction(char *out, size_t len, const char *name, uint64_t bytes,
                            uint64_t before, double secs)
{
	char total[32], rate[32];

	units_format_bytes(bytes, total, sizeof total);
	if (bytes == 0 || secs <= 0)
		return snprintf(out, len, "%s %s", name, total);
	units_format_bytes((uint64_t)((double)(bytes - before) / secs), rate, sizeof rate);
	return snprintf(out, len, "%s %s (%s/s)", name, total, rate);
}

/* --chain's sender: where the slowest receiver is (a count of the stream, not the end mark). */
static uint64_t slowest_receiver(const struct session *s)
{
	return s->slowest < s->sent.bytes ? s->slowest : s->sent.bytes;
}

static int chain_sender(const struct session *s)
{
	return s->cfg->chain && !s->cfg->listen;
}

/*
 * What to append after the counts: "; 45%, ETA 15 s" when the expected size
 * is known (--chain: of the slowest receiver).
 */
static void format_share(const struct progress *p, double elapsed, char *out, size_t len)
{
	uint64_t done = p->count_received ? p->s->received.bytes : p->s->sent.bytes;
	double left;
	char eta[32];

	out[0] = '\0';
	if (chain_sender(p->s))
		done = slowest_receiver(p->s);
	if (p->total == 0)
		return;
	if (done == 0 || done >= p->total || elapsed <= 0) {
		snprintf(out, len, "; %.0f%%", (double)done * 100 / (double)p->total);
		return;
	}
	/* the mean rate so far: steadier than the last interval's */
	left = (double)(p->total - done) * elapsed / (double)done;
	format_seconds(left, eta, sizeof eta);
	snprintf(out, len, "; %.0f%%, ETA %s", (double)done * 100 / (double)p->total, eta);
}

/*
 * One progress line without its end: "fastcat: 12.0 s: sent 1.20 GiB
 * (98.1 MiB/s), received 0 B; 45%, ETA 15 s". Both directions are shown,
 * except one that cannot move (-d, --send-only); rates are since the mark.
 */
static void format_line(const struct progress *p, const struct progress_mark *since, double now,
                        char *out, size_t len)
{
	const struct session *s = p->s;
	const struct config *cfg = s->cfg;
	int show_sent = !cfg->recv_only || cfg->verify, show_received = !cfg->send_only;
	double secs = now - since->at, elapsed = now - s->sent.started;
	char when[32], sent[96] = "", received[96] = "", share[64];

	format_seconds(elapsed, when, sizeof when);
	if (show_sent)
		format_direction(sent, sizeof sent, "sent", s->sent.bytes, since->sent, secs);
	if (chain_sender(s)) { /* nothing comes back but the results */
		char slowest[32];

		units_format_bytes(slowest_receiver(s), slowest, sizeof slowest);
		snprintf(received, sizeof received, "slowest receiver %s", slowest);
	} else if (show_received) {
		format_direction(received, sizeof received, "received", s->received.bytes,
		                 since->received, secs);
	}
	format_share(p, elapsed, share, sizeof share);
	snprintf(out, len, "fastcat: %s: %s%s%s%s", when, sent,
	         show_sent && show_received ? ", " : "", received, share);
}

/* Redraw the live line over the last one; a shorter line blanks what is left of it. */
static void draw_live(struct progress *p, double now)
{
	char line[256];
	int n;

	format_line(p, &p->live_mark, now, line, sizeof line);
	n = (int)strlen(line);
	/* a line that wraps cannot be redrawn with \r */
	if (p->columns > 1 && n > p->columns - 1)
		n = p->columns - 1;
	fprintf(stderr, "\r%.*s%*s", n, line, p->shown > n ? p->shown - n : 0, "");
	fflush(stderr);
	if (n > p->shown)
		p->shown = n;
	p->live_mark = mark_now(p->s, now);
}

static void print_plain(struct progress *p, double now)
{
	char line[256];

	progress_clear(p);
	format_line(p, &p->plain_mark, now, line, sizeof line);
	fprintf(stderr, "%s\n", line);
	fflush(stderr);
	p->plain_mark = mark_now(p->s, now);
}

/* Draw what is due at now: an --interval line, the live line, neither or both. */
void progress_tick(struct progress *p, double now)
{
	double interval = (double)p->s->cfg->interval_ms / 1000;

	if (p->next_plain > 0 && now >= p->next_plain) {
		print_plain(p, now);
		/* keep the schedule, unless the loop fell a whole interval behind */
		p->next_plain += interval;
		if (p->next_plain <= now)
			p->next_plain = now + interval;
	}
	if (p->next_live > 0 && now >= p->next_live) {
		draw_live(p, now);
		p->next_live = now + LIVE_PERIOD;
	}
}

/* Erase the live line, so that what stderr says next starts a clean line. */
void progress_clear(struct progress *p)
{
	if (p->shown == 0)
		return;
	fprintf(stderr, "\r%*s\r", p->shown, "");
	fflush(stderr);
	p->shown = 0;
}
