/* test-iobuf.c: head/tail offsets move as data goes in and out, and reset when empty. */
#include "config.h"

#include <string.h>

#include "fastcat.h"
#include "relay/flow.h"
#include "tap.h"

int main(void)
{
	struct iobuf b;

	tap_ok(iobuf_init(&b, 16) == 0, "a 16-byte buffer allocates");
	tap_ok(iobuf_len(&b) == 0 && iobuf_room(&b) == 16, "it starts empty with all room");
	memcpy(iobuf_tail(&b), "abcdefghij", 10);
	iobuf_produced(&b, 10);
	tap_ok(iobuf_len(&b) == 10 && iobuf_room(&b) == 6, "10 bytes in: len 10, room 6");
	iobuf_consumed(&b, 4);
	tap_ok(iobuf_len(&b) == 6 && memcmp(iobuf_head(&b), "efghij", 6) == 0,
	       "a partial write of 4 leaves the next 6 at the head, unmoved");
	tap_ok(iobuf_room(&b) == 6, "room at the tail does not grow before the buffer empties");
	iobuf_consumed(&b, 6);
	tap_ok(iobuf_len(&b) == 0 && iobuf_room(&b) == 16 && iobuf_head(&b) == b.data,
	       "once drained, the offsets start over at 0");
	iobuf_free(&b);
	tap_ok(b.data == NULL && b.cap == 0, "free clears the buffer");
	return tap_done();
}
