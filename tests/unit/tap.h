/* tap.h: a few lines of TAP output for the C unit tests (run by tests/run-tests.sh). */
#ifndef TAP_H
#define TAP_H

#include <stdio.h>

static int tap_count;
static int tap_failed;

/* Record one check; the description says what was expected. */
#define tap_ok(cond, ...)                                                                          \
	do {                                                                                       \
		int tap_pass_ = (cond);                                                            \
		printf("%sok %d - ", tap_pass_ ? "" : "not ", ++tap_count);                        \
		printf(__VA_ARGS__);                                                               \
		printf("\n");                                                                      \
		if (!tap_pass_) {                                                                  \
			tap_failed++;                                                              \
			printf("# failed at %s:%d: %s\n", __FILE__, __LINE__, #cond);              \
		}                                                                                  \
	} while (0)

static inline int tap_done(void)
{
	printf("1..%d\n", tap_count);
	return tap_failed != 0;
}

#endif
