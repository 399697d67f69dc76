/*
 * retry.h: --retry, private to retry/ and to cli/, which runs the sender's connections and
 * plugs it into the --resume opening and the relay: the wire messages, the replay buffer of
 * a pipe sender, the receiver's confirmations, and the state across connections.
 */
#ifndef FASTCAT_RETRY_H
#define FASTCAT_RETRY_H

#include <stdint.h>
#include <sys/types.h>

#include "fastcat.h"
#include "relay/relay.h"

/* The wire format (doc/resume-protocol.md, "--retry"). */
#define RETRY_VERSION       2
#define RETRY_JOIN_BYTES    24 /* "FCRS", version, flags, 2 zero, session, hold s, buffer KiB */
#define RETRY_ACK_BYTES     16 /* "FCRK", version, status, flags, 1 zero, busy seconds, 4 zero */
#define RETRY_CONFIRM_BYTES 16 /* "FCRC", 4 zero, the offset written */
#define RETRY_STOP_BYTES    16 /* "FCRE", version, reason, what, 1 zero, the offset written */
#define RETRY_VERDICT_BYTES 16 /* "FCRV", version, 3 zero, XXH64 of the file to the last FCRC */
#define RETRY_JOIN_VERIFY   1  /* the join's flags: the sender runs --verify */
#define RETRY_ACK_KEEPS     1  /* the ack's flags: the receiver keeps listening (-k) ... */
#define RETRY_ACK_VERIFY    2  /* ... and runs --verify */

/*
 * The receiver confirms what it wrote per MiB or 50 ms, whichever comes
 * first; a connection silent for 1 s gives way to a new one (the sender's
 * retry, while the old one is a black hole); waits double up to 8 s.
 */
#define RETRY_CONFIRM_EVERY MIB
#define RETRY_CONFIRM_DELAY 0.05
/* --sync: a confirmation costs a sync, so a slow stream's tail is confirmed per second */
#define RETRY_SYNC_DELAY 1.0
#define RETRY_STALE      1.0
#define RETRY_WAIT_MAX   8.0
/* A connect's bound without -w, for the hold the sender announces: Linux's SYN retries, 127 s. */
#define RETRY_CONNECT_BOUND 130.0

enum retry_status {
	RETRY_NEW = 0,     /* the receiver starts this session */
	RETRY_RESUMED = 1, /* the receiver held this session: the sender's bytes go on */
	RETRY_BUSY = 2,    /* the receiver holds another sender's session: come back later */
};

/*
 * The receiver's last word: why it stopped, where no retry will help (its
 * stdout failed). The reasons are the wire's, not errno's numbers.
 */
enum retry_reason {
	RETRY_REASON_NOSPC = 1, /* ENOSPC */
	RETRY_REASON_FBIG = 2,  /* EFBIG: ulimit -f, or the file system's largest file */
	RETRY_REASON_DQUOT = 3, /* EDQUOT */
	RETRY_REASON_IO = 4,    /* EIO */
	RETRY_REASON_ROFS = 5,  /* EROFS */
	RETRY_REASON_PIPE = 6,  /* EPIPE: stdout's reader went away */
	RETRY_REASON_OTHER = 255,
};
enum retry_failed { RETRY_FAILED_WRITE = 1, RETRY_FAILED_SYNC = 2 };

struct retry_stop {
	enum retry_reason reason;
	enum retry_failed what;
	uint64_t offset; /* the receiver's file has the stream up to here */
};

/* The sender's join, after its hello: who it is and how long it may take to come back. */
struct retry_join {
	int verify; /* the sender runs --verify: the receiver's verdict ends the transfer */
	uint64_t id;
	uint32_t hold; /* seconds */
	uint32_t
	    buffer; /* the replay buffer in KiB, 0: none (a file); confirmations come 4 a buffer */
};

/* The receiver's answer to a join. */
struct retry_ack {
	enum retry_status status;
	int keeps;     /* -k: a lost connection can come back */
	int verify;    /* the receiver runs --verify */
	uint32_t busy; /* RETRY_BUSY: seconds the hold may last */
};

/*
 * The checked window a pipe sender keeps of what the receiver confirmed: the
 * most a --resume offer digests (resume.c's RESUME_WINDOW), so that a
 * receiver that forgot the session (restarted) can have its tail checked.
 */
#define REPLAY_CHECKED MIB

/* The bytes a pipe sender keeps until the receiver confirms them (replay.c); stream offsets. */
struct replay {
	unsigned char *data;
	size_t cap;      /* the replay buffer and the checked window */
	uint64_t oldest; /* the oldest byte held: the checked window's first */
	uint64_t kept;   /* the oldest byte not confirmed: the receiver confirmed all before it */
	uint64_t filled; /* after the last byte read from stdin */
	uint64_t next;   /* the next byte the flow sends: below filled while it resends */
	int digesting;   /* --verify: ... */
	struct digest digest; /* ... the XXH64 of the stream up to filled, each byte once */
};

