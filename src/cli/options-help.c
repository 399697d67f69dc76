/* options-help.c: --help (one screen) and --help-all (every option), written from options_table. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "fastcat.h"
#include "cli/options.h"

/* Where --help-all's text starts; a longer spelling puts it on the next line. */
#define HELP_COLUMN 27

static const char help_all_head[] =
    "usage: fastcat [options] host port          connect\n"
    "       fastcat -l [options] [address] port  listen (port 0: any free port)\n"
    "       fastcat -U [-l] [options] path|@name  Unix socket (@name: abstract)\n"
    "\n";

static const char help_all_tail[] =
    "\n"
    "SIZE takes k/K/KiB, m/M/MiB, g/G/GiB suffixes (powers of 1024).\n"
    "Exit status: 0 all data moved, 1 other failure, 2 usage, 3 could not connect,\n"
    "4 timeout, 5 peer reset or closed early, 6 --verify mismatch, 7 stdout write,\n"
    "8 --retry: the receiver's stdout failed.\n";

/* Each group's heading in --help-all, and what it says before its options. */
static const char *const section_heads[] = {
    [SECTION_CONNECTION] = "Connection:\n",
    [SECTION_TRANSPORT] = "Transport:\n",
    [SECTION_SPEED] = "Speed:\n",
    [SECTION_EOF] = "End of data (EOF):\n"
                    "  stdin EOF: what is pending is sent, then the socket is half-closed\n"
                    "  (shutdown SHUT_WR) and fastcat reads on until the peer's EOF, then "
                    "exits 0.\n"
                    "  Peer EOF: received data is flushed and stdout closed; sending goes on\n"
                    "  until stdin ends, as a half-closed peer still reads.\n",
    [SECTION_REPORT] = "Report:\n",
    [SECTION_BENCH] = "Benchmark (no host or port):\n",
    [SECTION_INFO] = "",
};

/*
 * The one-screen --help: the lines around the options' .brief pieces. A line
 * is its lead, then the pieces of the options it names, joined by three
 * spaces (or .join); a line that names none is text. tests/usage.bats keeps
 * it within 80x24.
 */
static const char help_head[] =
    "usage: fastcat [options] host port            connect\n"
    "       fastcat -l [options] [address] port    listen (port 0: any free port)\n"
    "       fastcat -U [-l] [options] path|@name   Unix socket (@name: abstract)\n";

static const struct {
	const char *lead;
	const char *options[3]; /* letters or long names */
	const char *join;
} help_lines[] = {
    {"Connection:  ", {"l", "k"}, NULL},
    {"  ", {"4", "n", "w"}, NULL},
    {"Transport:   ", {"u", "U", "transport"}, NULL},
    {"A disk or file to a far machine, fastcat at both ends (resumes, verifies):", {NULL}, NULL},
    {"  receiver:  fastcat -l --image 9000 >> disk.img", {NULL}, NULL},
    {"  sender:    fastcat --image receiver 9000 < disk.img", {NULL}, NULL},
    {"  ", {"P"}, NULL},
    {"  ", {"resume", "retry"}, NULL},
    {"Speed (SIZE: 64k, 1M, 1G; powers of 1024):", {NULL}, NULL},
    {"  ", {"B"}, NULL},
    {"  ", {"O"}, NULL},
    {"  ", {"copy", "rate-limit"}, NULL},
    {"End of data: at stdin EOF the socket is half-closed; exit 0 after the peer's", {NULL}, NULL},
    {"  EOF.   ", {"q", "d", "send-only"}, NULL},
    {"  ", {"exit-on-peer-eof"}, NULL},
    {"Report:  ", {"v", "progress"}, NULL},
    {"  ", {"report", "checksum"}, NULL},
    {"  ", {"verify", "V", "bench"}, NULL},
    {"Exit status: 0 all data moved, 1 failure, 2 usage, 3 cannot connect, 4 timeout,",
     {NULL},
     NULL},
    {"5 peer reset/closed early, 6 --verify mismatch, 7 stdout write, 8 peer's write.",
     {NULL},
     NULL},
    {"All options: fastcat --help-all; details: man fastcat", {NULL}, NULL},
};

static void help_write_brief(FILE *out)
{
	fputs(help_head, out);
	for (size_t i = 0; i < sizeof help_lines / sizeof help_lines[0]; i++) {
		fputs(help_lines[i].lead, out);
		for (size_t j = 0; j < 3 && help_lines[i].options[j] != NULL; j++) {
			const struct opt_spec *o = options_find(help_lines[i].options[j]);
			if (j > 0)
				fputs(help_lines[i].join != NULL ? help_lines[i].join : "   ", out);
			fputs(o != NULL && o->brief != NULL ? o->brief : "?", out);
		}
		fputc('\n', out);
	}
}

/* How --help-all spells an option: "-l, --listen", "-q", "    --copy", then its value. */
static void spelling(const struct opt_spec *o, char *out, size_t len)
{
	if (o->synopsis != NULL)
		snprintf(out, len, "  %s%s", o->synopsis, o->metavar != NULL ? o->metavar : "");
	else if (o->letter != 0)
		snprintf(out, len, "  -%c%s%s%s", o->letter, o->name != NULL ? ", --" : "",
		         o->name != NULL ? o->name : "", o->metavar != NULL ? o->metavar : "");
	else
		snprintf(out, len, "      --%s%s", o->name, o->metavar != NULL ? o->metavar : "");
}

/* One row: the spelling, then the text from HELP_COLUMN, its further lines indented as far. */
static void help_write_row(FILE *out, const struct opt_spec *o)
{
	char left[64];
	const char *line = o->help;

	spelling(o, left, sizeof left);
	if (strlen(left) > HELP_COLUMN)
		fprintf(out, "%s\n%*s", left, HELP_COLUMN, "");
	else
		fprintf(out, "%-*s ", HELP_COLUMN - 1, left);
	for (;;) {
		size_t n = strcspn(line, "\n");

		fprintf(out, "%.*s\n", (int)n, line);
		if (line[n] == '\0')
			break;
		line += n + 1;
		fprintf(out, "%*s", HELP_COLUMN, "");
	}
}

static void help_write_all(FILE *out)
{
	int section = -1;

	fputs(help_all_head, out);
	for (size_t i = 0; i < OPTIONS_COUNT; i++) {
		const struct opt_spec *o = &options_table[i];
		if ((int)o->section != section) {
			section = (int)o->section;
			fputs(section_heads[section], out);
		}
		if (o->help != NULL)
			help_write_row(out, o);
	}
	fputs(help_all_tail, out);
}

/* --help-all when all is set, else --help. */
void options_help_write(FILE *out, int all)
{
	if (all)
		help_write_all(out);
	else
		help_write_brief(out);
}

void options_usage(void)
{
	options_help_write(stdout, 0);
}

int options_help(const struct opt_call *c)
{
	(void)c;
	options_help_write(stdout, 0);
	return -1;
}

int options_help_all(const struct opt_call *c)
{
	(void)c;
	options_help_write(stdout, 1);
	return -1;
}

int options_version(const struct opt_call *c)
{
	(void)c;
	printf("fastcat %s\n", FASTCAT_VERSION);
	return -1;
}
