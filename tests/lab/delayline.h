/* delayline.h - the delay line's types: one direction of the WAN link (struct link), its
 * packet store and the link model's prototypes (link.c); options and the loop are in
 * delayline.c. */
#ifndef DELAYLINE_H
#define DELAYLINE_H

#include <stddef.h>
#include <stdint.h>

/* Largest packet a tun device hands over (IFF_TUN without IFF_VNET_HDR: at most the MTU). */
#define PKT_MAX 65536

/* What one direction of the link does to the packets that cross it. */
struct link_params {
	uint64_t rate_bps;    /* serialisation rate, bit/s */
	int64_t delay_ns;     /* one-way propagation delay */
	int64_t jitter_ns;    /* uniform +- jitter added to each packet's delay */
	uint64_t queue_bytes; /* drop-tail limit of the backlog waiting to be serialised */
	double loss;          /* probability that an arriving packet is dropped */
	int reorder;          /* jitter may reorder packets (else a packet never overtakes) */
};

/* Counts of one direction, printed at exit and on SIGUSR1. */
struct link_stats {
	uint64_t in;        /* packets read from the input tun */
	uint64_t out;       /* packets written to the output tun */
	uint64_t out_bytes; /* their bytes */
	uint64_t lost;      /* dropped by the random loss */
	uint64_t qdrop;     /* dropped because the queue was full (drop-tail) */
	uint64_t noroom;    /* dropped because the packet store was full (should stay 0) */
	uint64_t werr;      /* writes the output tun refused (e.g. EIO while it is down) */
	uint64_t reordered; /* written after a packet that arrived later (jitter with reorder) */
};

/* Packets in flight, in arrival order: records of a header and the packet, 8-byte aligned,
 * in one ring. A packet is read straight into the ring and leaves from it. */
struct ring {
	unsigned char *buf;
	size_t size;
	size_t head; /* oldest record */
	size_t tail; /* where the next record goes */
	size_t used; /* bytes held, records and skipped ends */
};

/* With reordering: the records by due time (ties by arrival), a binary min-heap. */
struct heap_ent {
	int64_t due;
	uint64_t seq;
	size_t off;
};
struct heap {
	struct heap_ent *v;
	size_t n, cap;
};

/* One direction: packets read from in_fd, modelled, written to out_fd when due. */
struct link {
	char name[8]; /* "A->B" */
	int in_fd, out_fd;
	struct link_params p;
	uint64_t rng;       /* xorshift64* state: loss and jitter draws, seeded */
	int64_t busy_until; /* when the link has serialised the last accepted packet */
	int64_t last_due;   /* latest due time given, so that without reorder none overtakes */
	uint64_t seq;       /* arrival counter (heap ties) */
	uint64_t seq_out;   /* 1 + the latest arrival number written so far (reorder only) */
	struct ring ring;
	struct heap heap;
	int out_blocked;        /* the output tun said EAGAIN: wait for POLLOUT */
	unsigned char *scratch; /* where a packet goes when the ring has no room */
	struct link_stats st;
};

/* link.c */
int link_init(struct link *l, const char *name, int in_fd, int out_fd, const struct link_params *p,
              uint64_t seed);
void link_free(struct link *l);
int link_read(struct link *l, int64_t now, int batch);
int link_deliver(struct link *l, int64_t now);
int64_t link_next_due(struct link *l);
void link_print_stats(const struct link *l);

#endif
