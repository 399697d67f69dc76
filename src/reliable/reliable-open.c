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

/*
 * Wait up to `until` for a datagram on fd: its length and where it came from, 0 when none
 * came, -1 with errno.
 */
static ssize_t receive_until(int fd, unsigned char *buf, size_t size, double until,
                             struct sockaddr_storage *from, socklen_t *len)
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
			ssize_t n;

			*len = sizeof *from;
			n = recvfrom(fd, buf, size, MSG_DONTWAIT, (struct sockaddr *)from, len);
			if (n >= 0 || (errno != EAGAIN && errno != EINTR))
				return n;
		}
	}
}

/* A receiver that answered: its record of what is on the way, its model, its room. */
static int admit(struct reliable_send *r, struct session *s, const struct sockaddr_storage *from,
                 socklen_t len, unsigned tag, const struct reliable_hello *a, double rtt)
{
	struct reliable_peer *p = &r->peers[r->npeers];
	double now = clock_now(), start;

	if (rtt < 1e-4)
		rtt = 1e-4;
	if (a->payload < r->payload)
		r->payload = a->payload;
	start = (double)(START_WINDOW * r->payload) / rtt;
	memset(p, 0, sizeof *p);
	memcpy(&p->addr, from, len);
	p->addr_len = len;
	p->tag = tag;
	addr_format((const struct sockaddr *)from, len, p->name, sizeof p->name);
	if (sent_init(&p->log, RELIABLE_LOG) != 0) {
		sent_free(&p->log);
		return failure_set(&s->failure, EXIT_RUNTIME,
		                   "--reliable: cannot allocate a receiver's record");
	}
	rate_init(&p->model, start, (double)s->cfg->rate_limit, now);
	p->room_end = a->room;
	p->heard_at = now;
	r->npeers++;
	r->fig->receivers = r->npeers;
	r->fig->min_rtt = rtt;
	log_verbose("--reliable: %s answered in %.2f ms: %u data bytes a datagram, room %llu",
	            r->group_len ? p->name : s->ep->peer, rtt * 1e3, (unsigned)a->payload,
	            (unsigned long long)a->room);
	return 0;
}

/*
 * What came while the sender waits for answers: a receiver's answer to our hello (1), a
 * refusal (-1 unicast, with the failure set; multicast: that receiver is left out), or
 * neither (0).
 */
static int answered(struct reliable_send *r, struct session *s, const unsigned char *p, size_t n,
                    uint64_t nonce, const struct sockaddr_storage *from, socklen_t len, double rtt)
{
	struct reliable_head h;
	struct reliable_hello a;

	if (reliable_head_decode(p, n, &h) != 0 || h.session != r->session)
		return 0;
	if (h.type == RELIABLE_REFUSE && r->group_len == 0) {
		failure_set(
		    &s->failure, EXIT_CONNECT,
		    "--reliable: %s refused it: the receiver runs without --reliable (give it "
		    "-lu --reliable)",
		    s->ep->peer);
		return -1;
	}
	if (h.type == RELIABLE_REFUSE) {
		char who[80];

		addr_format((const struct sockaddr *)from, len, who, sizeof who);
		log_warn("--reliable: %s refused it (no -lu --reliable there): left out", who);
		return 0;
	}
	if (h.type != RELIABLE_ANSWER || reliable_hello_decode(p, n, &a) != 0 || a.nonce != nonce ||
	    peers_find(r, (const struct sockaddr *)from, len, h.tag) != NULL)
		return 0;
	if (admit(r, s, from, len, h.tag, &a, rtt) != 0)
		return -1;
	return 1;
}

/* The sender's state once the answers came: the store, the pacer's bucket, the digest. */
static int sender_ready(struct reliable_send *r, struct session *s)
{
	double now = clock_now();

	r->size = RELIABLE_STORE;
	r->store = malloc(r->size);
	if (r->store == NULL)
		return failure_set(&s->failure, EXIT_RUNTIME,
		                   "--reliable: cannot allocate %zu bytes", r->size);
	r->tokens_at = now;
	for (unsigned i = 0; i < r->npeers; i++) /* their acknowledgements meanwhile went unread */
		r->peers[i].heard_at = now;
	r->silence = silence(s->cfg);
	r->sock_ready = 1;
	digest_init(&r->digest);
	r->fig->payload = r->payload;
	if (r->npeers < r->wanted)
		log_warn("--reliable: %u of %u receivers answered: the stream goes to them",
		         r->npeers, r->wanted);
	return 0;
}

/* When the next hello goes: at 0, 1 and 3 s to one receiver, every 0.5 s to a group. */
static double next_hello(const struct reliable_send *r, unsigned i)
{
	static const double unicast[] = {0, 1, 3};

	if (r->group_len > 0)
		return 0.5 * i;
	return i < sizeof unicast / sizeof unicast[0] ? unicast[i] : 1e9;
}

static int send_hello(struct reliable_send *r, const unsigned char *h, size_t len)
{
	if (r->group_len > 0)
		return (int)sendto(r->fd, h, len, MSG_NOSIGNAL, (const struct sockaddr *)&r->group,
		                   r->group_len);
	return (int)send(r->fd, h, len, MSG_NOSIGNAL);
}

