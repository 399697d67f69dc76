/*
 * test-stripe-sparse.c: --sparse's packing of a chunk read (stripe-sparse.c): the chunks it
 * makes, decoded and replayed, give back the bytes read, and the zero blocks go as ZERO chunks
 * without payload; random data stays one DATA chunk, unmoved.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "fastcat.h"
#include "stripe/stripe.h"
#include "tap.h"

#define H STRIPE_CHUNK_BYTES

/*
 * Replay the packed chunks (len bytes at buf) into out: what a receiver
 * would write. The number of chunks, or -1 when one does not decode, is
 * out of order, or a ZERO chunk is shorter than a block.
 */
static int replay(const unsigned char *buf, size_t len, uint64_t offset, unsigned char *out,
                  size_t *zero_chunks)
{
	size_t at = 0;
	uint64_t next = offset;
	int chunks = 0;

	*zero_chunks = 0;
	while (at < len) {
		struct stripe_chunk ch;

		if (len - at < H || stripe_chunk_decode(buf + at, &ch) != 0 || ch.offset != next)
			return -1;
		at += H;
		if (ch.type == STRIPE_ZERO) {
			memset(out + (next - offset), 0, ch.len);
			(*zero_chunks)++;
		} else if (ch.type == STRIPE_DATA && len - at >= ch.len) {
			memcpy(out + (next - offset), buf + at, ch.len);
			at += ch.len;
		} else {
			return -1;
		}
		next += ch.len;
		chunks++;
	}
	return chunks;
}

/* Pack n bytes of src read at offset; check the replay. Returns the chunks, -1 on a mismatch. */
static int pack_check(const unsigned char *src, size_t n, uint64_t offset, uint64_t *zeros,
                      size_t *zero_chunks, size_t *packed)
{
	unsigned char *buf = malloc(H + n), *out = malloc(n + 1);
	int chunks;

	memcpy(buf + H, src, n);
	*packed = stripe_sparse_pack(buf, n, offset, zeros);
	chunks = *packed <= H + n ? replay(buf, *packed, offset, out, zero_chunks) : -1;
	if (chunks >= 0 && memcmp(out, src, n) != 0)
		chunks = -1;
	free(buf);
	free(out);
	return chunks;
}

static void fill_random(unsigned char *p, size_t n, unsigned seed)
{
	srand(seed);
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(rand() | 1); /* never a zero byte: no zero block by chance */
}

static void random_data(void)
{
	size_t n = 256 * 1024, zc, packed;
	unsigned char *src = malloc(n);
	uint64_t zeros;

	fill_random(src, n, 1);
	tap_ok(pack_check(src, n, 1 << 20, &zeros, &zc, &packed) == 1 && zeros == 0 &&
	           packed == H + n,
	       "random data: one DATA chunk of all %zu bytes, nothing skipped", n);
	free(src);
}

static void all_zero(void)
{
	size_t n = 1024 * 1024, zc, packed;
	unsigned char *src = calloc(1, n);
	uint64_t zeros;

	tap_ok(pack_check(src, n, 0, &zeros, &zc, &packed) == 1 && zc == 1 && zeros == n &&
	           packed == H,
	       "1 MiB of zeros: one ZERO chunk, a header's 16 bytes on the wire");
	free(src);
}

/* Runs of data and zeros in every order, with a partial block at the end. */
static void mixed(void)
{
	size_t n = 20 * 4096 + 100, zc, packed;
	unsigned char *src = calloc(1, n);
	uint64_t zeros;
	int chunks;

	fill_random(src + 0, 3 * 4096, 2);      /* data, blocks 0-2 */
	fill_random(src + 5 * 4096, 4096, 3);   /* zeros 3-4, data 5 */
	fill_random(src + 6 * 4096 + 17, 1, 4); /* block 6: one non-zero byte: data */
	fill_random(src + 12 * 4096, 100, 5);   /* zeros 7-11, data 12 (partly) */
	/* zeros 13-19, then 100 zero bytes: a partial block, data */
	chunks = pack_check(src, n, 12345, &zeros, &zc, &packed);
	tap_ok(chunks == 7 && zc == 3, "mixed runs: 7 chunks, 3 of them ZERO (got %d, %zu)", chunks,
	       zc);
	tap_ok(zeros == (2 + 5 + 7) * 4096, "the ZERO chunks stand for 14 whole blocks (%llu)",
	       (unsigned long long)zeros);
	tap_ok(packed == 7 * H + n - zeros, "on the wire: 7 headers and the data (%zu)", packed);
	free(src);
}

/* A block that is zero but for its last byte is data; a short read's lone block is data. */
static void edges(void)
{
	size_t zc, packed;
	unsigned char src[3 * 4096] = {0};
	uint64_t zeros;

	src[2 * 4096 - 1] = 7;
	tap_ok(pack_check(src, sizeof src, 0, &zeros, &zc, &packed) == 3 && zeros == 2 * 4096,
	       "zeros, a block ending in a 7, zeros: ZERO, DATA, ZERO");
	tap_ok(pack_check(src, 4095, 0, &zeros, &zc, &packed) == 1 && zeros == 0,
	       "4095 zero bytes: shorter than a block, sent as data");
	tap_ok(pack_check(src, 0, 0, &zeros, &zc, &packed) == 0 && packed == 0,
	       "nothing read: no chunk");
}

int main(void)
{
	random_data();
	all_zero();
	mixed();
	edges();
	return tap_done();
}
