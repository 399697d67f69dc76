/* random-getrandom.c: random_id from getrandom(2), the kernel's random source without a file. */
#include "config.h"

#include <errno.h>
#include <sys/random.h>

#include "base/base.h"

/*
 * 64 random bits that no other session shares (-P's and --retry's session
 * ids: a stranger that could guess one could join it). Never 0, which is
 * nobody's id on the wire. The kernel blocks only until its pool is first
 * seeded, at boot.
 */
uint64_t random_id(void)
{
	uint64_t id = 0;
	size_t got = 0;

	while (got < sizeof id) {
		ssize_t n = getrandom((unsigned char *)&id + got, sizeof id - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			log_fatal(EXIT_RUNTIME, "getrandom: no random bytes for a session id");
		got += (size_t)n;
	}
	return id != 0 ? id : 1;
}
