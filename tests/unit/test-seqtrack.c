/* test-seqtrack.c: losses, duplicates and reorderings are told apart from sequence numbers. */
#include "config.h"

#include "fastcat.h"
#include "tap.h"

static struct seqtrack run(const uint64_t *seqs, size_t n)
{
	struct seqtrack t;

	seqtrack_init(&t);
	for (size_t i = 0; i < n; i++)
		seqtrack_add(&t, seqs[i]);
	return t;
}

#define RUN(...) run((const uint64_t[]){__VA_ARGS__}, sizeof((const uint64_t[]){__VA_ARGS__}) / 8)

int main(void)
{
	struct seqtrack t;

	t = RUN(0, 1, 2, 3);
	tap_ok(t.lost == 0 && t.duplicated == 0 && t.reordered == 0 && t.next == 4,
	       "in order: nothing");
	t = RUN(0, 1, 4, 5);
	tap_ok(t.lost == 2 && t.reordered == 0, "a gap of two: 2 lost");
	t = RUN(0, 2, 1, 3);
	tap_ok(t.lost == 0 && t.reordered == 1 && t.duplicated == 0, "1 late: reordered, not lost");
	t = RUN(0, 1, 1, 2, 0);
	tap_ok(t.lost == 0 && t.duplicated == 2, "1 and 0 again: 2 duplicates");
	t = RUN(1, 2);
	tap_ok(t.lost == 1, "the first datagram missing: 1 lost");
	t = RUN(0, 5000, 4999, 1);
	tap_ok(t.lost == 4998 && t.reordered == 1 && t.duplicated == 1,
	       "a huge gap: 4999 late fills it, 1 is too old to tell (duplicate)");
	return tap_done();
}
