/* test-reliable.c: --reliable's pure parts: the range sets, the receiver's reorder store and
 * the wire format's round trips and refusals. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "reliable/reliable.h"
#include "tap.h"

static void ranges_merge(void)
{
	struct rangeset s = {.n = 0};

	rangeset_add(&s, 10, 20);
	rangeset_add(&s, 30, 40);
	tap_ok(s.n == 2, "two apart stay two");
	rangeset_add(&s, 20, 30);
	tap_ok(s.n == 1 && s.r[0].from == 10 && s.r[0].to == 40, "the range between joins them");
	rangeset_add(&s, 50, 60);
	rangeset_add(&s, 5, 55);
	tap_ok(s.n == 1 && s.r[0].from == 5 && s.r[0].to == 60, "one over both swallows them");
	tap_ok(rangeset_has(&s, 5, 60) && !rangeset_has(&s, 4, 6) && rangeset_has(&s, 7, 7),
	       "has: inside yes, across an edge no, empty yes");
}

static void ranges_bounded(void)
{
	struct rangeset s = {.n = 0};
	int rc = 0;

	for (uint64_t i = 0; i < RELIABLE_RANGES; i++)
		rc |= rangeset_add(&s, 10 * i, 10 * i + 5);
	tap_ok(rc == 0 && s.n == RELIABLE_RANGES, "%d ranges fit", RELIABLE_RANGES);
	tap_ok(rangeset_add(&s, 100000, 100001) == -1 && s.n == RELIABLE_RANGES,
	       "one more is refused, the set unchanged");
	tap_ok(rangeset_add(&s, 5, 10) == 0 && s.n == RELIABLE_RANGES - 1,
	       "one that joins two still fits, and makes room");
}

static void ranges_join(void)
{
	struct rangeset s = {.n = 0};

	rangeset_add(&s, 5, 10);
	rangeset_add(&s, 12, 15);
	tap_ok(rangeset_join(&s, 3) == 3 && s.n == 2, "a gap before the first: nothing joins");
	tap_ok(rangeset_join(&s, 5) == 10 && s.n == 1 && s.r[0].from == 12,
	       "the first range joins the run, the next stays");
}

/* A stream of n bytes in datagrams of d, sent in a shuffled order with duplicates, through a
 * store of size; stdout takes what is ready after each; what was dropped comes again. */
static int shuffled(size_t n, size_t d, size_t size, unsigned seed)
{
	unsigned char *in = malloc(n), *out = malloc(n);
	size_t count = (n + d - 1) / d, got = 0, rounds = 0;
	unsigned char *done = calloc(count, 1);
	struct reorder r;
	int ok;

	srand(seed);
	for (size_t i = 0; i < n; i++)
		in[i] = (unsigned char)rand();
	reorder_init(&r, size);
	while (got < n && rounds++ < 100000) {
		size_t k = (size_t)rand() % count, len = k == count - 1 ? n - k * d : d;
		const unsigned char *p;
		size_t ready;

		if (reorder_put(&r, k * d, in + k * d, len) != REORDER_FAR)
			done[k] = 1;
		while ((ready = reorder_ready(&r, &p)) > 0) {
			memcpy(out + got, p, ready);
			got += ready;
			reorder_took(&r, ready);
		}
	}
	ok = got == n && memcmp(in, out, n) == 0 && r.cum == n && r.ahead.n == 0;
	reorder_free(&r);
	free(in);
	free(out);
	free(done);
	return ok;
}

