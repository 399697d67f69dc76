/*
 * flow-dgram.c: a flow's datagram steps: --seq numbers, whole datagrams in
 * and out (batched where the platform can), the EOF datagram, the peer a
 * connectionless listener locked onto, and a feature's own datagrams among
 * the data (its ops->datagram takes them).
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fastcat.h"
#include "base/base.h"
#include "net/net.h"
#include "relay/flow.h"

/* --seq: each datagram starts with its sequence number, 8 bytes big-endian. */
#define SEQ_HEADER SEQ_HEADER_BYTES

static void seq_encode(unsigned char *h, uint64_t seq)
{
	wire_put(h, seq, SEQ_HEADER);
}

static uint64_t seq_decode(const unsigned char *h)
{
	return wire_get(h, SEQ_HEADER);
}

/*
 * --seq's EOF datagram, numbered with the count sent: what has not come by
 * now is counted lost. It may have overtaken the last few datagrams (a
 * veth or a WAN reorders across CPUs and paths): while gaps are open the
 * flow reads on for STRAGGLER_GRACE, and ends once they are filled or the
 * grace is over (flow_dgram_tail_over). 0: EOF now; -2: read on.
 */
static ssize_t flow_seq_end(struct flow *f, uint64_t count)
{
	struct seqtrack *t = &f->stats->seq;

	if (count > t->next) { /* the datagrams at the very end are missing too */
		seqtrack_add(t, count);
		t->next--; /* ... the marker takes no number of its own */
	}
	if (t->lost == 0 || f->ignore_empty) /* (with --verify, the END ends the flow) */
		return 0;
	if (f->seq_tail == 0)
		f->seq_tail = clock_now() + STRAGGLER_GRACE;
	return -2;
}

/* --seq: after an EOF datagram with gaps open, may the flow end now? */
int flow_dgram_tail_over(const struct flow *f, double now)
{
	return f->seq_tail > 0 && (f->stats->seq.lost == 0 || now >= f->seq_tail);
}

/*
 * Count one datagram that arrived as n bytes (header included with --seq).
 * Returns its payload bytes, 0 for the EOF marker, or -2 for a runt (or for
 * an EOF marker that waits for stragglers: flow_seq_end).
 */
static ssize_t flow_account(struct flow *f, ssize_t n, int flags, const unsigned char *header)
{
	if (n > 0)
		f->stats->datagrams++;
	if (flags & MSG_TRUNC)
		f->stats->truncated++;
	if (!f->seq || n == 0)
		return n;
	if (n < SEQ_HEADER) {
		f->stats->runts++;
		return -2;
	}
	if (n > SEQ_HEADER) {
		seqtrack_add(&f->stats->seq, seq_decode(header));
		return n - SEQ_HEADER;
	}
	f->stats->datagrams--; /* the numbered EOF marker carries no data */
	return flow_seq_end(f, seq_decode(header));
}

/*
 * A datagram whose first bytes (head, then the rest at body) may be a
 * feature's own (--verify's control datagrams, or a refusal of them): the
 * flow's ops take it. 1: taken (not data); 0: data; -1: failed.
 */
static int flow_feature_datagram(struct flow *f, const unsigned char *header,
                                 const unsigned char *payload, ssize_t n)
{
	size_t head = f->seq ? SEQ_HEADER : DATAGRAM_HEAD;

	if (f->ops->datagram == NULL || n < (ssize_t)head)
		return 0;
	if (f->seq)
		return f->ops->datagram(f, header, payload, (size_t)n - SEQ_HEADER);
	return f->ops->datagram(f, payload, payload + DATAGRAM_HEAD, (size_t)n - DATAGRAM_HEAD);
}

/*
 * A connectionless listener locks onto its peer with connect(), but the
 * kernel keeps the datagrams that others sent before that, and the relay
 * would read them: they are dropped here (and named with -v), so that nothing
 * from a refused (--deny) or second sender reaches stdout.
 */
static int flow_from_peer(const struct flow *f, const struct sockaddr_storage *from, socklen_t len)
{
	char who[112];

	if (addr_same_peer((const struct sockaddr *)from, (const struct sockaddr *)&f->peer))
		return 1;
	addr_format((const struct sockaddr *)from, len, who, sizeof who);
	log_verbose("dropped a datagram from %s: not the peer", who);
	return 0;
}

/*
 * A datagram source is read with recvmsg() so a datagram cut by the buffer is
 * seen; with --seq the header lands apart from the data and is counted.
 * Returns the payload bytes, 0 for a zero-length datagram or EOF, -1, or -2.
 */
