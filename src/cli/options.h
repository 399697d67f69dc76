/* options.h: the option table, and what the options*.c files share (private to them). */
#ifndef FASTCAT_OPTIONS_H
#define FASTCAT_OPTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct config;

/* Entries of options_table; the definition must have exactly this many (a mismatch is a type
 * error). */
#define OPTIONS_COUNT 62

/* How an option's value is read before it is stored or handed to a handler. */
enum opt_arg {
	ARG_NONE,    /* a flag: the value is .value */
	ARG_SIZE,    /* digits and a 1024-based suffix, in .range */
	ARG_RATE,    /* bytes per second, with the size suffixes, in .range */
	ARG_TIME,    /* seconds, fractions or "ms", as milliseconds, in .range */
	ARG_KEYWORD, /* one word of .keywords; the value is its .value */
	ARG_STRING,  /* the text as typed, for the handler */
};

/* The flags struct seen collects, for the checks after parsing. */
enum {
	SEEN_IPV4 = 1 << 0,
	SEEN_IPV6 = 1 << 1,
	SEEN_UDP = 1 << 2,         /* -u */
	SEEN_UNIX = 1 << 3,        /* -U */
	SEEN_UNIX_MODE = 1 << 4,   /* --unix-mode */
	SEEN_RCVLOWAT = 1 << 5,    /* --rcvlowat */
	SEEN_READ_SIZE = 1 << 6,   /* --read-size, which overrides -B */
	SEEN_WRITE_SIZE = 1 << 7,  /* --write-size, which overrides -B */
	SEEN_READ_SET = 1 << 8,    /* the read size was given, by any of the three */
	SEEN_WRITE_SET = 1 << 9,   /* the write size was given, by any of the three */
	SEEN_RETRY_WAIT = 1 << 10, /* --retry-wait */
	SEEN_REPLAY = 1 << 11,     /* --replay-buffer */
	SEEN_SYNC_EVERY = 1 << 12, /* --sync-every */
	/* what --image turns on unless given: -P, --retry, --verify, --sparse, --sync (or --no-) */
	SEEN_PARALLEL = 1 << 13,
	SEEN_RETRY = 1 << 14,
	SEEN_VERIFY = 1 << 15,
	SEEN_SPARSE = 1 << 16,
	SEEN_SYNC = 1 << 17,
};

/* What --bench makes of an option. */
enum opt_bench {
	BENCH_REFUSES, /* a connection's option: "--bench and -k: cannot be combined" */
	BENCH_TAKES,   /* -v, --report, --bench itself */
	BENCH_NEEDS,   /* --bench-*: "--bench-time: needs --bench" */
};

/* The groups of --help-all, in the order they are printed. */
enum opt_section {
	SECTION_CONNECTION,
	SECTION_TRANSPORT,
	SECTION_SPEED,
	SECTION_EOF,
	SECTION_REPORT,
	SECTION_BENCH,
	SECTION_INFO, /* -h, -V: at the end, without a heading */
};

/* Flags seen on the command line that only matter for the checks after parsing. */
struct seen {
	unsigned flags;        /* SEEN_* of the options given */
	const char *transport; /* --transport NAME */
	int nargs;             /* the operands after the options */
	char **args;
	char acl_label[32];  /* the first --allow or --deny, which needs a TCP or UDP listener */
	char label[32];      /* the option being applied, as typed: "-B" or "--chunk-size" */
	char size_label[64]; /* the last option that set the read size, with its value */
	char bench_only[32]; /* the first --bench-* option, which needs --bench */
	char not_bench[32];  /* the first option --bench cannot take */
};

/* A number's bounds, and what an error says when it is outside them. */
struct opt_range {
	uint64_t min, max;
	const char *message; /* after "LABEL VALUE: ", e.g. "chunk size must be 1 byte to 64 MiB" */
};

/* One word of a keyword option, and the value it stands for. */
struct opt_keyword {
	const char *word;
	int value;
};

struct opt_spec;

/*
 * An option that is more than a field: gets the value read by .arg (v for a
 * flag, number or keyword; arg for the text), returns 0, EXIT_USAGE with the
 * reason in fail, or -1 when fastcat should exit 0 (--help, --version).
 */
struct opt_call {
	struct config *cfg;
	struct seen *seen;
	const struct opt_spec *o;
	const char *arg;      /* the text as typed */
	uint64_t v;           /* the value as .arg read it */
	struct failure *fail; /* the reason, for EXIT_USAGE */
};

typedef int opt_handler(const struct opt_call *);

/* One option: how it is spelled, read, stored, checked and documented. */
struct opt_spec {
	const char *name;                   /* long name without "--"; NULL: a letter only */
	int letter;                         /* short option; 0: none */
	enum opt_arg arg;                   /* what its value is */
	int optional;                       /* the value may be left out (--report) */
	struct opt_range range;             /* ARG_SIZE, ARG_RATE, ARG_TIME */
	const struct opt_keyword *keywords; /* ARG_KEYWORD: ends with a NULL word */
	int value;                          /* ARG_NONE: what the flag stores */
	size_t offset, width;               /* the struct config field; width 0: none */
	opt_handler *handler;               /* instead of storing to the field */
	unsigned seen;                      /* SEEN_* it sets once applied */
	enum opt_bench bench;               /* whether --bench takes it */
	enum opt_section section;           /* its group in --help-all */
	const char *metavar;                /* how help shows the value: " SIZE", "=MODE" */
	const char *synopsis; /* --help-all's spelling when it is not derived ("-4, -6") */
	const char *help;     /* --help-all's text, lines split at '\n'; NULL: in another's row */
	const char *brief;    /* its piece of the one-screen --help, as spelled there; NULL: none */
};

/* A field of struct config, for .offset and .width. */
#define OPT_FIELD(member)                                                                          \
	.offset = offsetof(struct config, member), .width = sizeof(((struct config *)0)->member)

/* options-table.c */
extern const struct opt_spec options_table[OPTIONS_COUNT];

/* options.c */
int options_parse(int, char **, struct config *, struct failure *);
void options_usage(void);
const struct opt_spec *options_find(const char *);

/* options-value.c */
int options_number(enum opt_arg, const struct opt_range *, const char *, const char *, uint64_t *,
                   struct failure *);

/* options-check-udp.c */
int options_check_reliable(struct config *, const struct seen *, struct failure *);
int options_check_multicast(struct config *, const struct seen *, struct failure *);

/* options-set.c */
opt_handler options_set_chunk, options_set_dgram_size, options_set_transport, options_set_acl,
    options_set_unix_mode, options_set_parallel, options_set_congestion, options_set_mcast_if;

/* options-bench.c */
opt_handler options_bench_links, options_bench_sizes;
void options_bench_defaults(struct config *);
void options_bench_note(struct seen *, const struct opt_spec *);
int options_bench_check(struct config *, const struct seen *, struct failure *);

/* options-check.c */
int options_check(struct config *, const struct seen *, struct failure *);

/* options-help.c */
opt_handler options_help, options_help_all, options_version;
void options_help_write(FILE *, int);

#endif
