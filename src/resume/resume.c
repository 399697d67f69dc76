/*
 * resume.c: --resume: before any data, the receiver (-l) offers the length
 * of the file on its stdout and the digest of that file's end; the sender
 * checks them against its stdin, then starts after them or refuses
 * (doc/resume-protocol.md; the wire format is coded in resume-wire.c).
 *
 * The receiver speaks first, as -P's does: a peer that is not a --resume
 * receiver never offers, so a --resume sender gives up before it has sent
 * a byte to it. The receiver writes nothing before the sender's "go", so a
 * refusal leaves its file as it was.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fastcat.h"
#include "base/base.h"
#include "resume/resume.h"
#include "net/net.h"

/* A peer that opens with a --resume receiver's hello: the sender must give --resume too. */
const struct hello_guard resume_guard = {
    RESUME_HELLO_BYTES, resume_hello_seen, EXIT_CONNECT,
    "the peer is a fastcat --resume receiver (it goes on with a file it has part of); give "
    "--resume at this end"};

/* Seconds the opening may take without -w: a plain peer is told apart by saying nothing. */
#define HANDSHAKE_PATIENCE 5.0

static double patience(const struct config *cfg)
{
	return cfg->timeout_ms >= 0 ? (double)cfg->timeout_ms / 1000 : HANDSHAKE_PATIENCE;
}

/* A sender whose opening has a join after its hello: --retry's. */
static int joins(const struct resume_join *join)
{
	return join != NULL && join->send != NULL;
}

/*
 * Read len bytes that start with the peer's hello (the receiver's come with
 * its offer). 0, or the status with the reason: a peer that sends other
 * bytes first, closes or stays silent is not a --resume peer (exit 3, as
 * -P says of a plain peer).
 */
static int read_hello(struct session *s, unsigned char *buf, size_t len, const char *role,
                      int retrying)
{
	/* a --retry sender may come back to a receiver still giving up on the lost connection */
	double secs = retrying && patience(s->cfg) < HANDSHAKE_PATIENCE ? HANDSHAKE_PATIENCE
	                                                                : patience(s->cfg);
	const char *need = retrying ? "-l -k --resume" : "--resume";
	size_t got = handshake_move(s->ep->fd, buf, len, 0, clock_now() + secs);
	int seen = resume_hello_seen(buf, got < RESUME_HELLO_BYTES ? got : RESUME_HELLO_BYTES);
	const char *peer = s->ep->peer;

	if (got == len && seen == 1)
		return 0;
	if (got > 0 && seen < 0)
		return failure_set(&s->failure, EXIT_CONNECT,
		                   "--resume: %s is not a fastcat --resume %s: it sent other data "
		                   "first (give %s at the other end)",
		                   peer, role, need);
	if (errno == EINTR)
		return failure_set(&s->failure, EXIT_RUNTIME, "interrupted by %s",
		                   signals_stop_name());
	if (got >= RESUME_HELLO_BYTES)
		return failure_set(&s->failure, EXIT_PEER,
		                   "--resume: %s stopped in the middle of its offer%s%s", peer,
		                   errno ? ": " : "", errno ? strerror(errno) : "");
	/* a plain fastcat that saw our hello first refuses with a reset */
	if (errno == 0 || errno == ECONNRESET)
		return failure_set(&s->failure, EXIT_CONNECT,
		                   "--resume: %s is not a fastcat --resume %s: it %s without the "
		                   "resume hello (give %s at the other end)",
		                   peer, role, errno ? "reset the connection" : "ended its side",
		                   need);
	if (errno == ETIMEDOUT)
		return failure_set(&s->failure, EXIT_CONNECT,
		                   "--resume: %s is not a fastcat --resume %s: no resume hello in "
		                   "%g s (give %s at the other end)",
		                   peer, role, secs, need);
	return failure_set(&s->failure, EXIT_PEER, "--resume: receive from %s: %s", peer,
	                   strerror(errno));
}

