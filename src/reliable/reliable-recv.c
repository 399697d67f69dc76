/*
 * reliable-recv.c: the --reliable receiver's pump. Datagrams come in batches into the reorder
 * store (reliable-reorder.c), stdout takes the bytes strictly in order, and an acknowledgement
 * (cum, the ranges beyond it, the room left) goes every 16 datagrams, within 1 ms of the first
 * unacknowledged one, at once when a gap opens or a repair fills one, and every 100 ms in any case.
 * At the sender's end, once stdout has all of it, the confirmation (count and XXH64 of what it
 * wrote) answers each end until the sender's last word.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fastcat.h"
#include "relay/flow.h"
#include "reliable/reliable.h"

#define ACK_EVERY     16    /* data datagrams an acknowledgement answers at most */
#define ACK_DELAY     0.001 /* seconds the first unacknowledged one waits at most */
#define ACK_HEARTBEAT 0.1   /* seconds between acknowledgements while nothing comes */
#define LINGER        1.0   /* seconds after the confirmation for the sender's end to come again */
/*
 * A batch's payloads, and each write's bytes, stay small enough to be in the cache still when
 * write(2) copies them and XXH64 reads them. With 64 batched datagrams of 64 KiB (4 MiB), both
 * read main memory: 1 GiB into a tmpfs file took the receiver about 10 % longer.
 */
#define BATCH_BYTES (256 * 1024)
#define WRITE_PIECE (256 * 1024)

void reliable_recv_free(struct reliable_recv *r)
{
	reorder_free(&r->store);
	free(r->slots);
	r->slots = NULL;
}

/* Bytes the store can still take beyond cum. */
static uint32_t room(const struct reliable_recv *r)
{
	uint64_t left = r->store.out + r->store.size - r->store.cum;

	return left > UINT32_MAX ? UINT32_MAX : (uint32_t)left;
}