static ssize_t flow_dgram_recv(struct flow *f, size_t want)
{
	unsigned char header[SEQ_HEADER];
	struct iovec iov[2] = {{header, SEQ_HEADER}, {iobuf_tail(&f->buf), want}};
	struct sockaddr_storage from;
	struct msghdr msg;
	ssize_t n;

	memset(&msg, 0, sizeof msg);
	msg.msg_iov = iov + !f->seq;
	msg.msg_iovlen = (size_t)(1 + f->seq);
	if (f->only_peer) {
		msg.msg_name = &from;
		msg.msg_namelen = sizeof from;
	}
	n = recvmsg(flow_src(f), &msg, 0);
	if (n >= 0 && f->only_peer && !flow_from_peer(f, &from, msg.msg_namelen))
		return -2;
	if (n > 0) {
		int rc = flow_feature_datagram(f, header, iov[1].iov_base, n);
		if (rc != 0)
			return rc > 0 ? -2 : -1;
	}
	return n < 0 ? n : flow_account(f, n, msg.msg_flags, header);
}

/*
 * With --dgram-size N at the receiver, datagrams are known to be at most N
 * bytes: one batch_recv call (recvmmsg where there is one) fills slots of N
 * bytes, and the payloads are packed together behind the tail. A larger
 * datagram is cut, and counted as truncated. Returns the bytes produced
 * (the EOF marker sets src_eof), -1 with errno, or -2 for nothing usable.
 */
static ssize_t flow_dgram_recv_batch(struct flow *f)
{
	unsigned char headers[BATCH_MAX][SEQ_HEADER];
	struct sockaddr_storage from[BATCH_MAX];
	struct iovec iov[BATCH_MAX][2];
	struct msghdr msgs[BATCH_MAX];
	size_t lens[BATCH_MAX], slot = f->recv_slot, produced = 0;
	size_t slots = iobuf_room(&f->buf) / slot;
	unsigned n = slots > BATCH_MAX ? BATCH_MAX : (unsigned)slots;
	char *base = iobuf_tail(&f->buf);
	int got;

	memset(msgs, 0, sizeof msgs[0] * n);
	for (unsigned i = 0; i < n; i++) {
		iov[i][0] = (struct iovec){headers[i], SEQ_HEADER};
		iov[i][1] = (struct iovec){base + i * slot, slot};
		msgs[i].msg_iov = iov[i] + !f->seq;
		msgs[i].msg_iovlen = (size_t)(1 + f->seq);
		if (f->only_peer) {
			msgs[i].msg_name = &from[i];
			msgs[i].msg_namelen = sizeof from[i];
		}
	}
	got = batch_recv(flow_src(f), msgs, n, lens);
	if (got < 0)
		return -1;
	for (int i = 0; i < got && !f->src_eof; i++) {
		ssize_t len;

		if (f->only_peer && !flow_from_peer(f, &from[i], msgs[i].msg_namelen))
			continue;
		if (lens[i] > 0) {
			int rc = flow_feature_datagram(f, headers[i],
			                               (unsigned char *)base + (size_t)i * slot,
			                               (ssize_t)lens[i]);
			if (rc < 0)
				return -1; /* what came before it is not written: the session fails
				            */
			if (rc > 0)
				continue;
		}
		len = flow_account(f, (ssize_t)lens[i], msgs[i].msg_flags, headers[i]);
		if (len > 0) {
			if (produced != (size_t)i * slot) /* full slots are already in place */
				memmove(base + produced, base + (size_t)i * slot, (size_t)len);
			produced += (size_t)len;
		} else if (len == 0) {
			f->src_eof = !f->ignore_empty;
		}
	}
	iobuf_produced(&f->buf, produced);
	return produced > 0 || f->src_eof ? (ssize_t)produced : -2;
}

/* --seq: one datagram goes out behind its number. */
static ssize_t flow_dgram_send(struct flow *f, size_t want)
{
	unsigned char header[SEQ_HEADER];
	struct iovec iov[2] = {{header, SEQ_HEADER}, {iobuf_head(&f->buf), want}};
	struct msghdr msg;
	ssize_t n;

	seq_encode(header, f->next_seq);
	memset(&msg, 0, sizeof msg);
	msg.msg_iov = iov;
	msg.msg_iovlen = 2;
	n = sendmsg(flow_dst(f), &msg, 0);
	if (n < 0)
		return n;
	f->next_seq++;
	return n - SEQ_HEADER;
}

/*
 * With --dgram-size and several whole datagrams waiting, one batch_send call
 * takes up to BATCH_MAX of them (sendmmsg where the platform has it).
 * Returns the payload bytes sent and the number of datagrams in *count.
 */
