/* zerocopy-none.c: the stand-in where splice(2)/sendfile(2) are missing or --disable-splice. */
#include "config.h"

#include <errno.h>

#include "fastcat.h"
#include "relay/flow.h"

int zerocopy_available(void)
{
	return 0;
}

int zerocopy_pipe(int fds[2], size_t want, size_t *cap)
{
	(void)fds;
	(void)want;
	(void)cap;
	errno = ENOSYS;
	return -1;
}

void zerocopy_grow_pipe(int fd, size_t want)
{
	(void)fd;
	(void)want;
}

ssize_t zerocopy_splice(int from, int to, size_t len)
{
	(void)from;
	(void)to;
	(void)len;
	errno = ENOSYS;
	return -1;
}

ssize_t zerocopy_sendfile(int to, int from, size_t len)
{
	(void)to;
	(void)from;
	(void)len;
	errno = ENOSYS;
	return -1;
}
