/* link.c - one direction of the delay line's WAN link: random loss on arrival, a drop-tail
 * queue in bytes, serialisation at the link rate, one-way delay plus jitter, and delivery
 * when due, with the packets held in one ring from the read to the write. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "delayline.h"

/* A record's header; the packet follows it. */
struct rec {
	int64_t due;   /* when the packet is written to the output */
	uint32_t len;  /* packet bytes; REC_SKIP marks the skipped end of the ring */
	uint32_t done; /* delivered, waiting for the records before it (reorder only) */
};
#define REC_HDR  sizeof(struct rec)
#define REC_SKIP UINT32_MAX
/* What a read may need: a header and the largest packet. */
#define REC_NEED (REC_HDR + PKT_MAX)

static size_t rec_size(uint32_t len)
{
	return REC_HDR + (((size_t)len + 7u) & ~(size_t)7u);
}

static struct rec *rec_at(const struct ring *r, size_t off)
{
	return (struct rec *)(void *)(r->buf + off);
}

/* ring_room: where the next record can be written (REC_NEED bytes free there), or NULL when
 * the ring is full. An end too short for a record is skipped (marked, counted as used). */
static unsigned char *ring_room(struct ring *r)
{
	if (r->used == 0)
		r->head = r->tail = 0;
	if (r->tail > r->head || r->used == 0) {
		if (r->size - r->tail >= REC_NEED)
			return r->buf + r->tail;
		if (r->head < REC_NEED)
			return NULL;
		if (r->size - r->tail >= REC_HDR)
			rec_at(r, r->tail)->len = REC_SKIP;
		r->used += r->size - r->tail;
		r->tail = 0;
		return r->buf;
	}
	return r->head - r->tail >= REC_NEED ? r->buf + r->tail : NULL;
}

/* ring_commit: the packet of LEN bytes just read at the tail becomes a record. */
static size_t ring_commit(struct ring *r, uint32_t len, int64_t due)
{
	size_t off = r->tail;
	struct rec *h = rec_at(r, off);

	h->due = due;
	h->len = len;
	h->done = 0;
	r->tail += rec_size(len);
	r->used += rec_size(len);
	return off;
}

/* ring_head: the oldest record (past a skipped end), or NULL when the ring is empty. */
static struct rec *ring_head(struct ring *r)
{
	if (r->used == 0)
		return NULL;
	if (r->size - r->head < REC_HDR || rec_at(r, r->head)->len == REC_SKIP) {
		r->used -= r->size - r->head;
		r->head = 0;
	}
	return r->used ? rec_at(r, r->head) : NULL;
}

static void ring_pop(struct ring *r)
{
	size_t n = rec_size(rec_at(r, r->head)->len);

	r->head += n;
	r->used -= n;
}

static int heap_less(const struct heap_ent *a, const struct heap_ent *b)
{
	return a->due < b->due || (a->due == b->due && a->seq < b->seq);
}

static int heap_push(struct heap *h, struct heap_ent e)
{
	size_t i;

	if (h->n == h->cap) {
		size_t cap = h->cap ? 2 * h->cap : 1024;
		struct heap_ent *v = realloc(h->v, cap * sizeof(*v));

		if (v == NULL)
			return -1;
		h->v = v;
		h->cap = cap;
	}
	for (i = h->n++; i > 0 && heap_less(&e, &h->v[(i - 1) / 2]); i = (i - 1) / 2)
		h->v[i] = h->v[(i - 1) / 2];
	h->v[i] = e;
	return 0;
}

static void heap_pop(struct heap *h)
{
	struct heap_ent last = h->v[--h->n];
	size_t i = 0, c;

	while ((c = 2 * i + 1) < h->n) {
		if (c + 1 < h->n && heap_less(&h->v[c + 1], &h->v[c]))
			c++;
		if (!heap_less(&h->v[c], &last))
			break;
		h->v[i] = h->v[c];
		i = c;
	}
	if (h->n)
		h->v[i] = last;
}

/* xorshift64*: a fixed sequence per seed, so a lab's losses repeat from run to run. */
static double rng_unit(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return (double)((*s * UINT64_C(2685821657736338717)) >> 11) * 0x1.0p-53;
}

/* The ring holds the queue, what is in flight (rate x (delay + jitter)), the records'
 * headers and padding (at most 24 bytes per 64-byte packet, so x 1.4 covers it), and a few
 * largest packets for the skipped ends. */
int link_init(struct link *l, const char *name, int in_fd, int out_fd, const struct link_params *p,
              uint64_t seed)
{
	double flight = (double)p->rate_bps / 8 * (double)(p->delay_ns + p->jitter_ns) / 1e9;
	double bytes = ((double)p->queue_bytes + flight) * 1.4 + 4.0 * REC_NEED;

	memset(l, 0, sizeof(*l));
	snprintf(l->name, sizeof(l->name), "%s", name);
	l->in_fd = in_fd;
	l->out_fd = out_fd;
	l->p = *p;
	l->rng = seed * UINT64_C(0x9E3779B97F4A7C15) + 1;
	if (bytes > 4.0 * 1024 * 1024 * 1024)
		return -1;
	l->ring.size = ((size_t)bytes + 7u) & ~(size_t)7u;
	l->ring.buf = malloc(l->ring.size);
	l->scratch = malloc(PKT_MAX);
	return l->ring.buf && l->scratch ? 0 : -1;
}

