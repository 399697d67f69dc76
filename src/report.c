/* report.c: the throughput report, for people or as one JSON line. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "fastcat.h"

static double flow_seconds(const struct flow_stats *f, double now)
{
	double end = f->finished > 0 ? f->finished : now;

	return f->started > 0 && end > f->started ? end - f->started : 0;
}

static double flow_rate(const struct flow_stats *f, double now)
{
	double secs = flow_seconds(f, now);

	return secs > 0 ? (double)f->bytes / secs : 0;
}

/* Which side of a direction is a datagram socket, if any. */
enum datagram_side { DATAGRAM_NONE, DATAGRAM_READS, DATAGRAM_WRITES };

/* "N reads (mean M B, max X B)": a stream side's calls, and the bytes per call. */
static void format_calls(char *out, size_t len, const char *name, uint64_t calls, uint64_t bytes,
                         size_t max)
{
	snprintf(out, len, "%llu %s (mean %.0f B, max %zu B)", (unsigned long long)calls, name,
	         calls ? (double)bytes / (double)calls : 0.0, max);
}

/*
 * "N writes of D datagrams (mean M B, max X B a datagram)": a datagram
 * socket's side, saying what its figures are per. A sender's are per
 * datagram, since one sendmmsg call sends many and max_write is the largest
 * datagram; a receiver's are per read, since max_read takes a recvmmsg batch
 * as one.
 */
static void format_datagram_calls(char *out, size_t len, const char *name, uint64_t calls,
                                  const struct flow_stats *f, size_t max, int per_datagram)
{
	uint64_t per = per_datagram ? f->datagrams : calls;

	snprintf(out, len, "%llu %s of %llu datagrams (mean %.0f B, max %zu B a %s)",
	         (unsigned long long)calls, name, (unsigned long long)f->datagrams,
	         per ? (double)f->bytes / (double)per : 0.0, max,
	         per_datagram ? "datagram" : "read");
}

static void print_human_flow(const char *name, const struct flow_stats *f, enum datagram_side side,
                             int checksum, double now)
{
	char approx[32], reads[96], writes[96], tail[96] = "";
	double rate = flow_rate(f, now);
	int n = 0;

	if (side != DATAGRAM_NONE)
		n = snprintf(tail, sizeof tail, "; %llu datagrams, %llu truncated",
		             (unsigned long long)f->datagrams, (unsigned long long)f->truncated);
	if (checksum && n >= 0 && (size_t)n < sizeof tail)
		snprintf(tail + n, sizeof tail - (size_t)n, "; xxh64 %016llx",
		         (unsigned long long)digest_final(&f->digest));
	if (f->bytes == 0) {
		/* nothing to average: the figures would only read as zeros */
		fprintf(
		    stderr,
		    "fastcat: %s 0 bytes (0 B) in %.3f s: nothing moved; %llu read%s, by %s%s\n",
		    name, flow_seconds(f, now), (unsigned long long)f->reads,
		    f->reads == 1 ? "" : "s", copy_method_name(f->copy), tail);
		return;
	}
	units_format_bytes(f->bytes, approx, sizeof approx);
	if (side == DATAGRAM_READS)
		format_datagram_calls(reads, sizeof reads, "reads", f->reads, f, f->max_read, 0);
	else
		format_calls(reads, sizeof reads, "reads", f->reads, f->bytes, f->max_read);
	if (side == DATAGRAM_WRITES)
		format_datagram_calls(writes, sizeof writes, "writes", f->writes, f, f->max_write,
		                      1);
	else
		format_calls(writes, sizeof writes, "writes", f->writes, f->bytes, f->max_write);
	fprintf(stderr,
	        "fastcat: %s %llu bytes (%s) in %.3f s: %.1f MiB/s, %.3f Gbit/s; %s, %s by %s%s\n",
	        name, (unsigned long long)f->bytes, approx, flow_seconds(f, now),
	        rate / (double)MIB, rate * 8 / 1e9, reads, writes, copy_method_name(f->copy), tail);
}

/*
 * The summary line, with the chunk sizes the flows used (flow-setup.c
 * decides them from -B): one size when every read and write used it, else
 * the sizes of each direction.
 */
static void print_human_chunks(const struct session *s, int sndbuf, int rcvbuf)
{
	const struct flow_stats *out = &s->sent, *in = &s->received;
	char chunks[160], a[32], b[32], c[32], d[32];

	units_format_size(out->read_size, a, sizeof a);
	units_format_size(out->write_size, b, sizeof b);
	units_format_size(in->read_size, c, sizeof c);
	units_format_size(in->write_size, d, sizeof d);
	if (strcmp(a, b) == 0 && strcmp(a, c) == 0 && strcmp(a, d) == 0)
		snprintf(chunks, sizeof chunks, "chunk %s", a);
	else if (strcmp(a, c) == 0 && strcmp(b, d) == 0)
		snprintf(chunks, sizeof chunks, "read %s, write %s", a, b);
	else
		snprintf(chunks, sizeof chunks, "sent in %s, out %s; received in %s, out %s", a, b,
		         c, d);
	fprintf(stderr, "fastcat: %s %s -> %s, %s, SO_SNDBUF %d, SO_RCVBUF %d\n",
	        s->cfg->transport->name, s->ep->local, s->ep->peer, chunks, sndbuf, rcvbuf);
}

