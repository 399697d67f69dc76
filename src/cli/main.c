/* main.c: main() as a table of contents: parse, then a benchmark, a listener's sessions, or a
 * client's (--retry: one per connection until one ends well). */
#include "config.h"

#include "fastcat.h"
#include "bench/bench.h"
#include "cli/cli.h"
#include "cli/options.h"

int main(int argc, char **argv)
{
	struct config cfg;
	struct failure fail = {EXIT_OK, ""};
	int rc = options_parse(argc, argv, &cfg, &fail);

	if (rc < 0)
		return EXIT_OK;
	if (rc != 0)
		log_fatal(EXIT_USAGE, "%s", fail.why);
	log_set_verbose(cfg.verbose);
	signals_init();
	if (cfg.bench)
		return bench_run(&cfg);
	if (cfg.listen)
		return transfer_listen(&cfg);
	return cfg.retry > 0 ? transfer_retry(&cfg) : transfer_connect(&cfg);
}
