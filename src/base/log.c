/* log.c: every message fastcat prints on stderr, with one prefix and one vocabulary. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/base.h"

static int verbose;

void log_set_verbose(int on)
{
	verbose = on;
}

static void log_line(const char *kind, const char *fmt, va_list ap)
{
	char line[1024];

	vsnprintf(line, sizeof line, fmt, ap);
	/* One fprintf so concurrent writers to the same stderr never interleave a line. */
	fprintf(stderr, "fastcat: %s%s\n", kind, line);
}

void log_verbose(const char *fmt, ...)
{
	va_list ap;

	if (!verbose)
		return;
	va_start(ap, fmt);
	log_line("", fmt, ap);
	va_end(ap);
}

void log_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_line("warning: ", fmt, ap);
	va_end(ap);
}

void log_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_line("", fmt, ap);
	va_end(ap);
}

/*
 * Every one-line reason that is kept for later (a usage error, a session's
 * failure, a bench cell's note) is formatted here; returns status, so a
 * caller can write "return log_format(err, errlen, EXIT_USAGE, ...)".
 */
int log_vformat(char *buf, size_t len, int status, const char *fmt, va_list ap)
{
	vsnprintf(buf, len, fmt, ap);
	return status;
}

int log_format(char *buf, size_t len, int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vformat(buf, len, status, fmt, ap);
	va_end(ap);
	return status;
}

/*
 * A failure's reason, unless it has one already: the first failure is the one reported, later
 * ones are its consequences. Returns the status it keeps.
 */
int failure_vset(struct failure *f, int status, const char *fmt, va_list ap)
{
	if (f->status == EXIT_OK)
		f->status = log_vformat(f->why, sizeof f->why, status, fmt, ap);
	return f->status;
}

int failure_set(struct failure *f, int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	failure_vset(f, status, fmt, ap);
	va_end(ap);
	return f->status;
}

void log_fatal(int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_line("", fmt, ap);
	va_end(ap);
	exit(status);
}
