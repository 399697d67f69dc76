/* options.c: argv -> one struct config, each option read as options_table says. */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "fastcat.h"
#include "cli/options.h"
#include "net/net.h"

/* getopt's value for an option: its letter, or past every letter for a long one only. */
#define VAL_LONG 256

static void config_defaults(struct config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->family = AF_UNSPEC;
	cfg->transport = &transport_tcp;
	cfg->dgram_eof = 1;
	cfg->timeout_ms = -1;
	cfg->quit_after_eof_ms = -1;
	cfg->retry_wait_ms = 500;
	cfg->replay_buffer = 64 * MIB;
	cfg->sync_every = 16 * MIB;
	cfg->unix_mode = 0600;
	cfg->exit_on_peer_eof = -1; /* decided after parsing */
	cfg->report = REPORT_NONE;
	options_bench_defaults(cfg);
}

static const struct opt_spec *spec_of_val(int val)
{
	if (val >= VAL_LONG)
		return val - VAL_LONG < OPTIONS_COUNT ? &options_table[val - VAL_LONG] : NULL;
	for (size_t i = 0; i < OPTIONS_COUNT; i++)
		if (options_table[i].letter == val)
			return &options_table[i];
	return NULL;
}

/* The option spelled "B" (a letter) or "chunk-size" (a long name), or NULL. */
const struct opt_spec *options_find(const char *spelling)
{
	for (size_t i = 0; i < OPTIONS_COUNT; i++) {
		const struct opt_spec *o = &options_table[i];
		if (spelling[1] == '\0' ? o->letter == spelling[0]
		                        : o->name != NULL && strcmp(o->name, spelling) == 0)
			return o;
	}
	return NULL;
}

/* getopt_long's tables, from options_table: ":" first, so a missing value is told from '?'. */
static void getopt_tables(struct option *longs, char *shorts)
{
	size_t n = 0;

	*shorts++ = ':';
	for (size_t i = 0; i < OPTIONS_COUNT; i++) {
		const struct opt_spec *o = &options_table[i];
		int has_arg = o->arg == ARG_NONE ? no_argument
		              : o->optional      ? optional_argument
		                                 : required_argument;
		if (o->letter != 0) {
			*shorts++ = (char)o->letter;
			if (has_arg != no_argument)
				*shorts++ = ':';
		}
		if (o->name != NULL)
			longs[n++] = (struct option){
			    o->name, has_arg, NULL, o->letter != 0 ? o->letter : VAL_LONG + (int)i};
	}
	*shorts = '\0';
	longs[n] = (struct option){NULL, 0, NULL, 0};
}

/* The name an error message uses for an option: its letter if it has one. */
static void option_label(int val, char *out, size_t len)
{
	const struct opt_spec *o = spec_of_val(val);

	if (val > 0 && val < VAL_LONG)
		snprintf(out, len, "-%c", val);
	else if (o != NULL && o->name != NULL)
		snprintf(out, len, "--%s", o->name);
	else
		snprintf(out, len, "option");
}

/*
 * The option getopt stopped at, as the user typed it: a long option from
 * its argv word (without any "=value"), a short one from its letter. A
 * short option inside a cluster leaves optind on its word, so the word
 * before it is only the option when it is a long one.
 */
static void typed_label(const char *word, int opt, char *out, size_t len)
{
	if (strncmp(word, "--", 2) == 0 && word[2] != '\0')
		snprintf(out, len, "%.*s", (int)strcspn(word, "="), word);
	else
		option_label(opt, out, len);
}

/* getopt's '?': an unknown or ambiguous option, or a value given to one that takes none. */
static int option_refused(const char *word, int opt, struct failure *fail)
{
	int is_long = strncmp(word, "--", 2) == 0 && word[2] != '\0';
	int len = (int)strcspn(word, "=");

	if (is_long && opt == 0)
		return failure_set(fail, EXIT_USAGE,
		                   "%.*s: unknown option (or an ambiguous abbreviation)", len,
		                   word);
	if (is_long && word[len] == '=')
		return failure_set(fail, EXIT_USAGE, "%.*s: takes no value", len, word);
	if (opt > 32 && opt < 127)
		return failure_set(fail, EXIT_USAGE, "-%c: unknown option", opt);
	return failure_set(fail, EXIT_USAGE, "unknown option");
}