/* Bytes a receive put in the ring itself (reorder_at), then marked: as reorder_put's. */
static void reorder_in_place(void)
{
	unsigned char a[10] = "0123456789", got[10];
	const unsigned char *p;
	struct reorder r;
	size_t contig;
	unsigned char *at;

	reorder_init(&r, 100);
	reorder_took(&r, 90); /* as if stdout took 90: offsets 90.. wrap at 100 */
	r.cum = 90;
	at = reorder_at(&r, 95, &contig);
	tap_ok(at == r.buf + 95 && contig == 5, "offset 95 lies 5 bytes before the ring's end");
	memcpy(at, a + 5, 5); /* what a receive's two pieces would do */
	memcpy(r.buf, "XYZ", 3);
	reorder_read(&r, 95, got, 8);
	tap_ok(memcmp(got, "56789XYZ", 8) == 0, "reorder_read takes the wrap");
	tap_ok(reorder_mark(&r, 95, 8) == REORDER_NEW && r.cum == 90 && r.ahead.n == 1,
	       "marked ahead of a gap: waits");
	memcpy(reorder_at(&r, 90, &contig), a, 5);
	tap_ok(reorder_mark(&r, 90, 5) == REORDER_NEW && r.cum == 103 && r.ahead.n == 0,
	       "the gap marked: cum past the wrap");
	tap_ok(reorder_ready(&r, &p) == 10 && memcmp(p, "0123456789", 10) == 0,
	       "stdout gets the bytes up to the ring's end first");
	tap_ok(reorder_mark(&r, 92, 4) == REORDER_DUP && r.duplicates == 1,
	       "marked twice: a duplicate");
	tap_ok(reorder_mark(&r, 185, 10) == REORDER_FAR && r.dropped == 1,
	       "beyond the store: not taken");
	reorder_free(&r);
}

/* The ring starts again at out whenever stdout took all it held, and only then. */
static void reorder_anchor(void)
{
	unsigned char a[40] = "0123456789abcdefghijklmnopqrstuvwxyzABCD";
	const unsigned char *p;
	struct reorder r;
	size_t contig;

	reorder_init(&r, 100);
	reorder_put(&r, 0, a, 30);
	reorder_took(&r, reorder_ready(&r, &p));
	tap_ok(reorder_at(&r, 30, &contig) == r.buf && contig == 100,
	       "emptied: the next offset lies at the ring's start");
	reorder_put(&r, 30, a, 10);
	reorder_put(&r, 50, a + 20, 10); /* ahead of a gap */
	tap_ok(reorder_ready(&r, &p) == 10 && p == r.buf && memcmp(p, a, 10) == 0,
	       "the bytes after it come from the ring's start");
	reorder_took(&r, 10);
	tap_ok(reorder_at(&r, 40, &contig) == r.buf + 10,
	       "bytes held beyond a gap: the ring does not move");
	reorder_put(&r, 40, a + 10, 10);
	tap_ok(reorder_ready(&r, &p) == 20 && p == r.buf + 10 && memcmp(p, a + 10, 20) == 0,
	       "the gap filled: in order across it");
	reorder_took(&r, 20);
	tap_ok(reorder_at(&r, 60, &contig) == r.buf, "emptied again: back at the start");
	reorder_put(&r, 60, a, 40);
	reorder_put(&r, 100, a, 40);
	reorder_put(&r, 140, a, 20);
	tap_ok(reorder_ready(&r, &p) == 100 && reorder_put(&r, 160, a, 1) == REORDER_FAR,
	       "a full ring from its new start: 100 bytes, then no room");
	reorder_free(&r);
}

static void reorder_basics(void)
{
	unsigned char a[10] = "0123456789", b[10] = "abcdefghij";
	const unsigned char *p;
	struct reorder r;

	reorder_init(&r, 100);
	tap_ok(reorder_put(&r, 10, b, 10) == REORDER_NEW && reorder_ready(&r, &p) == 0 &&
	           r.ahead.n == 1,
	       "bytes ahead of a gap wait");
	tap_ok(reorder_put(&r, 0, a, 10) == REORDER_NEW && reorder_ready(&r, &p) == 20 &&
	           memcmp(p, a, 10) == 0 && memcmp(p + 10, b, 10) == 0 && r.ahead.n == 0,
	       "the gap filled: both ready, in order");
	tap_ok(reorder_put(&r, 5, a, 5) == REORDER_DUP && r.duplicates == 1, "a duplicate");
	tap_ok(reorder_put(&r, 95, a, 10) == REORDER_FAR && r.dropped == 1,
	       "beyond the store: dropped");
	reorder_took(&r, 20);
	tap_ok(reorder_put(&r, 20, a, 10) == REORDER_NEW && r.cum == 30, "after stdout took some");
	reorder_free(&r);
	tap_ok(shuffled(100000, 1000, 8192, 1), "100000 bytes, 1000 a datagram, shuffled with "
	                                        "duplicates through 8 KiB: byte-exact");
	tap_ok(shuffled(99999, 1472, 65536, 2), "an odd length, 1472 a datagram, 64 KiB: exact");
}