/* Why the answers did not come: the receive's errno, or the wait's end. The failure's status. */
static int no_answer(struct reliable_send *r, struct session *s, ssize_t n, double wait)
{
	if (n < 0 && errno == ECONNREFUSED)
		return failure_set(&s->failure, EXIT_CONNECT,
		                   "--reliable: nothing listens at udp %s (port unreachable)",
		                   s->ep->peer);
	if (n < 0 && errno == EINTR)
		return failure_set(&s->failure, EXIT_RUNTIME, "interrupted by %s",
		                   signals_stop_name());
	if (n < 0)
		return failure_set(&s->failure, EXIT_CONNECT, "--reliable: receive from %s: %s",
		                   s->ep->peer, strerror(errno));
	if (r->group_len > 0)
		return failure_set(&s->failure, EXIT_CONNECT,
		                   "--reliable: no receiver of group %s answered in %.3g s: is "
		                   "one running fastcat -lu --reliable %s?",
		                   s->ep->peer, wait, s->ep->peer);
	return failure_set(&s->failure, EXIT_CONNECT,
	                   "--reliable: no answer from %s in %.3g s: is it fastcat -lu --reliable?",
	                   s->ep->peer, wait);
}

/* The sender's own: its socket, its session, its receivers' places. 0, or the status. */
static int sender_init(struct reliable_send *r, struct session *s)
{
	const struct config *cfg = s->cfg;

	memset(r, 0, sizeof *r);
	r->fd = s->ep->fd;
	r->session = random_id();
	r->fig = &s->reliable;
	r->fig->on = 1;
	memcpy(&r->group, &s->ep->group, sizeof r->group);
	r->group_len = s->ep->group_len;
	if ((cfg->receivers != 0 || cfg->min_rate != 0) && r->group_len == 0)
		return failure_set(&s->failure, EXIT_USAGE, "%s: %s is no multicast group",
		                   cfg->receivers != 0 ? "--receivers" : "--min-rate", s->ep->peer);
	r->min_rate = (double)cfg->min_rate;
	r->wanted = cfg->receivers != 0 ? cfg->receivers : 1;
	r->peers = calloc(r->wanted, sizeof r->peers[0]);
	if (r->peers == NULL)
		return failure_set(&s->failure, EXIT_RUNTIME,
		                   "--reliable: cannot allocate the receivers");
	grow_buffers(r->fd, cfg);
	r->payload = reliable_path_payload(r->fd, cfg);
	return 0;
}

/*
 * The sender's opening on s's socket: hellos until every receiver asked for answered (one,
 * or --receivers to a group) or the wait ends. 0, or the failure's status.
 */
int reliable_connect(struct reliable_send *r, struct session *s)
{
	const struct config *cfg = s->cfg;
	double start = clock_now(), wait = cfg->timeout_ms >= 0 ? silence(cfg) : OPEN_WAIT;
	uint64_t nonce = random_id();
	unsigned char h[RELIABLE_HELLO_LEN], buf[RELIABLE_ACK_MAX];
	ssize_t n = 0;

	if (sender_init(r, s) != 0)
		return s->failure.status;
	reliable_hello_encode(
	    h, RELIABLE_HELLO, r->session,
	    &(struct reliable_hello){.nonce = nonce, .payload = (uint16_t)r->payload});
	for (unsigned i = 0; next_hello(r, i) < wait && r->npeers < r->wanted; i++) {
		double until = start + (next_hello(r, i + 1) < wait ? next_hello(r, i + 1) : wait);
		double sent_at = clock_now();
		struct sockaddr_storage from;
		socklen_t len;

		if (send_hello(r, h, sizeof h) < 0 && errno != ECONNREFUSED)
			return failure_set(&s->failure, EXIT_CONNECT, "--reliable: send to %s: %s",
			                   s->ep->peer, strerror(errno));
		while (r->npeers < r->wanted &&
		       (n = receive_until(r->fd, buf, sizeof buf, until, &from, &len)) > 0) {
			if (answered(r, s, buf, (size_t)n, nonce, &from, len,
			             clock_now() - sent_at) < 0)
				return s->failure.status;
		}
		if (n < 0 && !(errno == ECONNREFUSED && r->group_len > 0))
			break;
	}
	if (r->npeers == 0 || (n < 0 && r->group_len == 0))
		return no_answer(r, s, n, wait);
	return sender_ready(r, s);
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
	r->tag = 1 + (unsigned)(random_id() % 0xffff);
	reliable_head_tag(a, r->tag);
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
	struct sockaddr_storage from;
	socklen_t from_len;
	ssize_t n;

	memset(r, 0, sizeof *r);
	r->fd = s->ep->fd;
	grow_buffers(r->fd, s->cfg);
	n = receive_until(r->fd, buf, sizeof buf, clock_now() + OPEN_WAIT, &from, &from_len);
	if (n < 0)
		return failure_set(&s->failure, EXIT_RUNTIME, "--reliable: receive from %s: %s",
		                   s->ep->peer, strerror(errno));
	if (n == 0)
		return failure_set(&s->failure, EXIT_CONNECT, "--reliable: %s sent nothing more",
		                   s->ep->peer);
	if (reliable_head_decode(buf, (size_t)n, &head) == 0 && head.type == RELIABLE_DATA)
		return failure_set(&s->failure, EXIT_CONNECT,
		                   "--reliable: %s's session was under way without this receiver "
		                   "(its hello went before): start the receivers first; nothing "
		                   "written",
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
