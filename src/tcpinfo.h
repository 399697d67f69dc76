/* tcpinfo.h: reading TCP_INFO and TCP_CONGESTION, and the hint they give (tcpinfo-*.c, hint.c). */
#ifndef TCPINFO_H
#define TCPINFO_H

#include <stddef.h>
#include <stdint.h>

#include "fastcat.h"

/*
 * A struct tcp_stats (fastcat.h) is filled once per report and at the end,
 * never per chunk. A figure this kernel or the build's <linux/tcp.h> does
 * not give is NAN (the JSON report prints null).
 */
/* tcpinfo-linux.c or tcpinfo-none.c, chosen by configure */
int tcpinfo_read(int, struct tcp_stats *);
int tcpinfo_set_congestion(int, const char *);
int tcpinfo_congestion_check(const char *, char *, size_t);
int tcpinfo_sysctl(const char *, char *, size_t);

/* hint.c: what limited a transfer, from its TCP figures (pure, unit-tested) */
enum hint {
	HINT_NONE,   /* too short to tell, or nothing but the path itself */
	HINT_SNDBUF, /* our send buffer held the connection back */
	HINT_RWND,   /* the peer's receive window did (its tcp_rmem, -I, or a slow reader) */
	HINT_SOURCE, /* the connection idled: stdin was slower than the network */
	HINT_LOSS,   /* busy, not buffer-limited, and retransmitting: loss kept cwnd down */
};
struct hint_input {
	double seconds;              /* how long this end sent */
	uint64_t bytes;              /* what it sent */
	int sndbuf;                  /* SO_SNDBUF at the end */
	const struct tcp_stats *tcp; /* TCP_INFO at the end */
	const char *wmem, *rmem;     /* net.ipv4.tcp_wmem, tcp_rmem as text, or NULL */
	unsigned streams;            /* connections tcp adds up (-P); 0 or 1: one */
};
enum hint hint_choose(const struct hint_input *);
void hint_format(char *, size_t, enum hint, const struct hint_input *);
int hint_format_cap(char *, size_t, const char *, const char *, int, int, double);

#endif
