/*
 * tcpinfo-linux.h: struct tcp_info as this build's headers have it, for tcpinfo-linux.c only:
 * get_NAME(ti, len) for each member newer than Linux 2.6, NAN where the header lacks it or the
 * kernel filled fewer bytes. The #ifs that configure's probes decide live here, not in a .c.
 */
#ifndef TCPINFO_LINUX_H
#define TCPINFO_LINUX_H

#include <math.h>
#include <stddef.h>
#include <sys/socket.h>
#include <netinet/in.h>
#ifdef HAVE_LINUX_TCP_H
#include <linux/tcp.h>
#else
#include <netinet/tcp.h>
#endif

/*
 * A member as a double, or NAN when the kernel filled fewer bytes than reach it: an older kernel
 * than the header returns a shorter struct, and says how long in the getsockopt length.
 */
#define TCPINFO_GET(ti, len, m)                                                                    \
	((size_t)(len) >= offsetof(struct tcp_info, m) + sizeof(ti)->m ? (double)(ti)->m : NAN)

/* get_NAME(ti, len): a member newer than Linux 2.6, NAN where the build's header lacks it. */
#define TCPINFO_FIELD(name)                                                                        \
	static double get_##name(const struct tcp_info *ti, socklen_t len)                         \
	{                                                                                          \
		return TCPINFO_GET(ti, len, tcpi_##name);                                          \
	}
#define TCPINFO_ABSENT(name)                                                                       \
	static double get_##name(const struct tcp_info *ti, socklen_t len)                         \
	{                                                                                          \
		(void)ti;                                                                          \
		(void)len;                                                                         \
		return NAN;                                                                        \
	}

#ifdef HAVE_STRUCT_TCP_INFO_TCPI_PACING_RATE /* Linux 3.15 */
TCPINFO_FIELD(pacing_rate)
#else
TCPINFO_ABSENT(pacing_rate)
#endif
#ifdef HAVE_STRUCT_TCP_INFO_TCPI_MIN_RTT /* 4.6 */
TCPINFO_FIELD(min_rtt)
#else
TCPINFO_ABSENT(min_rtt)
#endif
#ifdef HAVE_STRUCT_TCP_INFO_TCPI_DELIVERY_RATE /* 4.9 */
TCPINFO_FIELD(delivery_rate)
#else
TCPINFO_ABSENT(delivery_rate)
#endif
#ifdef HAVE_STRUCT_TCP_INFO_TCPI_BUSY_TIME /* 4.10, with the two below */
TCPINFO_FIELD(busy_time)
#else
TCPINFO_ABSENT(busy_time)
#endif
#ifdef HAVE_STRUCT_TCP_INFO_TCPI_RWND_LIMITED
TCPINFO_FIELD(rwnd_limited)
#else
TCPINFO_ABSENT(rwnd_limited)
#endif
#ifdef HAVE_STRUCT_TCP_INFO_TCPI_SNDBUF_LIMITED
TCPINFO_FIELD(sndbuf_limited)
#else
TCPINFO_ABSENT(sndbuf_limited)
#endif
#ifdef HAVE_STRUCT_TCP_INFO_TCPI_BYTES_ACKED /* 4.1 */
TCPINFO_FIELD(bytes_acked)
#else
TCPINFO_ABSENT(bytes_acked)
#endif
#ifdef HAVE_STRUCT_TCP_INFO_TCPI_SND_WND /* 5.4 */
TCPINFO_FIELD(snd_wnd)
#else
TCPINFO_ABSENT(snd_wnd)
#endif

#endif
