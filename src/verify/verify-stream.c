/*
 * verify-stream.c: --verify over streams, as the flows' ops: a sending flow frames stdin
 * (our hello, DATA frames, END and VERDICT), a receiving flow takes the peer's frames apart
 * and writes their payload. The protocol: doc/verify-protocol.md.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/compat.h"
#include "fastcat.h"
#include "relay/flow.h"
#include "verify/verify.h"

/* ---------------------------------------------------------------- sending */

/*
 * Read stdin behind room for a DATA header (the flow's read_reserve), then
 * put the header in front, so the frame goes out with the data in one
 * write. The digest of what was read is the one our END will carry. The
 * header is produced here, the data by the pump: read(2)'s result.
 */
static ssize_t frames_read(struct flow *f, size_t want)
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

/* Nothing but our hello until the peer's hello came: a peer without --verify must not get our
 * frames as its data. */
static size_t frames_len_out(const struct flow *f)
{
	const struct verify *v = f->ctx;
	size_t len = iobuf_len(&f->buf);

	return v->hello_seen || len < v->gate ? len : v->gate;
}

/*
 * Of n bytes just written from the buffer's head, how many were payload.
 * The buffer holds whole frames (the hello first), so walking their headers
 * from the head is exact.
 */
static size_t frames_wrote(struct flow *f, size_t n)
{
	struct verify *v = f->ctx;
	const unsigned char *p = (const unsigned char *)iobuf_head(&f->buf);
	size_t payload = 0, avail = iobuf_len(&f->buf);
	struct frame fr;

	v->gate -= n < v->gate ? n : v->gate;
	while (n > 0) {
		size_t take;

		if (v->header_left == 0 && v->out_left == 0) {
			/* our own frame, whole in the buffer: it decodes */
			if (verify_decode(p, avail, &fr) == FRAME_HEADER) {
				v->header_left = FRAME_HEADER;
				v->out_left = fr.len;
			} else {
				v->header_left = FRAME_TRAILER;
			}
		}
		take = n < v->header_left ? n : v->header_left;
		v->header_left -= take;
		p += take;
		n -= take;
		avail -= take;
		take = n < v->out_left ? n : (size_t)v->out_left;
		v->out_left -= take;
		payload += take;
		p += take;
		n -= take;
		avail -= take;
	}
	return payload;
}

/*
 * Before each step: once stdin is done, our END (what we sent); once the
 * peer's END came, our VERDICT (what we wrote of its data), each put in the
 * buffer when there is room. -1 when the peer went away without its hello,
 * so our data can never be sent.
 */
static int frames_trailer(struct flow *f)
{
	struct verify *v = f->ctx;
	const struct verdict *vd = v->vd;
	struct frame fr = {.type = FRAME_END};

	if (v->peer_done && !v->hello_seen)
		return flow_fail(f, EXIT_VERIFY,
		                 "--verify: the peer closed without the verify hello (is --verify "
		                 "given at both ends?)");
	if (iobuf_room(&f->buf) < FRAME_TRAILER)
		return 0;
	if (f->src_eof && !v->end_queued) {
		fr.bytes = f->stats->digest.total;
		fr.digest = digest_final(&f->stats->digest);
		v->end_queued = 1;
	} else if (vd->end_seen && !v->verdict_queued) {
		fr = (struct frame){FRAME_VERDICT, 0, vd->delivered_bytes, vd->delivered_digest};
		v->verdict_queued = 1;
	} else {
		return 0;
	}
	iobuf_produced(&f->buf, verify_encode((unsigned char *)iobuf_tail(&f->buf), &fr));
	return 0;
}

/* Our VERDICT answers the peer's END; a peer that closed without one gets none. */
static int frames_drained(const struct flow *f)
{
	const struct verify *v = f->ctx;

	return iobuf_len(&f->buf) == 0 && v->end_queued &&
	       (v->verdict_queued || (v->peer_done && !v->vd->end_seen));
}

/*
 * The hello goes out at once, before the relay looks at what the peer sent.
 * A peer without --verify may have sent data or its EOF already, and the
 * receiving side, pumped first, would fail on it with our hello still
 * unsent: the peer would never learn why. What cannot go now goes with the
 * first write. The header walk of frames_wrote starts on it.
 */
static int frames_start(struct flow *f)
{
	struct verify *v = f->ctx;
	ssize_t n;

	verify_hello_put((unsigned char *)iobuf_tail(&f->buf));
	iobuf_produced(&f->buf, VERIFY_HELLO_BYTES);
	v->gate = v->header_left = VERIFY_HELLO_BYTES;
	n = send(flow_dst(f), iobuf_head(&f->buf), v->gate, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n > 0) {
		iobuf_consumed(&f->buf, (size_t)n);
		v->gate -= (size_t)n;
		v->header_left -= (size_t)n;
	}
	return 0;
}

