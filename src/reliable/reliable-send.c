/*
 * reliable-send.c: the --reliable sender's pump. stdin goes into a bounded store that keeps
 * every byte until the receiver acknowledged it; datagrams leave at the pace of the model of
 * the path (reliable-rate.c), repairs first, new bytes only within the receiver's room; each
 * acknowledgement moves the record (reliable-sent.c), and a silence of two round trips takes
 * what is on the way for lost. At stdin's end, once all is acknowledged, the end (count and
 * XXH64) goes until the receiver confirms what it wrote.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fastcat.h"
#include "relay/flow.h"
#include "reliable/reliable.h"

#define PACE_BURST  0.002        /* seconds of the pace the bucket may save up */
#define ACKS_A_TURN 256          /* datagrams read from the socket in one turn, at most */
#define READ_CHUNK  (256 * 1024) /* stdin's bytes a read takes: XXH64 finds them in cache */

void reliable_send_free(struct reliable_send *r)
{
	free(r->store);
	r->store = NULL;
	for (unsigned i = 0; i < r->npeers; i++)
		sent_free(&r->peers[i].log);
	free(r->peers);
	r->peers = NULL;
	r->npeers = 0;
	free(r->outcome);
	r->outcome = NULL;
}

/* The bucket fills at the pace since it was last looked at; it saves up PACE_BURST at most. */
static void pace_refill(struct reliable_send *r, double now)
{
	double rate = peers_pacing(r), most = rate * PACE_BURST;

	if (most < 2.0 * (double)r->payload)
		most = 2.0 * (double)r->payload;
	r->tokens += rate * (now - r->tokens_at);
	if (r->tokens > most)
		r->tokens = most;
	r->tokens_at = now;
}

/* The end's interval: a round trip and a half of the farthest receiver, at least 20 ms. */
static double end_wait(const struct reliable_send *r)
{
	double w = 1.5 * peers_srtt(r) + 0.005;

	return w < 0.02 ? 0.02 : w;
}

/*
 * A receiver's confirmation: it wrote the stream whole, or it did not (exit 6). Once every
 * receiver confirmed, the sender's last word (its own C) tells them not to wait for another
 * end. 0, or -1.
 */
static int take_confirm(struct flow *f, struct reliable_send *r, struct reliable_peer *p,
                        const unsigned char *d, size_t n)
{
	unsigned char done[RELIABLE_END_LEN];
	size_t len;

	if (!r->eof || r->read != p->log.cum || reliable_end_decode(d, n, &p->said) != 0)
		return 0;
	p->confirmed = 1;
	if (p->said.bytes != r->end.bytes || p->said.digest != r->end.digest)
		return flow_fail(
		    f, EXIT_VERIFY,
		    "--reliable: sent %llu bytes (xxh64 %016llx) but %s wrote "
		    "%llu (xxh64 %016llx)",
		    (unsigned long long)r->end.bytes, (unsigned long long)r->end.digest,
		    r->group_len ? p->name : "the receiver", (unsigned long long)p->said.bytes,
		    (unsigned long long)p->said.digest);
	if (!peers_all_confirmed(r))
		return 0;
	r->confirmed = 1;
	r->fig->confirmed = p->said.bytes;
	len = reliable_end_encode(done, RELIABLE_CONFIRM, r->session, &r->end);
	(void)peers_send_small(r, done, len);
	return 0;
}

/* What receiver p sent (h its header, of this session): acknowledgements, its refusal, its
 * confirmation. 0, or -1. */
static int take_datagram(struct flow *f, struct reliable_send *r, struct reliable_peer *p,
                         const struct reliable_head *h, const unsigned char *d, size_t n,
                         double now)
{
	struct reliable_ack a;

	p->heard_at = now;
	switch (h->type) {
	case RELIABLE_ACK:
		if (reliable_ack_decode(d, n, &a) == 0)
			peers_ack(f, r, p, &a, now);
		return 0;
	case RELIABLE_CONFIRM: return take_confirm(f, r, p, d, n);
	case RELIABLE_REFUSE: return peers_lost(f, r, p, "ended the session");
	default: return 0;
	}
}

