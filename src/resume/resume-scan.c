/*
 * resume-scan.c: --resume: going through a source's first L bytes for their
 * digests: a file read back with pread (the tail only, unless the whole is
 * wanted), or a stream read and dropped, since nothing seeks in a pipe.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include "fastcat.h"
#include "resume/resume.h"

/* Bytes one read of the scan takes: the whole default window in one call. */
#define SCAN_CHUNK MIB

/* length: the bytes to go through; window: how many at their end to digest; whole: all too. */
void resume_scan_init(struct resume_scan *sc, uint64_t length, uint64_t window, int whole)
{
	sc->length = length;
	sc->window_from = length - window;
	sc->done = 0;
	sc->whole = whole;
	digest_init(&sc->all);
	digest_init(&sc->window);
}

/* The next n bytes of the source, in order; the part in the window goes to its digest. */
void resume_scan_feed(struct resume_scan *sc, const unsigned char *p, size_t n)
{
	uint64_t end = sc->done + n;

	if (sc->whole)
		digest_update(&sc->all, p, n);
	if (end > sc->window_from) {
		size_t skip = sc->done < sc->window_from ? (size_t)(sc->window_from - sc->done) : 0;
		digest_update(&sc->window, p + skip, n - skip);
	}
	sc->done = end;
}

/* free(), keeping errno for the caller: the scan's result, -1 with errno or 0. */
static int scan_done(unsigned char *buf, int rc)
{
	int err = errno;

	free(buf);
	errno = err;
	return rc;
}

/*
 * A file's bytes [base, base + length), by pread (the file position stays):
 * only the window's, unless the whole is wanted. 0 (sc->done < length when
 * the file ended first), or -1 with errno (EINTR: a stop signal).
 */
int resume_scan_file(struct resume_scan *sc, int fd, off_t base)
{
	unsigned char *buf = malloc(SCAN_CHUNK);

	if (buf == NULL)
		return -1;
	if (!sc->whole)
		sc->done = sc->window_from;
	while (sc->done < sc->length) {
		uint64_t left = sc->length - sc->done;
		ssize_t n;

		if (signal_stop) {
			errno = EINTR;
			return scan_done(buf, -1);
		}
		n = pread(fd, buf, left < SCAN_CHUNK ? (size_t)left : SCAN_CHUNK,
		          base + (off_t)sc->done);
		if (n > 0)
			resume_scan_feed(sc, buf, (size_t)n);
		else if (n == 0)
			break;
		else if (errno != EINTR)
			return scan_done(buf, -1);
	}
	return scan_done(buf, 0);
}

/*
 * A stream's first length bytes, read and dropped; blocking or not (stdin's
 * flags are the shell's). 0 (sc->done < length when it ended first), or -1
 * with errno (EINTR: a stop signal).
 */
int resume_scan_stream(struct resume_scan *sc, int fd)
{
	unsigned char *buf = malloc(SCAN_CHUNK);

	if (buf == NULL)
		return -1;
	while (sc->done < sc->length) {
		uint64_t left = sc->length - sc->done;
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (signal_stop) {
			errno = EINTR;
			return scan_done(buf, -1);
		}
		n = read(fd, buf, left < SCAN_CHUNK ? (size_t)left : SCAN_CHUNK);
		if (n > 0)
			resume_scan_feed(sc, buf, (size_t)n);
		else if (n == 0)
			break;
		else if (errno == EAGAIN || errno == EWOULDBLOCK)
			poll(&pfd, 1, -1); /* a stop signal wakes it: no SA_RESTART */
		else if (errno != EINTR)
			return scan_done(buf, -1);
	}
	return scan_done(buf, 0);
}
