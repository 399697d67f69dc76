/* signals.c: handlers that only set flags; the relay loop acts on them. */
#include "config.h"

#include <signal.h>
#include <string.h>

#include "base/base.h"

volatile sig_atomic_t signal_stop;   /* SIGINT/SIGTERM number, 0 = none */
volatile sig_atomic_t signal_report; /* SIGUSR1 seen, report due */

static void on_stop(int sig)
{
	signal_stop = sig;
}

static void on_report(int sig)
{
	(void)sig;
	signal_report = 1;
}

/*
 * No SA_RESTART: a signal must interrupt a blocking poll() or connect() so
 * the loop sees the flag at once. SIGPIPE and SIGXFSZ are ignored so that a
 * vanished reader or a file-size limit shows up as EPIPE or EFBIG with a
 * message and exit status 7 instead of a silent death. Ignoring SIGPIPE also
 * stands in for MSG_NOSIGNAL where the platform lacks it (compat.h).
 */
void signals_init(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_stop;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_report;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	sigaction(SIGXFSZ, &sa, NULL);
}

const char *signals_stop_name(void)
{
	switch (signal_stop) {
	case SIGINT: return "SIGINT";
	case SIGTERM: return "SIGTERM";
	default: return "a signal";
	}
}