/* Read what came from the receivers. 0, or -1 when the session must end. */
static int read_socket(struct flow *f, struct reliable_send *r)
{
	unsigned char buf[RELIABLE_ACK_MAX + 16];

	for (int i = 0; i < ACKS_A_TURN && !r->confirmed; i++) {
		struct sockaddr_storage from;
		socklen_t len = sizeof from;
		ssize_t n =
		    recvfrom(r->fd, buf, sizeof buf, MSG_DONTWAIT, (struct sockaddr *)&from, &len);
		struct reliable_head h;
		struct reliable_peer *p;

		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return 0;
		if (n < 0 && errno == ECONNREFUSED)
			return peers_lost(f, r, &r->peers[0], "is gone (port unreachable)");
		if (n < 0)
			return flow_fail(f, EXIT_RUNTIME, "--reliable: receive: %s",
			                 strerror(errno));
		if (reliable_head_decode(buf, (size_t)n, &h) != 0 || h.session != r->session)
			continue; /* not ours: dropped */
		p = peers_find(r, (struct sockaddr *)&from, len, h.tag);
		if (p == NULL || p->dropped)
			continue; /* no receiver of the session, or one no longer served */
		if (take_datagram(f, r, p, &h, buf, (size_t)n, clock_now()) != 0)
			return -1;
	}
	return 0;
}

/* stdin into the store's free room. 1 read something, 0 nothing, -1 failed. */
static int read_stdin(struct flow *f, struct reliable_send *r)
{
	uint64_t held = r->read - peers_cum(r);
	size_t at = (size_t)(r->read % r->size), want = r->size - at;
	ssize_t n;

	if (r->eof || !f->stdio_ready || held >= r->size)
		return 0;
	if (want > r->size - held)
		want = (size_t)(r->size - held);
	if (want > READ_CHUNK)
		want = READ_CHUNK;
	n = read(f->stdio, r->store + at, want);
	f->stats->reads++;
	switch (io_result(n)) {
	case IO_MOVED:
		digest_update(&r->digest, r->store + at, (size_t)n);
		r->read += (uint64_t)n;
		flow_count_read(f, (size_t)n);
		return 1;
	case IO_END:
		r->eof = 1;
		r->end =
		    (struct reliable_end){.bytes = r->read, .digest = digest_final(&r->digest)};
		return 1;
	case IO_AGAIN: f->stdio_ready = 0; return 0;
	case IO_INTERRUPTED: return 0;
	default: flow_failed(f, 0, errno); return -1;
	}
}

/*
 * The next datagram's bytes: a repair first, else new ones within the room, and a short one
 * only while stdin has no more (short: whole, holding: stdin may still fill it). 0: none now.
 */
static size_t next_piece(struct reliable_send *r, int holding, uint64_t *off, int *repair)
{
	size_t len;

	if (peers_next_repair(r, off, &len)) {
		*repair = 1;
	} else {
		uint64_t room_end = peers_room_end(r);
		int want_room = room_end < r->read;
		uint64_t end = want_room ? room_end : r->read;

		if (r->next >= end)
			return 0;
		*off = r->next;
		len = end - r->next < r->payload ? (size_t)(end - r->next) : r->payload;
		/* short only at the very end of what stdin gave, never for want of room */
		if (len < r->payload && (holding || want_room))
			return 0;
		*repair = 0;
	}
	/* a datagram never wraps the ring (a repair is cut there already, its rest kept) */
	if (len > r->size - (size_t)(*off % r->size))
		len = r->size - (size_t)(*off % r->size);
	if (!*repair)
		r->next = *off + len;
	return len;
}

/* One sendmmsg's datagrams: each one's header, where it lies in the store, and why it goes. */
struct send_batch {
	struct msghdr msg[BATCH_MAX];
	struct iovec iov[BATCH_MAX][2];
	unsigned char head[BATCH_MAX][RELIABLE_DATA_HEAD];
	uint64_t offs[BATCH_MAX];
	size_t lens[BATCH_MAX];
	int repairs[BATCH_MAX];
	unsigned n;
};

