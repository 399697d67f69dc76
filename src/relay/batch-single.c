/* batch-single.c: the portable batch_send, one sendmsg(2) per call, where sendmmsg is missing. */
#include "config.h"

#include <sys/socket.h>

#include "fastcat.h"
#include "relay/flow.h"

/* Send the first prepared message; returns 1, or -1 with errno. */
int batch_send(int fd, const struct msghdr *msgs, unsigned n)
{
	(void)n;
	return sendmsg(fd, &msgs[0], 0) < 0 ? -1 : 1;
}

/* Receive the first datagram only; returns 1, or -1 with errno. */
int batch_recv(int fd, struct msghdr *msgs, unsigned n, size_t *lens)
{
	ssize_t len = recvmsg(fd, &msgs[0], 0);

	(void)n;
	if (len < 0)
		return -1;
	lens[0] = (size_t)len;
	return 1;
}