/* Send all of buf within the patience. 0, or the status with the reason. */
static int send_all(struct session *s, unsigned char *buf, size_t len)
{
	if (handshake_move(s->ep->fd, buf, len, 1, clock_now() + patience(s->cfg)) == len)
		return 0;
	if (errno == EINTR)
		return failure_set(&s->failure, EXIT_RUNTIME, "interrupted by %s",
		                   signals_stop_name());
	return failure_set(&s->failure, errno == ETIMEDOUT ? EXIT_TIMEOUT : EXIT_PEER,
	                   "--resume: send to %s: %s", s->ep->peer,
	                   strerror(errno ? errno : EPIPE));
}

/*
 * An fd that reads stdout's file back: a copy of stdout when it is open for
 * reading too (1<> FILE), else the file opened again, read-only, through
 * /dev/fd/1 (>> FILE; Linux opens the file itself there), and checked to be
 * the same file. -1 with errno when neither works.
 */
static int open_readback(const struct stat *st)
{
	int flags = fcntl(STDOUT_FILENO, F_GETFL), fd;
	struct stat again;

	if (flags >= 0 && (flags & O_ACCMODE) == O_RDWR)
		return dup(STDOUT_FILENO);
	fd = open("/dev/fd/1", O_RDONLY | O_CLOEXEC);
	if (fd >= 0 &&
	    (fstat(fd, &again) != 0 || again.st_dev != st->st_dev || again.st_ino != st->st_ino)) {
		close(fd);
		errno = ESTALE;
		return -1;
	}
	return fd;
}

/* Stdout's file read back into sc: the window, or with --verify all of it. 0, or the status. */
static int read_back(struct session *s, const struct stat *st, struct resume_scan *sc)
{
	int fd = open_readback(st), rc;

	if (fd < 0)
		return failure_set(
		    &s->failure, EXIT_RUNTIME,
		    "--resume: cannot read stdout's file back to check its end (%s); "
		    "give it as 1<> FILE",
		    strerror(errno));
	rc = resume_scan_file(sc, fd, 0);
	close(fd);
	if (rc != 0 && errno == EINTR)
		return failure_set(&s->failure, EXIT_RUNTIME, "interrupted by %s",
		                   signals_stop_name());
	if (rc != 0)
		return failure_set(&s->failure, EXIT_RUNTIME,
		                   "--resume: read stdout's file back: %s", strerror(errno));
	if (sc->done < sc->length)
		return failure_set(&s->failure, EXIT_RUNTIME,
		                   "--resume: stdout's file shrank while it was read back");
	return 0;
}

/*
 * The receiver's offer: its file's length L and the digest of its last
 * min(L, 1 MiB) bytes. 0, or the status with the reason.
 */
static int receiver_offer(struct session *s, struct resume_offer *o, struct resume_scan *sc)
{
	struct stat st;
	int rc;

	if (fstat(STDOUT_FILENO, &st) != 0 || !S_ISREG(st.st_mode))
		return failure_set(&s->failure, EXIT_USAGE,
		                   "--resume needs stdout to be a regular file (use >> FILE)");
	o->flags =
	    s->listener != NULL && listener_busy_seconds(s->listener) > 0 ? RESUME_OFFER_BUSY : 0;
	o->length = (uint64_t)st.st_size;
	o->window = (uint32_t)(o->length < RESUME_WINDOW ? o->length : RESUME_WINDOW);
	resume_scan_init(sc, o->length, o->window, 0);
	rc = o->length > 0 ? read_back(s, &st, sc) : 0;
	o->digest = digest_final(&sc->window);
	return rc;
}

/*
 * --verify: the whole file's digest starts with its first L bytes, read
 * back once the sender answered, not before the offer: a sender waits for
 * an offer a few seconds only, and L may be many GiB. A --retry session this
 * listener held, back, has its digest of what it wrote kept instead (the
 * tail the offer checked says the file is still that). 0, or the status.
 */