/* Fills the batch as the pace, the room and the receivers' models allow. */
static void batch_fill(struct flow *f, struct reliable_send *r, struct send_batch *b)
{
	double room = peers_room_to_send(r), batched = 0;
	uint64_t pkt = peers_next_pkt(r);

	memset(b->msg, 0, sizeof b->msg);
	b->n = 0;
	while (b->n < BATCH_MAX && r->tokens >= (double)r->payload / 2 && !peers_full(r) &&
	       batched < room) {
		unsigned n = b->n;
		size_t len = next_piece(r, !r->eof && f->stdio_ready, &b->offs[n], &b->repairs[n]);

		if (len == 0) {
			/* the pace and the model allowed more, but stdin had none ready: what
			 * goes until those on the way are delivered measures stdin, not the
			 * path (as in BBR; a full store or the receiver's room is the path's
			 * rate or the receiver's, and counts) */
			if (!r->eof && !f->stdio_ready) {
				peers_app_limited(r);
				r->stdin_short |= r->read - peers_cum(r) < r->size;
			}
			break;
		}
		b->lens[n] = len;
		reliable_data_encode(b->head[n], r->session,
		                     &(struct reliable_data){.pkt = pkt + n, .off = b->offs[n]});
		b->iov[n][0] = (struct iovec){b->head[n], RELIABLE_DATA_HEAD};
		b->iov[n][1] = (struct iovec){r->store + b->offs[n] % r->size, len};
		b->msg[n].msg_iov = b->iov[n];
		b->msg[n].msg_iovlen = 2;
		if (r->group_len > 0) {
			b->msg[n].msg_name = &r->group;
			b->msg[n].msg_namelen = r->group_len;
		}
		r->tokens -= (double)(len + RELIABLE_DATA_HEAD);
		batched += (double)len;
		b->n++;
	}
}

/* The first `got` went: recorded for every receiver and counted; the rest go back. */
static void batch_settle(struct flow *f, struct reliable_send *r, const struct send_batch *b,
                         unsigned got, double now)
{
	for (unsigned i = 0; i < got; i++) {
		peers_sent(r, b->offs[i], b->lens[i], now);
		r->fig->datagrams++;
		f->stats->datagrams++;
		if (b->repairs[i]) {
			r->fig->repairs++;
			r->fig->repaired_bytes += b->lens[i];
		} else {
			flow_count_write(f, b->lens[i], b->lens[i] + RELIABLE_DATA_HEAD);
		}
	}
	for (unsigned i = b->n; i-- > got;) {
		r->tokens += (double)(b->lens[i] + RELIABLE_DATA_HEAD);
		if (!b->repairs[i] && b->offs[i] + b->lens[i] == r->next)
			r->next = b->offs[i];
		else
			for (unsigned k = 0; k < r->npeers; k++)
				(void)rangeset_add(&r->peers[k].log.repair, b->offs[i],
				                   b->offs[i] + b->lens[i]);
	}
}

/* Datagrams as the pace, the room and the model allow: batches of sendmmsg. 1 sent, 0, -1. */
static int send_data(struct flow *f, struct reliable_send *r, double now)
{
	struct send_batch b;
	int got;

	pace_refill(r, now);
	batch_fill(f, r, &b);
	if (b.n == 0)
		return 0;
	got = batch_send(r->fd, b.msg, b.n);
	f->stats->writes++;
	if (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
	    errno != ENOBUFS && errno != ECONNREFUSED) {
		flow_failed(f, 1, errno);
		return -1;
	}
	if (got < 0)
		got = 0;
	if (got < (int)b.n && errno != ECONNREFUSED)
		r->sock_ready = 0;
	batch_settle(f, r, &b, (unsigned)got, now);
	return got > 0;
}

/* At stdin's end with everything acknowledged: the end, again each interval until confirmed. */
static int send_end(struct reliable_send *r, double now)
{
	unsigned char p[RELIABLE_END_LEN];
	size_t len;

	if (!r->eof || peers_cum(r) < r->read || r->confirmed ||
	    (r->end_at > 0 && now - r->end_at < end_wait(r)))
		return 0;
	r->end.datagrams = r->fig->datagrams;
	len = reliable_end_encode(p, RELIABLE_END, r->session, &r->end);
	if (peers_send_small(r, p, len) > 0)
		r->end_at = now;
	return 0;
}

