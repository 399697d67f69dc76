/* progress.h: what --progress and --interval keep between lines (progress.c, relay.c). */
#ifndef PROGRESS_H
#define PROGRESS_H

#include <stdint.h>

#include "fastcat.h"

/* Byte counts at one moment, for the rate since then. */
struct progress_mark {
	double at; /* monotonic seconds */
	uint64_t sent, received;
};

/* --progress and --interval: what is on screen and when to draw next (progress.c). */
struct progress {
	const struct session *s;
	uint64_t total;     /* bytes expected in the counted direction, 0 = unknown */
	int count_received; /* the percentage counts received bytes (-d), else sent */
	int live;           /* --progress and stderr is a terminal */
	int columns;        /* the terminal's width, 0 = unknown */
	int shown;          /* columns of the live line on screen now, 0 = none */
	double next_live;   /* monotonic seconds of the next redraw, 0 = none */
	double next_plain;  /* ... of the next --interval line, 0 = none */
	struct progress_mark live_mark, plain_mark; /* the previous line of each kind */
};

/* progress.c */
void progress_start(struct progress *, const struct session *, int);
double progress_due(const struct progress *);
void progress_tick(struct progress *, double);
void progress_clear(struct progress *);

#endif
