/* report-json.c: the report as one JSON line, and JSON string literals (for --bench's too). */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fastcat.h"
#include "net/net.h"
#include "report/report.h"
#include "relay/relay.h"

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
	                 (unsigned long long)f->bytes, flow_stats_seconds(f, now),
	                 flow_stats_rate(f, now), (unsigned long long)(f->reads + f->writes),
	                 (unsigned long long)f->reads, (unsigned long long)f->writes, f->max_read,
	                 f->max_write, f->read_size, f->write_size, copy_method_name(f->copy));

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
	if (f->zero_bytes > 0 && n > 0 && (size_t)n < len) /* --sparse */
		n += snprintf(out + n, len - (size_t)n, ",\"zero_bytes\":%llu",
		              (unsigned long long)f->zero_bytes);
	if (checksum && n > 0 && (size_t)n < len)
		n += snprintf(out + n, len - (size_t)n, ",\"xxh64\":\"%016llx\"",
		              (unsigned long long)digest_final(&f->digest));
	if (n > 0 && (size_t)n < len)
		snprintf(out + n, len - (size_t)n, "}");
}

/* ",\"key\":number", or null for a figure the kernel did not give. */
static size_t json_number(char *out, size_t len, const char *key, int decimals, double v)
{
	char num[48] = "null";
	int n;

	if (!isnan(v))
		snprintf(num, sizeof num, "%.*f", decimals, v);
	n = snprintf(out, len, ",\"%s\":%s", key, num);
	return n > 0 && (size_t)n < len ? (size_t)n : 0;
}

/* The "tcp" object: TCP_INFO's figures, null for each one the kernel or build lacks. */
static void json_tcp(char *out, size_t len, const struct tcp_stats *t)
{
	char name[48] = "null";
	size_t n;
	int k;

	if (!t->valid) {
		snprintf(out, len, "null");
		return;
	}
	if (t->congestion[0] != '\0')
		report_json_string(name, sizeof name, t->congestion);
	k = snprintf(out, len, "{\"congestion\":%s", name);
	if (k < 0 || (size_t)k >= len)
		return;
	n = (size_t)k;
	n += json_number(out + n, len - n, "rtt_ms", 3, t->rtt_ms);
	n += json_number(out + n, len - n, "min_rtt_ms", 3, t->min_rtt_ms);
	n += json_number(out + n, len - n, "rttvar_ms", 3, t->rttvar_ms);
	n += json_number(out + n, len - n, "cwnd_bytes", 0, t->cwnd_bytes);
	n += json_number(out + n, len - n, "retransmits", 0, t->retransmits);
	n += json_number(out + n, len - n, "delivery_rate_bps", 0, t->delivery_rate_bps);
	n += json_number(out + n, len - n, "pacing_rate_bps", 0, t->pacing_rate_bps);
	n += json_number(out + n, len - n, "busy_s", 6, t->busy_s);
	n += json_number(out + n, len - n, "rwnd_limited_s", 6, t->rwnd_limited_s);
	n += json_number(out + n, len - n, "sndbuf_limited_s", 6, t->sndbuf_limited_s);
	snprintf(out + n, len - n, "}");
}

/* -P: ',"streams":[{...},...]', each connection's "tcp" object; "" when not striped. */
static void json_streams(char *out, size_t len, const struct session *s)
{
	size_t n;

	out[0] = '\0';
	if (s->conns.n == 0 || len < 16)
		return;
	n = (size_t)snprintf(out, len, ",\"streams\":["); /* len >= 16 */
	for (unsigned i = 0; i < s->conns.n && n + 2 < len; i++) {
		if (i > 0)
			out[n++] = ',';
		json_tcp(out + n, len - n, &s->conn_tcp[i]);
		n += strlen(out + n);
	}
	if (n + 2 <= len)
		snprintf(out + n, len - n, "]");
}

/* A multicast receiver's path and what it asked for: ',"tag":...,...'; "" for the rest. */
static void json_reliable_receiver(char *out, size_t len, const struct receiver_outcome *o)
{
	out[0] = '\0';
	if (!o->reliable)
		return;
	snprintf(out, len,
	         ",\"tag\":%u,\"path_bps\":%.0f,\"rtt_ms\":%.3f,\"min_rtt_ms\":%.3f,\"acks\":%llu,"
	         "\"gap_acks\":%llu,\"lost_bytes\":%llu",
	         o->tag, o->path * 8, o->rtt * 1e3, o->min_rtt * 1e3, (unsigned long long)o->acks,
	         (unsigned long long)o->gap_acks, (unsigned long long)o->lost_bytes);
}

/*
 * --chain's sender, a multicast sender: ',"receivers":[{...},...]', what became of each; ""
 * before the judgement.
 */
static void json_receivers(char *out, size_t len, const struct session *s)
{
	size_t n;

	out[0] = '\0';
	if (s->nreceivers == 0 || len < 16)
		return;
	n = (size_t)snprintf(out, len, ",\"receivers\":["); /* len >= 16 */
	for (unsigned i = 0; i < s->nreceivers && n + 2 < len; i++) {
		const struct receiver_outcome *o = &s->receivers[i];
		char host[600], error[360] = "null", digest[24] = "null", path[256];
		int k;

		report_json_string(host, sizeof host, o->name);
		if (o->why != NULL)
			report_json_string(error, sizeof error, o->why);
		else if (o->err != 0)
			report_json_string(error, sizeof error, strerror(o->err));
		if (strcmp(o->state, "whole") == 0 || strcmp(o->state, "write_failed") == 0 ||
		    strcmp(o->state, "mismatch") == 0)
			snprintf(digest, sizeof digest, "\"%016llx\"",
			         (unsigned long long)o->digest);
		json_reliable_receiver(path, sizeof path, o);
		k = snprintf(out + n, len - n,
		             "%s{\"receiver\":%u,\"host\":%s,\"state\":\"%s\",\"bytes\":%llu,"
		             "\"xxh64\":%s,\"exact\":%s,\"error\":%s%s}",
		             i > 0 ? "," : "", i + 1, host, o->state, (unsigned long long)o->bytes,
		             digest, o->exact ? "true" : "false", error, path);
		if (k < 0 || (size_t)k >= len - n)
			return;
		n += (size_t)k;
	}
	if (n + 2 <= len)
		snprintf(out + n, len - n, "]");
}

