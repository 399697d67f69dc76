/* test-digest.c: XXH64 matches xxhsum -H1, however the stream is cut into pieces. */
#include "config.h"

#include <string.h>

#include "fastcat.h"
#include "tap.h"

static uint64_t digest_in_pieces(const unsigned char *data, size_t len, size_t piece)
{
	struct digest d;

	digest_init(&d);
	for (size_t off = 0; off < len; off += piece)
		digest_update(&d, data + off, len - off < piece ? len - off : piece);
	return digest_final(&d);
}

int main(void)
{
	static unsigned char zeros[1000], pattern[4099];
	static const size_t pieces[] = {1, 3, 7, 31, 32, 33, 64, 1000, 5000};
	uint64_t whole;

	/* Known values from `xxhsum -H1` (xxHash 0.8.1). */
	tap_ok(digest_in_pieces((const unsigned char *)"", 0, 1) == 0xef46db3751d8e999ULL,
	       "empty input: ef46db3751d8e999");
	tap_ok(digest_in_pieces((const unsigned char *)"a", 1, 1) == 0xd24ec4f1a98c6e5bULL,
	       "\"a\": d24ec4f1a98c6e5b");
	tap_ok(digest_in_pieces(zeros, sizeof zeros, sizeof zeros) == 0x0e2b1ef27944075aULL,
	       "1000 zero bytes: 0e2b1ef27944075a");
	for (size_t i = 0; i < sizeof pattern; i++)
		pattern[i] = (unsigned char)(i * 31 + (i >> 7));
	whole = digest_in_pieces(pattern, sizeof pattern, sizeof pattern);
	for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++)
		tap_ok(digest_in_pieces(pattern, sizeof pattern, pieces[i]) == whole,
		       "4099 bytes fed %zu at a time give the same digest", pieces[i]);
	return tap_done();
}
