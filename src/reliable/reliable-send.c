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
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fastcat.h"
#include "relay/flow.h"
#include "reliable/reliable.h"

#define PACE_BURST   0.002         /* seconds of the pace the bucket may save up */
#define START_DGRAMS 16            /* datagrams on the way before the first rate sample */
#define ACK_ROOM     32            /* datagrams on the way at least: two of the receiver's 16 */
#define ACK_LAG      0.001         /* seconds the receiver may hold an acknowledgement */
#define ACKS_A_TURN  256           /* datagrams read from the socket in one turn, at most */
#define READ_CHUNK   (1024 * 1024) /* stdin's bytes one read takes at most */

void reliable_send_free(struct reliable_send *r)
{
	free(r->store);
	r->store = NULL;
	sent_free(&r->log);
}

/*
 * The bytes the model lets be on the way now: its two round trips' worth, and room for the
 * receiver's way of acknowledging (every 16 datagrams, or after 1 ms), or acknowledgements
 * would come only by its timer and the round trip would hold the rate.
 */
static double inflight_cap(const struct reliable_send *r)
{
	if (!(r->model.bw > 0))
		return (double)(START_DGRAMS * r->payload);
	return rate_inflight(&r->model, ACK_ROOM * (double)r->payload) + 2 * r->model.bw * ACK_LAG;
}

/* The bucket fills at the pace since it was last looked at; it saves up PACE_BURST at most. */
static void pace_refill(struct reliable_send *r, double now)
{
	double rate = rate_pacing(&r->model), most = rate * PACE_BURST;

	if (most < 2.0 * (double)r->payload)
		most = 2.0 * (double)r->payload;
	r->tokens += rate * (now - r->tokens_at);
	if (r->tokens > most)
		r->tokens = most;
	r->tokens_at = now;
}

/* How long until the probe timeout: two round trips and a bit, doubled for each in a row. */
static double probe_wait(const struct reliable_send *r)
{
	double rtt = r->log.srtt > 0 ? r->log.srtt : 0.25;
	double wait = 2 * rtt + 0.01;

	for (unsigned i = 0; i < r->probes && wait < 5; i++)
		wait *= 2;
	return wait;
}

/* The end's interval: a round trip and a half, at least 20 ms. */
static double end_wait(const struct reliable_send *r)
{
	double w = 1.5 * r->log.srtt + 0.005;

	return w < 0.02 ? 0.02 : w;
}

