/* seqtrack.c: count lost, duplicated and reordered datagrams from their --seq numbers. Pure. */
#include "config.h"

#include <string.h>

#include "base/base.h"

/*
 * seen[] is a ring over the last SEQ_WINDOW sequence numbers below next: a
 * set bit means that datagram arrived. A number above next opens a gap
 * counted as lost; one that later fills the gap turns a loss into a
 * reordering; one seen already is a duplicate. A datagram older than the
 * window cannot be told apart, and counts as a duplicate.
 */
#define SEQ_WINDOW (sizeof(((struct seqtrack *)0)->seen) * 8)

void seqtrack_init(struct seqtrack *t)
{
	memset(t, 0, sizeof *t);
}

static int bit_get(const struct seqtrack *t, uint64_t seq)
{
	uint64_t i = seq % SEQ_WINDOW;

	return (t->seen[i / 64] >> (i % 64)) & 1;
}

static void bit_put(struct seqtrack *t, uint64_t seq, int on)
{
	uint64_t i = seq % SEQ_WINDOW;
	uint64_t mask = (uint64_t)1 << (i % 64);

	t->seen[i / 64] = on ? t->seen[i / 64] | mask : t->seen[i / 64] & ~mask;
}

void seqtrack_add(struct seqtrack *t, uint64_t seq)
{
	if (seq >= t->next) {
		uint64_t gap = seq - t->next;
		if (gap >= SEQ_WINDOW)
			memset(t->seen, 0, sizeof t->seen);
		else
			for (uint64_t s = t->next; s < seq; s++)
				bit_put(t, s, 0);
		t->lost += gap;
		bit_put(t, seq, 1);
		t->next = seq + 1;
	} else if (t->next - seq > SEQ_WINDOW || bit_get(t, seq)) {
		t->duplicated++;
	} else {
		bit_put(t, seq, 1);
		t->lost--;
		t->reordered++;
	}
}
