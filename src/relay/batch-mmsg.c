/* batch-mmsg.c: many datagrams in one sendmmsg(2) call (chosen by configure where it exists). */
#include "config.h"

#include <string.h>
#include <sys/socket.h>

#include "fastcat.h"
#include "relay/flow.h"

/* Send up to n prepared messages; returns how many went, or -1 with errno. */
int batch_send(int fd, const struct msghdr *msgs, unsigned n)
{
	struct mmsghdr mm[BATCH_MAX];

	if (n > BATCH_MAX)
		n = BATCH_MAX;
	memset(mm, 0, sizeof mm[0] * n);
	for (unsigned i = 0; i < n; i++)
		mm[i].msg_hdr = msgs[i];
	return sendmmsg(fd, mm, n, 0);
}

/*
 * Receive up to n datagrams without waiting for more than the first; lens[i]
 * gets each one's size, msgs[i].msg_flags its flags (MSG_TRUNC) and msg_namelen
 * the length of its sender's address.
 * Returns how many arrived, or -1 with errno.
 */
int batch_recv(int fd, struct msghdr *msgs, unsigned n, size_t *lens)
{
	struct mmsghdr mm[BATCH_MAX];
	int got;

	if (n > BATCH_MAX)
		n = BATCH_MAX;
	memset(mm, 0, sizeof mm[0] * n);
	for (unsigned i = 0; i < n; i++)
		mm[i].msg_hdr = msgs[i];
	got = recvmmsg(fd, mm, n, MSG_DONTWAIT, NULL);
	for (int i = 0; i < got; i++) {
		msgs[i].msg_flags = mm[i].msg_hdr.msg_flags;
		msgs[i].msg_namelen = mm[i].msg_hdr.msg_namelen;
		lens[i] = mm[i].msg_len;
	}
	return got;
}
