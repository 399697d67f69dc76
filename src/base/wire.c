/* wire.c: numbers in network byte order, for every wire format (--verify, --seq, -P). */
#include "config.h"

#include <string.h>

#include "base/base.h"

/* The low `bytes` bytes of v at p, most significant first. */
void wire_put(unsigned char *p, uint64_t v, int bytes)
{
	for (int i = bytes - 1; i >= 0; i--, v >>= 8)
		p[i] = (unsigned char)v;
}

uint64_t wire_get(const unsigned char *p, int bytes)
{
	uint64_t v = 0;

	for (int i = 0; i < bytes; i++)
		v = v << 8 | p[i];
	return v;
}

/* Is buf (len bytes) the whole of magic (mlen bytes)? 1: yes, 0: a proper prefix of it, -1: no. */
int wire_match(const unsigned char *buf, size_t len, const void *magic, size_t mlen)
{
	size_t n = len < mlen ? len : mlen;

	if (memcmp(buf, magic, n) != 0)
		return -1;
	return n == mlen ? 1 : 0;
}
