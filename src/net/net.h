/*
 * net.h: addresses, sockets, the transports as data, the listener and one endpoint (a
 * connected socket), handshake moves, and what the kernel says of a TCP connection.
 */
#ifndef FASTCAT_NET_H
#define FASTCAT_NET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "fastcat.h"

/* A transport: everything that tells one from another, as data (transport.c's table). */
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

/* A listening socket kept across connections with -k; for a datagram transport, the socket
 * itself. */
struct listener {
	int fd;
	char local[112];
	char created_path[112];    /* the Unix socket file this listener made, removed at close */
	int served;                /* a connectionless listener had a peer already (-k) */
	char refused[112];         /* the peer refused last, logged once for a run of refusals */
	uint64_t held;             /* -k --resume: the --retry session a lost connection left ... */
	double held_until;         /* ... refusing other senders until then (retry-wire.c's hold) */
	int held_digest_ok;        /* --verify: the held session's file, from byte 0 ... */
	uint64_t held_length;      /* ... up to here (what it wrote) ... */
	struct digest held_digest; /* ... digests to this: its return reads nothing back */
	/* a connectionless listener: a datagram an earlier session left, which starts none */
	int (*stale)(const unsigned char *, size_t);
	const char *stale_name; /* ... what -v calls it when it is dropped ("dropped NAME") */
};

/* A connected socket and what is known about it. */
struct endpoint {
	int fd;
	int sndbuf;      /* effective SO_SNDBUF read back from the kernel */
	int rcvbuf;      /* effective SO_RCVBUF read back from the kernel */
	char local[112]; /* printable "addr:port", Unix path or "@name" */
	char peer[112];
	char bound_path[112];          /* a temporary Unix path this end bound, removed at close */
	int cannot_send;               /* the datagram peer has no address to answer to */
	struct sockaddr_storage group; /* --reliable's multicast sender: the group it sends */
	socklen_t group_len;           /* to, its socket not connected; else 0 */
};

struct addrinfo;

/* addr.c */
int addr_resolve(const char *, const char *, int, int, int, struct addrinfo **, struct failure *);
int addr_unix(const char *, struct sockaddr_storage *, socklen_t *);
int addr_unix_check(const char *, struct failure *);
void addr_format(const struct sockaddr *, socklen_t, char *, size_t);
void addr_format_fd(int, int, char *, size_t);
int addr_same_peer(const struct sockaddr *, const struct sockaddr *);
int addr_same_host(const struct sockaddr *, const struct sockaddr *);

/* multicast.c */
int mcast_is_group(const struct sockaddr *);
int mcast_sender(int, const struct sockaddr *, const struct config *, struct failure *);
int mcast_join(int, const struct sockaddr *, const struct config *, struct failure *);

/* endpoint.c */
int endpoint_connect(const struct config *, struct endpoint *, struct failure *);
int endpoint_accept(const struct config *, struct listener *, struct endpoint *, struct failure *);
void endpoint_abort(const struct config *, struct endpoint *);
void endpoint_close(struct endpoint *);
int endpoint_connect_start(const struct config *, const struct endpoint *, int *, struct failure *);
int endpoint_connect_finish(const struct config *, const struct endpoint *, int, struct failure *);
int endpoint_accept_pending(const struct config *, struct listener *, int *);
void endpoint_refuse(int);

/* handshake.c */
size_t handshake_move(int, unsigned char *, size_t, int, double);

/* listener.c */
int listener_open(const struct config *, struct listener *, struct failure *);
void listener_stop_accepting(const struct config *, struct listener *);
int listener_admits(const struct config *, struct listener *, const struct sockaddr *, socklen_t,
                    const char *);
void listener_forget_peer(struct listener *);
void listener_close(struct listener *);
uint32_t listener_busy_seconds(const struct listener *);

/*
 * path.c: the rate -P auto's first step and the hint's -P aim at (fastcat(1), "-P auto"):
 * 2 Gbit/s, the fastest link long paths commonly end in. A connection held back by its window
 * says nothing of the link behind it, so the first step errs on the side of more connections
 * rather than fewer, which cost a long path another step of several round trips (at 200 ms and
 * 500 Mbit/s, aiming at 1 Gbit/s opened 9 and reached 16 a step later: 84 % of -P 16).
 * (16 slow starts at once once read 65 % of -P 8 at 200 ms, 1 Gbit/s, MTU 1500: the lab's tun
 * ring dropped their bursts before the delay line; with a deeper ring, 86 %.)
 */
#define PATH_AIM         (2e9 / 8)
#define PATH_CONNS_MAX   16 /* the most connections -P auto opens */
#define PATH_CONNS_FIRST 4  /* the fewest its first step opens */
double path_sndbuf_most(const struct config *, const struct endpoint *);
double path_window_rate(double, double);
unsigned path_conns_for(double, unsigned, unsigned);

/* sock.c */
int sock_open(const struct config *, int, struct failure *);
int sock_set_nonblock(int, int);
void sock_limit_unsent(int, int);
void sock_read_buffers(int, int *, int *);
void sock_close(int *, char *);

/* tcpinfo-linux.c or tcpinfo-none.c, chosen by configure: a struct tcp_stats (fastcat.h) is
 * filled once per report or -P auto tick, never per chunk; a figure this kernel or the build's
 * <linux/tcp.h> does not give is NAN (the JSON report prints null). */
int tcpinfo_read(int, struct tcp_stats *);
int tcpinfo_set_congestion(int, const char *);
int tcpinfo_congestion_check(const char *, struct failure *);
int tcpinfo_sysctl(const char *, char *, size_t);

/* transport.c */
const struct transport *transport_find(const char *);
const char *transport_names(void);
extern const struct transport transport_tcp, transport_udp, transport_unix, transport_unix_dgram,
    transport_unix_seqpacket;

#endif