/* The figures the report prints, as they stand: the slowest receiver's path. */
static void note_figures(struct reliable_send *r)
{
	const struct reliable_peer *p = peers_slowest(r);

	if (p == NULL)
		return;
	r->fig->bottleneck = p->model.bw;
	r->fig->pacing = rate_pacing(&p->model);
	r->fig->min_rtt = p->log.min_rtt;
	r->fig->srtt = p->log.srtt;
}

static enum pump_result pump(struct flow *f)
{
	struct reliable_send *r = f->ctx;
	double now = clock_now();

	for (int turn = 0; turn < 64; turn++) {
		int moved = 0, rc;

		if (read_socket(f, r) != 0)
			return PUMP_FAILED;
		if (r->confirmed) {
			note_figures(r);
			f->running = 0;
			f->stats->finished = clock_now();
			return peers_served(f, r) == 0 ? PUMP_FINISHED : PUMP_FAILED;
		}
		if (peers_check_silence(f, r, now) != 0)
			return PUMP_FAILED;
		if ((rc = read_stdin(f, r)) < 0)
			return PUMP_FAILED;
		moved |= rc;
		now = clock_now();
		peers_probe(r, now);
		if (r->sock_ready && (rc = send_data(f, r, now)) != 0) {
			if (rc < 0)
				return PUMP_FAILED;
			moved = 1;
		}
		send_end(r, now);
		note_figures(r);
		if (!moved)
			return PUMP_BLOCKED;
	}
	return PUMP_BUDGET_USED;
}

/* Is a datagram due and only the socket, not the pace, the room or the model, holds it? */
static int wants_to_send(const struct reliable_send *r)
{
	uint64_t room_end = peers_room_end(r);

	return (peers_want_repair(r) || r->next < (r->read < room_end ? r->read : room_end)) &&
	       peers_room_to_send(r) > 0 && !peers_full(r);
}

static int poll_events(const struct flow *f, struct pollfd *pfd)
{
	const struct reliable_send *r = f->ctx;
	int n = 0;

	if (!f->running)
		return 0;
	pfd[n++] = (struct pollfd){
	    .fd = r->fd,
	    .events = (short)(POLLIN | (!r->sock_ready && wants_to_send(r) ? POLLOUT : 0))};
	if (!r->eof && !f->stdio_ready && r->read - peers_cum(r) < r->size)
		pfd[n++] = (struct pollfd){.fd = f->stdio, .events = POLLIN};
	return n;
}

static void poll_result(struct flow *f, const struct pollfd *pfd, int n)
{
	struct reliable_send *r = f->ctx;

	for (int i = 0; i < n; i++) {
		if (pfd[i].revents == 0)
			continue;
		if (pfd[i].fd == r->fd)
			r->sock_ready |= (pfd[i].revents & (POLLOUT | POLLERR)) != 0;
		else
			f->stdio_ready = 1;
	}
}

/* The next moment the pump has work with no fd event: the pace, a probe, the end, silence. */
static long wait_ms(const struct flow *f, double now)
{
	const struct reliable_send *r = f->ctx;
	double until = now + r->silence, probe = peers_next_probe(r), held = peers_next_check(r);

	if (!f->running)
		return -1;
	if (held > 0 && held < until)
		until = held;
	for (unsigned i = 0; i < r->npeers; i++)
		if (!r->peers[i].dropped && r->peers[i].heard_at + r->silence < until)
			until = r->peers[i].heard_at + r->silence;
	if (r->sock_ready && wants_to_send(r)) {
		double rate = peers_pacing(r), need = (double)r->payload / 2 - r->tokens;
		double at = need > 0 && rate > 0 ? now + need / rate : now;

		until = at < until ? at : until;
	}
	if (probe > 0 && probe < until)
		until = probe;
	if (r->eof && peers_cum(r) >= r->read && !r->confirmed) {
		double at = r->end_at > 0 ? r->end_at + end_wait(r) : now;

		until = at < until ? at : until;
	}
	if (until <= now)
		return 0;
	return (long)((until - now) * 1000) + 1;
}

const struct flow_ops reliable_send_ops = {
    .rw_reason = "--reliable keeps every byte until it is acknowledged",
    .pump = pump,
    .poll_events = poll_events,
    .poll_result = poll_result,
    .wait_ms = wait_ms,
};
