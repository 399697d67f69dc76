/* test-lowat.c: the TCP receiver's low-water mark goes on after a whole chunk, off after a wait. */
#include "config.h"

#include <sys/socket.h>
#include <unistd.h>

#include "fastcat.h"
#include "relay/flow.h"
#include "tap.h"

/* The socket's SO_RCVLOWAT as the kernel holds it. */
static int mark_of(int fd)
{
	int v = -1;
	socklen_t len = sizeof v;

	getsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &v, &len);
	return v;
}

static void set_rcvbuf(int fd, int bytes)
{
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
}

/* A new socket pair in place of sv's, with no mark set. */
static void fresh_pair(int sv[2])
{
	close(sv[0]);
	close(sv[1]);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		perror("socketpair");
}

int main(void)
{
	struct lowat w;
	int sv[2];
	double t = 100;
	long ms;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
		perror("socketpair");
		return 1;
	}
	lowat_init(&w, sv[0], 4096, 1000);
	lowat_read(&w, 999);
	tap_ok(!lowat_on(&w) && mark_of(sv[0]) == 1, "a short read leaves the mark off");
	lowat_wait(&w, t);
	tap_ok(lowat_wait_ms(&w, t) == -1 && !lowat_expired(&w, t + 1),
	       "with the mark off, a wait has no deadline");

	lowat_read(&w, 1000);
	tap_ok(lowat_on(&w) && mark_of(sv[0]) == 4096, "a whole chunk sets the mark");
	tap_ok(lowat_wait_ms(&w, t) == -1, "no deadline until a read says EAGAIN");
	lowat_wait(&w, t);
	ms = lowat_wait_ms(&w, t);
	tap_ok(ms >= 2 && ms <= 3, "EAGAIN: 2 ms of patience, rounded up (%ld)", ms);
	lowat_wait(&w, t + 0.001);
	ms = lowat_wait_ms(&w, t + 0.001);
	tap_ok(ms >= 1 && ms <= 2, "a second EAGAIN keeps the first deadline (%ld)", ms);
	tap_ok(!lowat_expired(&w, t + 0.0015) && lowat_on(&w), "not yet expired at 1.5 ms");
	tap_ok(lowat_wait_ms(&w, t + 0.003) == 0, "past the deadline: poll must not sleep");
	tap_ok(lowat_expired(&w, t + 0.002) && !lowat_on(&w) && mark_of(sv[0]) == 1,
	       "at 2 ms the mark comes off (SO_RCVLOWAT 1)");
	tap_ok(!lowat_expired(&w, t + 1), "it comes off once");

	lowat_read(&w, 5000);
	lowat_wait(&w, t + 2);
	lowat_read(&w, 10);
	tap_ok(lowat_on(&w) && lowat_wait_ms(&w, t + 2) == -1,
	       "data while waiting: the wait is over and the mark stays");

	/* the receive buffer bounds the mark: a quarter of it, looked at again every 16 reads */
	set_rcvbuf(sv[1], 512 * 1024); /* the kernel doubles it: 1 MiB */
	lowat_init(&w, sv[1], MIB, 1000);
	lowat_read(&w, 1000);
	tap_ok(lowat_on(&w) && mark_of(sv[1]) == 256 * 1024,
	       "a 1 MiB buffer: the mark is 256 KiB, not --rcvlowat's 1 MiB (%d)", mark_of(sv[1]));
	set_rcvbuf(sv[1], 2 * MIB); /* as autotuning grows it: 4 MiB */
	for (int i = 0; i < 16; i++)
		lowat_read(&w, 1000);
	tap_ok(mark_of(sv[1]) == 256 * 1024, "no second look for 16 whole reads");
	lowat_read(&w, 1000);
	tap_ok(lowat_on(&w) && mark_of(sv[1]) == MIB, "then the grown buffer takes the whole mark");
	lowat_wait(&w, t);
	tap_ok(lowat_expired(&w, t + 1) && mark_of(sv[1]) == 1, "a wait takes it off");
	lowat_read(&w, 1000);
	tap_ok(lowat_on(&w) && mark_of(sv[1]) == MIB,
	       "and the next whole read sets it again at once");

	set_rcvbuf(sv[1], 100 * 1000); /* 200000: a quarter is below 128 KiB */
	lowat_init(&w, sv[1], MIB, 1000);
	lowat_read(&w, 1000);
	tap_ok(!lowat_on(&w) && mark_of(sv[1]) == MIB,
	       "a small buffer: no mark (the old one stays: a test artefact)");
	lowat_init(&w, sv[1], 40000, 1000);
	lowat_read(&w, 1000);
	tap_ok(lowat_on(&w) && mark_of(sv[1]) == 40000, "a small --rcvlowat that fits is set");

	fresh_pair(sv);
	set_rcvbuf(sv[0], MIB);
	lowat_init(&w, sv[0], 0, 1000);
	lowat_read(&w, 1 << 20);
	tap_ok(!lowat_on(&w) && mark_of(sv[0]) == 1, "mark 0 (--rcvlowat 0): never set");
	lowat_init(&w, -1, 4096, 1000);
	lowat_read(&w, 1 << 20);
	tap_ok(!lowat_on(&w), "no socket (a sending flow): never set");
	lowat_init(&w, 12345, 4096, 1000); /* not an fd: setsockopt fails */
	lowat_read(&w, 1000);
	tap_ok(!lowat_on(&w) && w.fd == -1, "a refused setsockopt turns it off for good");
	close(sv[0]);
	close(sv[1]);
	return tap_done();
}