/* A keyword option's word; the error lists them all: "--copy=x: must be auto, rw or splice". */
static int keyword_value(const struct opt_spec *o, const char *arg, uint64_t *out,
                         struct failure *fail)
{
	const struct opt_keyword *k = o->keywords;
	char words[128] = "";
	size_t used = 0;

	for (; k->word != NULL; k++)
		if (arg == NULL || strcmp(arg, k->word) == 0) {
			*out = (uint64_t)k->value;
			return 0;
		}
	for (k = o->keywords; k->word != NULL && used < sizeof words; k++)
		used += (size_t)snprintf(words + used, sizeof words - used, "%s%s",
		                         k == o->keywords    ? ""
		                         : k[1].word == NULL ? " or "
		                                             : ", ",
		                         k->word);
	return failure_set(fail, EXIT_USAGE, "--%s=%s: must be %s", o->name, arg, words);
}

/*
 * Store v in the option's field. The field is an int, long, size_t, uint64_t
 * or enum, told apart by width: every range fits the narrowest one it goes to.
 */
static void field_store(struct config *cfg, const struct opt_spec *o, uint64_t v)
{
	unsigned char *field = (unsigned char *)cfg + o->offset;
	uint32_t narrow = (uint32_t)v;

	if (o->width == sizeof narrow)
		memcpy(field, &narrow, sizeof narrow);
	else if (o->width == sizeof v)
		memcpy(field, &v, sizeof v);
}

/* One option from argv: read its value as its kind says, then store it or hand it over. */
static int option_apply(struct config *cfg, struct seen *seen, const struct opt_spec *o,
                        const char *arg, struct failure *fail)
{
	uint64_t v = (uint64_t)o->value;
	int rc = 0;

	if (o->arg == ARG_KEYWORD)
		rc = keyword_value(o, arg, &v, fail);
	else if (o->arg != ARG_NONE && o->arg != ARG_STRING)
		rc = options_number(o->arg, &o->range, seen->label, arg, &v, fail);
	if (rc == 0 && o->handler != NULL)
		rc = o->handler(&(struct opt_call){cfg, seen, o, arg, v, fail});
	else if (rc == 0)
		field_store(cfg, o, v);
	if (rc == 0) {
		seen->flags |= o->seen;
		options_bench_note(seen, o);
	}
	return rc;
}

/*
 * Fill cfg from argv. Returns 0 to go on, EXIT_USAGE with the reason in fail,
 * or -1 when --help or --version was answered and fastcat should exit 0.
 */
int options_parse(int argc, char **argv, struct config *cfg, struct failure *fail)
{
	struct option longs[OPTIONS_COUNT + 1];
	char shorts[2 + 2 * OPTIONS_COUNT], label[32];
	struct seen seen;
	int c, longindex;

	config_defaults(cfg);
	memset(&seen, 0, sizeof seen);
	getopt_tables(longs, shorts);
	opterr = 0;
	while ((longindex = -1, c = getopt_long(argc, argv, shorts, longs, &longindex)) != -1) {
		if (c == ':') {
			typed_label(argv[optind - 1], optopt, label, sizeof label);
			return failure_set(fail, EXIT_USAGE, "%s: option requires an argument",
			                   label);
		}
		if (c == '?' || spec_of_val(c) == NULL)
			return option_refused(argv[optind - 1], optopt, fail);
		if (longindex >= 0)
			snprintf(seen.label, sizeof seen.label, "--%s", longs[longindex].name);
		else
			option_label(c, seen.label, sizeof seen.label);
		int rc = option_apply(cfg, &seen, spec_of_val(c), optarg, fail);

		if (rc != 0)
			return rc;
	}
	seen.nargs = argc - optind;
	seen.args = argv + optind;
	return options_check(cfg, &seen, fail);
}
