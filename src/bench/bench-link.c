/* bench-link.c: the links --bench measures: pipes, socket pairs, loopback TCP and UDP, as a table.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fastcat.h"
#include "net/net.h"
#include "bench/bench.h"

static int open_pipe(const struct bench_link *, size_t, struct bench_end[2], char *, size_t);
static int open_pair(const struct bench_link *, size_t, struct bench_end[2], char *, size_t);
static int open_inet(const struct bench_link *, size_t, struct bench_end[2], char *, size_t);

/*
 * The columns of the table, in order. A socket link takes its type from the
 * transport table; everything else that differs is here, as data.
 */
const struct bench_link bench_links[BENCH_LINKS] = {
    {.name = "pipe", .open = open_pipe},
    {.name = "memcpy"},
    {.name = "tcp", .transport = &transport_tcp, .open = open_inet},
    {.name = "udp",
     .transport = &transport_udp,
     .open = open_inet,
     .lossy = 1,
     .max_message = 65507, /* 65535 - 20 (IPv4 header) - 8 (UDP header) */
     .limit = "a UDP/IPv4 datagram holds at most 65507 bytes"},
    {.name = "unix", .transport = &transport_unix, .open = open_pair},
    {.name = "unix-dgram", .transport = &transport_unix_dgram, .open = open_pair},
    {.name = "unix-seqpacket", .transport = &transport_unix_seqpacket, .open = open_pair},
};

/* The index of the link called name, or -1. */
int bench_link_find(const char *name)
{
	for (int i = 0; i < BENCH_LINKS; i++)
		if (strcmp(bench_links[i].name, name) == 0)
			return i;
	return -1;
}

/* "pipe, memcpy, ..." for messages, from the table. */
const char *bench_link_names(void)
{
	static char names[128];

	if (names[0] == '\0')
		for (int i = 0; i < BENCH_LINKS; i++) {
			if (i > 0)
				strncat(names, ", ", sizeof names - strlen(names) - 1);
			strncat(names, bench_links[i].name, sizeof names - strlen(names) - 1);
		}
	return names;
}

int bench_link_datagram(const struct bench_link *l)
{
	return l->transport != NULL && l->transport->datagram;
}

/* Zero-length datagrams mark the end (connectionless: no close reaches the peer). */
int bench_link_marker(const struct bench_link *l)
{
	return l->transport != NULL && l->transport->connectionless;
}

static int fail(char *err, size_t errlen, const char *what)
{
	log_format(err, errlen, -1, "%s: %s", what, strerror(errno));
	return -1;
}

void bench_end_close(struct bench_end *e)
{
	if (e->in >= 0)
		close(e->in);
	if (e->out >= 0 && e->out != e->in)
		close(e->out);
	e->in = e->out = -1;
}

void bench_link_close(struct bench_end ends[2])
{
	bench_end_close(&ends[0]);
	bench_end_close(&ends[1]);
}

/* Two pipes: [0] writes to [1] on the first and reads its answers on the second. */
static int open_pipe(const struct bench_link *l, size_t size, struct bench_end e[2], char *err,
                     size_t errlen)
{
	int there[2], back[2];

	(void)l, (void)size;
	if (pipe(there) != 0)
		return fail(err, errlen, "pipe");
	if (pipe(back) != 0) {
		close(there[0]), close(there[1]);
		return fail(err, errlen, "pipe");
	}
	e[0].out = there[1], e[1].in = there[0];
	e[1].out = back[1], e[0].in = back[0];
	return 0;
}

static int socket_end(struct bench_end *e, int fd)
{
	e->in = e->out = fd;
	return fd;
}

static int open_pair(const struct bench_link *l, size_t size, struct bench_end e[2], char *err,
                     size_t errlen)
{
	int sv[2];

	(void)size;
	if (socketpair(AF_UNIX, l->transport->socktype, 0, sv) != 0)
		return fail(err, errlen, "socketpair");
	socket_end(&e[0], sv[0]);
	socket_end(&e[1], sv[1]);
	return 0;
}

/* A loopback pair on 127.0.0.1: TCP through a listener that is closed at once, UDP connected both
 * ways. */
