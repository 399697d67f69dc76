/*
 * handshake.c: moving a protocol's few opening bytes on a non-blocking
 * socket, before the relay starts, within a deadline (--resume's offer and
 * answer, -P's hello and join).
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>

#include "base/compat.h"
#include "fastcat.h"
#include "base/base.h"
#include "net/net.h"

/*
 * Move len bytes: read into buf, or write from it. deadline: monotonic
 * seconds, 0 for none (a stop signal still ends the wait). The number
 * moved: len, or fewer on a timeout (errno ETIMEDOUT), the peer's EOF
 * (errno 0), an error (its errno) or a stop signal (EINTR).
 */
size_t handshake_move(int fd, unsigned char *buf, size_t len, int writing, double deadline)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = writing ? send(fd, buf + done, len - done, MSG_NOSIGNAL)
		                    : recv(fd, buf + done, len - done, 0);
		struct pollfd pfd = {.fd = fd, .events = writing ? POLLOUT : POLLIN};
		double left = deadline - clock_now();

		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n == 0) {
			errno = 0;
			break;
		}
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			break;
		if (signal_stop) {
			errno = EINTR;
			break;
		}
		if (deadline > 0 && left <= 0) {
			errno = ETIMEDOUT;
			break;
		}
		poll(&pfd, 1, deadline > 0 ? (int)(left * 1000) + 1 : -1);
	}
	return done;
}
