/* verify-wire.c: the --verify wire format (doc/verify-protocol.md): the hello, frames and control
 * datagrams, coded and checked (pure, fuzzed by fuzz-frame). */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fastcat.h"
#include "base/base.h"
#include "verify/verify.h"

static const char hello[VERIFY_HELLO_BYTES] = "FASTCAT-VERIFY1\n";

void verify_hello_put(unsigned char *out)
{
	memcpy(out, hello, VERIFY_HELLO_BYTES);
}

/* 1: the whole hello; 0: a proper prefix of it, wait for more; -1: something else. */
int verify_hello(const unsigned char *buf, size_t len)
{
	return wire_match(buf, len, hello, VERIFY_HELLO_BYTES);
}

/* Encode a frame's header (and an END's or VERDICT's count and digest). Returns its bytes. */
size_t verify_encode(unsigned char *out, const struct frame *fr)
{
	out[0] = (unsigned char)fr->type;
	out[1] = out[2] = out[3] = 0;
	if (fr->type == FRAME_DATA) {
		wire_put(out + 4, fr->len, 4);
		return FRAME_HEADER;
	}
	wire_put(out + 4, FRAME_TRAILER - FRAME_HEADER, 4);
	wire_put(out + FRAME_HEADER, fr->bytes, 8);
	wire_put(out + FRAME_HEADER + 8, fr->digest, 8);
	return FRAME_TRAILER;
}

/*
 * Decode the frame header at buf. Returns the bytes it takes (a DATA
 * header; an END or VERDICT whole), 0 when more bytes are needed, or -1
 * when they cannot be a frame: an unknown type, reserved bytes not zero, an
 * empty or oversized DATA frame, or an END/VERDICT of the wrong length.
 */
int verify_decode(const unsigned char *buf, size_t len, struct frame *out)
{
	uint32_t n;

	if (len >= 1 && buf[0] != FRAME_DATA && buf[0] != FRAME_END && buf[0] != FRAME_VERDICT)
		return -1;
	for (size_t i = 1; i < 4 && i < len; i++)
		if (buf[i] != 0)
			return -1;
	if (len < FRAME_HEADER)
		return 0;
	n = (uint32_t)wire_get(buf + 4, 4);
	memset(out, 0, sizeof *out);
	out->type = (enum frame_type)buf[0];
	if (out->type == FRAME_DATA) {
		if (n == 0 || n > VERIFY_FRAME_MAX)
			return -1;
		out->len = n;
		return FRAME_HEADER;
	}
	if (n != FRAME_TRAILER - FRAME_HEADER)
		return -1;
	if (len < FRAME_TRAILER)
		return 0;
	out->bytes = wire_get(buf + FRAME_HEADER, 8);
	out->digest = wire_get(buf + FRAME_HEADER + 8, 8);
	return FRAME_TRAILER;
}

/*
 * --verify over datagrams (udp, unix-dgram): control datagrams. The first
 * byte 0xff sets them apart from --seq data, whose 8-byte number would need
 * 2^56 datagrams to start so.
 */
static const unsigned char ctl_magic[4] = {0xff, 'F', 'C', 'V'};

static size_t ctl_body_len(int type)
{
	switch (type) {
	case CTL_HELLO: return 1;
	case CTL_END: return 24;
	case CTL_VERDICT: return 32;
	case CTL_DONE:
	case CTL_REFUSE: return 0;
	default: return (size_t)-1;
	}
}

/* Encode a control datagram into out (CTL_MAX bytes). Returns its length. */
size_t verify_ctl_encode(unsigned char *out, const struct ctl *c)
{
	size_t body = ctl_body_len(c->type);

	memcpy(out, ctl_magic, sizeof ctl_magic);
	out[4] = (unsigned char)c->type;
	out[5] = CTL_VERSION;
	out[6] = out[7] = 0;
	switch (c->type) {
	case CTL_HELLO: out[CTL_HEADER] = (unsigned char)c->flags; break;
	case CTL_VERDICT: wire_put(out + CTL_HEADER + 24, c->lost, 8); /* fall through */
	case CTL_END:
		wire_put(out + CTL_HEADER, c->datagrams, 8);
		wire_put(out + CTL_HEADER + 8, c->bytes, 8);
		wire_put(out + CTL_HEADER + 16, c->digest, 8);
		break;
	default: break;
	}
	return CTL_HEADER + body;
}

/*
 * Decode a datagram whose first CTL_HEADER bytes are head and the rest, len
 * bytes, body (apart, as --seq reads them). 1: a control datagram, in *out;
 * 0: not one (data); -1: the control magic with a bad version, type, flags,
 * reserved bytes or length.
 */
int verify_ctl_decode(const unsigned char *head, const unsigned char *body, size_t len,
                      struct ctl *out)
{
	if (memcmp(head, ctl_magic, sizeof ctl_magic) != 0)
		return 0;
	memset(out, 0, sizeof *out);
	if (head[5] != CTL_VERSION || head[6] != 0 || head[7] != 0 || ctl_body_len(head[4]) != len)
		return -1;
	out->type = (enum ctl_type)head[4];
	switch (out->type) {
	case CTL_HELLO:
		if (body[0] & ~(CTL_HAVE_YOURS | CTL_ANSWER))
			return -1;
		out->flags = body[0];
		break;
	case CTL_VERDICT: out->lost = wire_get(body + 24, 8); /* fall through */
	case CTL_END:
		out->datagrams = wire_get(body, 8);
		out->bytes = wire_get(body + 8, 8);
		out->digest = wire_get(body + 16, 8);
		break;
	default: break;
	}
	return 1;
}

/* A whole control datagram of n bytes, header first: 1 decoded, 0 not one, -1 malformed. */
int verify_ctl_parse(const unsigned char *d, size_t n, struct ctl *c)
{
	if (n < CTL_HEADER)
		return 0;
	return verify_ctl_decode(d, d + CTL_HEADER, n - CTL_HEADER, c);
}

/*
 * A datagram (n bytes peeked) that an earlier session left: an END, VERDICT
 * or DONE sent again after its session here ended cannot start a session,
 * which only a hello or data can. 1: stale, drop it; 0: not one of those.
 */
int verify_ctl_stale(const unsigned char *d, size_t n)
{
	struct ctl c;

	if (verify_ctl_parse(d, n < CTL_MAX ? n : CTL_MAX, &c) != 1)
		return 0;
	return c.type != CTL_HELLO;
}