static void send_small(int fd, const unsigned char *p, size_t len)
{
	(void)send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* The receiver's own datagrams carry its tag (a multicast sender tells receivers apart by it). */
static void send_tagged(const struct reliable_recv *r, unsigned char *p, size_t len)
{
	reliable_head_tag(p, r->tag);
	send_small(r->fd, p, len);
}

static void send_ack(struct reliable_recv *r, double now)
{
	unsigned char p[RELIABLE_ACK_MAX];
	struct reliable_ack a = {
	    .largest_pkt = r->largest_pkt,
	    .delay_us = (uint32_t)((now - r->largest_at) * 1e6),
	    .room = room(r),
	    .cum = r->store.cum,
	    .delivered = r->delivered,
	};
	size_t len;

	if (r->largest_at == 0)
		a.delay_us = 0;
	a.n = reorder_sack(&r->store, a.range, RELIABLE_SACK_MAX);
	len = reliable_ack_encode(p, r->session, &a);
	send_tagged(r, p, len);
	r->unacked = 0;
	r->gap = 0;
	r->acked_at = now;
	r->room_told = a.room;
	r->fig->acks++;
	r->fig->gap_acks += a.n > 0;
}

/* When the next acknowledgement is due (it may be now). */
static double ack_due(const struct reliable_recv *r)
{
	double due = r->acked_at + ACK_HEARTBEAT;

	if (r->unacked >= ACK_EVERY || r->gap)
		return 0;
	if (r->unacked > 0 && r->unacked_at + ACK_DELAY < due)
		due = r->unacked_at + ACK_DELAY;
	/* stdout took a good part of a full store: the sender may go on */
	if (room(r) >= r->room_told + r->store.size / 8)
		return 0;
	return due;
}

/* The confirmation of what stdout wrote (sent again at each end the sender sends). */
static void send_confirm(struct reliable_recv *r)
{
	unsigned char p[RELIABLE_END_LEN];
	struct reliable_end c = {
	    .bytes = r->store.out, .digest = digest_final(&r->digest), .datagrams = r->datagrams};

	size_t len = reliable_end_encode(p, RELIABLE_CONFIRM, r->session, &c);

	send_tagged(r, p, len);
}

/* A data datagram's n payload bytes at d->off, counted; the store takes them after. */
static void note_data(struct reliable_recv *r, const struct reliable_data *d, size_t n, double now)
{
	r->datagrams++;
	r->fig->datagrams++;
	r->delivered += n;
	if (r->unacked++ == 0)
		r->unacked_at = now;
	if (d->pkt >= r->largest_pkt || r->largest_at == 0) {
		r->largest_pkt = d->pkt;
		r->largest_at = now;
	}
	if (d->off != r->highest)
		r->gap = 1; /* a new gap, or a repair: say so at once */
	if (d->off + n > r->highest)
		r->highest = d->off + n;
}

static void count_put(struct reliable_recv *r, enum reorder_put put)
{
	r->fig->duplicates += put == REORDER_DUP;
	r->fig->dropped += put == REORDER_FAR || put == REORDER_FULL;
}

/* A data datagram: into the store. */
static void take_data(struct reliable_recv *r, const unsigned char *p, size_t n, double now)
{
	struct reliable_data d;

	if (reliable_data_decode(p, n, &d) != 0)
		return;
	n -= RELIABLE_DATA_HEAD;
	note_data(r, &d, n, now);
	count_put(r, reorder_put(&r->store, d.off, p + RELIABLE_DATA_HEAD, n));
}

/* One datagram from the sender. 1: the sender's last word came, 0 go on. */
static int take_datagram(struct reliable_recv *r, const unsigned char *p, size_t n, double now)
{
	struct reliable_head h;
	unsigned char a[RELIABLE_HELLO_LEN];
	size_t len;

	if (reliable_head_decode(p, n, &h) != 0 || h.session != r->session)
		return 0; /* not ours: never written */
	r->heard_at = now;
	switch (h.type) {
	case RELIABLE_DATA: take_data(r, p, n, now); return 0;
	case RELIABLE_HELLO: /* our answer was lost */
		len = reliable_hello_encode(a, RELIABLE_ANSWER, r->session, &r->answer);
		send_tagged(r, a, len);
		return 0;
	case RELIABLE_END:
		if (reliable_end_decode(p, n, &r->end) != 0)
			return 0;
		r->end_seen = 1;
		if (r->confirmed)
			send_confirm(r);
		return 0;
	case RELIABLE_CONFIRM: return r->confirmed; /* the sender has our confirmation */
	case RELIABLE_REFUSE: /* a multicast sender dropped a receiver: this one? */
		r->dropped |= h.tag == r->tag && !r->confirmed;
		return 0;
	default: return 0;
	}
}

#define NO_GUESS UINT64_MAX

/*
 * One recvmmsg's datagrams. Each one's header goes to head; its payload to the ring, at the
 * place of the offset it has if the sender goes on in order from the highest byte so far
 * (guess), so that in-order data is not copied again in user space; or, where that place is
 * beyond the store, to its slot.
 */
struct recv_batch {
	struct msghdr msg[BATCH_MAX];
	struct iovec iov[BATCH_MAX][3];
	unsigned char head[BATCH_MAX][RELIABLE_DATA_HEAD];
	uint64_t guess[BATCH_MAX]; /* NO_GUESS: the payload is in its slot */
	size_t lens[BATCH_MAX];
};

static unsigned batch_prepare(struct reliable_recv *r, struct recv_batch *b)
{
	size_t slot = RELIABLE_DATA_HEAD + r->payload;
	uint64_t limit = r->store.out + r->store.size;
	unsigned count = BATCH_BYTES / slot;

	count = count < 1 ? 1 : count > BATCH_MAX ? BATCH_MAX : count;
	memset(b->msg, 0, sizeof b->msg);
	for (unsigned i = 0; i < count; i++) {
		uint64_t g = r->highest + (uint64_t)i * r->payload;
		struct iovec *iov = b->iov[i];
		size_t contig, n = 0;
		unsigned char *at;

		iov[n++] = (struct iovec){b->head[i], RELIABLE_DATA_HEAD};
		b->guess[i] = g + r->payload <= limit ? g : NO_GUESS;
		if (b->guess[i] == NO_GUESS) {
			iov[n++] =
			    (struct iovec){r->slots + i * slot + RELIABLE_DATA_HEAD, r->payload};
		} else if ((at = reorder_at(&r->store, g, &contig)), contig >= r->payload) {
			iov[n++] = (struct iovec){at, r->payload};
		} else { /* the ring's end: the rest at its start */
			iov[n++] = (struct iovec){at, contig};
			iov[n++] = (struct iovec){r->store.buf, r->payload - contig};
		}
		b->msg[i].msg_iov = iov;
		b->msg[i].msg_iovlen = n;
	}
	return count;
}

/* Datagram i is data of this session at the offset guessed: counted and held where it is. */
static int take_in_place(struct reliable_recv *r, const struct recv_batch *b, unsigned i,
                         double now)
{
	struct reliable_data d;
	struct reliable_head h;
	size_t n = b->lens[i];

	if (b->guess[i] == NO_GUESS || reliable_head_decode(b->head[i], n, &h) != 0 ||
	    h.session != r->session || reliable_data_decode(b->head[i], n, &d) != 0 ||
	    d.off != b->guess[i])
		return 0;
	r->heard_at = now;
	n -= RELIABLE_DATA_HEAD;
	note_data(r, &d, n, now);
	count_put(r, reorder_mark(&r->store, d.off, n));
	return 1;
}

/*
 * Datagrams from..got-1 whole in their slots, before any is taken: one out of order would be
 * copied to its place in the ring, where the payloads after it may lie still.
 */
static void batch_gather(struct reliable_recv *r, const struct recv_batch *b, unsigned from,
                         unsigned got)
{
	size_t slot = RELIABLE_DATA_HEAD + r->payload;

	for (unsigned i = from; i < got; i++) {
		unsigned char *p = r->slots + i * slot;
		size_t n = b->lens[i] < slot ? b->lens[i] : slot;

		memcpy(p, b->head[i], n < RELIABLE_DATA_HEAD ? n : RELIABLE_DATA_HEAD);
		if (b->guess[i] != NO_GUESS && n > RELIABLE_DATA_HEAD)
			reorder_read(&r->store, b->guess[i], p + RELIABLE_DATA_HEAD,
			             n - RELIABLE_DATA_HEAD);
	}
}

/* A batch of datagrams from the socket. 1 some came, 0 none, 2 the sender's last word, -1. */
static int read_socket(struct flow *f, struct reliable_recv *r)
{
	struct recv_batch b;
	size_t slot = RELIABLE_DATA_HEAD + r->payload;
	int got, gathered = 0;
	double now;

	got = batch_recv(r->fd, b.msg, batch_prepare(r, &b), b.lens);
	f->stats->reads++;
	if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
		f->sock_ready = 0;
		return 0;
	}
	if (got < 0 && errno == ECONNREFUSED)
		return 0; /* an acknowledgement met a closed port: the sender's silence will tell */
	if (got < 0) {
		flow_failed(f, 0, errno);
		return -1;
	}
	now = clock_now();
	for (int i = 0; i < got; i++) {
		f->stats->datagrams++;
		flow_count_read(f, b.lens[i]);
		if (!gathered && take_in_place(r, &b, (unsigned)i, now))
			continue;
		if (!gathered) {
			batch_gather(r, &b, (unsigned)i, (unsigned)got);
			gathered = 1;
		}
		if (take_datagram(r, r->slots + (size_t)i * slot, b.lens[i], now))
			return 2;
	}
	if (got > 0)
		f->moved = 1;
	return got > 0;
}

