/* compat.h: what configure found missing, filled in here so that no .c file needs an #if. */
#ifndef FASTCAT_COMPAT_H
#define FASTCAT_COMPAT_H

#include <sys/socket.h>

/*
 * Without MSG_NOSIGNAL a send to a peer that has gone raises SIGPIPE, which
 * signals_init ignores for the whole process before any socket exists: the
 * send fails with EPIPE either way.
 */
#if !HAVE_DECL_MSG_NOSIGNAL
#define MSG_NOSIGNAL 0
#endif

/*
 * -O/-I above net.core.wmem_max/rmem_max are forced with SO_SNDBUFFORCE and
 * SO_RCVBUFFORCE (Linux, CAP_NET_ADMIN). Where they are missing, -1: setsockopt
 * refuses it like a missing capability, and the capped size stays (sock.c).
 */
#if !HAVE_DECL_SO_SNDBUFFORCE
#define SO_SNDBUFFORCE (-1)
#endif
#if !HAVE_DECL_SO_RCVBUFFORCE
#define SO_RCVBUFFORCE (-1)
#endif

/*
 * TCP_NOTSENT_LOWAT (Linux): at most so many bytes unsent in a socket's
 * queue. Where it is missing, -1: setsockopt refuses it, the queue is the
 * kernel's (sock_limit_unsent).
 */
#include <netinet/in.h>
#include <netinet/tcp.h>
#if !HAVE_DECL_TCP_NOTSENT_LOWAT
#define TCP_NOTSENT_LOWAT (-1)
#endif

/*
 * SIOCOUTQ (Linux): the bytes a socket has not had acknowledged. Where it is
 * missing, -1: the ioctl fails, and its callers fall back (retry-stop.c).
 */
#if HAVE_LINUX_SOCKIOS_H
#include <linux/sockios.h>
#endif
#if !HAVE_DECL_SIOCOUTQ
#define SIOCOUTQ (-1)
#endif

/*
 * IP_MTU and IPV6_MTU (Linux): a connected udp socket's path MTU, which sizes --reliable's
 * datagrams. Where they are missing, -1: getsockopt refuses, and Ethernet's 1500 is taken.
 */
#if !HAVE_DECL_IP_MTU
#define IP_MTU (-1)
#endif
#if !HAVE_DECL_IPV6_MTU
#define IPV6_MTU (-1)
#endif

#endif
