/*
 * report-agent.c: the report while the relay runs, as a relay agent: the
 * --progress and --interval lines when they are due, and a report so far on
 * SIGUSR1; the live line is erased before anything else is printed.
 */
#include "config.h"

#include "fastcat.h"
#include "relay/relay.h"
#include "report/report.h"

static void agent_start(void *ctx, struct relay *r, double now)
{
	struct progress *p = ctx;

	(void)now;
	progress_start(p, relay_session(r), p->in);
}

/* SIGUSR1: the report so far, on a line of its own. */
static int agent_turn(void *ctx, struct relay *r, double now)
{
	struct progress *p = ctx;

	(void)now;
	if (signal_report) {
		signal_report = 0;
		progress_clear(p);
		report_print(relay_session(r), 0);
	}
	return 0;
}

static void agent_idle(void *ctx, struct relay *r, double now)
{
	(void)r;
	progress_tick(ctx, now);
}

/* The next line to draw wakes the relay's poll; an idle transfer still redraws. */
static double agent_due(const void *ctx, const struct relay *r, double now)
{
	double due = progress_due(ctx);

	(void)r;
	(void)now;
	return due > 0 ? due : -1;
}

/* The report or the error line comes next, on a line of its own. */
static void agent_stop(void *ctx, struct relay *r)
{
	(void)r;
	progress_clear(ctx);
}

static const struct relay_agent report_agent = {
    .start = agent_start,
    .turn = agent_turn,
    .idle = agent_idle,
    .due = agent_due,
    .stop = agent_stop,
};

/* The session's progress and SIGUSR1 report while the relay runs; p lives as long. */
void report_plug(struct progress *p, struct relay_setup *rs)
{
	p->in = rs->in;
	relay_add_agent(rs, &report_agent, p);
}