static ssize_t flow_dgram_send_batch(struct flow *f, unsigned *count)
{
	unsigned char headers[BATCH_MAX][SEQ_HEADER];
	struct iovec iov[BATCH_MAX][2];
	struct msghdr msgs[BATCH_MAX];
	size_t size = f->write_size, whole = iobuf_len(&f->buf) / size;
	unsigned n = whole > BATCH_MAX ? BATCH_MAX : (unsigned)whole;
	char *p = iobuf_head(&f->buf);
	int sent;

	memset(msgs, 0, sizeof msgs[0] * n);
	for (unsigned i = 0; i < n; i++) {
		seq_encode(headers[i], f->next_seq + i);
		iov[i][0] = (struct iovec){headers[i], SEQ_HEADER};
		iov[i][1] = (struct iovec){p + i * size, size};
		msgs[i].msg_iov = iov[i] + !f->seq;
		msgs[i].msg_iovlen = (size_t)(1 + f->seq);
	}
	sent = batch_send(flow_dst(f), msgs, n);
	if (sent < 0)
		return -1;
	f->next_seq += (uint64_t)sent;
	*count = (unsigned)sent;
	return (ssize_t)((size_t)sent * size);
}

/*
 * The datagram read step: with --dgram-size at a receiver and room for two,
 * a batch (flow_dgram_recv_batch: it counts what it produced, so -2); else
 * one datagram, read(2)'s way.
 */
ssize_t flow_dgram_read(struct flow *f, size_t want)
{
	ssize_t n;

	if (f->recv_slot == 0 || iobuf_room(&f->buf) < 2 * f->recv_slot)
		return flow_dgram_recv(f, want);
	n = flow_dgram_recv_batch(f);
	if (n > 0)
		flow_count_read(f, (size_t)n);
	return n >= 0 ? -2 : n; /* a batch produced its data and its EOF itself */
}

/*
 * The datagram write step: with --dgram-size and several whole datagrams
 * waiting, a batch (a limited flow makes one write at a time); with --seq,
 * one behind its number; else one write(2), one datagram.
 */
int flow_dgram_write(struct flow *f, size_t want)
{
	unsigned count = 1;
	ssize_t n;

	if (f->exact && !f->limited && iobuf_len(&f->buf) >= 2 * f->write_size)
		n = flow_dgram_send_batch(f, &count);
	else if (f->seq)
		n = flow_dgram_send(f, want);
	else
		n = write(flow_dst(f), iobuf_head(&f->buf), want);
	return flow_wrote_result(f, n, want, count);
}

/*
 * The EOF datagram: zero-length, or with --seq just the header, whose number
 * tells the receiver how many datagrams there were, so losses at the very
 * end are counted too.
 */
ssize_t flow_dgram_send_eof(struct flow *f)
{
	unsigned char header[SEQ_HEADER];

	if (!f->seq)
		return send(flow_dst(f), "", 0, 0);
	seq_encode(header, f->next_seq);
	return send(flow_dst(f), header, SEQ_HEADER, 0);
}

/*
 * The datagrams a connectionless IP listener's flow may take come from the
 * peer it connected to (flow_from_peer). A Unix sender may have no address
 * to tell it by, so Unix datagrams are not checked.
 */
static void flow_lock_peer(struct flow *f)
{
	socklen_t len = sizeof f->peer;

	f->only_peer = getpeername(flow_src(f), (struct sockaddr *)&f->peer, &len) == 0 &&
	               (f->peer.ss_family == AF_INET || f->peer.ss_family == AF_INET6);
}

/*
 * The datagram side of flow_init: whole datagrams in, or datagrams (cut to
 * --dgram-size) out; the sizes are flow_sizes's.
 */
void flow_dgram_init(struct flow *f, const struct config *cfg, struct flow_stats *stats)
{
	const struct transport *t = cfg->transport;

	f->seq = cfg->seq;
	if (f->kind == FLOW_SEND) {
		f->dgram_dst = 1;
		f->exact = cfg->dgram_size != 0;
		f->eof_datagram = t->connectionless && cfg->dgram_eof;
		return;
	}
	f->dgram_src = 1;
	/* a feature that ends the input itself (--verify's END) makes an empty datagram no EOF */
	f->ignore_empty = t->connectionless && (!cfg->dgram_eof || f->ops->ends_input);
	f->soft_refusal = t->connectionless;
	if (t->connectionless && cfg->listen)
		flow_lock_peer(f);
	f->recv_slot = cfg->dgram_size;
	if (f->recv_slot != 0 && f->recv_slot < f->ops->datagram_min)
		f->recv_slot = f->ops->datagram_min; /* a feature's own datagram fits whole */
	seqtrack_init(&stats->seq);
}
