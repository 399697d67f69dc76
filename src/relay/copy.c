/* copy.c: how a flow moves its bytes: read/write, splice through a pipe, or sendfile. */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fastcat.h"
#include "net/net.h"
#include "relay/flow.h"

const char *copy_method_name(enum copy_method m)
{
	switch (m) {
	case METHOD_SPLICE: return "splice";
	case METHOD_SENDFILE: return "sendfile";
	default: return "rw";
	}
}

static const char *flow_name(const struct flow *f)
{
	return f->kind == FLOW_SEND ? "stdin -> socket" : "socket -> stdout";
}

/*
 * Why a flow must copy through fastcat's buffer, or NULL when zero-copy may
 * be tried: it cannot see the bytes, so anything that must look at them or
 * cut them wants read/write. A terminal keeps read/write so interactive use
 * behaves exactly like nc.
 */
static const char *copy_rw_reason(const struct flow *f, const struct config *cfg)
{
	struct stat st;

	if (!zerocopy_available())
		return "this build has no splice (configure --disable-splice, or not Linux)";
	if (cfg->transport->datagram)
		return "datagrams are read and sent whole";
	if (f->ops->rw_reason != NULL)
		return f->ops->rw_reason; /* a feature frames, cuts or digests the bytes */
	if (cfg->checksum)
		return "--checksum reads the bytes";
	if (f->source.rw_reason != NULL)
		return f->source.rw_reason;
	if (isatty(flow_src(f)) || isatty(flow_dst(f)))
		return "a terminal";
	if (f->kind == FLOW_SEND && fstat(flow_src(f), &st) == 0 && S_ISCHR(st.st_mode))
		return "stdin is a device"; /* /dev/null, /dev/zero: splice refuses most of them */
	return NULL;
}

/*
 * A pipe on stdin or stdout holds 64 KiB by default, so each read or splice
 * from it moves at most that much whatever the chunk size: let it hold a
 * chunk, up to the 1 MiB an unprivileged process may ask for (the pipe is
 * shared with the process at its other end).
 */
#define STDIO_PIPE_MAX MIB

static void copy_grow_stdio_pipe(int fd, size_t chunk)
{
	struct stat st;

	if (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode))
		zerocopy_grow_pipe(fd, chunk < STDIO_PIPE_MAX ? chunk : STDIO_PIPE_MAX);
}

/*
 * Pick the flow's method. From a regular file to the socket, sendfile needs
 * no pipe; everything else splices through a pipe of its own sized for one
 * chunk (the pipe holds page references, not copies). Anything that fails
 * here leaves read/write, which always works.
 */
void copy_choose(struct flow *f, const struct config *cfg)
{
	const char *why = copy_rw_reason(f, cfg);
	struct stat st;

	f->method = METHOD_RW;
	f->pipe[0] = f->pipe[1] = -1;
	if (!f->enabled || f->discard)
		return;
	copy_grow_stdio_pipe(f->kind == FLOW_SEND ? flow_src(f) : flow_dst(f),
	                     f->kind == FLOW_SEND ? f->read_size : f->write_size);
	if (cfg->copy == COPY_RW)
		return;
	if (why != NULL) {
		if (cfg->copy == COPY_SPLICE)
			log_warn("--copy=splice: %s uses read/write: %s", flow_name(f), why);
		else
			log_verbose("%s: read/write (%s)", flow_name(f), why);
		return;
	}
	if (f->kind != FLOW_SEND || fstat(flow_src(f), &st) != 0)
		st.st_mode = 0;
	if (S_ISREG(st.st_mode)) {
		f->method = METHOD_SENDFILE;
	} else if (S_ISFIFO(st.st_mode) && cfg->copy == COPY_AUTO &&
	           cfg->transport->copy_from_pipe) {
		log_verbose("%s: read/write (a pipe into %s: copying measured faster)",
		            flow_name(f), cfg->transport->name);
		return;
	} else if (zerocopy_pipe(f->pipe, f->read_size, &f->pipe_cap) == 0) {
		f->method = METHOD_SPLICE;
	} else {
		log_verbose("%s: read/write (no pipe for splice: %s)", flow_name(f),
		            strerror(errno));
		return;
	}
	f->copy_forced = cfg->copy == COPY_SPLICE;
}

