/* options-bench.c: --bench and its --bench-* options: defaults, lists, and what --bench refuses. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "fastcat.h"
#include "bench/bench.h"
#include "cli/options.h"

/* --bench's sizes unless --bench-sizes: those of lmbench's and Stevens' tables, and up. */
static const size_t bench_default_sizes[] = {1, KIB, 4 * KIB, 16 * KIB, 64 * KIB, 256 * KIB, MIB};

/* A size in --bench-sizes: as large as a chunk. */
static const struct opt_range bench_size_range = {1, CHUNK_MAX, "size must be 1 byte to 64 MiB"};

void options_bench_defaults(struct config *cfg)
{
	cfg->bench_ms = 60 * 1000;
	cfg->bench_links = (1u << BENCH_LINKS) - 1;
	for (size_t i = 0; i < sizeof bench_default_sizes / sizeof bench_default_sizes[0]; i++)
		cfg->bench_sizes[cfg->bench_nsizes++] = bench_default_sizes[i];
}

/*
 * Copy the comma-separated entry at *p into out and move *p past it and its
 * comma. Returns 1 if another entry follows, 0 after the last one, -1 if the
 * entry does not fit out.
 */
static int list_next(const char **p, char *out, size_t len)
{
	size_t n = strcspn(*p, ",");
	int more = (*p)[n] == ',';

	if (n >= len)
		return -1;
	memcpy(out, *p, n);
	out[n] = '\0';
	*p += n + (size_t)more;
	return more;
}

/* --bench-transports pipe,tcp,...: the links to measure, as bits of bench_links[]. */
int options_bench_links(const struct opt_call *c)
{
	const char *p = c->arg;
	char name[32];
	int more;

	c->cfg->bench_links = 0;
	do {
		const char *entry = p;
		int i;

		more = list_next(&p, name, sizeof name);
		i = more < 0 ? -1 : bench_link_find(name);
		if (i < 0)
			return failure_set(c->fail, EXIT_USAGE,
			                   "%s %s: unknown transport '%.*s' (%s)", c->seen->label,
			                   c->arg, (int)strcspn(entry, ","), entry,
			                   bench_link_names());
		c->cfg->bench_links |= 1u << i;
	} while (more);
	return 0;
}

/* Put size into cfg's ascending list of sizes, unless it is there already. */
static int size_insert(struct config *cfg, const char *label, const char *arg, uint64_t size,
                       struct failure *fail)
{
	size_t i;

	for (i = 0; i < cfg->bench_nsizes && cfg->bench_sizes[i] < size; i++)
		;
	if (i < cfg->bench_nsizes && cfg->bench_sizes[i] == size)
		return 0;
	if (cfg->bench_nsizes == BENCH_SIZES_MAX)
		return failure_set(fail, EXIT_USAGE, "%s %s: at most %d sizes", label, arg,
		                   BENCH_SIZES_MAX);
	memmove(&cfg->bench_sizes[i + 1], &cfg->bench_sizes[i],
	        (cfg->bench_nsizes - i) * sizeof cfg->bench_sizes[0]);
	cfg->bench_sizes[i] = (size_t)size;
	cfg->bench_nsizes++;
	return 0;
}

/* --bench-sizes 1k,64k,...: kept in ascending order, each once. */
int options_bench_sizes(const struct opt_call *c)
{
	const char *label = c->seen->label, *p = c->arg;
	char text[32];
	uint64_t size;
	int more;

	c->cfg->bench_nsizes = 0;
	do {
		const char *entry = p;
		int rc;

		more = list_next(&p, text, sizeof text);
		if (more < 0)
			return failure_set(c->fail, EXIT_USAGE, "%s %.*s: invalid size", label,
			                   (int)strcspn(entry, ","), entry);
		if (text[0] == '\0')
			return failure_set(c->fail, EXIT_USAGE, "%s %s: an empty entry", label,
			                   c->arg);
		rc = options_number(ARG_SIZE, &bench_size_range, label, text, &size, c->fail);
		if (rc == 0)
			rc = size_insert(c->cfg, label, c->arg, size, c->fail);
		if (rc != 0)
			return rc;
	} while (more);
	return 0;
}

/* --bench takes -v, --report and the --bench-* options, which need it; it refuses the rest. */
void options_bench_note(struct seen *seen, const struct opt_spec *o)
{
	char *slot = o->bench == BENCH_NEEDS ? seen->bench_only : seen->not_bench;

	if (o->bench != BENCH_TAKES && slot[0] == '\0')
		snprintf(slot, sizeof seen->not_bench, "%s", seen->label);
}

/* --bench opens no connection: no operands, no connection options; its own need it. */
int options_bench_check(struct config *cfg, const struct seen *seen, struct failure *fail)
{
	if (!cfg->bench)
		return seen->bench_only[0] == '\0'
		           ? 0
		           : failure_set(fail, EXIT_USAGE, "%s: needs --bench", seen->bench_only);
	if (seen->not_bench[0] != '\0')
		return failure_set(fail, EXIT_USAGE, "--bench and %s: cannot be combined",
		                   seen->not_bench);
	if (seen->nargs > 0)
		return failure_set(fail, EXIT_USAGE,
		                   "--bench: unexpected argument '%s' (it takes no host, port or "
		                   "path)",
		                   seen->args[0]);
	return 0;
}