static void wire_round_trips(void)
{
	unsigned char p[RELIABLE_ACK_MAX];
	struct reliable_ack a = {.largest_pkt = 77,
	                         .delay_us = 250,
	                         .room = 4096,
	                         .cum = 1000,
	                         .delivered = 5000,
	                         .n = 2},
	                    b;
	struct reliable_hello h = {.nonce = 42, .room = 1 << 20, .payload = 1440}, h2;
	struct reliable_end e = {.bytes = 123, .digest = 0xfeedULL, .datagrams = 9}, e2;
	struct reliable_data d = {.pkt = 5, .off = 8192}, d2;
	size_t len;

	a.range[0] = (struct reliable_range){1500, 2000};
	a.range[1] = (struct reliable_range){3000, 3100};
	len = reliable_ack_encode(p, 9, &a);
	tap_ok(reliable_ack_decode(p, len, &b) == 0 && b.n == 2 && b.cum == 1000 &&
	           b.range[1].to == 3100 && b.room == 4096 && b.largest_pkt == 77,
	       "an acknowledgement with two ranges: round trip");
	tap_ok(reliable_ack_decode(p, len - 1, &b) != 0, "a length that is no whole range");
	a.range[1].from = 1900;
	len = reliable_ack_encode(p, 9, &a);
	tap_ok(reliable_ack_decode(p, len, &b) != 0, "ranges that overlap are refused");
	len = reliable_hello_encode(p, RELIABLE_ANSWER, 9, &h);
	tap_ok(reliable_hello_decode(p, len, &h2) == 0 && h2.nonce == 42 && h2.payload == 1440,
	       "a hello: round trip");
	len = reliable_end_encode(p, RELIABLE_END, 9, &e);
	tap_ok(reliable_end_decode(p, len, &e2) == 0 && e2.digest == 0xfeedULL, "an end");
	len = reliable_data_encode(p, 9, &d);
	tap_ok(reliable_data_decode(p, len, &d2) != 0, "data without a byte of payload");
	tap_ok(reliable_data_decode(p, len + 1, &d2) == 0 && d2.off == 8192 && d2.pkt == 5,
	       "data: round trip");
	p[5] = RELIABLE_VERSION + 1;
	tap_ok(reliable_data_decode(p, len + 1, &d2) != 0, "another version is refused");
}

static struct reliable_ack ack_of(uint64_t largest, uint64_t cum, uint64_t from, uint64_t to)
{
	struct reliable_ack a = {.largest_pkt = largest, .cum = cum, .n = from < to};

	a.range[0] = (struct reliable_range){from, to};
	return a;
}

static void sent_losses(void)
{
	struct sent_log l;
	struct sent_news news;
	struct reliable_ack a;
	uint64_t off;
	size_t len;

	sent_init(&l, 64);
	for (int i = 0; i < 10; i++)
		sent_add(&l, 100 * (uint64_t)i, 100, 0.001 * i);
	a = ack_of(9, 300, 400, 1000);
	sent_ack(&l, &a, 0.1, &news);
	tap_ok(news.acked_bytes == 900 && news.lost_bytes == 100 && l.lost_pkts == 1,
	       "all but one acknowledged; the one 6 numbers below the largest is lost");
	tap_ok(news.rtt > 0.0905 && news.rtt < 0.0915 && l.min_rtt == news.rtt,
	       "the round trip from the largest number: %.4f s", news.rtt);
	tap_ok(news.rate > 9800 && news.rate < 9900,
	       "the delivery rate since it was sent: %.0f B/s", news.rate);
	tap_ok(sent_next_repair(&l, 1000, 0, &off, &len) == 1 && off == 300 && len == 100 &&
	           sent_next_repair(&l, 1000, 0, &off, &len) == 0,
	       "its bytes wait for repair, once");
	tap_ok(l.first == 10, "nothing older is kept");
	sent_add(&l, 1000, 100, 0.2);
	sent_add(&l, 1100, 100, 0.3);
	a = ack_of(11, 1000, 1100, 1200);
	sent_ack(&l, &a, 0.41, &news);
	tap_ok(news.lost_bytes == 100 && sent_next_repair(&l, 1000, 0, &off, &len) == 1 &&
	           off == 1000,
	       "one number below the largest but 9/8 round trips older: lost too");
	sent_free(&l);
}