static int receiver_prefix(struct session *s, uint64_t length)
{
	struct listener *l = s->listener;
	struct resume_scan all;
	struct stat st;
	int rc;

	/* held_until 0: a --retry join resumed the held session on this connection */
	if (l != NULL && l->held_digest_ok && l->held != 0 && l->held_until == 0 &&
	    l->held_length == length) {
		/* the session this listener held: its digest of what it wrote, not a re-read */
		s->prefix.digest = l->held_digest;
		s->prefix.received = length;
		log_verbose("--verify: the first %llu bytes' digest is the held session's",
		            (unsigned long long)length);
		return 0;
	}
	if (fstat(STDOUT_FILENO, &st) != 0)
		return failure_set(&s->failure, EXIT_RUNTIME, "--resume: stat stdout: %s",
		                   strerror(errno));
	resume_scan_init(&all, length, 0, 1);
	if ((rc = read_back(s, &st, &all)) != 0)
		return rc;
	s->prefix.digest = all.all;
	s->prefix.received = length;
	return 0;
}

/* The receiver, once the sender answered: refuse, or write from L on. */
static int receiver_start(struct session *s, const struct resume_answer *a,
                          const struct resume_scan *sc)
{
	s->resume.offset = a->length;
	s->resume.total = a->total;
	s->close_plainly = a->verdict != RESUME_GO; /* the sender closes after its answer */
	if (a->verdict == RESUME_SHORT)
		return failure_set(
		    &s->failure, EXIT_VERIFY,
		    "--resume: the sender's stdin has only %llu bytes, fewer than "
		    "this file's %llu: the file is not a prefix of it (left as it was)",
		    (unsigned long long)a->total, (unsigned long long)a->length);
	if (a->verdict == RESUME_DIFFERS)
		return failure_set(
		    &s->failure, EXIT_VERIFY,
		    "--resume: this file (%llu bytes) is not a prefix of the sender's "
		    "stdin: its last %llu bytes differ (left as it was)",
		    (unsigned long long)a->length,
		    (unsigned long long)(sc->length - sc->window_from));
	/* >> FILE writes at the end anyway; 1<> FILE writes at its position, which is here */
	if (lseek(STDOUT_FILENO, (off_t)a->length, SEEK_SET) < 0)
		return failure_set(&s->failure, EXIT_RUNTIME, "--resume: seek stdout to %llu: %s",
		                   (unsigned long long)a->length, strerror(errno));
	s->resume.on = 1;
	log_verbose("--resume: the sender goes on from byte %llu", (unsigned long long)a->length);
	return s->cfg->verify && a->length > 0 ? receiver_prefix(s, a->length) : 0;
}

/* Bytes of the sender's answer (or join): no limit but -w, since it may read a long pipe first. */
static size_t read_answer(struct session *s, unsigned char *buf, size_t len)
{
	const struct config *cfg = s->cfg;

	return handshake_move(s->ep->fd, buf, len, 0,
	                      cfg->timeout_ms >= 0 ? clock_now() + patience(cfg) : 0);
}

