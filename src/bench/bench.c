/* bench.c: fastcat --bench: plan the cells, give each a warm-up and timed trials, keep medians. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fastcat.h"
#include "bench/bench.h"

#define MIN_SLICE  0.005 /* the shortest trial: rather overrun --bench-time than go below */
#define FEW_TRIALS 3     /* trials per cell when a cell has less than SHORT_CELL seconds */
#define SHORT_CELL 0.05
#define MARGIN     0.97 /* the share of --bench-time the plan uses: output and slack fit the rest */

/* The payload: random bytes from xorshift64, so that nothing can profit from zeros. */
static void fill_random(unsigned char *p, size_t n)
{
	uint64_t x = 0x9e3779b97f4a7c15ULL ^ (uint64_t)getpid();

	for (size_t i = 0; i < n; i += sizeof x) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(p + i, &x, n - i < sizeof x ? n - i : sizeof x);
	}
}

static void cell_fail(struct bench_run *r, struct bench_cell *c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Mark a cell failed and say so at once, in one line naming it; NULL: c->note says why. */
static void cell_fail(struct bench_run *r, struct bench_cell *c, const char *fmt, ...)
{
	char name[64];

	if (fmt != NULL) {
		va_list ap;

		va_start(ap, fmt);
		log_vformat(c->note, sizeof c->note, 0, fmt, ap);
		va_end(ap);
	}
	c->state = CELL_FAILED;
	bench_progress_clear(r);
	bench_cell_name(c, name, sizeof name);
	log_error("bench %s: %s", name, c->note);
}

static int compare_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(const double *v, int n)
{
	double s[BENCH_TRIALS];

	memcpy(s, v, (size_t)n * sizeof *v);
	qsort(s, (size_t)n, sizeof *s, compare_double);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/*
 * The time a cell gets is what is left of the budget shared by the cells left,
 * so that an early overrun (forks cost more than estimated) is paid back by
 * the later cells and the whole run ends on time.
 */
static double plan_slice(struct bench_run *r, int *trials)
{
	double left = r->budget * MARGIN - (clock_now() - r->started);
	double cell = left > 0 ? left / (double)(r->nrun - r->done) : 0;
	double slice;

	*trials = cell >= SHORT_CELL ? BENCH_TRIALS : FEW_TRIALS;
	slice = (cell - r->overhead * (*trials + 1)) / (*trials + 0.5);
	return slice > MIN_SLICE ? slice : MIN_SLICE;
}

/* A cell: a warm-up of half a slice, then the trials; the median is its value. */
static void cell_run(struct bench_run *r, struct bench_cell *c)
{
	char err[sizeof c->note], name[64], each[16 * BENCH_TRIALS];
	struct bench_outcome o;
	int trials, n = 0;

	c->slice = plan_slice(r, &trials);
	bench_progress(r, c);
	for (int i = -1; i < trials && !signal_stop; i++) {
		double t0 = clock_now(), slice = i < 0 ? c->slice / 2 : c->slice, cost;
		memset(&o, 0, sizeof o);
		if (bench_trial(r, c, slice, &o, err, sizeof err) != 0) {
			if (!signal_stop)
				cell_fail(r, c, "%s", err);
			r->done++;
			return;
		}
		cost = clock_now() - t0 - slice;
		if (c->link->open !=
		    NULL) /* memcpy forks nothing: it says nothing about the cost */
			r->overhead = 0.8 * r->overhead + 0.2 * (cost > 0 ? cost : 0);
		if (i < 0)
			continue;
		c->trial[c->trials++] = o.value;
		c->bytes += o.bytes;
		c->sent += o.sent;
		c->received += o.received;
	}
	r->done++;
	if (signal_stop)
		return;
	c->value = median(c->trial, c->trials);
	c->state = CELL_DONE;
	bench_cell_name(c, name, sizeof name);
	for (int i = 0; i < c->trials; i++)
		n += snprintf(each + n, sizeof each - (size_t)n, " %.4g", c->trial[i]);
	log_verbose("bench %s: %d trials of %.3f s (+%.1f ms setup each):%s; median %.4g %s", name,
	            c->trials, c->slice, r->overhead * 1000, each, c->value,
	            c->latency ? "us" : "MB/s");
}

/* Decide, before any timing, which cells a link cannot carry (they get "-"). */
static void cell_plan(struct bench_run *r, struct bench_cell *c)
{
	struct bench_end ends[2];
	int rc;

	if (c->link->open == NULL) {
		if (!c->latency)
			return;
		snprintf(c->note, sizeof c->note, "one process: no round trip");
		c->state = CELL_NA;
		return;
	}
	rc = bench_link_open(c->link, c->size, ends, r->payload, r->buf, c->note, sizeof c->note);
	if (rc == 0)
		bench_link_close(ends);
	else if (rc > 0)
		c->state = CELL_NA;
	else
		cell_fail(r, c, NULL);
}

/* The cells in table order: for each link, each size, then its latency. */
static int run_init(struct bench_run *r, const struct config *cfg)
{
	size_t max = 4096, n = 0;

	memset(r, 0, sizeof *r);
	r->cfg = cfg;
	r->budget = (double)cfg->bench_ms / 1000;
	r->overhead = 0.010; /* fork, exit and setup per trial; measured as the run goes */
	r->progress = isatty(STDERR_FILENO);
	for (size_t i = 0; i < cfg->bench_nsizes; i++)
		max = cfg->bench_sizes[i] > max ? cfg->bench_sizes[i] : max;
	r->cells = calloc(BENCH_LINKS * (cfg->bench_nsizes + 1), sizeof *r->cells);
	r->payload = malloc(max);
	r->buf = malloc(max + 1);
	if (r->cells == NULL || r->payload == NULL || r->buf == NULL) {
		log_error("bench: out of memory for %zu-byte buffers", max);
		return -1;
	}
	fill_random(r->payload, max);
	for (int l = 0; l < BENCH_LINKS; l++) {
		if (!(cfg->bench_links & (1u << l)))
			continue;
		for (size_t s = 0; s <= cfg->bench_nsizes; s++) {
			struct bench_cell *c = &r->cells[n++];
			c->link = &bench_links[l];
			c->latency = s == cfg->bench_nsizes;
			c->size = c->latency ? 1 : cfg->bench_sizes[s];
		}
	}
	r->ncells = n;
	r->started = clock_now();
	for (size_t i = 0; i < n; i++) {
		cell_plan(r, &r->cells[i]);
		r->nrun += r->cells[i].state == CELL_PENDING;
	}
	return 0;
}

/* fastcat --bench: returns the exit status. */
int bench_run(const struct config *cfg)
{
	struct bench_run r;
	int status = EXIT_OK;

	if (run_init(&r, cfg) != 0) {
		status = EXIT_RUNTIME;
		goto out;
	}
	for (size_t i = 0; i < r.ncells && !signal_stop; i++)
		if (r.cells[i].state == CELL_PENDING)
			cell_run(&r, &r.cells[i]);
	bench_progress_clear(&r);
	r.elapsed = clock_now() - r.started;
	if (signal_stop) {
		log_error("interrupted by %s", signals_stop_name());
		status = EXIT_RUNTIME;
		goto out;
	}
	for (size_t i = 0; i < r.ncells; i++)
		if (r.cells[i].state == CELL_FAILED)
			status = EXIT_RUNTIME;
	if (cfg->report == REPORT_JSON)
		bench_print_json(&r, status);
	else
		bench_print_table(&r);
out:
	free(r.cells);
	free(r.payload);
	free(r.buf);
	return status;
}
