/* report.c: the throughput report: for people, or as one JSON line (report-json.c); -v's hints. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fastcat.h"
#include "net/net.h"
#include "report/report.h"
#include "relay/relay.h"

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

/* A direction's line; extra ends it (a one-way session's word on the other direction). */
static void print_human_flow(const char *name, const struct flow_stats *f, enum datagram_side side,
                             int checksum, double now, const char *extra)
{
	char approx[32], reads[96], writes[96], tail[160] = "";
	double rate = flow_stats_rate(f, now);
	int n = 0;

	if (side != DATAGRAM_NONE)
		n = snprintf(tail, sizeof tail, "; %llu datagrams, %llu truncated",
		             (unsigned long long)f->datagrams, (unsigned long long)f->truncated);
	if (checksum && n >= 0 && (size_t)n < sizeof tail)
		n += snprintf(tail + n, sizeof tail - (size_t)n, "; xxh64 %016llx",
		              (unsigned long long)digest_final(&f->digest));
	if (n >= 0 && (size_t)n < sizeof tail)
		snprintf(tail + n, sizeof tail - (size_t)n, "%s", extra);
	if (f->bytes == 0) {
		/* nothing to average: the figures would only read as zeros */
		fprintf(
		    stderr,
		    "fastcat: %s 0 bytes (0 B) in %.3f s: nothing moved; %llu read%s, by %s%s\n",
		    name, flow_stats_seconds(f, now), (unsigned long long)f->reads,
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
	        name, (unsigned long long)f->bytes, approx, flow_stats_seconds(f, now),
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

/* Milliseconds with the digits that matter: "0.051", "2.35", "100.2". */
static void format_ms(char *out, size_t len, double ms)
{
	if (isnan(ms))
		snprintf(out, len, "?");
	else
		snprintf(out, len, ms < 1 ? "%.3f" : ms < 10 ? "%.2f" : "%.1f", ms);
}

/*
 * "; send-buffer-limited 93 % of the time": the buffer limits as parts of the time the
 * connection had data to send, those of 1 % or more; nothing when it sent nothing (a receiver)
 * or the kernel does not say.
 */
static void format_limits(char *out, size_t len, const struct tcp_stats *t)
{
	double snd = t->sndbuf_limited_s / t->busy_s, rwnd = t->rwnd_limited_s / t->busy_s;

	out[0] = '\0';
	if (isnan(t->busy_s) || !(t->busy_s > 0) || isnan(snd) || isnan(rwnd))
		return;
	if (snd >= 0.01 && rwnd >= 0.01)
		snprintf(
		    out, len,
		    "; send-buffer-limited %.0f %%, receive-window-limited %.0f %% of the time",
		    100 * snd, 100 * rwnd);
	else if (snd >= 0.01 || rwnd >= 0.01)
		snprintf(out, len, "; %s-limited %.0f %% of the time",
		         snd >= 0.01 ? "send-buffer" : "receive-window", 100 * (snd + rwnd));
	else
		snprintf(out, len, "; not buffer-limited (busy %.3f s)", t->busy_s);
}

/* "fastcat: tcp: rtt 100.2 ms (min 100.0), cwnd 3.90 MiB, 0 retransmits, cubic; ..." */
static void print_human_tcp(const struct tcp_stats *t)
{
	char rtt[16], min[16], cwnd[32] = "?", limits[128];

	if (!t->valid)
		return;
	format_ms(rtt, sizeof rtt, t->rtt_ms);
	format_ms(min, sizeof min, t->min_rtt_ms);
	if (!isnan(t->cwnd_bytes))
		units_format_bytes((uint64_t)t->cwnd_bytes, cwnd, sizeof cwnd);
	format_limits(limits, sizeof limits, t);
	fprintf(stderr, "fastcat: tcp: rtt %s ms (min %s), cwnd %s, %.0f retransmit%s%s%s%s\n", rtt,
	        min, cwnd, t->retransmits, t->retransmits == 1 ? "" : "s",
	        t->congestion[0] != '\0' ? ", " : "", t->congestion, limits);
}

/* -P: "fastcat: -P: 4 connections: cwnd 1.2, 1.1, 1.3, 1.0 MiB; 0, 2, 0, 0 retransmits" */
static void print_human_conns(const struct session *s)
{
	char cwnd[CONN_MAX * 12], retrans[CONN_MAX * 8];
	size_t c = 0, r = 0;

	for (unsigned i = 0; i < s->conns.n; i++) {
		const struct tcp_stats *t = &s->conn_tcp[i];
		int ok = t->valid && !isnan(t->cwnd_bytes);

		c += (size_t)snprintf(cwnd + c, sizeof cwnd - c, "%s%.1f", i ? ", " : "",
		                      ok ? t->cwnd_bytes / (double)MIB : 0.0);
		r += (size_t)snprintf(retrans + r, sizeof retrans - r, "%s%.0f", i ? ", " : "",
		                      t->valid && !isnan(t->retransmits) ? t->retransmits : 0.0);
	}
	fprintf(stderr, "fastcat: -P: %u connection%s: cwnd %s MiB; %s retransmits\n", s->conns.n,
	        s->conns.n == 1 ? "" : "s", cwnd, retrans);
}

/*
 * --resume: "resumed at L (NN %)", the share of the whole when the sender
 * knows it (a file, or --size), and how much of a pipe it read to get there.
 */
static void print_human_resume(const struct resume *r)
{
	char share[32] = "", skipped[96] = "";

	if (!r->on)
		return;
	if (r->total != UINT64_MAX && r->total > 0) /* rounded down: 100 % only when complete */
		snprintf(share, sizeof share, " (%u %%)",
		         (unsigned)((double)r->offset * 100 / (double)r->total));
	if (r->skipped > 0)
		snprintf(skipped, sizeof skipped, "; %llu bytes of stdin read and skipped",
		         (unsigned long long)r->skipped);
	fprintf(stderr, "fastcat: resumed at %llu%s%s\n", (unsigned long long)r->offset, share,
	        skipped);
}

/* --retry, the sender: the connections it took, all told, and what the receiver has. */
static void print_human_retry(const struct session *s)
{
	char confirmed[32];

	if (s->cfg->retry == 0 || s->cfg->listen)
		return;
	units_format_bytes(s->resume.confirmed, confirmed, sizeof confirmed);
	fprintf(stderr, "fastcat: --retry: %u retr%s; the receiver confirmed %llu bytes (%s)\n",
	        s->resume.retries, s->resume.retries == 1 ? "y" : "ies",
	        (unsigned long long)s->resume.confirmed, confirmed);
}

/*
 * --verify, one way (-P, --retry): the sender's peer confirmed the stream,
 * or the receiver found it whole; the counts and digests are the whole
 * file's, from byte 0.
 */
static void print_human_verified_one_way(const struct session *s)
{
	const struct verdict *vd = &s->verdict;

	if (s->cfg->listen)
		fprintf(stderr,
		        "fastcat: verified: the %llu bytes written (xxh64 %016llx) are what the "
		        "sender sent\n",
		        (unsigned long long)vd->peer_bytes, (unsigned long long)vd->peer_digest);
	else if (s->reliable.receivers > 1)
		fprintf(stderr,
		        "fastcat: verified: each of the %u receivers wrote the %llu bytes sent "
		        "(xxh64 %016llx)\n",
		        s->reliable.receivers, (unsigned long long)vd->confirmed_bytes,
		        (unsigned long long)vd->confirmed_digest);
	else
		fprintf(stderr,
		        "fastcat: verified: the receiver wrote the %llu bytes sent (xxh64 "
		        "%016llx)\n",
		        (unsigned long long)vd->confirmed_bytes,
		        (unsigned long long)vd->confirmed_digest);
}

/*
 * --sparse: the zero runs that went as counts: "zeros 3.20 GiB (80 %) not
 * sent", or at the receiver, "... not received, made holes or written".
 */
static void print_human_zeros(const struct session *s)
{
	const struct flow_stats *f = s->cfg->listen ? &s->received : &s->sent;
	char zeros[32];

	if (f->zero_bytes == 0)
		return;
	units_format_bytes(f->zero_bytes, zeros, sizeof zeros);
	fprintf(stderr, "fastcat: --sparse: zeros %s (%.0f %%) not %s\n", zeros,
	        f->bytes > 0 ? 100.0 * (double)f->zero_bytes / (double)f->bytes : 0.0,
	        s->cfg->listen ? "received (holes in a file, else written)" : "sent");
}

/* --sync: what making stdout durable cost ("synced to disk 3 times, 0.412 s"). */
static void print_human_sync(const struct session *s)
{
	const struct flow_stats *f = &s->received;

	if (!s->cfg->sync || f->syncs == 0)
		return;
	fprintf(stderr, "fastcat: --sync: stdout synced to disk %llu time%s, %.3f s\n",
	        (unsigned long long)f->syncs, f->syncs == 1 ? "" : "s", f->sync_seconds);
}

/*
 * --reliable to a group: a line each receiver ("receiver 2 of 3, 10.0.0.2:9000 (tag 4660):
 * whole, 8388613 bytes; path 198.2 Mbit/s, round trip 0.4 ms (min 0.1), 540 acknowledgements
 * (3 naming gaps), 14400 bytes taken for lost").
 */
static void print_human_group(const struct session *s)
{
	for (unsigned i = 0; i < s->nreceivers; i++) {
		const struct receiver_outcome *o = &s->receivers[i];

		if (!o->reliable)
			continue;
		fprintf(
		    stderr,
		    "fastcat: --reliable: receiver %u of %u, %s (tag %u): %s%s%s%s, %llu bytes; "
		    "path %.1f Mbit/s, round trip %.1f ms (min %.1f), %llu acknowledgements "
		    "(%llu naming gaps), %llu bytes taken for lost\n",
		    i + 1, s->nreceivers, o->name, o->tag, o->state, o->why ? " (" : "",
		    o->why ? o->why : "", o->why ? ")" : "", (unsigned long long)o->bytes,
		    o->path * 8 / 1e6, o->rtt * 1e3, o->min_rtt * 1e3, (unsigned long long)o->acks,
		    (unsigned long long)o->gap_acks, (unsigned long long)o->lost_bytes);
	}
}

/*
 * --reliable: what its datagrams did ("186413 datagrams of up to 1440 bytes, 1893 sent again
 * (1.0 %), ..., path 941.2 Mbit/s, paced at 941.0, round trip 100.4 ms (min 100.0)").
 */
static void print_human_reliable(const struct session *s)
{
	const struct reliable_figures *f = &s->reliable;

	if (!f->on)
		return;
	if (s->cfg->listen) {
		fprintf(stderr,
		        "fastcat: --reliable: %llu datagrams of up to %zu bytes, %llu duplicates, "
		        "%llu dropped beyond the store, %llu acknowledgements sent (%llu naming "
		        "gaps)\n",
		        (unsigned long long)f->datagrams, f->payload,
		        (unsigned long long)f->duplicates, (unsigned long long)f->dropped,
		        (unsigned long long)f->acks, (unsigned long long)f->gap_acks);
		return;
	}
	fprintf(
	    stderr,
	    "fastcat: --reliable: %llu datagrams of up to %zu bytes, %llu sent again (%.1f %%), "
	    "%llu acknowledgements (%llu naming gaps), %llu timeouts; path %.1f Mbit/s, paced "
	    "at %.1f, round trip %.1f ms (min %.1f)\n",
	    (unsigned long long)f->datagrams, f->payload, (unsigned long long)f->repairs,
	    f->datagrams > 0 ? 100.0 * (double)f->repairs / (double)f->datagrams : 0.0,
	    (unsigned long long)f->acks, (unsigned long long)f->gap_acks,
	    (unsigned long long)f->probes, f->bottleneck * 8 / 1e6, f->pacing * 8 / 1e6,
	    f->srtt * 1e3, f->min_rtt * 1e3);
	print_human_group(s);
}

static void print_human(const struct session *s, int sndbuf, int rcvbuf, double now)
{
	const struct config *cfg = s->cfg;
	int datagram = cfg->transport->datagram;

	/*
	 * sent: stdin -> the socket's writes; received: the socket's reads -> stdout. A one-way
	 * session's other direction moved no data: a clause, not a line of zeros.
	 */
	if (!s->one_way || !cfg->listen)
		print_human_flow("sent", &s->sent, datagram ? DATAGRAM_WRITES : DATAGRAM_NONE,
		                 cfg->checksum, now,
		                 s->one_way ? "; one way, nothing received" : "");
	if (!s->one_way || cfg->listen)
		print_human_flow("received", &s->received,
		                 datagram ? DATAGRAM_READS : DATAGRAM_NONE, cfg->checksum, now,
		                 s->one_way ? "; one way, nothing sent" : "");
	print_human_resume(&s->resume);
	print_human_retry(s);
	print_human_sync(s);
	print_human_zeros(s);
	/* with --resume the counts are the whole file's, as the digests are */
	print_human_reliable(s);
	if ((cfg->verify || cfg->reliable) && s->verdict.verified && s->one_way)
		print_human_verified_one_way(s);
	else if (cfg->verify && s->verdict.verified)
		fprintf(stderr,
		        "fastcat: verified: the peer confirmed the %llu bytes sent, and the %llu "
		        "bytes received match what it sent\n",
		        (unsigned long long)(s->sent.bytes + s->prefix.sent),
		        (unsigned long long)(s->received.bytes + s->prefix.received));
	print_human_chunks(s, sndbuf, rcvbuf);
	if (cfg->transport == &transport_tcp)
		print_human_tcp(&s->tcp);
	if (s->conns.n > 0)
		print_human_conns(s);
}

/*
 * -v, at exit: what limited the transfer (hint.c chooses), and what a capped -O/-I means now
 * that the RTT is measured.
 */
static void print_hints(const struct session *s, int sndbuf, double now)
{
	const struct config *cfg = s->cfg;
	char wmem[64], rmem[64], line[512];
	struct hint_input in = {.seconds = flow_stats_seconds(&s->sent, now),
	                        .bytes = s->sent.bytes,
	                        .sndbuf = sndbuf,
	                        .tcp = &s->tcp,
	                        .streams = s->conns.n,
	                        .auto_decision = s->auto_decision[0] ? s->auto_decision : NULL};
	enum hint h = hint_choose(&in);

	if (hint_format_cap(line, sizeof line, "--sndbuf", "net.core.wmem_max", cfg->sndbuf,
	                    s->ep->sndbuf, s->tcp.rtt_ms))
		log_verbose("%s", line);
	if (hint_format_cap(line, sizeof line, "--rcvbuf", "net.core.rmem_max", cfg->rcvbuf,
	                    s->ep->rcvbuf, s->tcp.rtt_ms))
		log_verbose("%s", line);
	if (h == HINT_NONE)
		return;
	if (tcpinfo_sysctl("net.ipv4.tcp_wmem", wmem, sizeof wmem) == 0)
		in.wmem = wmem;
	if (tcpinfo_sysctl("net.ipv4.tcp_rmem", rmem, sizeof rmem) == 0)
		in.rmem = rmem;
	hint_format(line, sizeof line, h, &in);
	log_verbose("hint: %s", line);
}

/*
 * -P: each connection's TCP_INFO, and the session's figures from them:
 * windows, retransmits and rates add up; RTTs and the busy and limited
 * times are the connections' mean (so the hint's parts of the time hold).
 */
static void read_conns(struct session *s)
{
	struct tcp_stats *t = &s->tcp;
	unsigned n = 0;

	for (unsigned i = 0; i < s->conns.n; i++) {
		const struct tcp_stats *c = &s->conn_tcp[i];

		tcpinfo_read(s->conns.fd[i], &s->conn_tcp[i]);
		if (!c->valid)
			continue;
		if (n++ == 0) {
			*t = *c;
			continue;
		}
		t->rtt_ms += c->rtt_ms;
		t->min_rtt_ms = c->min_rtt_ms < t->min_rtt_ms ? c->min_rtt_ms : t->min_rtt_ms;
		t->rttvar_ms += c->rttvar_ms;
		t->cwnd_bytes += c->cwnd_bytes;
		t->retransmits += c->retransmits;
		t->delivery_rate_bps += c->delivery_rate_bps;
		t->pacing_rate_bps += c->pacing_rate_bps;
		t->busy_s += c->busy_s;
		t->rwnd_limited_s += c->rwnd_limited_s;
		t->sndbuf_limited_s += c->sndbuf_limited_s;
	}
	if (n < 2)
		return;
	t->rtt_ms /= n;
	t->rttvar_ms /= n;
	t->busy_s /= n;
	t->rwnd_limited_s /= n;
	t->sndbuf_limited_s /= n;
}

/*
 * Print what the session moved so far. The buffer sizes are read now, not at
 * connect time, because TCP autotuning grows them during the transfer; a tcp
 * session's TCP_INFO is read here too, once a report, into s->tcp. The final
 * report is followed by -v's hints.
 */
void report_print(struct session *s, int final)
{
	double now = clock_now();
	int sndbuf = s->ep->sndbuf, rcvbuf = s->ep->rcvbuf;
	int tcp = s->cfg->transport == &transport_tcp;

	if (s->cfg->report == REPORT_NONE)
		return;
	if (s->ep->fd >= 0)
		sock_read_buffers(s->ep->fd, &sndbuf, &rcvbuf);
	if (tcp && s->conns.n > 0)
		read_conns(s);
	else if (tcp && s->ep->fd >= 0)
		tcpinfo_read(s->ep->fd, &s->tcp); /* on failure the last figures stand */
	if (s->cfg->report == REPORT_JSON)
		report_print_json(s, final, sndbuf, rcvbuf, now);
	else
		print_human(s, sndbuf, rcvbuf, now);
	if (final && tcp && s->cfg->verbose)
		print_hints(s, sndbuf, now);
	fflush(stderr);
}
