/*
 * verify.h: --verify, private to verify/ and to cli/session.c, which plugs it into a session:
 * the wire format, a session's --verify state (the frames' on both flows, the control
 * datagrams' exchange), and what plugs into the relay.
 */
#ifndef FASTCAT_VERIFY_H
#define FASTCAT_VERIFY_H

#include <stdint.h>

#include "fastcat.h"
#include "relay/relay.h"

/* --verify's wire format (verify.c; doc/verify-protocol.md). */
#define VERIFY_HELLO_BYTES 16        /* "FASTCAT-VERIFY1\n", first from each end */
#define FRAME_HEADER       8         /* type, 3 zero bytes, length (big-endian) */
#define FRAME_TRAILER      24        /* an END or VERDICT: header, count, XXH64 */
#define VERIFY_FRAME_MAX   CHUNK_MAX /* the largest DATA payload */

enum frame_type {
	FRAME_DATA = 'D',    /* payload bytes follow */
	FRAME_END = 'E',     /* no more data: the count and digest of what was sent */
	FRAME_VERDICT = 'V', /* the count and digest of what this end wrote of the peer's data */
};

/* --verify over datagrams: control datagrams (verify.c; doc/verify-protocol.md). */
#define CTL_HEADER  8  /* 0xff "FCV", type, version, 2 zero bytes */
#define CTL_MAX     40 /* the largest: a VERDICT */
#define CTL_VERSION 1

enum ctl_type {
	CTL_HELLO = 'H',   /* I run --verify; flags say what I know */
	CTL_END = 'E',     /* no more data: datagrams, bytes and XXH64 sent */
	CTL_VERDICT = 'V', /* of your data: datagrams, bytes and XXH64 written, datagrams lost */
	CTL_DONE = 'D',    /* your VERDICT arrived */
	CTL_REFUSE = 'N',  /* I run without --verify: your hello is refused */
};

#define CTL_HAVE_YOURS 1 /* HELLO flag: your hello arrived */
#define CTL_ANSWER     2 /* HELLO flag: I do not know that mine arrived: answer */

struct ctl {
	enum ctl_type type;
	int flags;          /* HELLO */
	uint64_t datagrams; /* END: sent; VERDICT: received */
	uint64_t bytes;     /* END: sent; VERDICT: written */
	uint64_t digest;    /* ... their XXH64 */
	uint64_t lost;      /* VERDICT: datagrams --seq found missing */
};

struct frame {
	enum frame_type type;
	uint32_t len;    /* DATA: payload bytes */
	uint64_t bytes;  /* END, VERDICT: byte count */
	uint64_t digest; /* END, VERDICT: XXH64 */
};

/* --verify over datagrams: control datagrams, sent again until answered (verify-dgram.c). */
struct dgverify {
	int fd;                       /* the socket the control datagrams go through */
	int hello_out;                /* we said hello (a listener answers the peer's first) */
	int peer_has_hello;           /* the peer showed that our hello arrived */
	uint64_t peer_datagrams;      /* its END: datagrams it sent */
	uint64_t confirmed_datagrams; /* its VERDICT: our datagrams it received */
	int end_due;                  /* our data is out: our END goes, until a VERDICT */
	uint64_t sent_datagrams;      /* ... saying this many datagrams */
	int end_sent;                 /* ... and it went once at least */
	int verdict_ready;            /* our receiving is done: the VERDICT can go */
	int verdict_sent;             /* ... it went, after the latest END */
	int answer_end;               /* an END came that our VERDICT has to answer */
	int answer_verdict;           /* a VERDICT came: answer DONE */
	int done_seen;                /* the peer's DONE: our VERDICT arrived */
	int verdict_tries;            /* VERDICTs sent without a DONE */
	int refused;                  /* the peer sent REFUSE: it runs without --verify */
	int unreachable;    /* the peer's port was unreachable (ICMP), not yet looked at */
	int never_reached;  /* ... while we waited for its hello */
	double end_at;      /* when the peer's END came (stragglers may follow) */
	double last_heard;  /* when the peer last sent anything */
	double next_resend; /* when unanswered control datagrams go again */
	double backoff;     /* seconds until the resend after that */
	double patience;    /* seconds of silence before giving up (-w, or 10) */
};

/*
 * One session's --verify: what the peer said (the verdict is the session's, for the
 * conclusion and the report), each flow's place in the frames, and over datagrams the
 * control exchange. Both flows' ops and the datagram agent share it.
 */
struct verify {
	struct session *s;
	struct verdict *vd;     /* &s->verdict */
	int datagram;           /* udp, unix-dgram: the data goes as --seq datagrams */
	int hello_seen;         /* the peer's hello arrived */
	int peer_done;          /* the peer's EOF came: it will send nothing more */
	struct failure failure; /* the control exchange's, for the session's or a flow's */
	/* sending frames */
	size_t gate;        /* bytes that may go before the peer's hello (ours) */
	int end_queued;     /* our END is in the buffer */
	int verdict_queued; /* our VERDICT is in the buffer */
	size_t header_left; /* header bytes of the frame at the head */
	uint64_t out_left;  /* payload bytes of the DATA frame at the head */
	uint64_t in_left;   /* receiving: payload bytes of the peer's DATA frame */
	struct dgverify dg; /* over datagrams */
};

/* verify.c: --verify in a session */
extern const struct hello_guard verify_guard;
void verify_start(struct verify *, struct session *);
void verify_plug(struct verify *, struct relay_setup *);
void verify_conclude(struct verify *, struct session *);
void verify_conclude_striped(struct session *);

/* verify-wire.c */
void verify_hello_put(unsigned char *);
int verify_hello(const unsigned char *, size_t);
size_t verify_encode(unsigned char *, const struct frame *);
int verify_decode(const unsigned char *, size_t, struct frame *);
size_t verify_ctl_encode(unsigned char *, const struct ctl *);
int verify_ctl_decode(const unsigned char *, const unsigned char *, size_t, struct ctl *);
int verify_ctl_parse(const unsigned char *, size_t, struct ctl *);
int verify_ctl_stale(const unsigned char *, size_t);

/* verify-stream.c: the frames, as the flows' ops */
extern const struct flow_ops verify_send_ops, verify_receive_ops;

/* verify-dgram.c: the control datagrams' exchange, as a relay agent */
extern const struct relay_agent verify_dgram_agent;
int verify_dgram_receive(struct verify *, const struct ctl *, double);
int verify_dgram_input_done(struct verify *, struct seqtrack *, double);
int verify_ctl_send(int, const struct ctl *);

/* verify-dgram-flow.c */
extern const struct flow_ops verify_dgram_send_ops, verify_dgram_receive_ops, verify_refuse_ops;

#endif
