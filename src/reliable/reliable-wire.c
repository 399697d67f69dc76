/*
 * reliable-wire.c: --reliable's datagrams, coded and checked: the common header, data, the
 * acknowledgement with its ranges, the hellos, the end and its confirmation (pure; fuzzed by
 * fuzz-frame). Byte 0 is 0xff, which no --seq number of a real stream starts with, so a
 * --reliable datagram is never mistaken for a --seq one.
 */
#include "config.h"

#include <string.h>

#include "base/base.h"
#include "reliable/reliable.h"

static const unsigned char magic[4] = {0xff, 'F', 'C', 'R'};
static const unsigned char zero[2];

static int known_type(unsigned t)
{
	return t == RELIABLE_ANSWER || t == RELIABLE_HELLO || t == RELIABLE_DATA ||
	       t == RELIABLE_ACK || t == RELIABLE_END || t == RELIABLE_CONFIRM ||
	       t == RELIABLE_REFUSE;
}

void reliable_head_encode(unsigned char *p, const struct reliable_head *h)
{
	memcpy(p, magic, sizeof magic);
	p[4] = (unsigned char)h->type;
	p[5] = RELIABLE_VERSION;
	wire_put(p + 6, h->tag, 2);
	wire_put(p + 8, h->session, 8);
}

/* A receiver's datagram carries its tag: a multicast sender tells its receivers apart by it. */
void reliable_head_tag(unsigned char *p, unsigned tag)
{
	wire_put(p + 6, tag & 0xffff, 2);
}

/* 0, or -1: too short, not --reliable's, another version, a type it does not know. */
int reliable_head_decode(const unsigned char *p, size_t len, struct reliable_head *h)
{
	if (len < RELIABLE_HEAD || memcmp(p, magic, sizeof magic) != 0 ||
	    p[5] != RELIABLE_VERSION || !known_type(p[4]))
		return -1;
	h->type = (enum reliable_type)p[4];
	h->tag = (unsigned)wire_get(p + 6, 2);
	h->session = wire_get(p + 8, 8);
	return 0;
}

static void head_put(unsigned char *p, enum reliable_type type, uint64_t session)
{
	reliable_head_encode(p, &(struct reliable_head){.type = type, .session = session});
}

/*
 * -k: only a hello starts a session (n bytes peeked). Any other datagram belongs to a session
 * that is over here (its end or a repair sent again), one under way without this receiver, or
 * a plain sender, each of whose datagrams would otherwise be one more refused session. 1: drop
 * it; 0: a hello.
 */
int reliable_stale(const unsigned char *p, size_t len)
{
	struct reliable_hello h;

	return reliable_hello_decode(p, len, &h) != 0 || p[4] != RELIABLE_HELLO;
}

/* The header of a data datagram (its payload follows): its length. */
size_t reliable_data_encode(unsigned char *p, uint64_t session, const struct reliable_data *d)
{
	head_put(p, RELIABLE_DATA, session);
	wire_put(p + 16, d->pkt, 8);
	wire_put(p + 24, d->off, 8);
	return RELIABLE_DATA_HEAD;
}

/* 0, or -1: not data, or no payload, or a payload past the end of any stream. */
int reliable_data_decode(const unsigned char *p, size_t len, struct reliable_data *d)
{
	struct reliable_head h;

	if (reliable_head_decode(p, len, &h) != 0 || h.type != RELIABLE_DATA ||
	    len <= RELIABLE_DATA_HEAD)
		return -1;
	d->pkt = wire_get(p + 16, 8);
	d->off = wire_get(p + 24, 8);
	return d->off <= UINT64_MAX - (len - RELIABLE_DATA_HEAD) ? 0 : -1;
}

