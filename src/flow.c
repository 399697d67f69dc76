/* flow.c: one direction of the relay: read from src, buffer, write to dst, pass EOF on. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "fastcat.h"

/*
 * Syscalls one flow may make before the loop looks at the other flow and at
 * signals. Large enough that a one-way transfer polls about once per 32
 * chunks, small enough that the other direction is never starved.
 */
#define PUMP_BUDGET 64

static void flow_failed(struct flow *f, int is_write, int err)
{
	f->err = err;
	f->err_on_write = is_write;
}

#define VERIFY_ROOM (FRAME_HEADER + 2 * FRAME_TRAILER)

/* --verify: this flow carries frames (sending) or takes them apart (receiving). */
static int framed(const struct flow *f)
{
	return f->verify != NULL && f->verify->on && !f->verify->datagram;
}

/* --verify over datagrams: plain --seq datagrams, with control datagrams around them. */
static int dgram_verified(const struct flow *f)
{
	return f->verify != NULL && f->verify->on && f->verify->datagram;
}

/* A --verify protocol failure: the relay reports why with exit status 6. */
static int flow_protocol_failed(struct flow *f, int is_write, const char *why)
{
	snprintf(f->verify->why, sizeof f->verify->why, "--verify: %s", why);
	flow_failed(f, is_write, EPROTO);
	return -1;
}

/* --seq: each datagram starts with its sequence number, 8 bytes big-endian. */
#define SEQ_HEADER SEQ_HEADER_BYTES

static void seq_encode(unsigned char *h, uint64_t seq)
{
	for (int i = SEQ_HEADER - 1; i >= 0; i--, seq >>= 8)
		h[i] = (unsigned char)seq;
}

static uint64_t seq_decode(const unsigned char *h)
{
	uint64_t seq = 0;

	for (int i = 0; i < SEQ_HEADER; i++)
		seq = seq << 8 | h[i];
	return seq;
}

/*
 * Count one datagram that arrived as n bytes (header included with --seq).
 * Returns its payload bytes, 0 for the EOF marker, or -2 for a runt.
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
	seqtrack_add(&f->stats->seq, seq_decode(header));
	if (n == SEQ_HEADER) {
		f->stats->datagrams--; /* the numbered EOF marker carries no data */
		f->stats->seq.next--;  /* ... and takes no number of its own */
	}
	return n - SEQ_HEADER;
}

/*
 * --verify, sending: read stdin behind room for a DATA header, then write the
 * header in front, so the frame goes out with the data in one write. The
 * digest of what was read is the one our END frame will carry.
 */
static ssize_t flow_read_frame(struct flow *f, size_t want)
{
	unsigned char *tail = (unsigned char *)iobuf_tail(&f->buf);
	struct frame data = {.type = FRAME_DATA};
	ssize_t n = read(f->src, tail + FRAME_HEADER, want);

	if (n > 0) {
		data.len = (uint32_t)n;
		digest_update(&f->stats->digest, tail + FRAME_HEADER, (size_t)n);
		iobuf_produced(&f->buf, verify_encode(tail, &data));
	}
	return n;
}

/*
 * The first bytes are a proper prefix of the hello (it came in pieces, or
 * the data happens to start that way): wait for the rest, at most 200 ms,
 * with a blocking peek. Polling instead would spin, as the peeked bytes keep
 * the socket readable. Returns what the peek then holds.
 */
static ssize_t flow_sniff_rest(int fd, unsigned char *peek)
{
	struct timeval wait = {.tv_sec = 0, .tv_usec = 200000}, none = {0, 0};
	ssize_t n;

	sock_set_nonblock(fd, 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
	n = recv(fd, peek, VERIFY_HELLO_BYTES, MSG_PEEK | MSG_WAITALL);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
	sock_set_nonblock(fd, 1);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		n = 0; /* the rest never came: it is data */
	return n;
}

/*
 * No --verify here: a peer that opens with the verify hello would have its
 * frames written to stdout as data, so refuse it. Only the first bytes are
 * looked at (peeked, so they stay for the read), once. 1 to go on reading.
 */
static int flow_sniff(struct flow *f)
{
	unsigned char peek[VERIFY_HELLO_BYTES];
	ssize_t n = recv(f->src, peek, sizeof peek, MSG_PEEK);

	if (n > 0 && n < VERIFY_HELLO_BYTES && verify_hello(peek, (size_t)n) == 0)
		n = flow_sniff_rest(f->src, peek);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
		f->src_ready = 0;
		return 0;
	}
	if (n < 0 && errno == EINTR)
		return 0;
	if (n < 0) {
		flow_failed(f, 0, errno); /* reported now: the peek consumed the socket's error */
		return -1;
	}
	f->sniff_hello = 0;
	if (n == VERIFY_HELLO_BYTES && verify_hello(peek, (size_t)n) == 1)
		return flow_protocol_failed(f, 0,
		                            "the peer sends --verify frames; give --verify at "
		                            "this end too");
	return 1;
}

