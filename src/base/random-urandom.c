/* random-urandom.c: random_id from /dev/urandom, where the C library has no getrandom(2). */
#include "config.h"

#include <fcntl.h>
#include <unistd.h>

#include "base/base.h"

/*
 * 64 random bits that no other session shares (-P's and --retry's session
 * ids: a stranger that could guess one could join it). Never 0, which is
 * nobody's id on the wire.
 */
uint64_t random_id(void)
{
	uint64_t id = 0;
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, &id, sizeof id) : -1;

	if (fd >= 0)
		close(fd);
	if (n != (ssize_t)sizeof id)
		log_fatal(EXIT_RUNTIME, "/dev/urandom: no random bytes for a session id");
	return id != 0 ? id : 1;
}