static int open_inet(const struct bench_link *l, size_t size, struct bench_end e[2], char *err,
                     size_t errlen)
{
	const struct transport *t = l->transport;
	struct sockaddr_in a[2];
	socklen_t len = sizeof a[0];
	int fd[2] = {-1, -1}, rc = -1;

	(void)size;
	memset(a, 0, sizeof a);
	for (int i = 0; i < 2; i++) {
		a[i].sin_family = AF_INET;
		a[i].sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		fd[i] = socket(AF_INET, t->socktype, t->protocol);
		if (fd[i] < 0 || bind(fd[i], (struct sockaddr *)&a[i], sizeof a[i]) != 0 ||
		    getsockname(fd[i], (struct sockaddr *)&a[i], &len) != 0)
			goto out;
	}
	if (t->connectionless) {
		if (connect(fd[0], (struct sockaddr *)&a[1], sizeof a[1]) != 0 ||
		    connect(fd[1], (struct sockaddr *)&a[0], sizeof a[0]) != 0)
			goto out;
		socket_end(&e[0], fd[0]);
		socket_end(&e[1], fd[1]);
		return 0;
	}
	/* fd[1] listens; fd[0] connects to it; the accepted socket is the receiver's end. */
	if (listen(fd[1], 1) != 0 || connect(fd[0], (struct sockaddr *)&a[1], sizeof a[1]) != 0)
		goto out;
	socket_end(&e[1], accept(fd[1], NULL, NULL));
	if (e[1].in < 0)
		goto out;
	socket_end(&e[0], fd[0]);
	close(fd[1]);
	return 0;
out:
	rc = fail(err, errlen, t->name);
	for (int i = 0; i < 2; i++)
		if (fd[i] >= 0)
			close(fd[i]);
	return rc;
}

/* Raise a socket buffer to want bytes if it is smaller; the kernel caps it (net.core.*mem_max). */
static void raise_buffer(int fd, int opt, size_t want)
{
	int now, v = want > (size_t)SOCKBUF_MAX ? (int)SOCKBUF_MAX : (int)want;
	socklen_t len = sizeof now;

	if (getsockopt(fd, SOL_SOCKET, opt, &now, &len) == 0 && now >= v)
		return;
	setsockopt(fd, SOL_SOCKET, opt, &v, sizeof v);
}

/*
 * Datagram links: buffers big enough for two messages (and UDP's usual 4 MiB
 * receive buffer, as fastcat asks for), then one probe datagram of the size,
 * since only the kernel knows the largest Unix datagram it takes.
 * Returns 0, 1 when the size cannot be carried (reason in err), -1 on error.
 */
static int fit_datagram(const struct bench_link *l, size_t size, struct bench_end e[2],
                        const unsigned char *payload, unsigned char *buf, char *err, size_t errlen)
{
	size_t want = 2 * size + 64 * KIB;
	int sndbuf, rcvbuf;
	ssize_t n;

	raise_buffer(e[0].out, SO_SNDBUF, want);
	raise_buffer(e[1].in, SO_RCVBUF,
	             want > (size_t)l->transport->default_rcvbuf
	                 ? want
	                 : (size_t)l->transport->default_rcvbuf);
	if (l->transport->family != AF_UNIX)
		return 0;
	n = send(e[0].out, payload, size, MSG_DONTWAIT);
	if (n < 0 && (errno == EMSGSIZE || errno == ENOBUFS)) {
		sock_read_buffers(e[0].out, &sndbuf, &rcvbuf);
		return log_format(err, errlen, 1,
		                  "the kernel takes no datagram this large (%s at SO_SNDBUF %d)",
		                  strerror(errno), sndbuf);
	}
	if (n != (ssize_t)size || recv(e[1].in, buf, size + 1, MSG_DONTWAIT) != (ssize_t)size)
		return fail(err, errlen, "probe datagram");
	return 0;
}

/*
 * Open a link for messages of size bytes: e[0] is the sender's (or pinger's)
 * end, e[1] the receiver's (or echo's). Returns 0, 1 when the link cannot
 * carry the size (err says why, the ends are closed), or -1 with err set.
 */
int bench_link_open(const struct bench_link *l, size_t size, struct bench_end e[2],
                    const unsigned char *payload, unsigned char *buf, char *err, size_t errlen)
{
	int rc;

	e[0].in = e[0].out = e[1].in = e[1].out = -1;
	if (l->max_message != 0 && size > l->max_message) {
		log_format(err, errlen, -1, "%s", l->limit);
		return 1;
	}
	if (l->open(l, size, e, err, errlen) != 0)
		return -1;
	rc = bench_link_datagram(l) ? fit_datagram(l, size, e, payload, buf, err, errlen) : 0;
	if (rc != 0)
		bench_link_close(e);
	return rc;
}