/*
 * A datagram that may be a --verify control datagram: its first CTL_HEADER
 * bytes at head, the rest (len bytes) at body. With --verify over datagrams
 * it goes to dgverify.c; the peer's data may come only after its hello. Without
 * --verify, a peer's hello is refused, and told so. 1: consumed (not data);
 * 0: data; -1: failed (errno EPROTO, verify->why).
 */
static int flow_control(struct flow *f, const unsigned char *head, const unsigned char *body,
                        size_t len)
{
	struct ctl c;
	int rc = verify_ctl_decode(head, body, len, &c);

	errno = EPROTO;
	if (f->verify == NULL)
		return 0;
	if (!dgram_verified(f)) {
		if (rc != 1 || c.type != CTL_HELLO)
			return 0;
		dgverify_send(f->src, &(struct ctl){.type = CTL_REFUSE});
		flow_protocol_failed(f, 0,
		                     "the peer sends --verify datagrams; give --verify at "
		                     "this end too");
		return -1;
	}
	if (rc < 0) {
		flow_protocol_failed(f, 0, "the peer sent a malformed control datagram");
		return -1;
	}
	if (rc == 1) {
		f->moved = 1; /* the peer is alive: not idle for -w */
		if (dgverify_receive(f->verify, &c, clock_now()) == 0)
			return 1;
		flow_failed(f, 0, EPROTO);
		return -1;
	}
	if (f->verify->hello_seen)
		return 0;
	/* a peer without --verify: our hello tells a fastcat one why it fails too */
	dgverify_send(f->src, &(struct ctl){.type = CTL_HELLO, .flags = CTL_ANSWER});
	flow_protocol_failed(f, 0,
	                     "the peer's data came without the verify hello (is --verify "
	                     "given at both ends?)");
	return -1;
}

