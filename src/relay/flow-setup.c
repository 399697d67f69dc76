/* flow-setup.c: a flow's role, sizes, copy method and buffers, decided once before the relay
 * starts. */
#include "config.h"

#include <string.h>
#include <sys/socket.h>

#include "fastcat.h"
#include "net/net.h"
#include "relay/flow.h"

/*
 * Size the flow's buffer for its transport: a datagram source reads whole
 * datagrams; exact datagrams need room for a whole number of them; a
 * feature may want room for its trailers.
 */
static size_t flow_capacity(const struct flow *f)
{
	size_t cap = f->read_size > f->write_size ? f->read_size : f->write_size;

	if (f->exact)
		cap = (cap + f->write_size - 1) / f->write_size * f->write_size;
	if (f->dgram_src)
		cap += f->read_size; /* room for more small datagrams before one write */
	return cap + f->ops->read_reserve + f->ops->buffer_extra;
}

/*
 * The one place a flow's chunk sizes are decided, and its copy method with
 * them: the chunk asked for (-B, --read-size, --write-size, or the
 * transport's default: options-check.c's choose_chunk), then the role's
 * needs: a datagram source reads whole datagrams, a datagram sender sends a
 * read as one datagram or cuts --dgram-size ones, a splice pipe smaller
 * than a chunk bounds the read. The report prints what is decided here.
 */
static void flow_sizes(struct flow *f, const struct config *cfg)
{
	const struct transport *t = cfg->transport;

	f->read_size = cfg->read_size;
	f->write_size = cfg->write_size;
	if (t->datagram)
		flow_dgram_init(f, cfg, f->stats);
	if (f->dgram_dst)
		f->write_size = f->exact ? cfg->dgram_size : cfg->read_size;
	if (f->dgram_src && f->read_size < t->receive_buffer)
		f->read_size = t->receive_buffer;
	copy_choose(f, cfg); /* a splice pipe is sized for one read */
	/*
	 * Never more in the pipe than the buffer holds, so a fallback can take it
	 * all back (the pipe may be bigger: 64 KiB unless F_SETPIPE_SZ grew it).
	 */
	if (f->method == METHOD_SPLICE && f->pipe_cap > flow_capacity(f))
		f->pipe_cap = flow_capacity(f);
	if (f->method == METHOD_SPLICE && f->read_size > f->pipe_cap)
		f->read_size = f->pipe_cap; /* the kernel gave a smaller pipe than a chunk */
	f->read_min = (f->exact ? 1 : f->read_size) + f->ops->read_reserve;
	f->stats->read_size = f->read_size;
	f->stats->write_size = f->write_size;
	f->stats->copy = f->method;
}

/* What plugs into the flow, as its role says. */
static void flow_plug(struct flow *f, const struct flow_setup *setup)
{
	f->ops = setup->ops != NULL ? setup->ops : &flow_plain_ops;
	f->ctx = setup->ctx;
	f->source = setup->source;
	f->sink = setup->sink;
	f->nguards = setup->nguards;
	memcpy(f->guards, setup->guards, sizeof f->guards);
}

/*
 * Set a flow up from its role and the transport: stdio on one side, the
 * connection sock on the other, both ready until a call says not. 0, or -1
 * when memory runs out.
 */
int flow_init(struct flow *f, enum flow_kind kind, const struct config *cfg,
              const struct flow_setup *setup, int stdio, int sock, struct flow_stats *stats)
{
	memset(f, 0, sizeof *f);
	f->kind = kind;
	flow_plug(f, setup);
	f->stdio = stdio;
	f->sock = sock;
	f->stdio_ready = f->sock_ready = 1;
	f->enabled = f->running = setup->enabled;
	f->discard = setup->discard;
	f->keep_dst = setup->keep_dst;
	f->sync = setup->sync;
	f->stats = stats;
	f->checksum = cfg->checksum && !f->ops->digests_itself;
	digest_init(&stats->digest);
	/* --verify --resume: the digest both ends confirm is the whole file's, from byte 0 */
	if (setup->digest_from != NULL)
		stats->digest = *setup->digest_from;
	flow_sizes(f, cfg);
	flow_choose_steps(f);
	/* the bucket holds one write; a datagram is never cut to fit it */
	f->limited = cfg->rate_limit != 0;
	if (f->limited)
		ratelimit_init(&f->limit, cfg->rate_limit, f->write_size, f->dgram_dst,
		               clock_now());
	lowat_init(&f->lowat, kind == FLOW_SEND || f->ops->pump != NULL ? -1 : sock, cfg->rcvlowat,
	           f->read_size);
	if (!f->enabled)
		return 0;
	/* Splice needs the buffer only to fall back; untouched, it costs no memory. A pump of its
	 * own keeps its own. */
	if (f->ops->pump == NULL && iobuf_init(&f->buf, flow_capacity(f)) != 0)
		return -1;
	return f->ops->start != NULL ? f->ops->start(f) : 0;
}

void flow_free(struct flow *f)
{
	if (f->ops != NULL && f->ops->stop != NULL)
		f->ops->stop(f);
	iobuf_free(&f->buf);
	copy_close(f);
}