/* One piece of what stdout may take, in order. 1 wrote some, 0 nothing, -1 failed. */
static int write_piece(struct flow *f, struct reliable_recv *r)
{
	const unsigned char *p;
	size_t len = reorder_ready(&r->store, &p);
	ssize_t n;

	if (len == 0 || !r->stdout_ready)
		return 0;
	if (len > WRITE_PIECE)
		len = WRITE_PIECE;
	if (f->discard) {
		n = (ssize_t)len;
	} else {
		n = write(f->stdio, p, len);
		f->stats->writes++;
	}
	switch (io_result(n)) {
	case IO_MOVED:
		digest_update(&r->digest, p, (size_t)n);
		reorder_took(&r->store, (size_t)n);
		flow_count_write(f, (uint64_t)n, (size_t)n);
		return 1;
	case IO_AGAIN: r->stdout_ready = 0; return 0;
	case IO_INTERRUPTED:
	case IO_END: return 0;
	default: return flow_write_failed(f, len);
	}
}

/* What stdout may take, in order. 1 wrote some, 0 nothing, -1 failed. */
static int write_stdout(struct flow *f, struct reliable_recv *r)
{
	int wrote = 0, rc;

	while ((rc = write_piece(f, r)) == 1)
		wrote = 1;
	return rc < 0 ? -1 : wrote;
}