/* flow_control for a datagram of n bytes, header apart with --seq. */
static int flow_control_datagram(struct flow *f, const unsigned char *header,
                                 const unsigned char *payload, ssize_t n)
{
	if (f->seq)
		return n < SEQ_HEADER ? 0
		                      : flow_control(f, header, payload, (size_t)n - SEQ_HEADER);
	return n < CTL_HEADER
	           ? 0
	           : flow_control(f, payload, payload + CTL_HEADER, (size_t)n - CTL_HEADER);
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
static ssize_t flow_recv(struct flow *f, size_t want)
{
	unsigned char header[SEQ_HEADER];
	struct iovec iov[2] = {{header, SEQ_HEADER}, {iobuf_tail(&f->buf), want}};
	struct sockaddr_storage from;
	struct msghdr msg;
	ssize_t n;

	if (framed(f) && f->kind == FLOW_SEND)
		return flow_read_frame(f, want);
	if (!f->dgram_src)
		return read(f->src, iov[1].iov_base, want);
	memset(&msg, 0, sizeof msg);
	msg.msg_iov = iov + !f->seq;
	msg.msg_iovlen = (size_t)(1 + f->seq);
	if (f->only_peer) {
		msg.msg_name = &from;
		msg.msg_namelen = sizeof from;
	}
	n = recvmsg(f->src, &msg, 0);
	if (n >= 0 && f->only_peer && !flow_from_peer(f, &from, msg.msg_namelen))
		return -2;
	if (n > 0) {
		int rc = flow_control_datagram(f, header, iov[1].iov_base, n);
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
static ssize_t flow_recv_batch(struct flow *f)
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
	got = batch_recv(f->src, msgs, n, lens);
	if (got < 0)
		return -1;
	for (int i = 0; i < got && !f->src_eof; i++) {
		ssize_t len;

		if (f->only_peer && !flow_from_peer(f, &from[i], msgs[i].msg_namelen))
			continue;
		if (lens[i] > 0) {
			int rc = flow_control_datagram(f, headers[i],
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

/* Write one datagram or chunk; with --seq, a datagram goes out behind its number. */
static ssize_t flow_send(struct flow *f, size_t want)
{
	unsigned char header[SEQ_HEADER];
	struct iovec iov[2] = {{header, SEQ_HEADER}, {iobuf_head(&f->buf), want}};
	struct msghdr msg;
	ssize_t n;

	if (!f->seq || !f->dgram_dst)
		return write(f->dst, iov[1].iov_base, want);
	seq_encode(header, f->next_seq);
	memset(&msg, 0, sizeof msg);
	msg.msg_iov = iov;
	msg.msg_iovlen = 2;
	n = sendmsg(f->dst, &msg, 0);
	if (n < 0)
		return n;
	f->next_seq++;
	return n - SEQ_HEADER;
}

/*
 * --verify: the bytes the next write may take. Sending: nothing but our
 * hello until the peer's hello came (a peer without --verify must not get
 * our frames as its data). Receiving: the hello or a frame header once
 * whole (or once it cannot be one), else the payload of the DATA frame.
 */
static size_t flow_framed_len(const struct flow *f)
{
	const unsigned char *p = (const unsigned char *)f->buf.data + f->buf.head;
	size_t len = iobuf_len(&f->buf);
	struct frame fr;

	if (f->kind == FLOW_SEND)
		return f->verify->hello_seen || len < f->gate ? len : f->gate;
	if (len == 0)
		return 0;
	if (!f->verify->hello_seen)
		return verify_hello(p, len) != 0 ? len : 0;
	if (f->frame_left > 0)
		return len < f->frame_left ? len : (size_t)f->frame_left;
	return verify_decode(p, len, &fr) != 0 ? len : 0;
}

/* Bytes waiting for the destination, whatever holds them. */
static size_t flow_len(const struct flow *f)
{
	switch (f->method) {
	case METHOD_SPLICE: return f->piped;
	case METHOD_SENDFILE: return f->src_eof ? 0 : f->write_size; /* the file is the buffer */
	default: return framed(f) ? flow_framed_len(f) : iobuf_len(&f->buf);
	}
}

/* Bytes written or parked, whatever holds them: 0 when nothing is left to pass on. */
static int flow_drained(const struct flow *f)
{
	const struct verify *v = f->verify;

	if (dgram_verified(f) && f->kind == FLOW_SEND)
		return v->hello_seen; /* our END goes after the handshake */
	if (f->method != METHOD_RW || !framed(f) || f->kind == FLOW_RECEIVE)
		return 1;
	/* our VERDICT answers the peer's END; a peer that closed without one gets none */
	return iobuf_len(&f->buf) == 0 && f->end_queued &&
	       (f->verdict_queued || (v->peer_done && !v->end_seen));
}

/* Bytes the next read may bring in; sendfile reads and writes in one call, so never. */
static size_t flow_room(const struct flow *f)
{
	switch (f->method) {
	case METHOD_SPLICE: return f->pipe_full ? 0 : f->pipe_cap - f->piped;
	case METHOD_SENDFILE: return 0;
	default: return iobuf_room(&f->buf);
	}
}

/* Bytes read from the source that did not reach the destination (for error messages). */
size_t flow_unsent(const struct flow *f)
{
	return f->method == METHOD_SENDFILE ? 0 : flow_len(f);
}

/* splice or sendfile said "not for these fds": carry on with read/write. */
static int flow_fall_back(struct flow *f, int is_write)
{
	if (copy_fallback(f) == 0)
		return 0;
	flow_failed(f, is_write, errno);
	return -1;
}

/* The source said EAGAIN: poll() decides when to read again (or the low-water mark's patience). */
static void flow_source_dry(struct flow *f)
{
	f->src_ready = 0;
	if (f->lowat.on)
		lowat_wait(&f->lowat, clock_now());
}

/* A zero-copy read: source -> the flow's pipe. */
static int flow_splice_in(struct flow *f, size_t want)
{
	ssize_t n = copy_in(f, want);

	f->stats->reads++;
	if (n > 0) {
		f->piped += (size_t)n;
		if ((size_t)n > f->stats->max_read)
			f->stats->max_read = (size_t)n;
		f->moved = 1;
		lowat_read(&f->lowat, (size_t)n);
	} else if (n == 0) {
		f->src_eof = 1;
	} else if (errno == EAGAIN && f->piped > 0) {
		f->pipe_full = 1; /* or the source is dry: a write comes next either way */
	} else if (errno == EAGAIN) {
		flow_source_dry(f);
	} else if (copy_unsupported(errno)) {
		return flow_fall_back(f, 0);
	} else if (errno != EINTR) {
		flow_failed(f, 0, errno);
		return -1;
	}
	return 0;
}

static int flow_read(struct flow *f)
{
	size_t room = flow_room(f);
	int batch = f->recv_slot != 0 && room >= 2 * f->recv_slot;
	ssize_t n;
	size_t want = room < f->read_size ? room : f->read_size;

	if (f->sniff_hello) {
		int rc = flow_sniff(f);
		if (rc <= 0)
			return rc;
	}
	if (f->method == METHOD_SPLICE)
		return flow_splice_in(f, want);
	if (framed(f) && f->kind == FLOW_SEND && want + FRAME_HEADER > room)
		want = room - FRAME_HEADER; /* read_min keeps room above FRAME_HEADER */
	n = batch ? flow_recv_batch(f) : flow_recv(f, want);
	f->stats->reads++;
	if (n == -2 || (batch && n >= 0)) {
		if (n > 0 && (size_t)n > f->stats->max_read)
			f->stats->max_read = (size_t)n;
		f->moved |= n > 0;
		return 0; /* runts dropped; a batch produced its data and its EOF itself */
	}
	if (n > 0) {
		iobuf_produced(&f->buf, (size_t)n);
		if ((size_t)n > f->stats->max_read)
			f->stats->max_read = (size_t)n;
		f->moved = 1;
		lowat_read(&f->lowat, (size_t)n);
	} else if (n == 0) {
		/* A zero-length datagram is the EOF marker, unless --no-dgram-eof. */
		f->src_eof = !f->ignore_empty;
	} else if (errno == EAGAIN || errno == EWOULDBLOCK) {
		flow_source_dry(f);
	} else if (errno == ECONNREFUSED && f->soft_refusal) {
		if (f->verify != NULL)
			f->verify->unreachable = 1;
		/*
		 * An ICMP "port unreachable" for something we sent; Linux reports it
		 * before datagrams already queued, which must still be read. A lost
		 * send shows up on the sending side.
		 */
		log_verbose("the peer's port was unreachable for a datagram we sent");
	} else if (errno != EINTR) {
		flow_failed(f, 0, errno);
		return -1;
	}
	return 0;
}

/*
 * The bytes the next write may move, of len waiting: up to write_size (a
 * whole datagram when cutting exact sizes), and with --rate-limit what the
 * bucket holds; 0 when it must refill first.
 */
static size_t flow_write_len(struct flow *f, size_t len)
{
	size_t want = len < f->write_size ? len : f->write_size;

	return f->limited ? ratelimit_allow(&f->limit, clock_now(), want) : want;
}

/*
 * With --dgram-size and several whole datagrams waiting, one batch_send call
 * takes up to BATCH_MAX of them (sendmmsg where the platform has it).
 * Returns the payload bytes sent and the number of datagrams in *count.
 */
static ssize_t flow_send_batch(struct flow *f, unsigned *count)
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
	sent = batch_send(f->dst, msgs, n);
	if (sent < 0)
		return -1;
	f->next_seq += (uint64_t)sent;
	*count = (unsigned)sent;
	return (ssize_t)((size_t)sent * size);
}

/* A zero-copy write: the pipe -> destination, or sendfile; 0 from sendfile is the file's end. */
static int flow_splice_out(struct flow *f, size_t want)
{
	ssize_t n = copy_out(f, want);

	f->stats->writes++;
	if (n > 0) {
		if (f->method == METHOD_SPLICE) {
			f->piped -= (size_t)n;
			f->pipe_full = 0;
		}
		f->stats->bytes += (uint64_t)n;
		if ((size_t)n > f->stats->max_write)
			f->stats->max_write = (size_t)n;
		f->moved = 1;
	} else if (n == 0) {
		f->src_eof = 1; /* only sendfile returns 0: the pipe is never empty here */
	} else if (errno == EAGAIN) {
		f->dst_ready = 0;
	} else if (copy_unsupported(errno)) {
		return flow_fall_back(f, 1);
	} else if (errno != EINTR) {
		f->failed_write_len = want;
		flow_failed(f, 1, errno);
		return -1;
	}
	return 0;
}

/*
 * --verify, sending: of n bytes just written from the buffer's head, how
 * many were payload. The buffer holds whole frames (the hello first), so
 * walking their headers from the head is exact.
 */
static size_t flow_payload_written(struct flow *f, size_t n)
{
	const unsigned char *p = (const unsigned char *)iobuf_head(&f->buf);
	size_t payload = 0, avail = iobuf_len(&f->buf), take;
	struct frame fr;

	while (n > 0) {
		if (f->header_left == 0 && f->frame_left == 0) {
			/* our own frame, whole in the buffer: it decodes */
			if (verify_decode(p, avail, &fr) == FRAME_HEADER) {
				f->header_left = FRAME_HEADER;
				f->frame_left = fr.len;
			} else {
				f->header_left = FRAME_TRAILER;
			}
		}
		take = n < f->header_left ? n : f->header_left;
		f->header_left -= take;
		p += take;
		n -= take;
		avail -= take;
		take = n < f->frame_left ? n : (size_t)f->frame_left;
		f->frame_left -= take;
		payload += take;
		p += take;
		n -= take;
		avail -= take;
	}
	return payload;
}

/*
 * --verify, receiving: one step through the peer's frames: its hello, a
 * frame header (an END or VERDICT is noted for the verdict), or DATA
 * payload written to stdout (or dropped with --send-only) and digested.
 */
static int flow_write_deframed(struct flow *f, size_t want)
{
	struct verify *v = f->verify;
	unsigned char *p = (unsigned char *)iobuf_head(&f->buf);
	size_t len = flow_framed_len(f);
	struct frame fr;
	ssize_t n;
	int rc;

	if (!v->hello_seen) {
		if (verify_hello(p, len) < 0)
			return flow_protocol_failed(f, 0,
			                            "the peer did not open with the verify hello "
			                            "(is --verify given at both ends?)");
		iobuf_consumed(&f->buf, VERIFY_HELLO_BYTES);
		v->hello_seen = 1;
		return 0;
	}
	if (f->frame_left == 0) {
		rc = verify_decode(p, len, &fr);
		if (rc < 0 || (fr.type == FRAME_DATA && v->end_seen) ||
		    (fr.type == FRAME_END && v->end_seen) ||
		    (fr.type == FRAME_VERDICT && v->verdict_seen))
			return flow_protocol_failed(f, 0, "the peer sent a malformed frame");
		iobuf_consumed(&f->buf, (size_t)rc);
		if (fr.type == FRAME_DATA) {
			f->frame_left = fr.len;
		} else if (fr.type == FRAME_END) {
			v->end_seen = 1;
			v->peer_bytes = fr.bytes;
			v->peer_digest = fr.digest;
			v->delivered_bytes = f->stats->bytes;
			v->delivered_digest = digest_final(&f->stats->digest);
		} else {
			v->verdict_seen = 1;
			v->confirmed_bytes = fr.bytes;
			v->confirmed_digest = fr.digest;
		}
		return 0;
	}
	len = len < want ? len : want;
	n = f->discard ? (ssize_t)len : write(f->dst, p, len);
	f->stats->writes += !f->discard;
	if (n > 0) {
		digest_update(&f->stats->digest, p, (size_t)n);
		iobuf_consumed(&f->buf, (size_t)n);
		f->frame_left -= (uint64_t)n;
		f->stats->bytes += (uint64_t)n;
		if ((size_t)n > f->stats->max_write)
			f->stats->max_write = (size_t)n;
		f->moved = 1;
	} else if (n < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
		f->failed_write_len = len;
		flow_failed(f, 1, errno);
		return -1;
	} else if (n < 0 && errno != EINTR) {
		f->dst_ready = 0;
	}
	return 0;
}

/* Write at most want bytes (flow_write_len) to the destination, or drop them. */
static int flow_write(struct flow *f, size_t want)
{
	unsigned count = 1;
	ssize_t n;

	if (f->method != METHOD_RW)
		return flow_splice_out(f, want);
	if (framed(f) && f->kind == FLOW_RECEIVE)
		return flow_write_deframed(f, want);
	if (f->discard) {
		size_t drop = f->limited ? want : iobuf_len(&f->buf);

		if (f->checksum)
			digest_update(&f->stats->digest, iobuf_head(&f->buf), drop);
		f->stats->bytes += drop;
		iobuf_consumed(&f->buf, drop);
		return 0;
	}
	/* a batch is many writes in one call: a limited flow makes one at a time */
	if (f->exact && !f->limited && iobuf_len(&f->buf) >= 2 * f->write_size)
		n = flow_send_batch(f, &count);
	else
		n = flow_send(f, want);
	f->stats->writes++;
	if (n > 0) {
		if (f->checksum)
			digest_update(&f->stats->digest, iobuf_head(&f->buf), (size_t)n);
		if (framed(f)) {
			f->gate -= (size_t)n < f->gate ? (size_t)n : f->gate;
			f->stats->bytes += flow_payload_written(f, (size_t)n);
		} else {
			f->stats->bytes += (uint64_t)n;
		}
		iobuf_consumed(&f->buf, (size_t)n);
		f->stats->datagrams += f->dgram_dst ? count : 0;
		/* for datagrams, the largest one; a batch holds equal ones */
		if ((size_t)n / count > f->stats->max_write)
			f->stats->max_write = (size_t)n / count;
		f->moved = 1;
	} else if (n < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
		f->failed_write_len = want;
		flow_failed(f, 1, errno);
		return -1;
	} else if (n < 0 && errno != EINTR) {
		f->dst_ready = 0;
	}
	return 0;
}

/*
 * The EOF datagram: zero-length, or with --seq just the header, whose number
 * tells the receiver how many datagrams there were, so losses at the very
 * end are counted too.
 */
static ssize_t flow_send_eof(struct flow *f)
{
	unsigned char header[SEQ_HEADER];

	if (!f->seq)
		return send(f->dst, "", 0, 0);
	seq_encode(header, f->next_seq);
	return send(f->dst, header, SEQ_HEADER, 0);
}

/*
 * Pass a flow's EOF on. To the socket: a zero-length datagram for
 * connectionless transports, else a half-close, so the peer sees our EOF
 * while we keep reading its data. To stdout: close it so whoever reads it
 * sees the end (replaced by /dev/null, so fd 1 can never become a socket).
 * Returns 1 when done, 0 when the socket cannot take the EOF datagram yet.
 */
static int flow_finish(struct flow *f)
{
	struct verify *v = f->verify;

	if (dgram_verified(f) && f->kind == FLOW_SEND) {
		v->end_due = 1; /* our END says it (dgverify.c), until the peer's VERDICT */
		v->sent_datagrams = f->next_seq;
	} else if (f->eof_datagram) {
		if (!f->dst_ready)
			return 0;
		if (flow_send_eof(f) < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
				f->dst_ready = errno == EINTR;
				return 0;
			}
			flow_failed(f, 1, errno);
			return -1;
		}
	} else if (f->kind == FLOW_SEND) {
		if (shutdown(f->dst, SHUT_WR) != 0 && errno != ENOTCONN) {
			flow_failed(f, 1, errno);
			return -1;
		}
	} else if (!f->keep_dst && !f->discard) {
		int devnull = open("/dev/null", O_WRONLY);
		if (devnull >= 0) {
			dup2(devnull, f->dst);
			close(devnull);
		}
	}
	if (f->kind == FLOW_RECEIVE && v != NULL)
		v->peer_done = 1;
	if (f->kind == FLOW_RECEIVE && dgram_verified(f)) {
		/* every datagram before the peer's END is written: our VERDICT can go */
		v->delivered_bytes = f->stats->bytes;
		v->delivered_digest = digest_final(&f->stats->digest);
		v->verdict_ready = 1;
	}
	f->running = 0;
	f->stats->finished = clock_now();
	return 1;
}

/*
 * --verify, sending: once stdin is done, our END (what we sent); once the
 * peer's END came, our VERDICT (what we wrote of its data). 1 if one was
 * put in the buffer, 0 if none is due or there is no room yet; -1 when
 * the peer went away without its hello, so our data can never be sent.
 */
static int flow_queue_trailer(struct flow *f)
{
	const struct verify *v = f->verify;
	struct frame fr = {.type = FRAME_END};

	if (v->peer_done && !v->hello_seen)
		return flow_protocol_failed(f, 1,
		                            "the peer closed without the verify hello (is --verify "
		                            "given at both ends?)");
	if (iobuf_room(&f->buf) < FRAME_TRAILER)
		return 0;
	if (f->src_eof && !f->end_queued) {
		fr.bytes = f->stats->digest.total;
		fr.digest = digest_final(&f->stats->digest);
		f->end_queued = 1;
	} else if (v->end_seen && !f->verdict_queued) {
		fr = (struct frame){FRAME_VERDICT, 0, v->delivered_bytes, v->delivered_digest};
		f->verdict_queued = 1;
	} else {
		return 0;
	}
	iobuf_produced(&f->buf, verify_encode((unsigned char *)iobuf_tail(&f->buf), &fr));
	return 1;
}

/*
 * --rate-limit: a write, and the tokens it took. The bucket counts the data
 * delivered (stats->bytes), not --seq or --verify headers.
 */
static int flow_write_limited(struct flow *f, size_t want)
{
	uint64_t before = f->stats->bytes;

	if (flow_write(f, want) < 0)
		return -1;
	ratelimit_spend(&f->limit, (size_t)(f->stats->bytes - before));
	return 0;
}

/* --verify over datagrams: no data goes before the peer's hello came. */
static int flow_may_send(const struct flow *f)
{
	return !dgram_verified(f) || f->kind == FLOW_RECEIVE || f->verify->hello_seen;
}

/*
 * Move data until the flow would block, finishes, or used its budget.
 * A read is made only when read_min bytes of room are left at the tail (for
 * streams a whole read_size, so reads stay full-sized and nothing is moved);
 * a write when a write_size is ready or no more can be read for now. When
 * cutting exact datagrams, only whole datagrams go out until stdin's EOF.
 * With --rate-limit, a write the bucket cannot pay for yet blocks the flow
 * (the relay sleeps until flow_wait_ms), though reading goes on.
 */
enum pump_result flow_pump(struct flow *f)
{
	if (!f->src_ready && f->lowat.since > 0 && lowat_expired(&f->lowat, clock_now()))
		f->src_ready = 1; /* a mark held back a paused sender's last bytes: take them */
	for (int calls = 0; calls < PUMP_BUDGET; calls++) {
		size_t len;

		if (framed(f) && f->kind == FLOW_SEND) {
			int queued = flow_queue_trailer(f);
			if (queued < 0)
				return PUMP_FAILED;
		}
		/* the clock only once the END came: this runs for every datagram read */
		if (dgram_verified(f) && f->kind == FLOW_RECEIVE && !f->src_eof &&
		    f->verify->end_seen &&
		    dgverify_input_done(f->verify, &f->stats->seq, clock_now()))
			f->src_eof = 1; /* the peer's END, and its datagrams are in (or lost) */
		len = flow_len(f);
		int can_read = !f->src_eof && f->src_ready && flow_room(f) >= f->read_min;
		int whole = !f->exact || len >= f->write_size || f->src_eof;
		size_t want = 0;

		if (len > 0 && f->dst_ready && whole && (len >= f->write_size || !can_read) &&
		    flow_may_send(f))
			want = flow_write_len(f, len);
		if (want > 0) {
			if ((f->limited ? flow_write_limited(f, want) : flow_write(f, want)) < 0)
				return PUMP_FAILED;
		} else if (can_read) {
			if (flow_read(f) < 0)
				return PUMP_FAILED;
		} else if (f->exact && flow_room(f) < f->read_min && len < f->write_size) {
			iobuf_compact(&f->buf); /* a part datagram at the very end: rare */
		} else if (framed(f) && flow_room(f) < f->read_min && len == 0 &&
		           iobuf_len(&f->buf) > 0 && f->kind == FLOW_RECEIVE) {
			iobuf_compact(&f->buf); /* a frame header cut by the buffer's end */
		} else if (len == 0 && f->src_eof && flow_drained(f)) {
			switch (flow_finish(f)) {
			case -1: return PUMP_FAILED;
			case 0: return PUMP_BLOCKED;
			default: return PUMP_FINISHED;
			}
		} else {
			return PUMP_BLOCKED;
		}
	}
	return PUMP_BUDGET_USED;
}

/* Poll events follow from the flow's state: wait only for what would unblock it. */
int flow_poll_events(const struct flow *f, struct pollfd *pfd)
{
	int n = 0;

	if (!f->running)
		return 0;
	if (!f->src_eof && !f->src_ready && flow_room(f) >= f->read_min)
		pfd[n++] = (struct pollfd){.fd = f->src, .events = POLLIN};
	if ((flow_len(f) > 0 || f->src_eof) && !f->dst_ready)
		pfd[n++] = (struct pollfd){.fd = f->dst, .events = POLLOUT};
	return n;
}

/* Any event, error or hangup included, means the next syscall will tell us more. */
void flow_poll_result(struct flow *f, const struct pollfd *pfd, int n)
{
	for (int i = 0; i < n; i++) {
		if (pfd[i].revents == 0)
			continue;
		if (pfd[i].events & POLLIN)
			f->src_ready = 1;
		else
			f->dst_ready = 1;
	}
}

/*
 * Milliseconds until the flow needs a turn with no fd event, or -1: a
 * --rate-limit bucket pays for the waiting write, or a low-water mark runs
 * out of patience.
 */
long flow_wait_ms(const struct flow *f, double now)
{
	long rate, mark;

	if (!f->running)
		return -1;
	rate = f->limited ? ratelimit_wait_ms(&f->limit, now) : -1;
	mark = f->src_ready ? -1 : lowat_wait_ms(&f->lowat, now);
	if (rate < 0 || (mark >= 0 && mark < rate))
		return mark;
	return rate;
}

/*
 * Size the flow's buffer for its transport: a datagram source reads whole
 * datagrams; exact datagrams need room for a whole number of them.
 */
static size_t flow_capacity(const struct flow *f)
{
	size_t cap = f->read_size > f->write_size ? f->read_size : f->write_size;

	if (f->exact)
		cap = (cap + f->write_size - 1) / f->write_size * f->write_size;
	if (f->dgram_src)
		cap += f->read_size; /* room for more small datagrams before one write */
	return cap;
}

/*
 * The datagrams a connectionless IP listener's flow may take come from the
 * peer it connected to (flow_from_peer). A Unix sender may have no address
 * to tell it by, so Unix datagrams are not checked.
 */
static void flow_lock_peer(struct flow *f)
{
	socklen_t len = sizeof f->peer;

	f->only_peer = getpeername(f->src, (struct sockaddr *)&f->peer, &len) == 0 &&
	               (f->peer.ss_family == AF_INET || f->peer.ss_family == AF_INET6);
}

/*
 * --verify: the hello goes out at once, before the relay looks at what
 * the peer sent. A peer without --verify may have sent data or its EOF
 * already, and the receiving side, pumped first, would fail on it with
 * our hello still unsent: the peer would never learn why. What cannot go
 * now goes with the first write.
 */
static void flow_send_hello(struct flow *f)
{
	ssize_t n = send(f->dst, iobuf_head(&f->buf), f->gate, MSG_NOSIGNAL | MSG_DONTWAIT);

	if (n <= 0)
		return;
	iobuf_consumed(&f->buf, (size_t)n);
	f->gate -= (size_t)n;
	f->header_left -= (size_t)n;
}

/* Set a flow up from its role and the transport. 0, or -1 when memory runs out. */
int flow_init(struct flow *f, const struct flow_setup *setup, struct flow_stats *stats)
{
	const struct config *cfg = setup->cfg;
	const struct transport *t = cfg->transport;
	int to_socket = setup->kind == FLOW_SEND;

	memset(f, 0, sizeof *f);
	f->kind = setup->kind;
	f->src = setup->src;
	f->dst = setup->dst;
	f->enabled = f->running = setup->enabled;
	f->discard = setup->discard;
	f->keep_dst = setup->keep_dst;
	f->src_ready = f->dst_ready = 1;
	f->stats = stats;
	f->verify = setup->verify;
	f->checksum = cfg->checksum && !framed(f); /* framing digests the payload itself */
	digest_init(&stats->digest);
	f->read_size = cfg->read_size;
	f->write_size = cfg->write_size;
	if (t->datagram && to_socket) {
		f->dgram_dst = 1;
		f->exact = cfg->dgram_size != 0;
		f->write_size = f->exact ? cfg->dgram_size : cfg->read_size;
		f->eof_datagram = t->connectionless && cfg->dgram_eof;
		f->seq = cfg->seq;
	} else if (t->datagram) {
		f->dgram_src = 1;
		if (f->read_size < t->receive_buffer)
			f->read_size = t->receive_buffer;
		/* with --verify over datagrams, the END is the EOF */
		f->ignore_empty = t->connectionless && (!cfg->dgram_eof || dgram_verified(f));
		f->soft_refusal = t->connectionless;
		if (t->connectionless && cfg->listen)
			flow_lock_peer(f);
		f->seq = cfg->seq;
		f->recv_slot = cfg->dgram_size;
		if (dgram_verified(f) && f->recv_slot != 0 && f->recv_slot < CTL_MAX - CTL_HEADER)
			f->recv_slot = CTL_MAX - CTL_HEADER; /* a control datagram fits whole */
		seqtrack_init(&stats->seq);
	}
	f->read_min = f->exact ? 1 : f->read_size;
	/* the bucket holds one write; a datagram is never cut to fit it */
	f->limited = cfg->rate_limit != 0;
	if (f->limited)
		ratelimit_init(&f->limit, cfg->rate_limit, f->write_size, f->dgram_dst,
		               clock_now());
	if (framed(f) && to_socket)
		f->read_min += FRAME_HEADER;
	f->sniff_hello = !framed(f) && !to_socket && t->socktype == SOCK_STREAM;
	copy_choose(f, cfg);
	stats->copy = f->method;
	lowat_init(&f->lowat, to_socket ? -1 : f->src, cfg->rcvlowat, f->read_size);
	if (!f->enabled)
		return 0;
	/* Splice needs it only to fall back; untouched, it costs no memory. */
	/* --verify: room for a header in front of a full read, and for END and VERDICT */
	if (iobuf_init(&f->buf, flow_capacity(f) + (framed(f) ? VERIFY_ROOM : 0)) != 0)
		return -1;
	if (framed(f) && to_socket) {
		/* the hello goes first; the header walk of flow_payload_written starts on it */
		verify_hello_put((unsigned char *)iobuf_tail(&f->buf));
		iobuf_produced(&f->buf, VERIFY_HELLO_BYTES);
		f->gate = f->header_left = VERIFY_HELLO_BYTES;
		flow_send_hello(f);
	}
	/*
	 * Never more in the pipe than the buffer holds, so a fallback can take it
	 * all back (the pipe may be bigger: 64 KiB unless F_SETPIPE_SZ grew it).
	 */
	if (f->pipe_cap > f->buf.cap)
		f->pipe_cap = f->buf.cap;
	if (f->method == METHOD_SPLICE && f->read_min > f->pipe_cap)
		f->read_min = f->pipe_cap; /* the kernel gave a smaller pipe than a chunk */
	return 0;
}

void flow_free(struct flow *f)
{
	iobuf_free(&f->buf);
	copy_close(f);
}