void link_free(struct link *l)
{
	free(l->ring.buf);
	free(l->scratch);
	free(l->heap.v);
}

/* link_admit: a packet of LEN bytes, read at NOW into the ring's room, is lost, dropped at
 * the full queue, or given its due time: it starts serialising when the link is free, is
 * on the wire when serialised, and arrives after the delay and the jitter. */
static void link_admit(struct link *l, int64_t now, uint32_t len)
{
	int64_t start = l->busy_until > now ? l->busy_until : now, due;
	double backlog = (double)(start - now) * (double)l->p.rate_bps / 8e9;

	if (l->p.loss > 0 && rng_unit(&l->rng) < l->p.loss) {
		l->st.lost++;
		return;
	}
	if (backlog + len > (double)l->p.queue_bytes) {
		l->st.qdrop++;
		return;
	}
	l->busy_until = start + (int64_t)((uint64_t)len * 8 * 1000000000u / l->p.rate_bps);
	due = l->busy_until + l->p.delay_ns;
	if (l->p.jitter_ns > 0)
		due += (int64_t)((2 * rng_unit(&l->rng) - 1) * (double)l->p.jitter_ns);
	if (due < l->busy_until)
		due = l->busy_until;
	if (!l->p.reorder) {
		if (due < l->last_due)
			due = l->last_due;
		l->last_due = due;
	}
	size_t off = ring_commit(&l->ring, len, due);
	if (l->p.reorder && heap_push(&l->heap, (struct heap_ent){due, l->seq++, off}) < 0) {
		rec_at(&l->ring, off)->done = 1; /* out of memory: the packet is lost */
		l->st.noroom++;
	}
}

/* link_read: up to BATCH packets from the input. Returns 1 when the batch was full (more may
 * wait), 0 at EAGAIN, -1 on a read error (errno set). */
int link_read(struct link *l, int64_t now, int batch)
{
	for (int i = 0; i < batch; i++) {
		unsigned char *room = ring_room(&l->ring);
		ssize_t n = read(l->in_fd, room ? room + REC_HDR : l->scratch, PKT_MAX);

		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -1;
		if (n == 0)
			return 0;
		l->st.in++;
		if (room == NULL)
			l->st.noroom++;
		else
			link_admit(l, now, (uint32_t)n);
	}
	return 1;
}

/* The next record to deliver: the heap's first with reordering, else the ring's oldest. */
static struct rec *link_next(struct link *l)
{
	if (l->p.reorder)
		return l->heap.n ? rec_at(&l->ring, l->heap.v[0].off) : NULL;
	return ring_head(&l->ring);
}

/* link_next_due: when the next packet is due (INT64_MAX: none, or the output is blocked). */
int64_t link_next_due(struct link *l)
{
	struct rec *h = l->out_blocked ? NULL : link_next(l);

	return h ? h->due : INT64_MAX;
}

/* link_deliver: write every packet due by NOW. A refused write (the device is down) drops
 * the packet; EAGAIN keeps it for POLLOUT. Returns the packets written. */
int link_deliver(struct link *l, int64_t now)
{
	struct rec *h;
	int n = 0;

	while (!l->out_blocked && (h = link_next(l)) != NULL && h->due <= now) {
		if (write(l->out_fd, h + 1, h->len) < 0) {
			if (errno == EAGAIN || errno == EINTR) {
				l->out_blocked = errno == EAGAIN;
				break;
			}
			l->st.werr++;
		} else {
			l->st.out++;
			l->st.out_bytes += h->len;
			n++;
		}
		h->done = 1;
		if (l->p.reorder) {
			if (l->heap.v[0].seq < l->seq_out)
				l->st.reordered++;
			else
				l->seq_out = l->heap.v[0].seq + 1;
			heap_pop(&l->heap);
		}
		while ((h = ring_head(&l->ring)) != NULL && h->done)
			ring_pop(&l->ring);
	}
	return n;
}

void link_print_stats(const struct link *l)
{
	const struct link_stats *s = &l->st;

	fprintf(stderr,
	        "delayline: %s: %" PRIu64 " packets in, %" PRIu64 " out (%" PRIu64
	        " bytes), %" PRIu64 " lost, %" PRIu64 " queue drops, %" PRIu64 " no room, %" PRIu64
	        " write errors, %" PRIu64 " reordered\n",
	        l->name, s->in, s->out, s->out_bytes, s->lost, s->qdrop, s->noroom, s->werr,
	        s->reordered);
}
