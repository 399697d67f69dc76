/*
 * retry-stop.c: the receiver's last word (doc/resume-protocol.md, "The
 * receiver's last word"). A --retry receiver whose stdout failed (disk full,
 * file too large) knows that no retry will get further, and a sender that
 * only sees the connection end would retry for nothing and then blame the
 * network. So the receiver says why, in the confirmations' direction, and
 * makes sure the sender's kernel has it before it closes (the sender takes
 * it with the confirmations, retry-flow.c).
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/compat.h"
#include "fastcat.h"
#include "base/base.h"
#include "net/net.h"
#include "retry/retry.h"

/* Seconds the receiver gives its last word to reach the sender, and for the sender's reset. */
#define STOP_LINGER 2.0

/*
 * Until the sender's kernel acknowledged all we sent (the last word and our
 * FIN; Linux says so, elsewhere it is not known), or its EOF or reset came,
 * or STOP_LINGER passed. Its bytes are read and dropped meanwhile: a close
 * with unread bytes resets the connection, and a reset drops what our
 * kernel has not sent yet.
 */
static void stop_linger(int fd)
{
	double until = clock_now() + STOP_LINGER;
	unsigned char sink[16384];

	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		double left = until - clock_now();
		ssize_t n;
		int queued = 0;

		if (ioctl(fd, SIOCOUTQ, &queued) == 0 && queued == 0)
			return;
		if (left <= 0 || signal_stop)
			return;
		if (poll(&p, 1, left < 0.02 ? (int)(left * 1000) + 1 : 20) < 0 && errno != EINTR)
			return;
		if (!(p.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		n = recv(fd, sink, sizeof sink, MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
			return;
	}
}

/*
 * The receiver, once the relay ended with its stdout failed: what is left
 * of a confirmation on its way, then the last word, then FIN, and the wait
 * above. The session is nobody's to come back to (retry_end).
 */
void retry_stop_send(struct retry *rt, const struct session *s)
{
	int fd = s->ep->fd;
	struct retry_stop st = {.reason = retry_reason_of(s->write_errno),
	                        .what = s->write_synced ? RETRY_FAILED_SYNC : RETRY_FAILED_WRITE,
	                        .offset = s->resume.offset + s->received.bytes};
	unsigned char msg[RETRY_STOP_BYTES];
	double until = clock_now() + STOP_LINGER;

	if (rt->out_left > 0 && handshake_move(fd, rt->out + RETRY_CONFIRM_BYTES - rt->out_left,
	                                       rt->out_left, 1, until) != rt->out_left)
		return;
	rt->out_left = 0;
	retry_stop_encode(msg, &st);
	if (handshake_move(fd, msg, sizeof msg, 1, until) != sizeof msg)
		return;
	log_verbose("--retry: told %s that stdout failed at byte %llu (%s): it will not retry",
	            s->ep->peer, (unsigned long long)st.offset, strerror(s->write_errno));
	shutdown(fd, SHUT_WR);
	stop_linger(fd);
}