static void sent_repair_skips(void)
{
	struct sent_log l;
	struct sent_news news;
	struct reliable_ack a;
	uint64_t off;
	size_t len;

	sent_init(&l, 4);
	for (int i = 0; i < 4; i++)
		sent_add(&l, 1000 * (uint64_t)i, 1000, 0);
	tap_ok(sent_full(&l), "4 on the way fill a record of 4");
	sent_free(&l);
	sent_init(&l, 8);
	for (int i = 0; i < 4; i++)
		sent_add(&l, 1000 * (uint64_t)i, 1000, 0);
	a = ack_of(3, 0, 3000, 4000);
	sent_ack(&l, &a, 0.05, &news);
	tap_ok(news.lost_bytes == 1000, "number 0, 3 below the largest, is lost; 1 and 2 not yet");
	for (int i = 0; i < 3; i++)
		sent_add(&l, 4000 + 1000 * (uint64_t)i, 1000, 0.06);
	a = ack_of(6, 0, 1500, 2000);
	a.n = 2;
	a.range[1] = (struct reliable_range){3000, 7000};
	sent_ack(&l, &a, 0.07, &news);
	tap_ok(news.lost_bytes == 2000, "then 1 and 2 are: 2000 bytes more");
	tap_ok(sent_next_repair(&l, 700, 0, &off, &len) == 1 && off == 0 && len == 700 &&
	           sent_next_repair(&l, 700, 0, &off, &len) == 1 && off == 700 && len == 700 &&
	           sent_next_repair(&l, 700, 0, &off, &len) == 1 && off == 1400 && len == 100 &&
	           sent_next_repair(&l, 700, 0, &off, &len) == 1 && off == 2000 && len == 700,
	       "repairs in pieces of at most 700, around what the receiver has (1500-2000)");
	sent_free(&l);
	sent_init(&l, 8);
	(void)rangeset_add(&l.repair, 990, 1010);
	tap_ok(sent_next_repair(&l, 1440, 1000, &off, &len) == 1 && off == 990 && len == 10 &&
	           sent_next_repair(&l, 1440, 1000, &off, &len) == 1 && off == 1000 && len == 10 &&
	           sent_next_repair(&l, 1440, 1000, &off, &len) == 0,
	       "a repair across the ring's end goes in two pieces, none of it forgotten");
	sent_free(&l);

	sent_init(&l, 8);
	sent_add(&l, 0, 1000, 0);
	sent_app_limited(&l, 1000); /* stdin had no more, 1000 bytes on the way */
	sent_add(&l, 1000, 1000, 0.01);
	a = ack_of(0, 1000, 0, 0);
	sent_ack(&l, &a, 0.05, &news);
	{
		int first = news.app_limited;

		a = ack_of(1, 2000, 0, 0);
		sent_ack(&l, &a, 0.06, &news);
		tap_ok(!first && news.app_limited && l.app_limited == 0,
		       "a datagram sent while stdin held the sender back gives an app-limited "
		       "sample; once what was on the way is delivered, the mark is gone");
	}
	sent_free(&l);
}

/* A path for the simulation: a bottleneck of rate bytes a second with a drop-tail queue of
 * one bandwidth-delay product, a round trip of rtt, random loss. */
struct path {
	double rate, rtt, loss;
};

/* One acknowledgement on its way back: when it arrives, for which datagram. */
struct echo {
	double at;
	uint64_t pkt, off;
	uint32_t len;
};

/* The receiver: what came, acknowledged at once (cum and the last 64 ranges, as reorder_sack). */
static struct reliable_ack receive(struct rangeset *got, uint64_t *cum, const struct echo *e)
{
	struct reliable_ack a = {.largest_pkt = e->pkt};

	if (e->off + e->len > *cum) {
		(void)rangeset_add(got, e->off, e->off + e->len);
		*cum = rangeset_join(got, *cum);
	}
	a.cum = *cum;
	a.n = got->n < RELIABLE_SACK_MAX ? got->n : RELIABLE_SACK_MAX;
	memcpy(a.range, got->r + (got->n - a.n), a.n * sizeof a.range[0]);
	return a;
}

