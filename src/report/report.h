/*
 * report.h: what a session achieved, told: the report (human or one JSON line), the
 * --progress and --interval lines while it runs, and -v's hints on what limited it.
 */
#ifndef FASTCAT_REPORT_H
#define FASTCAT_REPORT_H

#include <stdint.h>

#include "fastcat.h"
#include "relay/relay.h"

/* Byte counts at one moment, for the rate since then. */
struct progress_mark {
	double at; /* monotonic seconds */
	uint64_t sent, received;
};

/* --progress and --interval: what is on screen and when to draw next (progress.c). */
struct progress {
	const struct session *s;
	int in;             /* stdin, whose file's size makes the 100 % */
	uint64_t total;     /* bytes expected in the counted direction, 0 = unknown */
	int count_received; /* the percentage counts received bytes (-d), else sent */
	int live;           /* --progress and stderr is a terminal */
	int columns;        /* the terminal's width, 0 = unknown */
	int shown;          /* columns of the live line on screen now, 0 = none */
	double next_live;   /* monotonic seconds of the next redraw, 0 = none */
	double next_plain;  /* ... of the next --interval line, 0 = none */
	struct progress_mark live_mark, plain_mark; /* the previous line of each kind */
};

/* hint.c: what limited a transfer, from its TCP figures (pure, unit-tested) */
enum hint {
	HINT_NONE,   /* too short to tell, or nothing but the path itself */
	HINT_SNDBUF, /* our send buffer held the connection back */
	HINT_RWND,   /* the peer's receive window did (its tcp_rmem, -I, or a slow reader) */
	HINT_SOURCE, /* the connection idled: stdin was slower than the network */
	HINT_LOSS,   /* busy, not buffer-limited, and retransmitting: loss kept cwnd down */
};
struct hint_input {
	double seconds;              /* how long this end sent */
	uint64_t bytes;              /* what it sent */
	int sndbuf;                  /* SO_SNDBUF at the end */
	const struct tcp_stats *tcp; /* TCP_INFO at the end */
	const char *wmem, *rmem;     /* net.ipv4.tcp_wmem, tcp_rmem as text, or NULL */
	unsigned streams;            /* connections tcp adds up (-P); 0 or 1: one */
	const char *auto_decision;   /* -P auto: what it decided; NULL: -P auto did not run */
};
enum hint hint_choose(const struct hint_input *);
void hint_format(char *, size_t, enum hint, const struct hint_input *);
int hint_format_cap(char *, size_t, const char *, const char *, int, int, double);

/* progress.c */
void progress_start(struct progress *, const struct session *, int);
double progress_due(const struct progress *);
void progress_tick(struct progress *, double);
void progress_clear(struct progress *);

/* report-agent.c */
void report_plug(struct progress *, struct relay_setup *);

/* report.c */
void report_print(struct session *, int);

/* report-json.c */
void report_print_json(const struct session *, int, int, int, double);
void report_json_string(char *, size_t, const char *);

#endif
