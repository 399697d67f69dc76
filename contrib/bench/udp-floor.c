/*
 * udp-floor.c - the least a UDP receiver can do on this machine, for unix.sh's udp workload:
 * take datagrams of up to 64 KiB, four a recvmmsg call, into one 256 KiB buffer that stays in
 * the cache, and write each one to stdout. No order, no acknowledgement, no digest: a sender
 * that outruns it loses datagrams, and what it does take in a second is the most any receiver
 * could take here. unix.sh feeds it with `fastcat -q 0 -u` (which never waits) and stops it
 * once its sink stops growing.
 *
 * Usage: udp-floor HOST PORT        Build: gcc -O2 -o udp-floor udp-floor.c
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define BATCH    4
#define DGRAM    65536
#define SOCK_BUF (8 << 20) /* as fastcat -lu asks for */

static int write_all(const unsigned char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(STDOUT_FILENO, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static unsigned char buf[BATCH][DGRAM];
	struct sockaddr_in addr = {.sin_family = AF_INET};
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	int fd, size = SOCK_BUF;

	if (argc != 3 || inet_pton(AF_INET, argv[1], &addr.sin_addr) != 1) {
		fprintf(stderr, "usage: udp-floor IPV4-ADDRESS PORT\n");
		return 2;
	}
	addr.sin_port = htons((unsigned short)atoi(argv[2]));
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size) != 0 ||
	    bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
		perror("udp-floor");
		return 1;
	}
	memset(msgs, 0, sizeof msgs); /* recvmmsg sets only msg_len and msg_flags */
	for (int i = 0; i < BATCH; i++) {
		iov[i] = (struct iovec){buf[i], DGRAM};
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	for (;;) {
		int got = recvmmsg(fd, msgs, BATCH, MSG_WAITFORONE, NULL);

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			perror("udp-floor: recvmmsg");
			return 1;
		}
		for (int i = 0; i < got; i++)
			if (write_all(buf[i], msgs[i].msg_len) != 0) {
				perror("udp-floor: write");
				return 1;
			}
	}
}
