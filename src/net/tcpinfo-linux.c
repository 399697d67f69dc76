/*
 * tcpinfo-linux.c: what the kernel says about a TCP connection (TCP_INFO), the congestion
 * control it runs (TCP_CONGESTION), and the sysctls that bound it. configure picks this file
 * where <linux/tcp.h> (or <netinet/tcp.h>) has struct tcp_info; tcpinfo-none.c elsewhere.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include "fastcat.h"
#include "net/net.h"
#include "net/tcpinfo-linux.h"

/* The congestion control the socket runs, read back; "" when the kernel does not say. */
static void read_congestion(int fd, char *name, size_t len)
{
	char buf[32] = "";
	socklen_t n = sizeof buf - 1;

	if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, buf, &n) != 0)
		n = 0;
	buf[n < sizeof buf ? n : sizeof buf - 1] = '\0';
	snprintf(name, len, "%s", buf);
}

/*
 * One getsockopt(TCP_INFO) into st, in milliseconds, bytes, bits per second and seconds (the
 * kernel's are microseconds and bytes per second). The congestion control's name is read once:
 * it does not change. Returns 0, or -1 with errno (not a TCP socket, or closed).
 */
int tcpinfo_read(int fd, struct tcp_stats *st)
{
	struct tcp_info ti;
	socklen_t len = sizeof ti;
	double pacing;

	memset(&ti, 0, sizeof ti);
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0)
		return -1;
	st->valid = 1;
	st->rtt_ms = TCPINFO_GET(&ti, len, tcpi_rtt) / 1000;
	st->rttvar_ms = TCPINFO_GET(&ti, len, tcpi_rttvar) / 1000;
	st->mss = TCPINFO_GET(&ti, len, tcpi_snd_mss);
	st->cwnd_bytes = TCPINFO_GET(&ti, len, tcpi_snd_cwnd) * st->mss;
	st->retransmits = TCPINFO_GET(&ti, len, tcpi_total_retrans);
	st->min_rtt_ms = get_min_rtt(&ti, len) / 1000;
	/* a min_rtt of ~0U means no sample yet */
	if (st->min_rtt_ms > 4e6)
		st->min_rtt_ms = NAN;
	st->delivery_rate_bps = get_delivery_rate(&ti, len) * 8;
	pacing = get_pacing_rate(&ti, len);
	/* ~0: the socket is not paced (no RTT sample yet, or SO_MAX_PACING_RATE unset) */
	st->pacing_rate_bps = pacing >= 1.8e19 ? NAN : pacing * 8;
	st->busy_s = get_busy_time(&ti, len) / 1e6;
	st->rwnd_limited_s = get_rwnd_limited(&ti, len) / 1e6;
	st->sndbuf_limited_s = get_sndbuf_limited(&ti, len) / 1e6;
	st->bytes_acked = get_bytes_acked(&ti, len);
	st->snd_wnd_bytes = get_snd_wnd(&ti, len);
	if (st->congestion[0] == '\0')
		read_congestion(fd, st->congestion, sizeof st->congestion);
	return 0;
}

/* --congestion: setsockopt(TCP_CONGESTION) before connect or listen. 0, or -1 with errno. */
int tcpinfo_set_congestion(int fd, const char *name)
{
	return setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, (socklen_t)strlen(name));
}

/*
 * A sysctl's value as one line ("net.ipv4.tcp_wmem" -> "4096 16384 4194304"), tabs as spaces,
 * for messages. 0, or -1 when /proc/sys does not have it.
 */
int tcpinfo_sysctl(const char *name, char *out, size_t len)
{
	char path[128];
	size_t n;
	FILE *f;

	snprintf(path, sizeof path, "/proc/sys/%s", name);
	for (char *p = path + strlen("/proc/sys/"); *p != '\0'; p++)
		if (*p == '.')
			*p = '/';
	f = fopen(path, "r");
	if (f == NULL)
		return -1;
	if (len == 0 || fgets(out, (int)len, f) == NULL) {
		fclose(f);
		return -1;
	}
	fclose(f);
	n = strcspn(out, "\n");
	out[n] = '\0';
	for (char *p = out; *p != '\0'; p++)
		if (*p == '\t')
			*p = ' ';
	return n > 0 ? 0 : -1;
}

/*
 * --congestion NAME, while parsing: try it on a scratch TCP socket, so that an unknown name is a
 * usage error (the kernel loads a known module itself, given CAP_NET_ADMIN). A name the kernel
 * has but does not allow this user (EPERM) passes here and fails at the real setsockopt, as a
 * run-time error. Returns 0, or EXIT_USAGE with the reason in fail.
 */
int tcpinfo_congestion_check(const char *name, struct failure *fail)
{
	char available[256];
	int fd = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP), why = 0;

	if (fd < 0)
		fd = socket(AF_INET6, SOCK_STREAM, IPPROTO_TCP);
	if (fd < 0)
		return 0; /* no scratch socket: the real one will say */
	/* the kernel's names are shorter than 16 (TCP_CA_NAME_MAX), and it would cut a longer one
	 */
	if (name[0] == '\0' || strlen(name) >= sizeof((struct tcp_stats *)0)->congestion)
		why = ENOENT;
	else if (tcpinfo_set_congestion(fd, name) != 0)
		why = errno;
	close(fd);
	if (why == 0 || why == EPERM)
		return 0;
	if (why != ENOENT)
		return failure_set(fail, EXIT_USAGE, "--congestion %s: %s", name, strerror(why));
	if (tcpinfo_sysctl("net.ipv4.tcp_available_congestion_control", available,
	                   sizeof available) != 0)
		snprintf(available, sizeof available, "unknown");
	return failure_set(fail, EXIT_USAGE, "--congestion %s: unknown algorithm (available: %s)",
	                   name, available);
}
