/* bench.h: --bench's links, trials and table (bench*.c). */
#ifndef BENCH_H
#define BENCH_H

#include <stdint.h>

#include "fastcat.h"

/* bench.c */
int bench_run(const struct config *);

/* bench-link.c: the names --bench-transports takes */
int bench_link_find(const char *);
const char *bench_link_names(void);

/* --bench: the links it measures and the trials per cell. */
#define BENCH_TRIALS 5 /* timed trials per cell (after a warm-up); the median is shown */

/* The two ends of a --bench link: in == out for a socket, two pipes for "pipe". */
struct bench_end {
	int in, out;
};

/* A way to move bytes that --bench measures (bench-link.c). */
struct bench_link {
	const char *name;
	const struct transport *transport; /* a socket's type; NULL for pipe and memcpy */
	/* open both ends for messages of a size; NULL: one process (memcpy) */
	int (*open)(const struct bench_link *, size_t, struct bench_end[2], char *, size_t);
	int lossy;          /* may drop datagrams: loss is counted, not an error */
	size_t max_message; /* the largest message it can carry, 0 = the kernel decides */
	const char *limit;  /* why a larger one cannot go */
};

/* What a process of a --bench trial needs to know. */
struct bench_job {
	const struct bench_link *link;
	size_t size;                  /* bytes per message */
	double slice;                 /* seconds the sender (pinger, copier) runs */
	const unsigned char *payload; /* random bytes, at least size and 4096 */
	unsigned char *buf;           /* receive buffer, size + 1 bytes */
	int ctl;                      /* sender: the parent's go/stop pipe, -1 = none */
};

/* One process's account of a --bench trial, sent to the parent through a pipe. */
struct bench_tally {
	uint64_t bytes;    /* payload bytes sent, received or copied */
	uint64_t messages; /* messages sent, reads or datagrams received, round trips */
	double start, end; /* monotonic seconds: first byte sent, last byte received */
	int err;           /* errno of the failure, 0 = none */
	char what[120];    /* what failed, "" = nothing */
};

/* What one --bench trial measured (bench-trial.c). */
struct bench_outcome {
	double value;            /* MB/s, or µs per round trip */
	uint64_t bytes;          /* bytes received */
	uint64_t sent, received; /* messages sent and received (round trips for latency) */
};

enum bench_state { CELL_PENDING, CELL_DONE, CELL_NA, CELL_FAILED };

/* One entry of the --bench table: a link at a message size, or its latency. */
struct bench_cell {
	const struct bench_link *link;
	size_t size; /* bytes per message; 1 for latency */
	int latency; /* 1-byte round trips rather than bandwidth */
	enum bench_state state;
	char note[200];             /* why it is n/a, or what failed */
	int trials;                 /* timed trials done */
	double trial[BENCH_TRIALS]; /* MB/s, or µs per round trip */
	double value;               /* the median of trial[] */
	double slice;               /* seconds per trial */
	uint64_t bytes;             /* bytes received in the timed trials */
	uint64_t sent, received;    /* messages sent and received in them (latency: round trips) */
};

/* A whole --bench run (bench.c). */
struct bench_run {
	const struct config *cfg;
	struct bench_cell *cells; /* link after link: each size, then the latency */
	size_t ncells;
	size_t nrun;            /* cells to time (not n/a) */
	size_t done;            /* cells timed so far */
	unsigned char *payload; /* random, as long as the largest size (4096 at least) */
	unsigned char *buf;     /* receive buffer, one byte longer */
	double budget;          /* --bench-time, seconds */
	double started;         /* monotonic seconds */
	double elapsed;         /* seconds the run took */
	double overhead;        /* seconds a trial costs beyond its slice (forks, setup) */
	int progress;           /* stderr is a terminal: keep a progress line */
	int shown;              /* columns of the progress line on screen */
};

/* bench-link.c */
extern const struct bench_link bench_links[BENCH_LINKS];
int bench_link_datagram(const struct bench_link *);
int bench_link_open(const struct bench_link *, size_t, struct bench_end[2], const unsigned char *,
                    unsigned char *, char *, size_t);
void bench_link_close(struct bench_end[2]);
void bench_end_close(struct bench_end *);
int bench_link_marker(const struct bench_link *);

/* bench-loop.c */
void bench_send(const struct bench_job *, int, struct bench_tally *);
void bench_receive(const struct bench_job *, int, struct bench_tally *);
void bench_ping(const struct bench_job *, const struct bench_end *, struct bench_tally *);
void bench_echo(const struct bench_job *, const struct bench_end *, struct bench_tally *);
void bench_memcpy(const struct bench_job *, struct bench_tally *);

/* bench-trial.c */
int bench_trial(const struct bench_run *, const struct bench_cell *, double, struct bench_outcome *,
                char *, size_t);

/* bench-report.c */
void bench_cell_name(const struct bench_cell *, char *, size_t);
void bench_progress(struct bench_run *, const struct bench_cell *);
void bench_progress_clear(struct bench_run *);
void bench_print_table(const struct bench_run *);
void bench_print_json(const struct bench_run *, int);

#endif
