/* resume-wire.c: --resume's wire format: the hello, the receiver's offer and the sender's answer,
 * coded and checked (pure, fuzzed by fuzz-frame). */
#include "config.h"

#include <string.h>

#include "fastcat.h"
#include "base/base.h"
#include "resume/resume.h"

const char resume_hello[RESUME_HELLO_BYTES] = "FASTCAT-RESUME1\n";
static const unsigned char offer_magic[4] = {'F', 'C', 'R', 'O'};
static const unsigned char answer_magic[4] = {'F', 'C', 'R', 'A'};

/* The hello in buf? 1: all of it, 0: len bytes of its start, -1: no. */
int resume_hello_seen(const unsigned char *buf, size_t len)
{
	return wire_match(buf, len, resume_hello, RESUME_HELLO_BYTES);
}

void resume_offer_encode(unsigned char *p, const struct resume_offer *o)
{
	memset(p, 0, RESUME_OFFER_BYTES);
	memcpy(p, offer_magic, sizeof offer_magic);
	p[4] = RESUME_VERSION;
	p[5] = (unsigned char)o->flags;
	wire_put(p + 8, o->length, 8);
	wire_put(p + 16, o->window, 4);
	wire_put(p + 24, o->digest, 8);
}

/*
 * 0, or -1 for bytes that are not an offer this version knows (a flag it
 * does not know included), or a window it will not check.
 */
int resume_offer_decode(const unsigned char *p, struct resume_offer *o)
{
	static const unsigned char zero[4];

	if (memcmp(p, offer_magic, sizeof offer_magic) != 0 || p[4] != RESUME_VERSION ||
	    (p[5] & ~RESUME_OFFER_BUSY) != 0 || memcmp(p + 6, zero, 2) != 0 ||
	    memcmp(p + 20, zero, sizeof zero) != 0)
		return -1;
	o->flags = p[5];
	o->length = wire_get(p + 8, 8);
	o->window = (uint32_t)wire_get(p + 16, 4);
	o->digest = wire_get(p + 24, 8);
	return o->window <= o->length && o->window <= RESUME_WINDOW_MAX ? 0 : -1;
}

void resume_answer_encode(unsigned char *p, const struct resume_answer *a)
{
	memset(p, 0, RESUME_ANSWER_BYTES);
	memcpy(p, answer_magic, sizeof answer_magic);
	p[4] = RESUME_VERSION;
	p[5] = (unsigned char)a->verdict;
	wire_put(p + 8, a->length, 8);
	wire_put(p + 16, a->total, 8);
}

/* 0, or -1 for bytes no sender writes: a source shorter than length is SHORT, and only SHORT. */
int resume_answer_decode(const unsigned char *p, struct resume_answer *a)
{
	if (memcmp(p, answer_magic, sizeof answer_magic) != 0 || p[4] != RESUME_VERSION ||
	    p[6] != 0 || p[7] != 0)
		return -1;
	a->verdict = (enum resume_verdict)p[5];
	a->length = wire_get(p + 8, 8);
	a->total = wire_get(p + 16, 8);
	switch (a->verdict) {
	case RESUME_GO:
	case RESUME_DIFFERS: return a->total == RESUME_UNKNOWN || a->total >= a->length ? 0 : -1;
	case RESUME_SHORT: return a->total < a->length ? 0 : -1;
	default: return -1;
	}
}
