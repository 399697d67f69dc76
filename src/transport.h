/* transport.h: what a transport is, as data (transport.c's table; fastcat.h names the entries). */
#ifndef TRANSPORT_H
#define TRANSPORT_H

#include <stddef.h>

/* A transport: everything that tells one from another, as data. */
struct transport {
	const char *name;
	int family; /* AF_UNIX, or AF_UNSPEC: IPv4/IPv6 by resolution */
	int socktype;
	int protocol;
	int datagram;          /* keeps message boundaries */
	int connectionless;    /* no accept(): the first datagram names the peer */
	size_t default_chunk;  /* default bytes per read/datagram, 0 = CHUNK_DEFAULT */
	size_t max_datagram;   /* largest payload the protocol allows, 0 = none */
	size_t receive_buffer; /* bytes to take in a whole datagram */
	int default_rcvbuf;    /* SO_RCVBUF unless -I is given, 0 = the kernel's */
	int copy_from_pipe;    /* --copy=auto reads a pipe on stdin rather than splicing it */
	size_t rcvlowat;       /* default --rcvlowat; 0: the transport has no use for one */
};

#endif