/* -l --resume: offer, wait for the sender's hello (and --retry's join), then for its answer. */
static int resume_receive(struct session *s, const struct resume_join *join)
{
	unsigned char msg[RESUME_HELLO_BYTES + RESUME_OFFER_BYTES], answer[RESUME_ANSWER_BYTES];
	struct resume_offer o;
	struct resume_answer a;
	struct resume_scan sc;
	size_t got;
	int rc = receiver_offer(s, &o, &sc);

	if (rc != 0)
		return rc;
	memcpy(msg, resume_hello, RESUME_HELLO_BYTES);
	resume_offer_encode(msg + RESUME_HELLO_BYTES, &o);
	if ((rc = send_all(s, msg, sizeof msg)) != 0)
		return rc;
	log_verbose("--resume: offered %llu bytes (xxh64 of the last %u: %016llx)",
	            (unsigned long long)o.length, (unsigned)o.window, (unsigned long long)o.digest);
	if ((rc = read_hello(s, msg, RESUME_HELLO_BYTES, "sender", 0)) != 0)
		return rc;
	/* a sender reads through a pipe's first L bytes for as long as that takes: only -w bounds
	 * it; a --retry sender's join comes first, at once */
	got = read_answer(s, answer, 4);
	if (got == 4 && join != NULL && join->seen(answer)) {
		unsigned char msg_join[RESUME_JOIN_MAX];

		memcpy(msg_join, answer, 4);
		if (read_answer(s, msg_join + 4, join->bytes - 4) != join->bytes - 4)
			got = 0;
		else if ((rc = join->receive(join->ctx, s, msg_join)) != 0)
			return rc;
		else
			got = read_answer(s, answer, 4);
	}
	if (got == 4)
		got += read_answer(s, answer + 4, sizeof answer - 4);
	if (got < sizeof answer && errno == EINTR)
		return failure_set(&s->failure, EXIT_RUNTIME, "interrupted by %s",
		                   signals_stop_name());
	if (got < sizeof answer)
		return failure_set(&s->failure, errno == ETIMEDOUT ? EXIT_TIMEOUT : EXIT_PEER,
		                   "--resume: %s did not answer the offer%s%s (the file is left as "
		                   "it was)",
		                   s->ep->peer, errno ? ": " : "", errno ? strerror(errno) : "");
	if (resume_answer_decode(answer, &a) != 0 || a.length != o.length)
		return failure_set(&s->failure, EXIT_CONNECT,
		                   "--resume: %s sent an answer this fastcat does not know",
		                   s->ep->peer);
	return receiver_start(s, &a, &sc);
}

/*
 * Check the offer against stdin: a regular file is read back at the window
 * (pread) and seeked past L; anything else is read through its first L
 * bytes, which are dropped. Fills the answer. 0, or the status with the
 * reason when stdin could not be read.
 */
static int sender_check(struct session *s, const struct resume_join *join,
                        const struct resume_offer *o, struct resume_scan *sc,
                        struct resume_answer *a)
{
	struct stat st;
	off_t at = -1;
	int rc;

	resume_scan_init(sc, o->length, o->window, s->cfg->verify);
	a->length = o->length;
	a->total = s->cfg->size != 0 ? s->cfg->size : RESUME_UNKNOWN;
	if (joins(join) && join->replays(join->ctx)) {
		/* our session, its bytes: the replay buffer goes on, if the file's tail matches */
		a->total = RESUME_UNKNOWN;
		rc = join->rewind(join->ctx, s, o->length, o->window, o->digest);
		a->verdict = rc < 0 ? RESUME_DIFFERS : RESUME_GO;
		return rc < 0 ? 0 : rc;
	}
	if (fstat(STDIN_FILENO, &st) == 0 && S_ISREG(st.st_mode))
		at = lseek(STDIN_FILENO, 0, SEEK_CUR);
	if (at >= 0 && s->stdin_at >= 0)
		at = s->stdin_at; /* where stdin started, not where the last connection left it */
	if (at >= 0) {
		a->total = st.st_size > at ? (uint64_t)(st.st_size - at) : 0;
		if (a->total < o->length) {
			a->verdict = RESUME_SHORT;
			return 0;
		}
		rc = resume_scan_file(sc, STDIN_FILENO, at);
	} else {
		log_verbose("--resume: reading and dropping the first %llu bytes of stdin",
		            (unsigned long long)o->length);
		rc = resume_scan_stream(sc, STDIN_FILENO);
		s->resume.skipped = sc->done;
	}
	if (rc != 0 && errno == EINTR)
		return failure_set(&s->failure, EXIT_RUNTIME, "interrupted by %s",
		                   signals_stop_name());
	if (rc != 0)
		return failure_set(&s->failure, EXIT_RUNTIME, "read stdin: %s", strerror(errno));
	if (sc->done < o->length) {
		a->verdict = RESUME_SHORT;
		a->total = sc->done;
		return 0;
	}
	a->verdict = digest_final(&sc->window) == o->digest ? RESUME_GO : RESUME_DIFFERS;
	if (a->verdict == RESUME_GO && at >= 0 &&
	    lseek(STDIN_FILENO, at + (off_t)o->length, SEEK_SET) < 0)
		return failure_set(&s->failure, EXIT_RUNTIME, "--resume: seek stdin: %s",
		                   strerror(errno));
	if (a->total != RESUME_UNKNOWN && a->total < o->length)
		a->total = RESUME_UNKNOWN; /* a --size smaller than what the pipe gave */
	return 0;
}