static void print_human(const struct session *s, int sndbuf, int rcvbuf, double now)
{
	const struct config *cfg = s->cfg;
	int datagram = cfg->transport->datagram;

	/* sent: stdin -> the socket's writes; received: the socket's reads -> stdout */
	print_human_flow("sent", &s->sent, datagram ? DATAGRAM_WRITES : DATAGRAM_NONE,
	                 cfg->checksum, now);
	print_human_flow("received", &s->received, datagram ? DATAGRAM_READS : DATAGRAM_NONE,
	                 cfg->checksum, now);
	if (cfg->verify && s->verify.verified)
		fprintf(stderr,
		        "fastcat: verified: the peer confirmed the %llu bytes sent, and the %llu "
		        "bytes received match what it sent\n",
		        (unsigned long long)s->sent.bytes, (unsigned long long)s->received.bytes);
	print_human_chunks(s, sndbuf, rcvbuf);
}

/* A JSON string literal; addresses and errors can hold quotes or control bytes. */
void report_json_string(char *out, size_t len, const char *s)
{
	size_t o = 0;

	if (len < 3)
		return;
	out[o++] = '"';
	for (; *s != '\0' && o + 8 < len; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			o += (size_t)snprintf(out + o, len - o, "\\%c", c);
		else if (c < 0x20)
			o += (size_t)snprintf(out + o, len - o, "\\u%04x", c);
		else
			out[o++] = (char)c;
	}
	out[o++] = '"';
	out[o] = '\0';
}

static void json_flow(char *out, size_t len, const struct flow_stats *f, int datagram, int checksum,
                      int seq, double now)
{
	int n = snprintf(out, len,
	                 "{\"bytes\":%llu,\"seconds\":%.6f,\"bytes_per_second\":%.1f,"
	                 "\"syscalls\":%llu,\"reads\":%llu,\"writes\":%llu,\"max_read\":%zu,"
	                 "\"max_write\":%zu,\"read_size\":%zu,\"write_size\":%zu,\"copy\":\"%s\"",
	                 (unsigned long long)f->bytes, flow_seconds(f, now), flow_rate(f, now),
	                 (unsigned long long)(f->reads + f->writes), (unsigned long long)f->reads,
	                 (unsigned long long)f->writes, f->max_read, f->max_write, f->read_size,
	                 f->write_size, copy_method_name(f->copy));

	if (n < 0 || (size_t)n >= len)
		return;
	if (datagram)
		n += snprintf(out + n, len - (size_t)n, ",\"datagrams\":%llu,\"truncated\":%llu",
		              (unsigned long long)f->datagrams, (unsigned long long)f->truncated);
	if (seq && n > 0 && (size_t)n < len)
		n +=
		    snprintf(out + n, len - (size_t)n,
		             ",\"lost\":%llu,\"duplicated\":%llu,\"reordered\":%llu,\"runts\":%llu",
		             (unsigned long long)f->seq.lost, (unsigned long long)f->seq.duplicated,
		             (unsigned long long)f->seq.reordered, (unsigned long long)f->runts);
	if (checksum && n > 0 && (size_t)n < len)
		n += snprintf(out + n, len - (size_t)n, ",\"xxh64\":\"%016llx\"",
		              (unsigned long long)digest_final(&f->digest));
	if (n > 0 && (size_t)n < len)
		snprintf(out + n, len - (size_t)n, "}");
}

static void print_json(const struct session *s, int final, int sndbuf, int rcvbuf, double now)
{
	const struct config *cfg = s->cfg;
	char sent[512], received[512], local[160], peer[160], error[600];

	json_flow(sent, sizeof sent, &s->sent, cfg->transport->datagram, cfg->checksum, 0, now);
	json_flow(received, sizeof received, &s->received, cfg->transport->datagram, cfg->checksum,
	          cfg->seq, now);
	report_json_string(local, sizeof local, s->ep->local);
	report_json_string(peer, sizeof peer, s->ep->peer);
	if (s->error[0] != '\0')
		report_json_string(error, sizeof error, s->error);
	else
		snprintf(error, sizeof error, "null");
	fprintf(
	    stderr,
	    "{\"fastcat\":\"%s\",\"final\":%s,\"transport\":\"%s\",\"local\":%s,\"peer\":%s,"
	    "\"chunk_size\":%zu,\"read_size\":%zu,\"write_size\":%zu,\"sndbuf\":%d,\"rcvbuf\":%d,"
	    "\"sent\":%s,\"received\":%s,\"verified\":%s,\"exit_status\":%d,\"error\":%s}\n",
	    FASTCAT_VERSION, final ? "true" : "false", cfg->transport->name, local, peer,
	    cfg->read_size > cfg->write_size ? cfg->read_size : cfg->write_size, cfg->read_size,
	    cfg->write_size, sndbuf, rcvbuf, sent, received,
	    !cfg->verify         ? "null"
	    : s->verify.verified ? "true"
	                         : "false",
	    s->exit_status, error);
}

/*
 * Print what the session moved so far. The buffer sizes are read now, not at
 * connect time, because TCP autotuning grows them during the transfer.
 */
void report_print(const struct session *s, int final)
{
	double now = clock_now();
	int sndbuf = s->ep->sndbuf, rcvbuf = s->ep->rcvbuf;

	if (s->cfg->report == REPORT_NONE)
		return;
	if (s->ep->fd >= 0)
		sock_read_buffers(s->ep->fd, &sndbuf, &rcvbuf);
	if (s->cfg->report == REPORT_JSON)
		print_json(s, final, sndbuf, rcvbuf, now);
	else
		print_human(s, sndbuf, rcvbuf, now);
	fflush(stderr);
}
