/*
 * stripe-sparse.c: --sparse, the sender's side: a chunk just read, whose
 * blocks of STRIPE_ZERO_MIN bytes that are all zero go as ZERO chunks (a
 * header, no payload) and the rest as DATA chunks, packed in place in the
 * connection's buffer (pure). A disk image is mostly zeros: they never
 * cross the wire, and a receiver writing a file makes holes of them.
 */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "fastcat.h"
#include "stripe/stripe.h"

/* Is the block of len bytes at p all zero? Random data answers at its first word. */
static int all_zero(const unsigned char *p, size_t len)
{
	uint64_t w;

	for (size_t i = 0; i + sizeof w <= len; i += sizeof w) {
		memcpy(&w, p + i, sizeof w);
		if (w != 0)
			return 0;
	}
	return 1;
}

/* The run of one kind that starts at pos: whole zero blocks, or the bytes up to the next. */
static size_t run_length(const unsigned char *in, size_t n, size_t pos, int *zero)
{
	size_t end = pos;

	*zero = n - pos >= STRIPE_ZERO_MIN && all_zero(in + pos, STRIPE_ZERO_MIN);
	while (end < n) {
		size_t block = n - end < STRIPE_ZERO_MIN ? n - end : STRIPE_ZERO_MIN;
		int z = block == STRIPE_ZERO_MIN && all_zero(in + end, block);

		if (z != *zero)
			break;
		end += block;
	}
	return end - pos;
}

/*
 * buf holds n bytes of the stream at offset after room for a chunk header
 * (STRIPE_CHUNK_BYTES): make it DATA and ZERO chunks, in order, from buf on.
 * Each ZERO chunk replaces at least STRIPE_ZERO_MIN bytes with a header,
 * so the chunks never outgrow the buffer, and a DATA chunk's bytes only
 * move towards its start: a header after a ZERO run lands in that run's
 * own zeros. The chunks' length; *zeros: the bytes the ZERO chunks stand
 * for. Without a zero block it is one DATA chunk, nothing moved.
 */
size_t stripe_sparse_pack(unsigned char *buf, size_t n, uint64_t offset, uint64_t *zeros)
{
	const unsigned char *in = buf + STRIPE_CHUNK_BYTES;
	size_t pos = 0, out = 0;

	*zeros = 0;
	while (pos < n) {
		int zero;
		size_t len = run_length(in, n, pos, &zero);
		struct stripe_chunk ch = {zero ? STRIPE_ZERO : STRIPE_DATA, 0, 0, (uint32_t)len,
		                          offset + pos};

		stripe_chunk_encode(buf + out, &ch);
		out += STRIPE_CHUNK_BYTES;
		if (zero) {
			*zeros += len;
		} else {
			if (buf + out != in + pos)
				memmove(buf + out, in + pos, len);
			out += len;
		}
		pos += len;
	}
	return out;
}