/* An acknowledgement with its ranges: its length. */
size_t reliable_ack_encode(unsigned char *p, uint64_t session, const struct reliable_ack *a)
{
	head_put(p, RELIABLE_ACK, session);
	wire_put(p + 16, a->largest_pkt, 8);
	wire_put(p + 24, a->delay_us, 4);
	wire_put(p + 28, a->room, 4);
	wire_put(p + 32, a->cum, 8);
	wire_put(p + 40, a->delivered, 8);
	for (unsigned i = 0; i < a->n; i++) {
		wire_put(p + RELIABLE_ACK_HEAD + 16 * i, a->range[i].from, 8);
		wire_put(p + RELIABLE_ACK_HEAD + 16 * i + 8, a->range[i].to, 8);
	}
	return RELIABLE_ACK_HEAD + 16 * (size_t)a->n;
}

/*
 * 0, or -1: not an acknowledgement, a length that is no whole number of
 * ranges, more than RELIABLE_SACK_MAX, or ranges that are not beyond cum,
 * in order, each non-empty with a gap before it.
 */
int reliable_ack_decode(const unsigned char *p, size_t len, struct reliable_ack *a)
{
	struct reliable_head h;
	uint64_t last;

	if (reliable_head_decode(p, len, &h) != 0 || h.type != RELIABLE_ACK ||
	    len < RELIABLE_ACK_HEAD || len > RELIABLE_ACK_MAX ||
	    (len - RELIABLE_ACK_HEAD) % 16 != 0)
		return -1;
	a->largest_pkt = wire_get(p + 16, 8);
	a->delay_us = (uint32_t)wire_get(p + 24, 4);
	a->room = (uint32_t)wire_get(p + 28, 4);
	a->cum = last = wire_get(p + 32, 8);
	a->delivered = wire_get(p + 40, 8);
	a->n = (unsigned)((len - RELIABLE_ACK_HEAD) / 16);
	for (unsigned i = 0; i < a->n; i++) {
		a->range[i].from = wire_get(p + RELIABLE_ACK_HEAD + 16 * i, 8);
		a->range[i].to = wire_get(p + RELIABLE_ACK_HEAD + 16 * i + 8, 8);
		if (a->range[i].from <= last || a->range[i].to <= a->range[i].from)
			return -1;
		last = a->range[i].to;
	}
	return 0;
}

/* A hello: the receiver's answer (A) or the sender's (H). Its length. */
size_t reliable_hello_encode(unsigned char *p, enum reliable_type type, uint64_t session,
                             const struct reliable_hello *h)
{
	head_put(p, type, session);
	wire_put(p + 16, h->nonce, 8);
	wire_put(p + 24, h->room, 4);
	wire_put(p + 28, h->payload, 2);
	memset(p + 30, 0, 2);
	return RELIABLE_HELLO_LEN;
}

int reliable_hello_decode(const unsigned char *p, size_t len, struct reliable_hello *h)
{
	struct reliable_head head;

	if (reliable_head_decode(p, len, &head) != 0 || len != RELIABLE_HELLO_LEN ||
	    (head.type != RELIABLE_ANSWER && head.type != RELIABLE_HELLO) ||
	    memcmp(p + 30, zero, 2) != 0)
		return -1;
	h->nonce = wire_get(p + 16, 8);
	h->room = (uint32_t)wire_get(p + 24, 4);
	h->payload = (uint16_t)wire_get(p + 28, 2);
	return h->payload >= 1 ? 0 : -1;
}

/* The sender's end (E) or the receiver's confirmation of it (C). Its length. */
size_t reliable_end_encode(unsigned char *p, enum reliable_type type, uint64_t session,
                           const struct reliable_end *e)
{
	head_put(p, type, session);
	wire_put(p + 16, e->bytes, 8);
	wire_put(p + 24, e->digest, 8);
	wire_put(p + 32, e->datagrams, 8);
	return RELIABLE_END_LEN;
}

int reliable_end_decode(const unsigned char *p, size_t len, struct reliable_end *e)
{
	struct reliable_head h;

	if (reliable_head_decode(p, len, &h) != 0 || len != RELIABLE_END_LEN ||
	    (h.type != RELIABLE_END && h.type != RELIABLE_CONFIRM))
		return -1;
	e->bytes = wire_get(p + 16, 8);
	e->digest = wire_get(p + 24, 8);
	e->datagrams = wire_get(p + 32, 8);
	return 0;
}
