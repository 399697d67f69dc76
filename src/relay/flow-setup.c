/* flow-setup.c: a flow's role, sizes, copy method and buffers, decided once before the relay
 * starts. */
#include "config.h"

#include <string.h>
#include <sys/socket.h>

#include "fastcat.h"
#include "net/net.h"
#include "relay/flow.h"
#include "stripe/stripe.h"
#include "verify/verify.h"

/* --verify: room for a header in front of a full read, and for END and VERDICT. */
#define VERIFY_ROOM (FRAME_HEADER + 2 * FRAME_TRAILER)

/*
 * Size the flow's buffer for its transport: a datagram source reads whole
 * datagrams; exact datagrams need room for a whole number of them.
 */
static size_t flow_capacity(const struct flow *f)
{
	size_t cap = f->read_size > f->write_size ? f->read_size : f->write_size;

	if (f->exact)
		cap = (cap + f->write_size - 1) / f->write_size * f->write_size;
	if (f->dgram_src)
		cap += f->read_size; /* room for more small datagrams before one write */
	if (flow_is_framed(f))
		cap += VERIFY_ROOM;
	return cap;
}

/*
 * The one place a flow's chunk sizes are decided, and its copy method with
 * them: -B (--read-size, --write-size) as options_parse fitted it to the
 * transport, then the role's needs: a datagram source reads whole
 * datagrams, --dgram-size cuts exact ones (flow_dgram_init), a splice pipe
 * smaller than a chunk bounds the read. The report prints what is decided here.
 */
static void flow_sizes(struct flow *f, const struct config *cfg)
{
	f->read_size = cfg->read_size;
	f->write_size = cfg->write_size;
	if (cfg->transport->datagram)
		flow_dgram_init(f, cfg, f->stats);
	copy_choose(f, cfg); /* a splice pipe is sized for one read */
	/*
	 * Never more in the pipe than the buffer holds, so a fallback can take it
	 * all back (the pipe may be bigger: 64 KiB unless F_SETPIPE_SZ grew it).
	 */
	if (f->method == METHOD_SPLICE && f->pipe_cap > flow_capacity(f))
		f->pipe_cap = flow_capacity(f);
	if (f->method == METHOD_SPLICE && f->read_size > f->pipe_cap)
		f->read_size = f->pipe_cap; /* the kernel gave a smaller pipe than a chunk */
	f->read_min = f->exact ? 1 : f->read_size;
	if (flow_is_framed(f) && f->kind == FLOW_SEND)
		f->read_min += FRAME_HEADER;
	f->stats->read_size = f->read_size;
	f->stats->write_size = f->write_size;
	f->stats->copy = f->method;
}

/* stdio on one side, the connection on the other; both may be ready until a call says not. */
static void flow_attach(struct flow *f, const struct flow_setup *setup)
{
	int to_socket = setup->kind == FLOW_SEND;

	f->stdio = to_socket ? setup->src : setup->dst;
	f->net.fd[0] = to_socket ? setup->dst : setup->src;
	f->net.n = setup->nnet > 0 ? setup->nnet : 1;
	for (unsigned i = 1; i < f->net.n; i++)
		f->net.fd[i] = setup->net[i];
	f->stdio_ready = 1;
	for (unsigned i = 0; i < f->net.n; i++)
		f->net.ready[i] = 1;
}

/* Set a flow up from its role and the transport. 0, or -1 when memory runs out. */
int flow_init(struct flow *f, const struct flow_setup *setup, struct flow_stats *stats)
{
	const struct config *cfg = setup->cfg;
	int to_socket = setup->kind == FLOW_SEND;

	memset(f, 0, sizeof *f);
	f->kind = setup->kind;
	flow_attach(f, setup);
	f->enabled = f->running = setup->enabled;
	f->discard = setup->discard;
	f->keep_dst = setup->keep_dst;
	f->stats = stats;
	f->verify = setup->verify;
	f->replay = setup->replay;
	f->retry = setup->retry;
	f->dg = setup->dg;
	f->checksum = cfg->checksum && !flow_is_framed(f); /* framing digests the payload itself */
	digest_init(&stats->digest);
	/* --verify --resume (framed, or -P's ends): the digest both ends confirm is the whole
	 * file's, from byte 0 */
	if (f->verify != NULL &&
	    (to_socket ? f->verify->prefix_sent : f->verify->prefix_received) > 0)
		stats->digest = f->verify->prefix;
	flow_sizes(f, cfg);
	/* the bucket holds one write; a datagram is never cut to fit it */
	f->limited = cfg->rate_limit != 0;
	if (f->limited)
		ratelimit_init(&f->limit, cfg->rate_limit, f->write_size, f->dgram_dst,
		               clock_now());
	f->sniff_hello = !flow_is_framed(f) && !to_socket && f->retry == NULL &&
	                 cfg->transport->socktype == SOCK_STREAM;
	lowat_init(&f->lowat, to_socket || setup->nnet > 0 ? -1 : flow_src(f), cfg->rcvlowat,
	           f->read_size);
	if (!f->enabled)
		return 0;
	if (setup->nnet > 0) /* -P: chunks of its own, no stream buffer */
		return flow_stripe_init(f, setup->nnet, cfg->verify, setup->start);
	/* Splice needs the buffer only to fall back; untouched, it costs no memory. */
	if (iobuf_init(&f->buf, flow_capacity(f)) != 0)
		return -1;
	if (flow_is_framed(f) && to_socket)
		flow_verify_init(f);
	return 0;
}

void flow_free(struct flow *f)
{
	flow_stripe_free(f);
	iobuf_free(&f->buf);
	copy_close(f);
}