/* The sender, once its answer is out: stop (having sent nothing), or send from L on. */
static int sender_start(struct session *s, const struct resume_offer *o,
                        const struct resume_answer *a, const struct resume_scan *sc)
{
	s->resume.offset = o->length;
	s->resume.total = a->total;
	s->close_plainly = a->verdict != RESUME_GO; /* the receiver must read our answer */
	if (a->verdict == RESUME_SHORT)
		return failure_set(&s->failure, EXIT_VERIFY,
		                   "--resume: stdin has only %llu bytes, fewer than the receiver's "
		                   "file (%llu): that file is not a prefix of it; nothing sent",
		                   (unsigned long long)a->total, (unsigned long long)o->length);
	if (a->verdict == RESUME_DIFFERS)
		return failure_set(&s->failure, EXIT_VERIFY,
		                   "--resume: the receiver's file (%llu bytes) is not a prefix of "
		                   "stdin: its last %u bytes differ; nothing sent",
		                   (unsigned long long)o->length, (unsigned)o->window);
	s->resume.on = 1;
	if (s->cfg->verify) {
		s->prefix.digest = sc->all;
		s->prefix.sent = o->length;
	}
	log_verbose("--resume: the receiver has %llu bytes; sending from there",
	            (unsigned long long)o->length);
	return 0;
}

/* --resume without -l: the receiver's offer, our hello at once, the check, our answer. */
static int resume_send(struct session *s, const struct resume_join *join)
{
	unsigned char msg[RESUME_HELLO_BYTES + RESUME_OFFER_BYTES], answer[RESUME_ANSWER_BYTES];
	struct resume_offer o;
	struct resume_answer a;
	struct resume_scan sc;
	int rc = read_hello(s, msg, sizeof msg, "receiver", joins(join));

	if (rc != 0)
		return rc;
	if (resume_offer_decode(msg + RESUME_HELLO_BYTES, &o) != 0)
		return failure_set(&s->failure, EXIT_CONNECT,
		                   "--resume: %s sent an offer this fastcat does not know",
		                   s->ep->peer);
	if ((o.flags & RESUME_OFFER_BUSY) && !joins(join))
		return failure_set(&s->failure, EXIT_CONNECT,
		                   "--resume: %s holds a lost --retry session for its sender, and "
		                   "refuses others meanwhile; try again later",
		                   s->ep->peer);
	/* the hello now, before a read through a pipe that may take long: the receiver knows us */
	memcpy(msg, resume_hello, RESUME_HELLO_BYTES);
	if ((rc = send_all(s, msg, RESUME_HELLO_BYTES)) != 0)
		return rc;
	if (joins(join) && (rc = join->send(join->ctx, s)) != 0)
		return rc;
	if ((rc = sender_check(s, join, &o, &sc, &a)) != 0)
		return rc;
	resume_answer_encode(answer, &a);
	if ((rc = send_all(s, answer, sizeof answer)) != 0)
		return rc;
	return sender_start(s, &o, &a, &sc);
}

/*
 * --resume, on a connection just made: the listener receives into the file
 * on its stdout, the other end sends its stdin; join, or NULL: what another
 * feature (--retry) adds after the hellos. 0 when the relay may start
 * (s->resume says where), or the exit status with s->failure.
 */
int resume_start(struct session *s, const struct resume_join *join)
{
	s->resume.total = UINT64_MAX;
	return s->cfg->listen ? resume_receive(s, join) : resume_send(s, join);
}