/*
 * -v names a zero-copy method once bytes reached the destination by it: a
 * flow whose first splice out is refused says only that it uses read/write
 * (copy_fallback).
 */
static void copy_moved(struct flow *f)
{
	if (f->method_told)
		return;
	f->method_told = 1;
	log_verbose("%s: %s", flow_name(f), copy_method_name(f->method));
}

/* The errors that mean "not for these fds" (pv falls back on the same), not a failed transfer. */
static int copy_unsupported(int err)
{
	return err == EINVAL || err == ENOSYS || err == EOPNOTSUPP || err == ENOTSUP;
}

/* Only a splicing flow has a pipe; the fds of any other flow may not even be set. */
void copy_close(struct flow *f)
{
	if (f->method != METHOD_SPLICE)
		return;
	close(f->pipe[0]);
	close(f->pipe[1]);
	f->pipe[0] = f->pipe[1] = -1;
}

/*
 * Go on with read/write when splice or sendfile turned out not to work for
 * these fds (an O_APPEND stdout, a file system without splice). Bytes
 * already in the pipe move into the buffer first, so none are lost or
 * reordered. 0, or -1 when that failed (the flow's failure says why).
 */
static int copy_fall_back(struct flow *f, int is_write)
{
	(f->copy_forced ? log_warn
	                : log_verbose)("%s: %s not supported here (%s); using read/write",
	                               flow_name(f), copy_method_name(f->method), strerror(errno));
	while (f->piped > 0) {
		size_t room = iobuf_room(&f->buf); /* >= piped: flow_init caps the pipe */
		ssize_t n =
		    read(f->pipe[0], iobuf_tail(&f->buf), room < f->piped ? room : f->piped);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			flow_failed(f, is_write, n == 0 ? EIO : errno);
			return -1;
		}
		iobuf_produced(&f->buf, (size_t)n);
		f->piped -= (size_t)n;
	}
	copy_close(f);
	f->method = METHOD_RW;
	f->stats->copy = METHOD_RW;
	return 0;
}

/* A zero-copy read: source -> the flow's pipe, at most the room flow_room() leaves in it. */
int copy_read(struct flow *f, size_t want)
{
	ssize_t n = zerocopy_splice(flow_src(f), f->pipe[1], want);

	f->stats->reads++;
	switch (io_result(n)) {
	case IO_MOVED:
		f->piped += (size_t)n;
		flow_count_read(f, (size_t)n);
		break;
	case IO_END: f->src_eof = 1; break;
	case IO_AGAIN:
		if (f->piped > 0)
			f->pipe_full = 1; /* or the source is dry: a write comes next either way */
		else
			flow_source_dry(f);
		break;
	case IO_INTERRUPTED: break;
	case IO_FAILED:
		if (copy_unsupported(errno))
			return copy_fall_back(f, 0);
		flow_failed(f, 0, errno);
		return -1;
	}
	return 0;
}

/* A zero-copy write: the pipe -> destination, or sendfile; 0 from sendfile is the file's end. */
int copy_write(struct flow *f, size_t want)
{
	ssize_t n = f->method == METHOD_SENDFILE ? zerocopy_sendfile(flow_dst(f), flow_src(f), want)
	                                         : zerocopy_splice(f->pipe[0], flow_dst(f), want);

	f->stats->writes++;
	switch (io_result(n)) {
	case IO_MOVED:
		if (f->method == METHOD_SPLICE) {
			f->piped -= (size_t)n;
			f->pipe_full = 0;
		}
		flow_count_write(f, (uint64_t)n, (size_t)n);
		copy_moved(f);
		break;
	case IO_END: f->src_eof = 1; break; /* only sendfile returns 0: the pipe is never empty */
	case IO_AGAIN: flow_set_dst_ready(f, 0); break;
	case IO_INTERRUPTED: break;
	case IO_FAILED:
		if (copy_unsupported(errno))
			return copy_fall_back(f, 1);
		return flow_write_failed(f, want);
	}
	return 0;
}
