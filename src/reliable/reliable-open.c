/*
 * reliable-open.c: a --reliable session's opening over its udp socket. The sender's hello (H:
 * its session, a nonce, its datagram size) goes at 0, 1 and 3 s until the receiver's answer (A:
 * the nonce back, its room, the most it takes) comes; the first round trip starts the pacer.
 * The receiver takes the first datagram: a hello starts the session, anything else is no
 * --reliable sender's and gets no answer, so that no protocol byte reaches a plain peer.
 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "fastcat.h"
#include "base/compat.h"
#include "net/net.h"
#include "relay/flow.h"
#include "reliable/reliable.h"

#define OPEN_WAIT    5.0 /* seconds for the answer without -w */
#define START_WINDOW 10  /* datagrams a round trip before any rate sample (TCP's first window) */
#define UDP_MAX      65507

static const double hello_at[] = {0, 1, 3};

/* The most a datagram of ours may carry on fd's path: its MTU, less IP, UDP and our header. */
size_t reliable_path_payload(int fd, const struct config *cfg)
{
	int mtu = 0, v6 = 0;
	socklen_t len = sizeof mtu;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	size_t payload;

	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0 && ss.ss_family == AF_INET6)
		v6 = 1;
	if (getsockopt(fd, v6 ? IPPROTO_IPV6 : IPPROTO_IP, v6 ? IPV6_MTU : IP_MTU, &mtu, &len) !=
	        0 ||
	    mtu < 576)
		mtu = 1500; /* unknown: Ethernet's */
	payload = (size_t)mtu - (v6 ? 48 : 28) - RELIABLE_DATA_HEAD;
	if (payload > UDP_MAX - RELIABLE_DATA_HEAD)
		payload = UDP_MAX - RELIABLE_DATA_HEAD;
	if (cfg->dgram_size != 0 && cfg->dgram_size < payload)
		payload = cfg->dgram_size;
	return payload;
}

/* Big socket buffers unless -O or -I said otherwise: a burst at the pace must not overflow. */
static void grow_buffers(int fd, const struct config *cfg)
{
	int want = (int)RELIABLE_SOCKBUF;

	if (cfg->sndbuf == 0 && setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &want, sizeof want) != 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &want, sizeof want);
	if (cfg->rcvbuf == 0 && setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &want, sizeof want) != 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &want, sizeof want);
}

static double silence(const struct config *cfg)
{
	return cfg->timeout_ms >= 0 ? (double)cfg->timeout_ms / 1000 : RELIABLE_SILENCE;
}

/* Wait up to `until` for a datagram on fd: its length, 0 when none came, -1 with errno. */
static ssize_t receive_until(int fd, unsigned char *buf, size_t size, double until)
{
	for (;;) {
		double now = clock_now();
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int rc;

		if (now >= until)
			return 0;
		rc = poll(&p, 1, (int)((until - now) * 1000) + 1);
		if (rc < 0 && errno != EINTR)
			return -1;
		if (signal_stop) {
			errno = EINTR;
			return -1;
		}
		if (rc > 0) {
			ssize_t n = recv(fd, buf, size, MSG_DONTWAIT);

			if (n >= 0 || (errno != EAGAIN && errno != EINTR))
				return n;
		}
	}
}

/* The receiver's answer to our hello (1), its refusal (-1, the failure set), or neither (0). */
static int answered(struct reliable_send *r, struct session *s, const unsigned char *p, size_t n,
                    uint64_t nonce)
{
	struct reliable_head h;
	struct reliable_hello a;

	if (reliable_head_decode(p, n, &h) != 0 || h.session != r->session)
		return 0;
	if (h.type == RELIABLE_REFUSE) {
		failure_set(
		    &s->failure, EXIT_CONNECT,
		    "--reliable: %s refused it: the receiver runs without --reliable (give it "
		    "-lu --reliable)",
		    s->ep->peer);
		return -1;
	}
	if (h.type != RELIABLE_ANSWER || reliable_hello_decode(p, n, &a) != 0 || a.nonce != nonce)
		return 0;
	if (a.payload < r->payload)
		r->payload = a.payload;
	r->room_end = a.room;
	return 1;
}

/* The sender's state once the answer came: the store, the record, the pacer. */
static int sender_ready(struct reliable_send *r, struct session *s, double rtt)
{
	double now = clock_now(), start = (double)(START_WINDOW * r->payload) / rtt;
	uint64_t ceiling = s->cfg->rate_limit;

	r->size = RELIABLE_STORE;
	r->store = malloc(r->size);
	if (r->store == NULL || sent_init(&r->log, RELIABLE_LOG) != 0)
		return failure_set(&s->failure, EXIT_RUNTIME,
		                   "--reliable: cannot allocate %zu bytes", r->size);
	rate_init(&r->model, start, (double)ceiling, now);
	r->heard_at = r->tokens_at = now;
	r->silence = silence(s->cfg);
	r->sock_ready = 1;
	digest_init(&r->digest);
	r->fig = &s->reliable;
	r->fig->on = 1;
	r->fig->payload = r->payload;
	r->fig->min_rtt = rtt;
	log_verbose("--reliable: %s answered in %.2f ms: %zu data bytes a datagram, room %llu",
	            s->ep->peer, rtt * 1e3, r->payload, (unsigned long long)r->room_end);
	return 0;
}

