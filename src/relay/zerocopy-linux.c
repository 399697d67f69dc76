/* zerocopy-linux.c: splice(2), sendfile(2) and pipe sizing, where configure found them. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/sendfile.h>
#include <unistd.h>

#include "fastcat.h"
#include "relay/flow.h"

/* The most one sendfile(2) moves on Linux, whatever count says. */
#define SENDFILE_MAX ((size_t)0x7ffff000)

int zerocopy_available(void)
{
	return 1;
}

/*
 * The pipe between a flow's two splices, both ends non-blocking, sized for
 * `want` bytes: the kernel rounds up to a power of two pages and refuses
 * more than fs.pipe-max-size to users without CAP_SYS_RESOURCE, in which
 * case the pipe keeps whatever size it has. Its capacity goes to *cap.
 */
int zerocopy_pipe(int fds[2], size_t want, size_t *cap)
{
	int size;

	if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0)
		return -1;
	zerocopy_grow_pipe(fds[1], want);
	size = fcntl(fds[1], F_GETPIPE_SZ);
	*cap = size > 0 ? (size_t)size : 4096;
	return 0;
}

/* Make a pipe hold at least `want` bytes if the kernel lets us; a failure changes nothing. */
void zerocopy_grow_pipe(int fd, size_t want)
{
	int size = fcntl(fd, F_GETPIPE_SZ);

	if (size > 0 && (size_t)size < want && want <= (size_t)1 << 30)
		(void)fcntl(fd, F_SETPIPE_SZ, (int)want);
}

/* One of from/to is a pipe; SPLICE_F_NONBLOCK makes the pipe side non-blocking too. */
ssize_t zerocopy_splice(int from, int to, size_t len)
{
	return splice(from, NULL, to, NULL, len, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
}

/* From a regular file at its current offset, which advances. */
ssize_t zerocopy_sendfile(int to, int from, size_t len)
{
	return sendfile(to, from, NULL, len < SENDFILE_MAX ? len : SENDFILE_MAX);
}
