/* fuzz-check.h: what every harness shares: CHECK aborts with the harness's name and the reason. */
#ifndef FUZZ_CHECK_H
#define FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

/* FUZZ_NAME: "fuzz-units", ..., defined by the harness before it includes this. */
#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s: %s: ", FUZZ_NAME, #cond);                             \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

#endif