/* --reliable: ,"reliable":{...} with its figures; nothing without it. */
static void json_reliable(char *out, size_t len, const struct session *s)
{
	const struct reliable_figures *f = &s->reliable;

	out[0] = '\0';
	if (!f->on)
		return;
	snprintf(out, len,
	         ",\"reliable\":{\"payload\":%zu,\"datagrams\":%llu,\"resent\":%llu,"
	         "\"resent_bytes\":%llu,\"acks\":%llu,\"gap_acks\":%llu,\"timeouts\":%llu,"
	         "\"duplicates\":%llu,\"dropped\":%llu,\"path_bps\":%.0f,\"pacing_bps\":%.0f,"
	         "\"rtt_ms\":%.3f,\"min_rtt_ms\":%.3f}",
	         f->payload, (unsigned long long)f->datagrams, (unsigned long long)f->repairs,
	         (unsigned long long)f->repaired_bytes, (unsigned long long)f->acks,
	         (unsigned long long)f->gap_acks, (unsigned long long)f->probes,
	         (unsigned long long)f->duplicates, (unsigned long long)f->dropped,
	         f->bottleneck * 8, f->pacing * 8, f->srtt * 1e3, f->min_rtt * 1e3);
}

/* The report as one JSON line on stderr (fastcat(1) documents its keys). */
void report_print_json(const struct session *s, int final, int sndbuf, int rcvbuf, double now)
{
	const struct config *cfg = s->cfg;
	char sent[512], received[512], local[160], peer[160], error[2048], tcp[512] = "";
	char reliable[512];
	char resumed[24] = "null", skipped[24] = "null", retries[24] = "null",
	     confirmed[24] = "null";
	size_t streams_len = s->conns.n > 0 ? (size_t)s->conns.n * 512 : 1;
	size_t receivers_len = s->nreceivers > 0 ? (size_t)s->nreceivers * 1400 : 1;
	char *streams = malloc(streams_len);     /* -P: up to 32 KiB, not on the stack */
	char *receivers = malloc(receivers_len); /* --chain, a group: up to 88 KiB */

	json_flow(sent, sizeof sent, &s->sent, cfg->transport->datagram, cfg->checksum, 0, now);
	json_flow(received, sizeof received, &s->received, cfg->transport->datagram, cfg->checksum,
	          cfg->seq, now);
	report_json_string(local, sizeof local, s->ep->local);
	report_json_string(peer, sizeof peer, s->ep->peer);
	if (s->failure.why[0] != '\0')
		report_json_string(error, sizeof error, s->failure.why);
	else
		snprintf(error, sizeof error, "null");
	/* only a tcp session has the key: scripts tell "not tcp" from "the kernel did not say" */
	if (cfg->transport == &transport_tcp) {
		static const char key[] = ",\"tcp\":";
		memcpy(tcp, key, sizeof key - 1);
		json_tcp(tcp + sizeof key - 1, sizeof tcp - (sizeof key - 1), &s->tcp);
	}
	json_reliable(reliable, sizeof reliable, s);
	if (streams != NULL)
		json_streams(streams, streams_len, s);
	if (receivers != NULL)
		json_receivers(receivers, receivers_len, s);
	/* --resume: null without it, or when the ends did not agree; skipped: the sender's */
	if (s->resume.on)
		snprintf(resumed, sizeof resumed, "%llu", (unsigned long long)s->resume.offset);
	if (s->resume.on && !cfg->listen)
		snprintf(skipped, sizeof skipped, "%llu", (unsigned long long)s->resume.skipped);
	/* --retry: the sender's reconnections and the offset the receiver confirmed */
	if (cfg->retry > 0 && !cfg->listen) {
		snprintf(retries, sizeof retries, "%u", s->resume.retries);
		snprintf(confirmed, sizeof confirmed, "%llu",
		         (unsigned long long)s->resume.confirmed);
	}
	fprintf(
	    stderr,
	    "{\"fastcat\":\"%s\",\"final\":%s,\"transport\":\"%s\",\"local\":%s,\"peer\":%s,"
	    "\"chunk_size\":%zu,\"read_size\":%zu,\"write_size\":%zu,\"sndbuf\":%d,\"rcvbuf\":%d,"
	    "\"sent\":%s,\"received\":%s%s%s%s%s,\"resumed_at\":%s,\"skipped\":%s,\"retries\":%s,"
	    "\"confirmed\":%s,\"verified\":%s,\"exit_status\":%d,\"error\":%s}\n",
	    FASTCAT_VERSION, final ? "true" : "false", cfg->transport->name, local, peer,
	    cfg->read_size > cfg->write_size ? cfg->read_size : cfg->write_size, cfg->read_size,
	    cfg->write_size, sndbuf, rcvbuf, sent, received, tcp, streams != NULL ? streams : "",
	    receivers != NULL ? receivers : "", reliable, resumed, skipped, retries, confirmed,
	    !cfg->verify && !cfg->reliable ? "null"
	    : s->verdict.verified          ? "true"
	                                   : "false",
	    s->failure.status, error);
	free(streams);
	free(receivers);
}