static ssize_t send_small(int fd, const unsigned char *p, size_t len)
{
	return send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* One acknowledgement: the record, the room, the model; -v says when the model changes mode. */
static void take_ack(struct flow *f, struct reliable_send *r, const struct reliable_ack *a,
                     double now)
{
	struct sent_news news;
	uint64_t gone;

	sent_ack(&r->log, a, now, &news);
	gone = news.acked_bytes + news.lost_bytes;
	r->inflight = gone < r->inflight ? r->inflight - gone : 0;
	if (a->cum + a->room > r->room_end)
		r->room_end = a->cum + a->room;
	r->fig->acks++;
	r->fig->gap_acks += a->n > 0;
	if (news.acked_bytes > 0) {
		r->probes = 0;
		r->probe_at = now + probe_wait(r);
	}
	if (rate_sample(&r->model, now, news.rtt, news.rate, (double)r->inflight, news.app_limited))
		log_verbose("--reliable: %s", r->model.why);
	f->moved = 1;
}

/* The receiver's confirmation: the stream arrived whole, or it did not (exit 6). 1, or -1. */
static int take_confirm(struct flow *f, struct reliable_send *r, const unsigned char *p, size_t n)
{
	unsigned char done[RELIABLE_END_LEN];
	size_t len;

	if (!r->eof || r->read != r->log.cum || reliable_end_decode(p, n, &r->peer) != 0)
		return 0;
	r->confirmed = 1;
	r->fig->confirmed = r->peer.bytes;
	/* our last word: the receiver need not wait for another end */
	len = reliable_end_encode(done, RELIABLE_CONFIRM, r->session, &r->end);
	(void)send_small(r->fd, done, len);
	if (r->peer.bytes != r->end.bytes || r->peer.digest != r->end.digest)
		return flow_fail(
		    f, EXIT_VERIFY,
		    "--reliable: sent %llu bytes (xxh64 %016llx) but the receiver wrote "
		    "%llu (xxh64 %016llx)",
		    (unsigned long long)r->end.bytes, (unsigned long long)r->end.digest,
		    (unsigned long long)r->peer.bytes, (unsigned long long)r->peer.digest);
	return 1;
}

/* What the receiver sent: acknowledgements, its refusal, its confirmation. 0, or -1. */
static int take_datagram(struct flow *f, struct reliable_send *r, const unsigned char *p, size_t n,
                         double now)
{
	struct reliable_head h;
	struct reliable_ack a;

	if (reliable_head_decode(p, n, &h) != 0 || h.session != r->session)
		return 0; /* not ours: dropped */
	r->heard_at = now;
	switch (h.type) {
	case RELIABLE_ACK:
		if (reliable_ack_decode(p, n, &a) == 0)
			take_ack(f, r, &a, now);
		return 0;
	case RELIABLE_CONFIRM: return take_confirm(f, r, p, n) < 0 ? -1 : 0;
	case RELIABLE_REFUSE:
		return flow_fail(f, EXIT_PEER,
		                 "--reliable: the receiver ended the session (%llu "
		                 "bytes confirmed)",
		                 (unsigned long long)r->log.cum);
	default: return 0;
	}
}

/* Read what came from the receiver. 0, or -1 when the session must end. */
static int read_socket(struct flow *f, struct reliable_send *r)
{
	unsigned char buf[RELIABLE_ACK_MAX + 16];

	for (int i = 0; i < ACKS_A_TURN && !r->confirmed; i++) {
		ssize_t n = recv(r->fd, buf, sizeof buf, MSG_DONTWAIT);

		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return 0;
		if (n < 0 && errno == ECONNREFUSED)
			return flow_fail(
			    f, EXIT_PEER,
			    "--reliable: the receiver is gone (port unreachable): %llu of "
			    "%llu bytes confirmed",
			    (unsigned long long)r->log.cum, (unsigned long long)r->read);
		if (n < 0)
			return flow_fail(f, EXIT_RUNTIME, "--reliable: receive: %s",
			                 strerror(errno));
		if (take_datagram(f, r, buf, (size_t)n, clock_now()) != 0)
			return -1;
	}
	return 0;
}

/* stdin into the store's free room. 1 read something, 0 nothing, -1 failed. */
static int read_stdin(struct flow *f, struct reliable_send *r)
{
	uint64_t held = r->read - r->log.cum;
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

	if (sent_next_repair(&r->log, r->payload, r->size, off, &len)) {
		*repair = 1;
	} else {
		int want_room = r->room_end < r->read;
		uint64_t end = want_room ? r->room_end : r->read;

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

/* Fills the batch as the pace, the room and the model allow. */
static void batch_fill(struct flow *f, struct reliable_send *r, struct send_batch *b)
{
	double cap = inflight_cap(r);

	memset(b->msg, 0, sizeof b->msg);
	b->n = 0;
	while (b->n < BATCH_MAX && r->tokens >= (double)r->payload / 2 && !sent_full(&r->log) &&
	       (double)r->inflight < cap) {
		unsigned n = b->n;
		size_t len = next_piece(r, !r->eof && f->stdio_ready, &b->offs[n], &b->repairs[n]);

		if (len == 0) {
			/* the pace and the model allowed more, but stdin had none ready: what
			 * goes until those on the way are delivered measures stdin, not the
			 * path (as in BBR; a full store or the receiver's room is the path's
			 * rate or the receiver's, and counts) */
			if (!r->eof && !f->stdio_ready)
				sent_app_limited(&r->log, r->inflight);
			break;
		}
		b->lens[n] = len;
		reliable_data_encode(
		    b->head[n], r->session,
		    &(struct reliable_data){.pkt = r->log.next + n, .off = b->offs[n]});
		b->iov[n][0] = (struct iovec){b->head[n], RELIABLE_DATA_HEAD};
		b->iov[n][1] = (struct iovec){r->store + b->offs[n] % r->size, len};
		b->msg[n].msg_iov = b->iov[n];
		b->msg[n].msg_iovlen = 2;
		r->tokens -= (double)(len + RELIABLE_DATA_HEAD);
		r->inflight += len;
		b->n++;
	}
}

/* The first `got` went: logged and counted; the rest go back where each came from. */
static void batch_settle(struct flow *f, struct reliable_send *r, const struct send_batch *b,
                         unsigned got, double now)
{
	for (unsigned i = 0; i < got; i++) {
		sent_add(&r->log, b->offs[i], (uint32_t)b->lens[i], now);
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
		r->inflight -= b->lens[i];
		r->tokens += (double)(b->lens[i] + RELIABLE_DATA_HEAD);
		if (!b->repairs[i] && b->offs[i] + b->lens[i] == r->next)
			r->next = b->offs[i];
		else
			(void)rangeset_add(&r->log.repair, b->offs[i], b->offs[i] + b->lens[i]);
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
	if (r->probe_at == 0)
		r->probe_at = now + probe_wait(r);
	return got > 0;
}

/*
 * No acknowledgement for a probe timeout while datagrams are on the way: all of them sent
 * before the last round trip are taken for lost (and each probe in a row waits twice as long).
 */
static void probe_timeout(struct reliable_send *r, double now)
{
	uint64_t lost;

	if (r->probe_at == 0 || now < r->probe_at || r->inflight == 0)
		return;
	lost = sent_expire(&r->log, now - (r->log.srtt > 0 ? r->log.srtt : 0));
	r->inflight = lost < r->inflight ? r->inflight - lost : 0;
	r->probes++;
	r->fig->probes++;
	r->probe_at = now + probe_wait(r);
	log_verbose("--reliable: no acknowledgement for %.0f ms: %llu bytes on the way taken for "
	            "lost",
	            probe_wait(r) * 1e3 / 2, (unsigned long long)lost);
}

/* At stdin's end with everything acknowledged: the end, again each interval until confirmed. */
static int send_end(struct reliable_send *r, double now)
{
	unsigned char p[RELIABLE_END_LEN];
	size_t len;

	if (!r->eof || r->log.cum < r->read || r->confirmed ||
	    (r->end_at > 0 && now - r->end_at < end_wait(r)))
		return 0;
	r->end.datagrams = r->fig->datagrams;
	len = reliable_end_encode(p, RELIABLE_END, r->session, &r->end);
	if (send_small(r->fd, p, len) > 0)
		r->end_at = now;
	return 0;
}

/* The figures the report prints, as they stand. */
static void note_figures(struct reliable_send *r)
{
	r->fig->bottleneck = r->model.bw;
	r->fig->pacing = rate_pacing(&r->model);
	r->fig->min_rtt = r->log.min_rtt;
	r->fig->srtt = r->log.srtt;
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
			return PUMP_FINISHED;
		}
		if (now - r->heard_at >= r->silence) {
			flow_fail(
			    f, EXIT_PEER,
			    "--reliable: the receiver said nothing for %.3g s: %llu of %llu bytes "
			    "confirmed",
			    r->silence, (unsigned long long)r->log.cum,
			    (unsigned long long)r->read);
			return PUMP_FAILED;
		}
		if ((rc = read_stdin(f, r)) < 0)
			return PUMP_FAILED;
		moved |= rc;
		now = clock_now();
		probe_timeout(r, now);
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
	return (r->log.repair.n > 0 || r->next < (r->read < r->room_end ? r->read : r->room_end)) &&
	       (double)r->inflight < inflight_cap(r) && !sent_full(&r->log);
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
	if (!r->eof && !f->stdio_ready && r->read - r->log.cum < r->size)
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
	double until = r->heard_at + r->silence;

	if (!f->running)
		return -1;
	if (r->sock_ready && wants_to_send(r)) {
		double rate = rate_pacing(&r->model), need = (double)r->payload / 2 - r->tokens;
		double at = need > 0 && rate > 0 ? now + need / rate : now;

		until = at < until ? at : until;
	}
	if (r->probe_at > 0 && r->inflight > 0 && r->probe_at < until)
		until = r->probe_at;
	if (r->eof && r->log.cum >= r->read && !r->confirmed) {
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
