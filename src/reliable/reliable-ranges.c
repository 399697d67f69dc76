/*
 * reliable-ranges.c: a bounded set of disjoint byte ranges kept in order, which both ends of
 * --reliable need: the receiver's bytes that came ahead of a gap (its acknowledgement's
 * ranges), the sender's bytes the receiver said it has (not to be repaired). Pure.
 */
#include "config.h"

#include <string.h>

#include "reliable/reliable.h"

static uint64_t max64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/*
 * [from, to) into the set, merged with every range it touches. 0, or -1:
 * it would be one range too many (the set unchanged).
 */
int rangeset_add(struct rangeset *s, uint64_t from, uint64_t to)
{
	unsigned i = 0, j;

	if (from >= to)
		return 0;
	while (i < s->n && s->r[i].to < from)
		i++;
	j = i;
	while (j < s->n && s->r[j].from <= to) {
		from = s->r[j].from < from ? s->r[j].from : from;
		to = max64(to, s->r[j].to);
		j++;
	}
	if (i == j) { /* touches none: a new range at i */
		if (s->n == RELIABLE_RANGES)
			return -1;
		memmove(&s->r[i + 1], &s->r[i], (s->n - i) * sizeof s->r[0]);
		s->n++;
	} else if (j > i + 1) { /* ranges i to j-1 become one */
		memmove(&s->r[i + 1], &s->r[j], (s->n - j) * sizeof s->r[0]);
		s->n -= j - i - 1;
	}
	s->r[i] = (struct reliable_range){from, to};
	return 0;
}

/*
 * The run from `at` on: the first range, when it starts at or below `at`,
 * leaves the set and its end is returned; else `at`. Ranges below it go.
 */
uint64_t rangeset_join(struct rangeset *s, uint64_t at)
{
	unsigned gone = 0;

	while (gone < s->n && s->r[gone].from <= at) {
		at = max64(at, s->r[gone].to);
		gone++;
	}
	memmove(&s->r[0], &s->r[gone], (s->n - gone) * sizeof s->r[0]);
	s->n -= gone;
	return at;
}

/* Is all of [from, to) in the set? */
int rangeset_has(const struct rangeset *s, uint64_t from, uint64_t to)
{
	for (unsigned i = 0; i < s->n && s->r[i].from <= from; i++)
		if (to <= s->r[i].to)
			return 1;
	return from >= to;
}

/* Everything below `at` leaves the set (a range across it is cut there). */
void rangeset_drop_below(struct rangeset *s, uint64_t at)
{
	unsigned gone = 0;

	while (gone < s->n && s->r[gone].to <= at)
		gone++;
	memmove(&s->r[0], &s->r[gone], (s->n - gone) * sizeof s->r[0]);
	s->n -= gone;
	if (s->n > 0 && s->r[0].from < at)
		s->r[0].from = at;
}

/* The first offset from `at` on that the set does not hold. */
uint64_t rangeset_skip(const struct rangeset *s, uint64_t at)
{
	for (unsigned i = 0; i < s->n && s->r[i].from <= at; i++)
		if (s->r[i].to > at)
			at = s->r[i].to;
	return at;
}

/*
 * [from, to) leaves the set (a multicast repair went once for every receiver that lacked
 * it). 0, or -1: a range cut in two would be one too many (the set then keeps the part
 * before `to` of that range, a repair sent twice at worst).
 */
int rangeset_remove(struct rangeset *s, uint64_t from, uint64_t to)
{
	unsigned i = 0, j;

	if (from >= to)
		return 0;
	while (i < s->n && s->r[i].to <= from)
		i++;
	if (i < s->n && s->r[i].from < from && s->r[i].to > to) { /* inside one: cut in two */
		if (s->n == RELIABLE_RANGES)
			return -1;
		memmove(&s->r[i + 1], &s->r[i], (s->n - i) * sizeof s->r[0]);
		s->n++;
		s->r[i].to = from;
		s->r[i + 1].from = to;
		return 0;
	}
	if (i < s->n && s->r[i].from < from) {
		s->r[i].to = from;
		i++;
	}
	for (j = i; j < s->n && s->r[j].to <= to; j++)
		;
	if (j < s->n && s->r[j].from < to)
		s->r[j].from = to;
	memmove(&s->r[i], &s->r[j], (s->n - j) * sizeof s->r[0]);
	s->n -= j - i;
	return 0;
}