/* One --retry transfer: the sender's across its connections, or the receiver's for a session. */
struct retry {
	const struct config *cfg;
	struct session *s;   /* the session the relay runs now (retry_plug) */
	uint64_t id;         /* the session, the sender's random number */
	uint32_t hold;       /* the sender's hold, in seconds */
	uint64_t every;      /* the receiver: confirm per this many bytes written ... */
	double delay;        /* ... or this long after a byte went unconfirmed */
	struct replay *ring; /* the sender, stdin not a regular file: else NULL (it seeks) */
	off_t base; /* the sender, stdin a regular file: its position at the start, or -1 */
	int keeps;  /* the sender: the receiver said it keeps listening */
	int joined; /* the sender: a handshake went through once */
	int status; /* the sender: the last ack's retry_status */
	int fatal;  /* the sender: the receiver's file cannot be gone on with: no retry */
	int forgot; /* the sender: a receiver answered new to a joined session (restarted) */
	struct retry_stop stop;   /* the sender: the receiver's last word (reason 0: none came) */
	int verify;               /* --verify: the receiver's verdict ends the transfer */
	int verdict_seen;         /* the sender: the receiver's verdict came ... */
	uint64_t verdict_digest;  /* ... the XXH64 of its file up to confirmed */
	uint64_t confirmed;       /* the offset the receiver confirmed as written */
	unsigned tries;           /* the sender: connections in a row without progress */
	enum session_phase phase; /* the sender: where the last failed session stopped */
	unsigned char part[RETRY_CONFIRM_BYTES]; /* the sender: a confirmation cut by a read ... */
	size_t parted;                           /* ... its bytes so far */
	/* the receiver: the confirmation on its way, and when the next is due */
	unsigned char out[RETRY_CONFIRM_BYTES];
	size_t out_left;      /* its bytes not sent yet */
	uint64_t told;        /* the last offset put in one */
	double pending_since; /* written passed told then; 0: nothing to tell */
	int blocked;          /* the socket said EAGAIN: wait for POLLOUT */
	int verdict_sent;     /* --verify: the verdict followed the end's confirmation */
	int newcomer;         /* the listener has a connection while this one is silent */
};

/* retry.c: the sender's rules across connections (cli/transfer.c runs them) */
struct retry *retry_new(const struct config *);
void retry_free(struct retry *);
void retry_restart(struct retry *);
void retry_opened(struct retry *, const struct session *);
int retry_settle(struct retry *, struct session *, uint64_t);
double retry_next(struct retry *, struct session *, enum session_phase, uint64_t);
int retry_pause(double);
void retry_give_up(const struct retry *, struct session *);

/* retry-wire.c */
void retry_join_encode(unsigned char *, const struct retry_join *);
int retry_join_decode(const unsigned char *, struct retry_join *);
void retry_ack_encode(unsigned char *, const struct retry_ack *);
int retry_ack_decode(const unsigned char *, struct retry_ack *);
void retry_confirm_encode(unsigned char *, uint64_t);
int retry_confirm_decode(const unsigned char *, uint64_t *);
void retry_stop_encode(unsigned char *, const struct retry_stop *);
int retry_stop_decode(const unsigned char *, struct retry_stop *);
int retry_stop_seen(const unsigned char *);
void retry_verdict_encode(unsigned char *, uint64_t);
int retry_verdict_decode(const unsigned char *, uint64_t *);
int retry_verdict_seen(const unsigned char *);
enum retry_reason retry_reason_of(int);
const char *retry_reason_name(enum retry_reason);
int retry_join_seen(const unsigned char *);

/* replay.c */
struct replay *replay_new(size_t);
void replay_free(struct replay *);
void replay_start(struct replay *, uint64_t);
size_t replay_room(const struct replay *);
void replay_keep(struct replay *, const void *, size_t);
size_t replay_resend(struct replay *, void *, size_t);
int replay_confirm(struct replay *, uint64_t);
int replay_rewind(struct replay *, uint64_t);
int replay_digest(const struct replay *, uint64_t, size_t, uint64_t *);

/* retry-join.c: the --retry part of the --resume opening */
int retry_join_send(void *, struct session *);
int retry_join_receive(void *, struct session *, const unsigned char *);
int retry_join_replays(const void *);
int retry_join_rewind(void *, struct session *, uint64_t, uint32_t, uint64_t);
void retry_end(struct retry *, const struct session *);

/* retry-flow.c: what --retry plugs into the relay, both ends */
void retry_plug(struct retry *, struct session *, struct relay_setup *);
int retry_confirmations_take(struct retry *, const unsigned char *, size_t);
void retry_stop_read(struct retry *, const struct session *);

/* retry-stop.c: the receiver's last word, when its stdout failed */
void retry_stop_send(struct retry *, const struct session *);

#endif
