/* bench-report.c: what --bench prints: a progress line, a table for people, a JSON line. */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "fastcat.h"
#include "bench/bench.h"
#include "report/report.h"

#define MAX_CELLS (BENCH_LINKS * (BENCH_SIZES_MAX + 1))

/* "tcp 64 KiB", or "tcp latency": how messages name a cell. */
void bench_cell_name(const struct bench_cell *c, char *out, size_t len)
{
	char size[32];

	if (c->latency) {
		snprintf(out, len, "%s latency", c->link->name);
		return;
	}
	units_format_size(c->size, size, sizeof size);
	snprintf(out, len, "%s %s", c->link->name, size);
}

/* On a terminal, one line redrawn in place: "bench: tcp 64 KiB (23/55)...". Elsewhere nothing. */
void bench_progress(struct bench_run *r, const struct bench_cell *c)
{
	char name[64];
	int n;

	if (!r->progress)
		return;
	bench_cell_name(c, name, sizeof name);
	n = fprintf(stderr, "\rbench: %s (%zu/%zu)...", name, r->done + 1, r->nrun) - 1;
	if (n < r->shown)
		fprintf(stderr, "%*s", r->shown - n, "");
	r->shown = n > r->shown ? n : r->shown;
	fflush(stderr);
}

void bench_progress_clear(struct bench_run *r)
{
	if (r->shown == 0)
		return;
	fprintf(stderr, "\r%*s\r", r->shown, "");
	fflush(stderr);
	r->shown = 0;
}

static double cell_loss(const struct bench_cell *c)
{
	return c->sent > 0 && c->received <= c->sent ? 1 - (double)c->received / (double)c->sent
	                                             : 0;
}

/* Three significant digits or so: "0.52", "12.3", "1234". */
static int format_value(double v, char *out, size_t len)
{
	return snprintf(out, len, v >= 100 ? "%.0f" : v >= 10 ? "%.1f" : "%.2f", v);
}

/* The text of a cell: its value, "812 (12% lost)", "-" for n/a, "error". */
static void cell_text(const struct bench_cell *c, char *out, size_t len)
{
	double pct = cell_loss(c) * 100;
	int n;

	if (c->state != CELL_DONE) {
		snprintf(out, len, "%s",
		         c->state == CELL_NA       ? "-"
		         : c->state == CELL_FAILED ? "error"
		                                   : "?");
		return;
	}
	n = format_value(c->value, out, len);
	if (pct <= 0 || n < 0 || (size_t)n >= len)
		return;
	if (pct >= 9.95)
		snprintf(out + n, len - (size_t)n, " (%.0f%% lost)", pct);
	else if (pct >= 0.05)
		snprintf(out + n, len - (size_t)n, " (%.1f%% lost)", pct);
	else
		snprintf(out + n, len - (size_t)n, " (<0.1%% lost)");
}

/* Cells are stored link after link, each with its sizes and then its latency. */
static const struct bench_cell *cell_at(const struct bench_run *r, size_t col, size_t row)
{
	return &r->cells[col * (r->cfg->bench_nsizes + 1) + row];
}

static void row_label(const struct bench_run *r, size_t row, char *out, size_t len)
{
	if (row == r->cfg->bench_nsizes)
		snprintf(out, len, "latency");
	else
		units_format_size(r->cfg->bench_sizes[row], out, len);
}

static int max_trials(const struct bench_run *r)
{
	int most = 0;

	for (size_t i = 0; i < r->ncells; i++)
		most = r->cells[i].trials > most ? r->cells[i].trials : most;
	return most;
}

static void print_header(const struct bench_run *r)
{
	struct utsname u;

	if (uname(&u) != 0)
		snprintf(u.sysname, sizeof u.sysname, "?"),
		    snprintf(u.release, sizeof u.release, "?");
	printf("fastcat %s --bench on %s %s, %ld CPUs: %zu cells, %.2f s each, %.1f s in all\n",
	       FASTCAT_VERSION, u.sysname, u.release, sysconf(_SC_NPROCESSORS_ONLN), r->nrun,
	       r->nrun ? r->budget / (double)r->nrun : 0.0, r->elapsed);
	printf("each cell: a warm-up, then the median of %d trials between two processes "
	       "(memcpy: one)\n",
	       max_trials(r));
	printf("MB/s = 10^6 bytes/s received (memcpy: copied); latency = µs per 1-byte round "
	       "trip\n\n");
}

