/* digest.c: XXH64 (seed 0) over a byte stream fed in pieces of any size, for --checksum. Pure. */
#include "config.h"

#include <string.h>

#include "base/base.h"

/*
 * XXH64 was chosen because it runs at memory speed and anyone can check a
 * report against `xxhsum -H1` at the other end. Written from the published
 * algorithm description; the unit test holds known values.
 */
#define P1 0x9E3779B185EBCA87ULL
#define P2 0xC2B2AE3D27D4EB4FULL
#define P3 0x165667B19E3779F9ULL
#define P4 0x85EBCA77C2B2AE63ULL
#define P5 0x27D4EB2F165667C5ULL

static inline uint64_t rotl64(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

/*
 * Little-endian loads, whatever the host: the digest must match across
 * machines. Spelled out byte by byte, compilers turn this into one load on a
 * little-endian host (a loop they leave as eight).
 */
static inline uint64_t load64(const unsigned char *p)
{
	return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 |
	       (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 |
	       (uint64_t)p[7] << 56;
}

static uint32_t load32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t mix_round(uint64_t acc, uint64_t input)
{
	acc += input * P2;
	return rotl64(acc, 31) * P1;
}

static uint64_t merge_round(uint64_t acc, uint64_t val)
{
	acc ^= mix_round(0, val);
	return acc * P1 + P4;
}

void digest_init(struct digest *d)
{
	memset(d, 0, sizeof *d);
	d->v[0] = P1 + P2;
	d->v[1] = P2;
	d->v[2] = 0;
	d->v[3] = 0 - P1;
}

/* len zero bytes, which were never in memory (--sparse's runs and holes). */
void digest_update_zeros(struct digest *d, uint64_t len)
{
	static const unsigned char zeros[64 * 1024];

	while (len > 0) {
		size_t piece = len < sizeof zeros ? (size_t)len : sizeof zeros;

		digest_update(d, zeros, piece);
		len -= piece;
	}
}

/*
 * Every whole 32-byte stripe in [p, end); returns where the rest starts. The
 * lanes live in locals: written through d they would be stored and reloaded
 * on every stripe, since the byte pointer may alias them (8x slower here).
 */
static const unsigned char *digest_stripes(struct digest *d, const unsigned char *p,
                                           const unsigned char *end)
{
	uint64_t v0 = d->v[0], v1 = d->v[1], v2 = d->v[2], v3 = d->v[3];

	for (; end - p >= 32; p += 32) {
		v0 = mix_round(v0, load64(p));
		v1 = mix_round(v1, load64(p + 8));
		v2 = mix_round(v2, load64(p + 16));
		v3 = mix_round(v3, load64(p + 24));
	}
	d->v[0] = v0;
	d->v[1] = v1;
	d->v[2] = v2;
	d->v[3] = v3;
	return p;
}

void digest_update(struct digest *d, const void *data, size_t len)
{
	const unsigned char *p = data, *end = p + len;

	d->total += len;
	if (d->held + len < 32) {
		memcpy(d->hold + d->held, p, len);
		d->held += len;
		return;
	}
	if (d->held > 0) {
		size_t fill = 32 - d->held;
		memcpy(d->hold + d->held, p, fill);
		digest_stripes(d, d->hold, d->hold + 32);
		p += fill;
		d->held = 0;
	}
	p = digest_stripes(d, p, end);
	d->held = (size_t)(end - p);
	memcpy(d->hold, p, d->held);
}

uint64_t digest_final(const struct digest *d)
{
	const unsigned char *p = d->hold, *end = p + d->held;
	uint64_t h;

	if (d->total >= 32) {
		h = rotl64(d->v[0], 1) + rotl64(d->v[1], 7) + rotl64(d->v[2], 12) +
		    rotl64(d->v[3], 18);
		for (int i = 0; i < 4; i++)
			h = merge_round(h, d->v[i]);
	} else {
		h = P5;
	}
	h += d->total;
	for (; end - p >= 8; p += 8)
		h = rotl64(h ^ mix_round(0, load64(p)), 27) * P1 + P4;
	if (end - p >= 4) {
		h = rotl64(h ^ (uint64_t)load32(p) * P1, 23) * P2 + P3;
		p += 4;
	}
	for (; p < end; p++)
		h = rotl64(h ^ *p * P5, 11) * P1;
	h ^= h >> 33;
	h *= P2;
	h ^= h >> 29;
	h *= P3;
	h ^= h >> 32;
	return h;
}