/* The sender's next datagram: a repair first, else new bytes; dropped or echoed. */
static void send_one(struct sent_log *l, uint64_t *top, const struct path *p, double now,
                     double *busy_until, struct echo *q, size_t *nq)
{
	uint64_t off;
	size_t len;
	double queued;

	if (!sent_next_repair(l, 1440, 0, &off, &len)) {
		off = *top;
		len = 1440;
		*top += len;
	}
	uint64_t pkt = sent_add(l, off, (uint32_t)len, now);
	queued = (*busy_until > now ? *busy_until - now : 0) * p->rate;
	if (queued + len > p->rate * p->rtt || (double)rand() / RAND_MAX < p->loss)
		return; /* the queue is full, or the path lost it */
	*busy_until = (*busy_until > now ? *busy_until : now) + len / p->rate;
	q[(*nq)++] = (struct echo){*busy_until + p->rtt, pkt, off, (uint32_t)len};
}

/* seconds of the sender and the model on the path: the goodput of the last second, in
 * bytes a second, and the mean round trip the samples saw. */
static double simulate(const struct path *p, double seconds, double *mean_rtt)
{
	static struct echo q[1 << 20];
	static struct rangeset got;
	struct sent_log l;
	struct rate_model m;
	size_t nq = 0, head = 0, samples = 0;
	uint64_t top = 0, cum = 0, cum_then = 0, inflight = 0;
	double now = 0, next_send = 0, busy = 0, rtt_sum = 0;

	memset(&got, 0, sizeof got);
	sent_init(&l, 1 << 16);
	rate_init(&m, 1e6, 0, 0);
	while (now < seconds && nq < (1 << 20) - 1) {
		int can = !sent_full(&l) && inflight + 1440 <= rate_inflight(&m, 4 * 1440);
		double t_ack = head < nq ? q[head].at : 1e18, t_send = can ? next_send : 1e18;

		if (t_ack <= t_send) {
			struct reliable_ack a = receive(&got, &cum, &q[head++]);
			struct sent_news news;

			now = t_ack;
			sent_ack(&l, &a, now, &news);
			inflight -= news.acked_bytes + news.lost_bytes;
			rate_sample(&m, now, news.rtt, news.rate, (double)inflight, 0);
			if (news.rtt > 0 && now > 1) {
				rtt_sum += news.rtt;
				samples++;
			}
			if (next_send < now)
				next_send = now;
		} else {
			now = t_send;
			send_one(&l, &top, p, now, &busy, q, &nq);
			inflight += 1440;
			next_send = now + 1440 / rate_pacing(&m);
		}
		if (cum_then == 0 && now >= seconds - 1)
			cum_then = cum + 1;
	}
	sent_free(&l);
	*mean_rtt = samples > 0 ? rtt_sum / samples : 0;
	return (double)(cum - (cum_then - 1));
}

