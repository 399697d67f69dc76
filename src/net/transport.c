/* transport.c: the table of transports; what differs between them is data, not branches. */
#include "config.h"

#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "fastcat.h"
#include "net/net.h"

/*
 * UDP has no flow control: a receiver whose socket buffer is full drops what
 * arrives, so its default SO_RCVBUF is as large as an unprivileged process
 * may ask for on a stock kernel (net.core.rmem_max is often 4 MiB).
 *
 * Datagram defaults: UDP's largest IPv4 payload (65535 - 20 - 8), so the
 * default works on either family; 64 KiB Unix datagrams fit the default
 * SO_SNDBUF (212992) and were the fastest size measured for unix-dgram.
 * Receive buffers hold the largest datagram that can arrive, so nothing is cut.
 */
/*
 * TCP from a pipe: splicing the pipe's pages (4 KiB each, as the writer left
 * them) builds skbs of many small fragments, and `dd bs=1M | fastcat` moved
 * 1.6 GB/s that way against 2.15 GB/s copying (2 Dec 2026, 3 interleaved
 * rounds; the same in contrib/bench/compare.sh). Unix stream sockets gain
 * from the splice instead (2.9 against 1.4 GB/s), so it is per transport.
 */
const struct transport transport_tcp = {
    .name = "tcp",
    .family = AF_UNSPEC,
    .socktype = SOCK_STREAM,
    .protocol = IPPROTO_TCP,
    .copy_from_pipe = 1,
    .rcvlowat = 256 * KIB, /* lowat.c says why */
};

const struct transport transport_udp = {
    .name = "udp",
    .family = AF_UNSPEC,
    .socktype = SOCK_DGRAM,
    .protocol = IPPROTO_UDP,
    .datagram = 1,
    .connectionless = 1,
    .default_chunk = 65507,
    .max_datagram = 65527,
    .receive_buffer = 65536,
    .default_rcvbuf = 4 * 1024 * 1024,
};

/*
 * Unix stream: 1 MiB chunks, measured (2 GiB from tmpfs, pinned, 2 Dec 2026):
 * 8.9 GB/s against 7.3 at 96 KiB with splice, and 5.7 against 4.2 GB/s with
 * read/write. Unlike TCP there is no receive window to outrun; each call
 * moves more per wake-up of the peer.
 */
const struct transport transport_unix = {
    .name = "unix",
    .family = AF_UNIX,
    .socktype = SOCK_STREAM,
    .default_chunk = MIB,
};

const struct transport transport_unix_dgram = {
    .name = "unix-dgram",
    .family = AF_UNIX,
    .socktype = SOCK_DGRAM,
    .datagram = 1,
    .connectionless = 1,
    .default_chunk = 64 * KIB,
    .receive_buffer = 256 * KIB,
};

const struct transport transport_unix_seqpacket = {
    .name = "unix-seqpacket",
    .family = AF_UNIX,
    .socktype = SOCK_SEQPACKET,
    .datagram = 1,
    .default_chunk = 64 * KIB,
    .receive_buffer = 256 * KIB,
};

static const struct transport *const transports[] = {
    &transport_tcp,
    &transport_udp,
    &transport_unix,
    &transport_unix_dgram,
    &transport_unix_seqpacket,
};

const struct transport *transport_find(const char *name)
{
	for (size_t i = 0; i < sizeof transports / sizeof transports[0]; i++)
		if (strcmp(transports[i]->name, name) == 0)
			return transports[i];
	return NULL;
}

/* "tcp, udp, ..." for messages, from the table. */
const char *transport_names(void)
{
	static char names[128];

	if (names[0] == '\0')
		for (size_t i = 0; i < sizeof transports / sizeof transports[0]; i++) {
			if (i > 0)
				strncat(names, ", ", sizeof names - strlen(names) - 1);
			strncat(names, transports[i]->name, sizeof names - strlen(names) - 1);
		}
	return names;
}
