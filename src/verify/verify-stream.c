/*
 * flow-verify.c: --verify over streams: a sending flow frames stdin (hello,
 * DATA frames, END and VERDICT), a receiving flow takes the peer's frames
 * apart; without --verify, a receiving flow refuses a peer that sends them.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "base/compat.h"
#include "fastcat.h"
#include "relay/flow.h"
#include "resume/resume.h"
#include "stripe/stripe.h"
#include "verify/verify.h"
#include "net/net.h"

/* A --verify protocol failure: the relay reports why with exit status 6. */
int flow_verify_failed(struct flow *f, int is_write, const char *why)
{
	snprintf(f->verify->why, sizeof f->verify->why, "--verify: %s", why);
	flow_failed(f, is_write, EPROTO);
	return -1;
}

/*
 * --verify, sending: read stdin behind room for a DATA header, then write the
 * header in front, so the frame goes out with the data in one write. The
 * digest of what was read is the one our END frame will carry.
 */
ssize_t flow_verify_read(struct flow *f, size_t want)
{
	unsigned char *tail = (unsigned char *)iobuf_tail(&f->buf);
	struct frame data = {.type = FRAME_DATA};
	ssize_t n = read(flow_src(f), tail + FRAME_HEADER, want);

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

/* A peer that opened with another mode's hello: the wrong kind of peer (exit 3, as -P says too). */
static int wrong_peer(struct flow *f, const char *why)
{
	f->verify->why_status = EXIT_CONNECT;
	snprintf(f->verify->why, sizeof f->verify->why, "%s", why);
	flow_failed(f, 0, EPROTO);
	return -1;
}

/*
 * No --verify here: a peer that opens with the verify hello would have its
 * frames written to stdout as data, so refuse it. Only the first bytes are
 * looked at (peeked, so they stay for the read), once. 1 to go on reading.
 */
int flow_verify_sniff(struct flow *f)
{
	unsigned char peek[VERIFY_HELLO_BYTES];
	ssize_t n = recv(flow_src(f), peek, sizeof peek, MSG_PEEK);

	_Static_assert(STRIPE_HELLO_BYTES == VERIFY_HELLO_BYTES, "one peek serves the hellos");
	_Static_assert(RESUME_HELLO_BYTES == VERIFY_HELLO_BYTES, "one peek serves the hellos");
	if (n > 0 && n < VERIFY_HELLO_BYTES &&
	    (verify_hello(peek, (size_t)n) == 0 || stripe_hello_seen(peek, (size_t)n) == 0 ||
	     resume_hello_seen(peek, (size_t)n) == 0))
		n = flow_sniff_rest(flow_src(f), peek);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
		flow_set_src_ready(f, 0);
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
		return flow_verify_failed(f, 0,
		                          "the peer sends --verify frames; give --verify at "
		                          "this end too");
	if (n == STRIPE_HELLO_BYTES && stripe_hello_seen(peek, (size_t)n) == 1)
		return wrong_peer(f, "the peer is a fastcat -P receiver (one stream over several "
		                     "connections); give -P N at this end");
	if (n == RESUME_HELLO_BYTES && resume_hello_seen(peek, (size_t)n) == 1)
		return wrong_peer(f, "the peer is a fastcat --resume receiver (it goes on with a "
		                     "file it has part of); give --resume at this end");
	return 1;
}

/*
 * --verify: the bytes the next write may take. Sending: nothing but our
 * hello until the peer's hello came (a peer without --verify must not get
 * our frames as its data). Receiving: the hello or a frame header once
 * whole (or once it cannot be one), else the payload of the DATA frame.
 */
size_t flow_verify_len(const struct flow *f)
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

/*
 * --verify, sending: of n bytes just written from the buffer's head, how
 * many were payload. The buffer holds whole frames (the hello first), so
 * walking their headers from the head is exact.
 */
size_t flow_verify_payload(struct flow *f, size_t n)
{
	const unsigned char *p = (const unsigned char *)iobuf_head(&f->buf);
	size_t payload = 0, avail = iobuf_len(&f->buf);
	struct frame fr;

	while (n > 0) {
		size_t take;

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

/* --verify, receiving: a frame header; an END or VERDICT is noted for the verdict. */
static int flow_verify_header(struct flow *f, const unsigned char *p, size_t len)
{
	struct verify *v = f->verify;
	struct frame fr;
	int rc = verify_decode(p, len, &fr);

	if (rc < 0 || (fr.type == FRAME_DATA && v->end_seen) ||
	    (fr.type == FRAME_END && v->end_seen) || (fr.type == FRAME_VERDICT && v->verdict_seen))
		return flow_verify_failed(f, 0, "the peer sent a malformed frame");
	iobuf_consumed(&f->buf, (size_t)rc);
	if (fr.type == FRAME_DATA) {
		f->frame_left = fr.len;
	} else if (fr.type == FRAME_END) {
		v->end_seen = 1;
		v->peer_bytes = fr.bytes;
		v->peer_digest = fr.digest;
		v->delivered_bytes =
		    f->stats->bytes + v->prefix_received; /* --resume: the file's */
		v->delivered_digest = digest_final(&f->stats->digest);
	} else {
		v->verdict_seen = 1;
		v->confirmed_bytes = fr.bytes;
		v->confirmed_digest = fr.digest;
	}
	return 0;
}

/*
 * --verify, receiving: one step through the peer's frames: its hello, a
 * frame header, or DATA payload written to stdout (or dropped with
 * --send-only) and digested.
 */
int flow_verify_write(struct flow *f, size_t want)
{
	unsigned char *p = (unsigned char *)iobuf_head(&f->buf);
	size_t len = flow_verify_len(f);
	ssize_t n;

	if (!f->verify->hello_seen) {
		if (verify_hello(p, len) < 0)
			return flow_verify_failed(f, 0,
			                          "the peer did not open with the verify hello "
			                          "(is --verify given at both ends?)");
		iobuf_consumed(&f->buf, VERIFY_HELLO_BYTES);
		f->verify->hello_seen = 1;
		return 0;
	}
	if (f->frame_left == 0)
		return flow_verify_header(f, p, len);
	len = len < want ? len : want;
	n = f->discard ? (ssize_t)len : write(flow_dst(f), p, len);
	f->stats->writes += !f->discard;
	switch (io_result(n)) {
	case IO_MOVED:
		digest_update(&f->stats->digest, p, (size_t)n);
		iobuf_consumed(&f->buf, (size_t)n);
		f->frame_left -= (uint64_t)n;
		flow_count_write(f, (uint64_t)n, (size_t)n);
		break;
	case IO_AGAIN: flow_set_dst_ready(f, 0); break;
	case IO_END:
	case IO_INTERRUPTED: break;
	case IO_FAILED: return flow_write_failed(f, len);
	}
	return 0;
}

/*
 * --verify, sending: once stdin is done, our END (what we sent); once the
 * peer's END came, our VERDICT (what we wrote of its data). 1 if one was
 * put in the buffer, 0 if none is due or there is no room yet; -1 when
 * the peer went away without its hello, so our data can never be sent.
 */
int flow_verify_queue_trailer(struct flow *f)
{
	const struct verify *v = f->verify;
	struct frame fr = {.type = FRAME_END};

	if (v->peer_done && !v->hello_seen)
		return flow_verify_failed(f, 1,
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
 * --verify: the hello goes out at once, before the relay looks at what
 * the peer sent. A peer without --verify may have sent data or its EOF
 * already, and the receiving side, pumped first, would fail on it with
 * our hello still unsent: the peer would never learn why. What cannot go
 * now goes with the first write.
 */
static void flow_send_hello(struct flow *f)
{
	ssize_t n = send(flow_dst(f), iobuf_head(&f->buf), f->gate, MSG_NOSIGNAL | MSG_DONTWAIT);

	if (n <= 0)
		return;
	iobuf_consumed(&f->buf, (size_t)n);
	f->gate -= (size_t)n;
	f->header_left -= (size_t)n;
}

/* A sending flow's buffer starts with our hello; the header walk of flow_verify_payload starts on
 * it. */
void flow_verify_init(struct flow *f)
{
	verify_hello_put((unsigned char *)iobuf_tail(&f->buf));
	iobuf_produced(&f->buf, VERIFY_HELLO_BYTES);
	f->gate = f->header_left = VERIFY_HELLO_BYTES;
	flow_send_hello(f);
}