static void rate_modes(void)
{
	struct rate_model m;
	int changes = 0;

	rate_init(&m, 1e6, 5e5, 0);
	tap_ok(rate_pacing(&m) == 5e5, "--rate-limit caps the pace from the start");
	rate_init(&m, 1e6, 0, 0);
	/* a path of 10 MB/s and 20 ms: each round trip delivers at most that */
	for (int i = 1; i <= 400; i++) {
		double t = 0.005 * i, sent = rate_pacing(&m);

		changes += rate_sample(&m, t, 0.02, sent < 1e7 ? sent : 1e7, 1e7 * 0.02, 0);
	}
	tap_ok(m.mode == RATE_PROBE && changes >= 1 && m.bw == 1e7,
	       "startup, drain, then probe at the path's 10 MB/s: %s", m.why);
	tap_ok(rate_inflight(&m, 0) == 2 * 1e7 * 0.02, "on the way: twice the rate's round trip");

	/* loopback: 0.1 ms round trips, then a hiccup of 2 ms that delivered little */
	rate_init(&m, 1e6, 0, 0);
	for (int i = 1; i <= 210; i++) {
		double t = 0.0001 * i, rate = i > 190 ? 1e8 : 2e9;

		rate_sample(&m, t, 0.0001, rate, 2e9 * 0.0001, 0);
	}
	tap_ok(m.round == 4 && m.bw == 2e9,
	       "a round lasts 5 ms at least: 21 ms of 0.1 ms round trips are %u rounds, and a 2 ms "
	       "hiccup leaves the rate at %.0f MB/s",
	       m.round, m.bw / 1e6);

	/* 10 MB/s at 20 ms, then stdin pauses: heartbeats for 1.5 s, then a trickle it held back */
	rate_init(&m, 1e6, 0, 0);
	for (int i = 1; i <= 400; i++)
		rate_sample(&m, 0.005 * i, 0.02, 1e7, 1e7 * 0.02, 0);
	for (int i = 1; i <= 15; i++)
		rate_sample(&m, 2 + 0.1 * i, 0, 0, 0, 0);
	tap_ok(m.bw == 1e7,
	       "1.5 s of acknowledgements that deliver nothing keep the rate: %.0f MB/s",
	       m.bw / 1e6);
	for (int i = 1; i <= 400; i++)
		rate_sample(&m, 3.5 + 0.005 * i, 0.02, 1e6, 1e6 * 0.02, 1);
	tap_ok(m.bw == 1e7, "2 s of samples stdin held back at 1 MB/s keep it too: %.0f MB/s",
	       m.bw / 1e6);
	for (int i = 1; i <= 400; i++)
		rate_sample(&m, 5.5 + 0.005 * i, 0.02, 5e6, 5e6 * 0.02, 0);
	tap_ok(m.bw == 5e6, "a path that gives only 5 MB/s for 2 s lowers it: %.0f MB/s",
	       m.bw / 1e6);
}

/* A multicast repair leaves every other receiver's repair set: whole ranges, ends, a middle. */
static void ranges_remove(void)
{
	static struct rangeset s, full;
	int rc = 0;

	rangeset_add(&s, 10, 20);
	rangeset_add(&s, 30, 40);
	rangeset_add(&s, 50, 60);
	rangeset_remove(&s, 15, 35); /* the end of one, the start of the next */
	tap_ok(s.n == 3 && s.r[0].to == 15 && s.r[1].from == 35 && s.r[2].from == 50,
	       "remove across two ranges cuts both: [10,15) [35,40) [50,60)");
	rangeset_remove(&s, 52, 55); /* inside one: two pieces */
	tap_ok(s.n == 4 && s.r[2].to == 52 && s.r[3].from == 55 && s.r[3].to == 60,
	       "remove inside a range cuts it in two");
	rangeset_remove(&s, 0, 100);
	tap_ok(s.n == 0, "remove over everything empties the set");
	for (unsigned i = 0; i < RELIABLE_RANGES; i++)
		rc |= rangeset_add(&full, 10 * i, 10 * i + 5);
	tap_ok(rc == 0 && rangeset_remove(&full, 1, 2) == -1 && full.n == RELIABLE_RANGES &&
	           full.r[0].to == 5,
	       "a cut that needs one range too many fails and leaves the set as it was");
}

static void rate_finds_the_path(void)
{
	struct path clean = {12.5e6, 0.05, 0}, lossy = {12.5e6, 0.05, 0.01},
	            long_fat = {125e6, 0.1, 0.01};
	double rtt, got;

	srand(7);
	got = simulate(&clean, 4, &rtt);
	tap_ok(got > 0.9 * clean.rate && rtt < 1.5 * clean.rtt,
	       "100 Mbit/s, 50 ms, no loss: %.0f %% of the link in the 4th second, round trip "
	       "%.1f ms",
	       100 * got / clean.rate, rtt * 1e3);
	got = simulate(&lossy, 4, &rtt);
	tap_ok(got > 0.8 * lossy.rate, "100 Mbit/s, 50 ms, 1 %% loss: %.0f %% of the link",
	       100 * got / lossy.rate);
	got = simulate(&long_fat, 4, &rtt);
	tap_ok(got > 0.75 * long_fat.rate, "1 Gbit/s, 100 ms, 1 %% loss: %.0f %% of the link",
	       100 * got / long_fat.rate);
}

int main(void)
{
	ranges_merge();
	ranges_bounded();
	ranges_join();
	ranges_remove();
	reorder_basics();
	reorder_in_place();
	reorder_anchor();
	wire_round_trips();
	sent_losses();
	sent_repair_skips();
	rate_modes();
	rate_finds_the_path();
	return tap_done();
}