/* The sender's opening on s's socket: hellos until the answer. 0, or the failure's status. */
int reliable_connect(struct reliable_send *r, struct session *s)
{
	const struct config *cfg = s->cfg;
	double start = clock_now(), wait = cfg->timeout_ms >= 0 ? silence(cfg) : OPEN_WAIT;
	uint64_t nonce = random_id();
	unsigned char h[RELIABLE_HELLO_LEN], buf[RELIABLE_ACK_MAX];

	memset(r, 0, sizeof *r);
	r->fd = s->ep->fd;
	r->session = random_id();
	grow_buffers(r->fd, cfg);
	r->payload = reliable_path_payload(r->fd, cfg);
	reliable_hello_encode(
	    h, RELIABLE_HELLO, r->session,
	    &(struct reliable_hello){.nonce = nonce, .payload = (uint16_t)r->payload});
	for (size_t i = 0; i < sizeof hello_at / sizeof hello_at[0] && hello_at[i] < wait; i++) {
		double until =
		    i + 1 < sizeof hello_at / sizeof hello_at[0] && hello_at[i + 1] < wait
		        ? start + hello_at[i + 1]
		        : start + wait;
		double sent_at = clock_now();
		ssize_t n;

		if (send(r->fd, h, sizeof h, MSG_NOSIGNAL) < 0 && errno != ECONNREFUSED)
			return failure_set(&s->failure, EXIT_CONNECT, "--reliable: send to %s: %s",
			                   s->ep->peer, strerror(errno));
		while ((n = receive_until(r->fd, buf, sizeof buf, until)) > 0) {
			int rc = answered(r, s, buf, (size_t)n, nonce);

			if (rc < 0)
				return s->failure.status;
			if (rc > 0)
				return sender_ready(r, s, clock_now() - sent_at);
		}
		if (n < 0 && errno == ECONNREFUSED)
			return failure_set(
			    &s->failure, EXIT_CONNECT,
			    "--reliable: nothing listens at udp %s (port unreachable)",
			    s->ep->peer);
		if (n < 0 && errno == EINTR)
			return failure_set(&s->failure, EXIT_RUNTIME, "interrupted by %s",
			                   signals_stop_name());
		if (n < 0)
			return failure_set(&s->failure, EXIT_CONNECT,
			                   "--reliable: receive from %s: %s", s->ep->peer,
			                   strerror(errno));
	}
	return failure_set(&s->failure, EXIT_CONNECT,
	                   "--reliable: no answer from %s in %.3g s: is it fastcat -lu --reliable?",
	                   s->ep->peer, wait);
}

/* The receiver's state for the sender's hello h of session id. */
static int receiver_ready(struct reliable_recv *r, struct session *s, uint64_t id,
                          const struct reliable_hello *h)
{
	unsigned char a[RELIABLE_HELLO_LEN];
	size_t ours = reliable_path_payload(r->fd, s->cfg), len;

	r->session = id;
	r->payload = h->payload < ours ? h->payload : ours;
	r->slots = malloc(BATCH_MAX * (RELIABLE_DATA_HEAD + r->payload));
	if (r->slots == NULL || reorder_init(&r->store, RELIABLE_STORE) != 0)
		return failure_set(&s->failure, EXIT_RUNTIME,
		                   "--reliable: cannot allocate %zu bytes", RELIABLE_STORE);
	r->answer = (struct reliable_hello){
	    .nonce = h->nonce, .room = (uint32_t)RELIABLE_STORE, .payload = (uint16_t)r->payload};
	len = reliable_hello_encode(a, RELIABLE_ANSWER, id, &r->answer);
	(void)send(r->fd, a, len, MSG_NOSIGNAL);
	r->heard_at = r->acked_at = clock_now();
	r->silence = silence(s->cfg);
	r->room_told = (uint32_t)RELIABLE_STORE;
	r->stdout_ready = 1;
	digest_init(&r->digest);
	r->fig = &s->reliable;
	r->fig->on = 1;
	r->fig->payload = r->payload;
	log_verbose("--reliable: session %016llx from %s: %zu data bytes a datagram",
	            (unsigned long long)id, s->ep->peer, r->payload);
	return 0;
}

/*
 * The receiver's opening: the first datagram from its peer (the listener locked onto it) must
 * be a hello. 0, or the failure's status.
 */
int reliable_accept(struct reliable_recv *r, struct session *s)
{
	unsigned char buf[RELIABLE_HELLO_LEN + 64];
	struct reliable_head head;
	struct reliable_hello h;
	ssize_t n;

	memset(r, 0, sizeof *r);
	r->fd = s->ep->fd;
	grow_buffers(r->fd, s->cfg);
	n = receive_until(r->fd, buf, sizeof buf, clock_now() + OPEN_WAIT);
	if (n < 0)
		return failure_set(&s->failure, EXIT_RUNTIME, "--reliable: receive from %s: %s",
		                   s->ep->peer, strerror(errno));
	if (n == 0)
		return failure_set(&s->failure, EXIT_CONNECT, "--reliable: %s sent nothing more",
		                   s->ep->peer);
	if (reliable_head_decode(buf, (size_t)n, &head) != 0 || head.type != RELIABLE_HELLO ||
	    reliable_hello_decode(buf, (size_t)n, &h) != 0)
		return failure_set(
		    &s->failure, EXIT_CONNECT,
		    "--reliable: %s is no --reliable sender (its first datagram is no "
		    "hello): nothing written",
		    s->ep->peer);
	return receiver_ready(r, s, head.session, &h);
}
