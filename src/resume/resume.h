/* resume.h: --resume's wire format and the scan of a source's first bytes (resume*.c, the
 * sniffer in flow-verify.c, the fuzzer). */
#ifndef RESUME_H
#define RESUME_H

#include <stdint.h>
#include <sys/types.h>

#include "fastcat.h"
#include "relay/relay.h"

/* The wire format (doc/resume-protocol.md). */
#define RESUME_VERSION      1
#define RESUME_HELLO_BYTES  16 /* "FASTCAT-RESUME1\n": first from the receiver, then the sender */
#define RESUME_OFFER_BYTES  32 /* "FCRO", version, 3 zero, length, window, 4 zero, XXH64 */
#define RESUME_ANSWER_BYTES 24 /* "FCRA", version, verdict, 2 zero, length, total */
#define RESUME_UNKNOWN      UINT64_MAX /* an answer's total when the source's length is unknown */
#define RESUME_OFFER_BUSY   1 /* the offer's flags: a --retry session is held for another sender */

/*
 * The receiver checks the last min(L, 1 MiB) bytes of its file: a tail
 * check, not a re-read of everything (croc re-hashed a partial file for
 * hours). A sender checks what the offer asks, up to RESUME_WINDOW_MAX.
 */
#define RESUME_WINDOW     MIB
#define RESUME_WINDOW_MAX (16 * MIB)

enum resume_verdict {
	RESUME_GO = 0,      /* the window matches: the data from length on follows */
	RESUME_DIFFERS = 1, /* the window differs: the file is not a prefix of the source */
	RESUME_SHORT = 2,   /* the source ends before length (at total) */
};

/* The receiver's offer: "I have length bytes; the last window of them digest to this". */
struct resume_offer {
	unsigned flags; /* RESUME_OFFER_BUSY */
	uint64_t length;
	uint32_t window;
	uint64_t digest; /* XXH64 of the bytes [length - window, length) */
};

/* The sender's answer to the offer. */
struct resume_answer {
	enum resume_verdict verdict;
	uint64_t length; /* the offer's, repeated */
	uint64_t total;  /* the source's whole length, RESUME_UNKNOWN if not known */
};

/*
 * Going through a source's first length bytes in order: the digest of the
 * window at their end, and with --verify of all of them (resume-scan.c).
 */
struct resume_scan {
	uint64_t length;      /* the bytes to go through */
	uint64_t window_from; /* where the window starts: length - window */
	uint64_t done;        /* the bytes gone through so far */
	int whole;            /* digest all of them too (--verify: the whole file's digest) */
	struct digest all;    /* [0, length), when whole */
	struct digest window; /* [window_from, length) */
};

/*
 * What another feature adds to the opening after the hellos (--retry's join and ack), with
 * its state; cli/ fills it, resume_start calls it. A receiver takes a join whenever one comes.
 */
#define RESUME_JOIN_MAX 64 /* the longest join */
struct resume_join {
	void *ctx;
	int (*send)(void *, struct session *); /* the sender, after its hello: 0, or the status */
	size_t bytes;                          /* the receiver: a join's length ... */
	int (*seen)(const unsigned char *);    /* ... whether 4 bytes start one ... */
	int (*receive)(void *, struct session *, const unsigned char *); /* ... and taking it */
	int (*replays)(
	    const void *); /* the sender: its data goes on from a buffer of its own ... */
	/* ... from the offer's length, its window's XXH64 checked where the buffer holds it: 0,
	 * -1 when that differs, or a status */
	int (*rewind)(void *, struct session *, uint64_t, uint32_t, uint64_t);
};

/* resume.c */
extern const struct hello_guard resume_guard;
int resume_start(struct session *, const struct resume_join *);

/* resume-wire.c */
extern const char resume_hello[RESUME_HELLO_BYTES];
int resume_hello_seen(const unsigned char *, size_t);
void resume_offer_encode(unsigned char *, const struct resume_offer *);
int resume_offer_decode(const unsigned char *, struct resume_offer *);
void resume_answer_encode(unsigned char *, const struct resume_answer *);
int resume_answer_decode(const unsigned char *, struct resume_answer *);

/* resume-scan.c */
void resume_scan_init(struct resume_scan *, uint64_t, uint64_t, int);
void resume_scan_feed(struct resume_scan *, const unsigned char *, size_t);
int resume_scan_file(struct resume_scan *, int, off_t);
int resume_scan_stream(struct resume_scan *, int);

#endif