/* ---------------------------------------------------------------- receiving */

/*
 * The bytes the next step may take: the hello or a frame header once whole
 * (or once it cannot be one), else the payload of the DATA frame.
 */
static size_t frames_len_in(const struct flow *f)
{
	const struct verify *v = f->ctx;
	const unsigned char *p = (const unsigned char *)f->buf.data + f->buf.head;
	size_t len = iobuf_len(&f->buf);
	struct frame fr;

	if (len == 0)
		return 0;
	if (!v->hello_seen)
		return verify_hello(p, len) != 0 ? len : 0;
	if (v->in_left > 0)
		return len < v->in_left ? len : (size_t)v->in_left;
	return verify_decode(p, len, &fr) != 0 ? len : 0;
}

/* A frame header; an END or VERDICT is noted for the verdict. */
static int frames_header(struct flow *f, const unsigned char *p, size_t len)
{
	struct verify *v = f->ctx;
	struct verdict *vd = v->vd;
	struct frame fr;
	int rc = verify_decode(p, len, &fr);

	if (rc < 0 || (fr.type == FRAME_DATA && vd->end_seen) ||
	    (fr.type == FRAME_END && vd->end_seen) ||
	    (fr.type == FRAME_VERDICT && vd->verdict_seen))
		return flow_fail(f, EXIT_VERIFY, "--verify: the peer sent a malformed frame");
	iobuf_consumed(&f->buf, (size_t)rc);
	if (fr.type == FRAME_DATA) {
		v->in_left = fr.len;
	} else if (fr.type == FRAME_END) {
		if (flow_sync(f) != 0) /* --sync: our verdict says on disk */
			return -1;
		vd->end_seen = 1;
		vd->peer_bytes = fr.bytes;
		vd->peer_digest = fr.digest;
		/* --resume: the file's, the bytes before this session's too */
		vd->delivered_bytes = f->stats->bytes + v->s->prefix.received;
		vd->delivered_digest = digest_final(&f->stats->digest);
	} else {
		vd->verdict_seen = 1;
		vd->confirmed_bytes = fr.bytes;
		vd->confirmed_digest = fr.digest;
	}
	return 0;
}

/*
 * One step through the peer's frames: its hello, a frame header, or DATA
 * payload written to stdout (or dropped with --send-only) and digested.
 */
static int frames_write(struct flow *f, size_t want)
{
	struct verify *v = f->ctx;
	unsigned char *p = (unsigned char *)iobuf_head(&f->buf);
	size_t len = frames_len_in(f);
	ssize_t n;

	if (!v->hello_seen) {
		if (verify_hello(p, len) < 0)
			return flow_fail(f, EXIT_VERIFY,
			                 "--verify: the peer did not open with the verify hello "
			                 "(is --verify given at both ends?)");
		iobuf_consumed(&f->buf, VERIFY_HELLO_BYTES);
		v->hello_seen = 1;
		return 0;
	}
	if (v->in_left == 0)
		return frames_header(f, p, len);
	len = len < want ? len : want;
	n = f->discard ? (ssize_t)len : write(flow_dst(f), p, len);
	f->stats->writes += !f->discard;
	switch (io_result(n)) {
	case IO_MOVED:
		digest_update(&f->stats->digest, p, (size_t)n);
		iobuf_consumed(&f->buf, (size_t)n);
		v->in_left -= (uint64_t)n;
		flow_count_write(f, (uint64_t)n, (size_t)n);
		break;
	case IO_AGAIN: flow_set_dst_ready(f, 0); break;
	case IO_END:
	case IO_INTERRUPTED: break;
	case IO_FAILED: return flow_write_failed(f, len);
	}
	return 0;
}

/* The peer's EOF came: it will send nothing more (our VERDICT may be all that is left). */
static void frames_ended(struct flow *f)
{
	struct verify *v = f->ctx;

	v->peer_done = 1;
}

#define FRAMES_WHY "--verify frames and digests the bytes"

const struct flow_ops verify_send_ops = {
    .rw_reason = FRAMES_WHY,
    .read_reserve = FRAME_HEADER,
    .buffer_extra = 2 * FRAME_TRAILER,
    .digests_itself = 1,
    .start = frames_start,
    .read = frames_read,
    .len = frames_len_out,
    .wrote = frames_wrote,
    .step = frames_trailer,
    .drained = frames_drained,
};

const struct flow_ops verify_receive_ops = {
    .rw_reason = FRAMES_WHY,
    .buffer_extra = FRAME_HEADER + 2 * FRAME_TRAILER,
    .digests_itself = 1,
    .write = frames_write,
    .len = frames_len_in,
    .ended = frames_ended,
};
