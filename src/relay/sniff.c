/*
 * sniff.c: a receiving flow's guards: a peer whose first bytes are another mode's hello
 * (the features say which: --verify's frames, a -P or --resume receiver) would have its
 * protocol written to stdout as data, so it is refused before any byte is. Only the first
 * bytes are looked at (peeked, so they stay for the read), once.
 */
#include "config.h"

#include <errno.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "fastcat.h"
#include "net/net.h"
#include "relay/flow.h"

#define SNIFF_MAX 64 /* the longest hello a guard may name */

/*
 * The first bytes are a proper prefix of a hello (it came in pieces, or the
 * data happens to start that way): wait for the rest, at most 200 ms, with a
 * blocking peek. Polling instead would spin, as the peeked bytes keep the
 * socket readable. Returns what the peek then holds.
 */
static ssize_t sniff_rest(int fd, unsigned char *peek, size_t len)
{
	struct timeval wait = {.tv_sec = 0, .tv_usec = 200000}, none = {0, 0};
	ssize_t n;

	sock_set_nonblock(fd, 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
	n = recv(fd, peek, len, MSG_PEEK | MSG_WAITALL);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
	sock_set_nonblock(fd, 1);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		n = 0; /* the rest never came: it is data */
	return n;
}

/* The longest hello of the flow's guards. */
static size_t sniff_len(const struct flow *f)
{
	size_t len = 0;

	for (unsigned i = 0; i < f->nguards; i++)
		if (f->guards[i]->len > len)
			len = f->guards[i]->len;
	return len < SNIFF_MAX ? len : SNIFF_MAX;
}

/* Some guard's hello starts with the n bytes peeked, and the rest may still come. */
static int sniff_partial(const struct flow *f, const unsigned char *peek, size_t n)
{
	for (unsigned i = 0; i < f->nguards; i++)
		if (n < f->guards[i]->len && f->guards[i]->seen(peek, n) == 0)
			return 1;
	return 0;
}

/*
 * Look at the peer's first bytes once. 1 to go on reading, 0 to wait (the
 * socket said EAGAIN), -1 when a guard refused the peer or the peek failed.
 */
int sniff_hello(struct flow *f)
{
	unsigned char peek[SNIFF_MAX];
	size_t len = sniff_len(f);
	ssize_t n = recv(flow_src(f), peek, len, MSG_PEEK);

	if (n > 0 && (size_t)n < len && sniff_partial(f, peek, (size_t)n))
		n = sniff_rest(flow_src(f), peek, len);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
		flow_set_src_ready(f, 0);
		return 0;
	}
	if (n < 0 && errno == EINTR)
		return 0;
	if (n < 0) {
		flow_failed(f, 0, errno); /* reported now: the peek consumed the socket's error */
		return -1;
	}
	for (unsigned i = 0; i < f->nguards; i++) {
		const struct hello_guard *g = f->guards[i];

		if ((size_t)n >= g->len && g->seen(peek, g->len) == 1)
			return flow_fail(f, g->status, "%s", g->why);
	}
	f->nguards = 0;
	return 1;
}