/* stdout has the whole stream the end announced: --sync, then the confirmation. 0, or -1. */
static int confirm(struct flow *f, struct reliable_recv *r, double now)
{
	if (r->confirmed || !r->end_seen || r->store.out < r->end.bytes)
		return 0;
	if (flow_sync(f) != 0)
		return -1;
	r->confirmed = 1;
	r->linger_until = now + LINGER;
	send_ack(r, now);
	send_confirm(r);
	return 0;
}

static enum pump_result finish(struct flow *f)
{
	struct reliable_recv *r = f->ctx;

	r->fig->payload = r->payload;
	return flow_finish(f) < 0 ? PUMP_FAILED : PUMP_FINISHED;
}

static enum pump_result pump(struct flow *f)
{
	struct reliable_recv *r = f->ctx;

	for (int turn = 0; turn < 64; turn++) {
		int got = 0, wrote;
		double now;

		if (f->sock_ready && (got = read_socket(f, r)) < 0)
			return PUMP_FAILED;
		if (r->dropped) {
			flow_fail(
			    f, EXIT_PEER,
			    "--reliable: the sender dropped this receiver (its message says why): "
			    "%llu bytes written in order",
			    (unsigned long long)r->store.out);
			return PUMP_FAILED;
		}
		if (got == 2)
			return finish(f);
		if ((wrote = write_stdout(f, r)) < 0)
			return PUMP_FAILED;
		now = clock_now();
		if (confirm(f, r, now) < 0)
			return PUMP_FAILED;
		if (r->confirmed && now >= r->linger_until)
			return finish(f);
		if (!r->confirmed && now - r->heard_at >= r->silence) {
			flow_fail(
			    f, EXIT_PEER,
			    "--reliable: the sender said nothing for %.3g s: %llu bytes written in "
			    "order%s",
			    r->silence, (unsigned long long)r->store.out,
			    r->end_seen ? "" : ", and its end never came");
			return PUMP_FAILED;
		}
		if (ack_due(r) <= now)
			send_ack(r, now);
		if (!got && !wrote)
			return PUMP_BLOCKED;
	}
	return PUMP_BUDGET_USED;
}

static int poll_events(const struct flow *f, struct pollfd *pfd)
{
	const struct reliable_recv *r = f->ctx;
	const unsigned char *p;
	int n = 0;

	if (!f->running)
		return 0;
	if (!f->sock_ready)
		pfd[n++] = (struct pollfd){.fd = r->fd, .events = POLLIN};
	if (!r->stdout_ready && reorder_ready(&r->store, &p) > 0)
		pfd[n++] = (struct pollfd){.fd = f->stdio, .events = POLLOUT};
	return n;
}

static void poll_result(struct flow *f, const struct pollfd *pfd, int n)
{
	struct reliable_recv *r = f->ctx;

	for (int i = 0; i < n; i++) {
		if (pfd[i].revents == 0)
			continue;
		if (pfd[i].fd == r->fd)
			f->sock_ready = 1;
		else
			r->stdout_ready = 1;
	}
}

/* The next acknowledgement, the end of the linger, or the sender's silence. */
static long wait_ms(const struct flow *f, double now)
{
	const struct reliable_recv *r = f->ctx;
	double until = r->confirmed ? r->linger_until : r->heard_at + r->silence, due = ack_due(r);

	if (!f->running)
		return -1;
	if (due < until)
		until = due;
	if (until <= now)
		return 0;
	return (long)((until - now) * 1000) + 1;
}

const struct flow_ops reliable_recv_ops = {
    .rw_reason = "--reliable puts datagrams back in order",
    .pump = pump,
    .poll_events = poll_events,
    .poll_result = poll_result,
    .wait_ms = wait_ms,
};

/*
 * A plain end (no --reliable) got a datagram from fd: if it is a --reliable hello, the sender
 * is told no (a refusal of its session) and 1 returned; 0: not --reliable's.
 */
int reliable_refuse(int fd, const unsigned char *p, size_t n)
{
	struct reliable_head h;
	unsigned char no[RELIABLE_HEAD];

	if (reliable_head_decode(p, n, &h) != 0 || h.type != RELIABLE_HELLO)
		return 0;
	reliable_head_encode(
	    no, &(struct reliable_head){.type = RELIABLE_REFUSE, .session = h.session});
	send_small(fd, no, sizeof no);
	return 1;
}