/* "- udp 64 KiB, 256 KiB: why": the n/a cells of a column that share a reason, on one line. */
static void print_footnotes(const struct bench_run *r, size_t cols, size_t rows)
{
	char done[MAX_CELLS] = {0}, label[32];
	int failed = 0;

	for (size_t col = 0; col < cols; col++)
		for (size_t row = 0; row < rows; row++) {
			const struct bench_cell *c = cell_at(r, col, row);
			failed |= c->state == CELL_FAILED;
			if (c->state != CELL_NA || done[c - r->cells])
				continue;
			printf("- %s", c->link->name);
			for (size_t k = row; k < rows; k++) {
				const struct bench_cell *d = cell_at(r, col, k);
				if (d->state != CELL_NA || strcmp(d->note, c->note) != 0)
					continue;
				row_label(r, k, label, sizeof label);
				printf("%s %s", k == row ? "" : ",", label);
				done[d - r->cells] = 1;
			}
			printf(": %s\n", c->note);
		}
	if (failed)
		printf("error: the cell failed; the reason is on standard error\n");
}

/* Rows are sizes and the latency, columns the links, as in Stevens' tables A.1 and A.2. */
void bench_print_table(const struct bench_run *r)
{
	size_t rows = r->cfg->bench_nsizes + 1, cols = r->ncells / rows;
	int width[BENCH_LINKS + 1];
	char text[64];

	width[0] = (int)strlen("latency");
	for (size_t col = 0; col < cols; col++) {
		width[col + 1] = (int)strlen(cell_at(r, col, 0)->link->name);
		for (size_t row = 0; row < rows; row++) {
			cell_text(cell_at(r, col, row), text, sizeof text);
			if ((int)strlen(text) > width[col + 1])
				width[col + 1] = (int)strlen(text);
		}
	}
	print_header(r);
	printf("%*s", width[0], "size");
	for (size_t col = 0; col < cols; col++)
		printf("  %*s", width[col + 1], cell_at(r, col, 0)->link->name);
	printf("\n");
	for (size_t row = 0; row < rows; row++) {
		row_label(r, row, text, sizeof text);
		printf("%*s", width[0], text);
		for (size_t col = 0; col < cols; col++) {
			cell_text(cell_at(r, col, row), text, sizeof text);
			printf("  %*s", width[col + 1], text);
		}
		printf("\n");
	}
	print_footnotes(r, cols, rows);
	fflush(stdout);
}

/* One JSON object for a cell; n/a and failed cells have a null value and a reason or an error. */
static void json_cell(const struct bench_cell *c, int first)
{
	printf("%s{\"transport\":\"%s\"", first ? "" : ",", c->link->name);
	if (!c->latency)
		printf(",\"size\":%zu", c->size);
	if (c->state != CELL_DONE) {
		char note[400];

		report_json_string(note, sizeof note, c->note);
		printf(",\"%s\":null,\"%s\":%s}", c->latency ? "usec" : "mbps",
		       c->state == CELL_NA ? "reason" : "error", note);
		return;
	}
	printf(",\"%s\":%.3f,\"trials\":%d,\"seconds\":%.4f", c->latency ? "usec" : "mbps",
	       c->value, c->trials, c->slice);
	if (c->latency)
		printf(",\"round_trips\":%llu}", (unsigned long long)c->sent);
	else if (bench_link_datagram(c->link))
		printf(",\"bytes\":%llu,\"loss\":%.4f,\"sent\":%llu,\"received\":%llu}",
		       (unsigned long long)c->bytes, cell_loss(c), (unsigned long long)c->sent,
		       (unsigned long long)c->received);
	else
		printf(",\"bytes\":%llu,\"loss\":0}", (unsigned long long)c->bytes);
}

/* --report=json: the whole run as one line on standard output. */
void bench_print_json(const struct bench_run *r, int status)
{
	struct utsname u;
	char sys[80], rel[160];
	int first;

	if (uname(&u) != 0)
		snprintf(u.sysname, sizeof u.sysname, "?"),
		    snprintf(u.release, sizeof u.release, "?");
	report_json_string(sys, sizeof sys, u.sysname);
	report_json_string(rel, sizeof rel, u.release);
	printf("{\"fastcat\":\"%s\",\"bench\":{\"system\":%s,\"kernel\":%s,\"cpus\":%ld,"
	       "\"seconds\":%.3f,\"seconds_per_cell\":%.3f,\"elapsed\":%.3f,\"cells\":[",
	       FASTCAT_VERSION, sys, rel, sysconf(_SC_NPROCESSORS_ONLN), r->budget,
	       r->nrun ? r->budget / (double)r->nrun : 0.0, r->elapsed);
	first = 1;
	for (size_t i = 0; i < r->ncells; i++)
		if (!r->cells[i].latency) {
			json_cell(&r->cells[i], first);
			first = 0;
		}
	printf("],\"latency\":[");
	first = 1;
	for (size_t i = 0; i < r->ncells; i++)
		if (r->cells[i].latency) {
			json_cell(&r->cells[i], first);
			first = 0;
		}
	printf("]},\"exit_status\":%d}\n", status);
	fflush(stdout);
}
