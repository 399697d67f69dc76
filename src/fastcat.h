/* fastcat.h: the shared types, exit codes and every prototype, grouped by file. */
#ifndef FASTCAT_H
#define FASTCAT_H

#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#define FASTCAT_VERSION "0.1.0"

/* Exit statuses: the whole contract with scripts (--help, README and fastcat(1) list them). */
#define EXIT_OK      0
#define EXIT_RUNTIME 1 /* any other network or system failure; stopped by a signal */
#define EXIT_USAGE   2 /* bad command line */
#define EXIT_CONNECT 3 /* could not connect: refused, unreachable, name not found */
#define EXIT_TIMEOUT 4 /* timed out: -w (connecting, or idle), or the kernel's TCP timeout */
#define EXIT_PEER    5 /* the peer reset or closed early: a short transfer; --seq losses */
#define EXIT_VERIFY  6 /* --verify: the peer's count or digest differs, or it does not verify */
#define EXIT_WRITE   7 /* writing stdout failed: disk full, file too large, reader gone */

#define KIB ((size_t)1024)
#define MIB (1024 * KIB)

/*
 * Default bytes per read()/write(), chosen by measurement on the project
 * machine (TCP loopback, 2 GiB from tmpfs, see doc/HACKING.md): 96 KiB was
 * the fastest and cheapest size of the sweep, 1.19x 512 KiB, 2.2x 128 KiB.
 */
#define CHUNK_DEFAULT    (96 * KIB)
#define CHUNK_MIN        ((size_t)1)
#define CHUNK_MAX        (64 * MIB)
#define SOCKBUF_MAX      (1024 * MIB)
#define SEQ_HEADER_BYTES 8 /* --seq: the sequence number in front of each datagram */

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

/* What --verify learned from the peer; both flows of a session share it. */
struct verify {
	int on;                    /* --verify: the flows frame and deframe */
	int hello_seen;            /* the peer's hello arrived */
	int end_seen;              /* the peer's END arrived ... */
	uint64_t peer_bytes;       /* ... saying it sent this many bytes */
	uint64_t peer_digest;      /* ... with this XXH64 */
	uint64_t delivered_bytes;  /* what we had written of them at its END (our VERDICT) */
	uint64_t delivered_digest; /* ... and its XXH64 */
	int verdict_seen;          /* the peer's VERDICT arrived ... */
	uint64_t confirmed_bytes;  /* ... saying it wrote this many of ours */
	uint64_t confirmed_digest; /* ... with this XXH64 */
	int peer_done;             /* the peer's EOF came: it will send nothing more */
	int verified;              /* both directions confirmed (verify_conclude) */
	char why[160];             /* a protocol failure, for the error message */
	/* over datagrams (dgverify.c): control datagrams, retransmitted until answered */
	int datagram;                 /* udp, unix-dgram: the data goes as --seq datagrams */
	int fd;                       /* the socket the control datagrams go through */
	int hello_out;                /* we said hello (a listener answers the peer's first) */
	int peer_has_hello;           /* the peer showed that our hello arrived */
	uint64_t peer_datagrams;      /* its END: datagrams it sent */
	uint64_t confirmed_datagrams; /* its VERDICT: our datagrams it received ... */
	uint64_t confirmed_lost;      /* ... and found missing */
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
	int unreachable;   /* the peer's port was unreachable (ICMP), not yet looked at */
	int never_reached; /* ... while we waited for its hello */
	double started;    /* monotonic seconds: the session's start */
	double end_at;     /* when the peer's END came (stragglers may follow) */
	double last_heard; /* when the peer last sent anything */
	double next_retry; /* when unanswered control datagrams go again */
	double backoff;    /* seconds until the retry after that */
	double patience;   /* seconds of silence before giving up (-w, or 10) */
};

/* --copy: how bytes move between stdio and the socket. */
enum copy_mode {
	COPY_AUTO,   /* zero-copy where the flow allows it, else read/write */
	COPY_RW,     /* read(2)/write(2) through fastcat's buffer, always */
	COPY_SPLICE, /* zero-copy asked for: warn where a flow cannot have it */
};

/* What a flow actually does (the report names it). */
enum copy_method {
	METHOD_RW,       /* read into the buffer, write from it */
	METHOD_SPLICE,   /* splice(2) source -> pipe -> destination, no copy in user space */
	METHOD_SENDFILE, /* sendfile(2) from a regular file straight to the socket */
};

/* --bench: the links it measures, the sizes it may be given, the trials per cell. */
#define BENCH_LINKS     7  /* pipe, memcpy, tcp, udp, unix, unix-dgram, unix-seqpacket */
#define BENCH_SIZES_MAX 16 /* entries in --bench-sizes */
#define BENCH_TRIALS    5  /* timed trials per cell (after a warm-up); the median is shown */

/* --allow/--deny: at most this many rules, together (no allocation). */
#define ACL_MAX 64

/* One --allow or --deny rule: an address prefix (acl.c). */
struct acl_rule {
	const char *text;       /* as typed, for messages */
	int deny;               /* --deny; else --allow */
	int family;             /* AF_INET or AF_INET6; ::ffff:a.b.c.d is kept as IPv4 */
	unsigned bits;          /* the prefix length */
	unsigned char addr[16]; /* the prefix, in network order, bits past it zero */
};

/* Who a TCP or UDP listener takes: the rules in the order given. */
struct acl {
	struct acl_rule rules[ACL_MAX];
	size_t n;
	int allow_listed; /* an --allow was given: only the peers one matches get in */
};

enum report_format {
	REPORT_NONE,
	REPORT_HUMAN,
	REPORT_JSON,
};

/* What the command line asked for; filled once by options_parse, then read-only. */
struct config {
	int listen;         /* -l: accept instead of connect */
	int keep_listening; /* -k: accept the next connection after one ends */
	int family;         /* AF_UNSPEC, or AF_INET/AF_INET6 from -4/-6 */
	int numeric;        /* -n: never ask DNS */
	int verbose;        /* -v: progress messages on stderr */
	const char *host;   /* connect: peer; listen: local address or NULL */
	const char *port;   /* as typed; validated */
	const char *path;   /* Unix transports: socket path, or "@name" (abstract) */
	const struct transport *transport;
	size_t read_size;       /* bytes per read() */
	size_t write_size;      /* at most bytes per write() */
	int sndbuf;             /* requested SO_SNDBUF, 0 = kernel default */
	int rcvbuf;             /* requested SO_RCVBUF, 0 = kernel default */
	long timeout_ms;        /* -w: connect and idle timeout, -1 = none */
	long quit_after_eof_ms; /* -q: wait for the peer after stdin EOF, -1 = forever */
	int exit_on_peer_eof;   /* stop once the peer's EOF is flushed */
	int recv_only;          /* -d: never read stdin */
	int send_only;          /* --send-only: never write stdout */
	size_t dgram_size; /* --dgram-size: cut the stream into datagrams this big, 0 = per read */
	int dgram_eof;     /* a zero-length datagram marks EOF (--no-dgram-eof: 0) */
	int checksum;      /* --checksum: XXH64 of each direction in the report */
	int seq;           /* --seq: number datagrams, count losses (both ends) */
	int verify;        /* --verify: frame the data, both ends confirm count and digest */
	struct acl acl;    /* --allow/--deny: the peers a TCP or UDP listener takes */
	mode_t unix_mode;  /* --unix-mode: a Unix listener's socket file mode (default 0600) */
	uint64_t rate_limit; /* --rate-limit: bytes per second, each direction; 0 = unlimited */
	size_t rcvlowat;     /* --rcvlowat: wake per this many bytes while data queues, 0 = off */
	enum copy_mode copy;
	enum report_format report;
	int progress;     /* --progress: a live line on stderr, when it is a terminal */
	long interval_ms; /* --interval: one plain progress line per interval, 0 = none */
	uint64_t size;    /* --size: bytes expected (stdin's, or with -d the peer's), 0 = unknown */
	/* --bench: measure this machine's pipes, memcpy and transports; no connection */
	int bench;
	long bench_ms;                       /* --bench-time: the whole run, milliseconds */
	unsigned bench_links;                /* --bench-transports: bit i = bench_links[i] */
	size_t bench_sizes[BENCH_SIZES_MAX]; /* --bench-sizes: ascending, no repeats */
	size_t bench_nsizes;
};

/* Streaming XXH64 state (digest.c). */
struct digest {
	uint64_t v[4];
	uint64_t total;
	unsigned char hold[32]; /* bytes waiting for a whole 32-byte stripe */
	size_t held;
};

/* --seq bookkeeping on the receiving side (seqtrack.c). */
struct seqtrack {
	uint64_t next;       /* the sequence number expected next */
	uint64_t lost;       /* gaps not filled (yet) */
	uint64_t duplicated; /* seen twice, or too old to tell */
	uint64_t reordered;  /* arrived after a later one */
	uint64_t seen[16];   /* which of the last 1024 numbers arrived */
};

/* One direction's counters. */
struct flow_stats {
	uint64_t bytes;        /* bytes delivered to the destination */
	uint64_t reads;        /* read() calls on the source, EAGAIN included */
	uint64_t writes;       /* write() calls on the destination, EAGAIN included */
	size_t max_read;       /* most bytes one read() returned */
	size_t max_write;      /* most bytes one write() took */
	uint64_t datagrams;    /* datagram transports: datagrams moved */
	uint64_t truncated;    /* datagrams cut short by the receive buffer */
	struct digest digest;  /* --checksum: XXH64 of the bytes delivered */
	struct seqtrack seq;   /* --seq: what the sequence numbers say about the datagrams */
	uint64_t runts;        /* --seq: datagrams too short to hold a sequence number */
	double started;        /* monotonic seconds when the connection opened */
	double finished;       /* monotonic seconds at this direction's EOF, 0 = running */
	enum copy_method copy; /* how the bytes moved (the last method, after any fallback) */
};

/* A connected socket and what is known about it. */
struct endpoint {
	int fd;
	int sndbuf;      /* effective SO_SNDBUF read back from the kernel */
	int rcvbuf;      /* effective SO_RCVBUF read back from the kernel */
	char local[112]; /* printable "addr:port", Unix path or "@name" */
	char peer[112];
	char bound_path[112]; /* a temporary Unix path this end bound, removed at close */
	int cannot_send;      /* the datagram peer has no address to answer to */
};

/* A listening socket kept across connections with -k; for a datagram transport, the socket itself.
 */
struct listener {
	int fd;
	char local[112];
	char created_path[112]; /* the Unix socket file this listener made, removed at close */
	int served;             /* a connectionless listener had a peer already (-k) */
	char refused[112];      /* the peer refused last, logged once for a run of refusals */
};

/* What one connection achieved; the relay fills it, the report prints it. */
struct session {
	const struct config *cfg;
	const struct endpoint *ep;
	struct flow_stats sent;     /* stdin -> socket */
	struct flow_stats received; /* socket -> stdout */
	size_t receive_buffer;      /* bytes one receive can take (for the truncation warning) */
	struct verify verify;       /* --verify: what the peer said */
	int exit_status;
	char error[256]; /* the one-line reason, empty on success */
};

/* Byte counts at one moment, for the rate since then. */
struct progress_mark {
	double at; /* monotonic seconds */
	uint64_t sent, received;
};

/* --progress and --interval: what is on screen and when to draw next (progress.c). */
struct progress {
	const struct session *s;
	uint64_t total;     /* bytes expected in the counted direction, 0 = unknown */
	int count_received; /* the percentage counts received bytes (-d), else sent */
	int live;           /* --progress and stderr is a terminal */
	int columns;        /* the terminal's width, 0 = unknown */
	int shown;          /* columns of the live line on screen now, 0 = none */
	double next_live;   /* monotonic seconds of the next redraw, 0 = none */
	double next_plain;  /* ... of the next --interval line, 0 = none */
	struct progress_mark live_mark, plain_mark; /* the previous line of each kind */
};

/* Fixed-size buffer: data lives in [head, tail); never moved, reset when empty. */
struct iobuf {
	char *data;
	size_t cap;
	size_t head;
	size_t tail;
};

/* --rate-limit: a token bucket that holds at most one write (ratelimit.c). */
struct ratelimit {
	double rate;   /* bytes per second */
	double burst;  /* the most tokens saved up: the flow's largest write */
	double tokens; /* bytes that may be written now */
	double last;   /* monotonic seconds when tokens was brought up to date */
	double need;   /* tokens the last refused write waits for ... */
	int waiting;   /* ... if the last write was refused */
	int whole;     /* a write goes whole or waits (datagrams), and may leave a debt */
};

/* A TCP receiver's SO_RCVLOWAT, on while data queues up (lowat.c). */
struct lowat {
	int fd;       /* the socket; -1: not for this flow */
	int mark;     /* --rcvlowat: the most bytes the kernel waits for before it wakes us */
	size_t chunk; /* a read this large says data is queuing */
	int on;       /* the mark is set ... */
	int set;      /* ... to this, at most a quarter of the receive buffer; 0 = off */
	int skip;     /* whole reads before the buffer is looked at again */
	int logged;   /* -v said so once */
	double since; /* waiting on poll() with the mark on since, 0 = not waiting */
};

enum flow_kind { FLOW_SEND, FLOW_RECEIVE };

/* One direction: bytes read from src wait in buf until dst takes them. */
struct flow {
	enum flow_kind kind;
	int src, dst;
	int enabled;       /* not turned off by -d */
	int running;       /* enabled and its EOF not yet passed on */
	int discard;       /* --send-only: read the peer's data and drop it */
	int keep_dst;      /* -k: stdout stays open for the next connection */
	int src_eof;       /* the source said EOF */
	int src_ready;     /* optimistic: true until read() says EAGAIN */
	int dst_ready;     /* optimistic: true until write() says EAGAIN */
	int dgram_src;     /* whole datagrams in, counted, truncation seen */
	int dgram_dst;     /* each write is one datagram */
	int exact;         /* --dgram-size: only whole write_size datagrams until EOF */
	int eof_datagram;  /* EOF goes out as a zero-length datagram */
	int ignore_empty;  /* --no-dgram-eof: a zero-length datagram is not EOF */
	int soft_refusal;  /* a refused connectionless peer is no reason to stop reading */
	int checksum;      /* feed what is delivered to stats->digest */
	int seq;           /* --seq: datagrams carry a sequence number */
	uint64_t next_seq; /* the number the next datagram sent carries */
	size_t recv_slot;  /* --dgram-size at a receiver: the most a datagram holds, 0 = unknown */
	size_t read_size, write_size;
	size_t read_min; /* room needed at the tail before a read */
	struct iobuf buf;
	struct flow_stats *stats;
	int moved;               /* a byte moved since the relay last looked */
	int err;                 /* errno of the failure that stopped the flow */
	int err_on_write;        /* ... and whether it was writing */
	size_t failed_write_len; /* bytes the failed write tried to move */
	enum copy_method method; /* how this flow moves bytes (copy.c) */
	int pipe[2];             /* METHOD_SPLICE: the pipe the bytes pass through */
	size_t pipe_cap;         /* ... its capacity */
	size_t piped;            /* ... the bytes in it now */
	int pipe_full;           /* ... took no more though bytes say room: its slots are used */
	int copy_forced;         /* --copy=splice: a fallback is worth a warning */
	struct verify *verify;   /* the session's --verify state (verify->on), or the sniffer's */
	int sniff_hello;         /* no --verify: refuse a peer whose first bytes are its hello */
	size_t gate;             /* --verify, sending: bytes that may go before the peer's hello */
	int end_queued;          /* --verify, sending: our END is in the buffer */
	int verdict_queued;      /* --verify, sending: our VERDICT is in the buffer */
	size_t header_left;      /* --verify, sending: header bytes of the frame at the head */
	uint64_t frame_left;     /* --verify: payload bytes of the DATA frame at the head */
	int limited;             /* --rate-limit: writes take tokens from limit */
	struct ratelimit limit;
	struct lowat lowat; /* receiving from TCP: wake per --rcvlowat while data queues */
	/* a connectionless IP listener: datagrams from anyone but peer are dropped */
	int only_peer;
	struct sockaddr_storage peer;
};

/* What flow_init needs to know about a flow's role. */
struct flow_setup {
	const struct config *cfg;
	enum flow_kind kind;
	int src, dst;
	int enabled, discard, keep_dst;
	struct verify *verify;
};

enum pump_result { PUMP_BLOCKED, PUMP_BUDGET_USED, PUMP_FINISHED, PUMP_FAILED };

/* A transport: everything that tells one from another, as data. */
struct transport {
	const char *name;
	int family; /* AF_UNIX, or AF_UNSPEC: IPv4/IPv6 by resolution */
	int socktype;
	int protocol;
	int datagram;          /* keeps message boundaries */
	int connectionless;    /* no accept(): the first datagram names the peer */
	size_t default_chunk;  /* default bytes per read/datagram, 0 = CHUNK_DEFAULT */
	size_t max_datagram;   /* largest payload the protocol allows, 0 = none */
	size_t receive_buffer; /* bytes to take in a whole datagram */
	int default_rcvbuf;    /* SO_RCVBUF unless -I is given, 0 = the kernel's */
	int copy_from_pipe;    /* --copy=auto reads a pipe on stdin rather than splicing it */
	size_t rcvlowat;       /* default --rcvlowat; 0: the transport has no use for one */
};

/* The two ends of a --bench link: in == out for a socket, two pipes for "pipe". */
struct bench_end {
	int in, out;
};

/* A way to move bytes that --bench measures (bench-link.c). */
struct bench_link {
	const char *name;
	const struct transport *transport; /* a socket's type; NULL for pipe and memcpy */
	/* open both ends for messages of a size; NULL: one process (memcpy) */
	int (*open)(const struct bench_link *, size_t, struct bench_end[2], char *, size_t);
	int lossy;          /* may drop datagrams: loss is counted, not an error */
	size_t max_message; /* the largest message it can carry, 0 = the kernel decides */
	const char *limit;  /* why a larger one cannot go */
};

/* What a process of a --bench trial needs to know. */
struct bench_job {
	const struct bench_link *link;
	size_t size;                  /* bytes per message */
	double slice;                 /* seconds the sender (pinger, copier) runs */
	const unsigned char *payload; /* random bytes, at least size and 4096 */
	unsigned char *buf;           /* receive buffer, size + 1 bytes */
	int ctl;                      /* sender: the parent's go/stop pipe, -1 = none */
};

/* One process's account of a --bench trial, sent to the parent through a pipe. */
struct bench_tally {
	uint64_t bytes;    /* payload bytes sent, received or copied */
	uint64_t messages; /* messages sent, reads or datagrams received, round trips */
	double start, end; /* monotonic seconds: first byte sent, last byte received */
	int err;           /* errno of the failure, 0 = none */
	char what[120];    /* what failed, "" = nothing */
};

/* What one --bench trial measured (bench-trial.c). */
struct bench_outcome {
	double value;            /* MB/s, or µs per round trip */
	uint64_t bytes;          /* bytes received */
	uint64_t sent, received; /* messages sent and received (round trips for latency) */
};

enum bench_state { CELL_PENDING, CELL_DONE, CELL_NA, CELL_FAILED };

/* One entry of the --bench table: a link at a message size, or its latency. */
struct bench_cell {
	const struct bench_link *link;
	size_t size; /* bytes per message; 1 for latency */
	int latency; /* 1-byte round trips rather than bandwidth */
	enum bench_state state;
	char note[200];             /* why it is n/a, or what failed */
	int trials;                 /* timed trials done */
	double trial[BENCH_TRIALS]; /* MB/s, or µs per round trip */
	double value;               /* the median of trial[] */
	double slice;               /* seconds per trial */
	uint64_t bytes;             /* bytes received in the timed trials */
	uint64_t sent, received;    /* messages sent and received in them (latency: round trips) */
};

/* A whole --bench run (bench.c). */
struct bench_run {
	const struct config *cfg;
	struct bench_cell *cells; /* link after link: each size, then the latency */
	size_t ncells;
	size_t nrun;            /* cells to time (not n/a) */
	size_t done;            /* cells timed so far */
	unsigned char *payload; /* random, as long as the largest size (4096 at least) */
	unsigned char *buf;     /* receive buffer, one byte longer */
	double budget;          /* --bench-time, seconds */
	double started;         /* monotonic seconds */
	double elapsed;         /* seconds the run took */
	double overhead;        /* seconds a trial costs beyond its slice (forks, setup) */
	int progress;           /* stderr is a terminal: keep a progress line */
	int shown;              /* columns of the progress line on screen */
};

struct addrinfo;

/* acl.c */
int acl_parse(const char *, struct acl_rule *);
int acl_add(struct acl *, const char *, int);
int acl_permits(const struct acl *, const struct sockaddr *, const struct acl_rule **);

/* addr.c */
int addr_resolve(const char *, const char *, int, int, int, struct addrinfo **, char *, size_t);
int addr_unix(const char *, struct sockaddr_storage *, socklen_t *);
int addr_unix_check(const char *, char *, size_t);
void addr_format(const struct sockaddr *, socklen_t, char *, size_t);
void addr_format_fd(int, int, char *, size_t);
int addr_same_peer(const struct sockaddr *, const struct sockaddr *);

/* bench.c */
int bench_run(const struct config *);

/* bench-link.c */
extern const struct bench_link bench_links[BENCH_LINKS];
int bench_link_find(const char *);
const char *bench_link_names(void);
int bench_link_datagram(const struct bench_link *);
int bench_link_open(const struct bench_link *, size_t, struct bench_end[2], const unsigned char *,
                    unsigned char *, char *, size_t);
void bench_link_close(struct bench_end[2]);
void bench_end_close(struct bench_end *);
int bench_link_marker(const struct bench_link *);

/* bench-loop.c */
void bench_send(const struct bench_job *, int, struct bench_tally *);
void bench_receive(const struct bench_job *, int, struct bench_tally *);
void bench_ping(const struct bench_job *, const struct bench_end *, struct bench_tally *);
void bench_echo(const struct bench_job *, const struct bench_end *, struct bench_tally *);
void bench_memcpy(const struct bench_job *, struct bench_tally *);

/* bench-trial.c */
int bench_trial(const struct bench_run *, const struct bench_cell *, double, struct bench_outcome *,
                char *, size_t);

/* bench-report.c */
void bench_cell_name(const struct bench_cell *, char *, size_t);
void bench_progress(struct bench_run *, const struct bench_cell *);
void bench_progress_clear(struct bench_run *);
void bench_print_table(const struct bench_run *);
void bench_print_json(const struct bench_run *, int);

/* batch-mmsg.c or batch-single.c, chosen by configure */
#define BATCH_MAX 64 /* datagrams one batch_send call may take */
struct msghdr;
int batch_send(int, const struct msghdr *, unsigned);
int batch_recv(int, struct msghdr *, unsigned, size_t *);

/* clock.c */
double clock_now(void);

/* copy.c */
void copy_choose(struct flow *, const struct config *);
ssize_t copy_in(struct flow *, size_t);
ssize_t copy_out(struct flow *, size_t);
int copy_unsupported(int);
int copy_fallback(struct flow *);
void copy_close(struct flow *);
const char *copy_method_name(enum copy_method);

/* digest.c */
void digest_init(struct digest *);
void digest_update(struct digest *, const void *, size_t);
uint64_t digest_final(const struct digest *);

/* verify.c */
void verify_hello_put(unsigned char *);
int verify_hello(const unsigned char *, size_t);
size_t verify_encode(unsigned char *, const struct frame *);
int verify_decode(const unsigned char *, size_t, struct frame *);
void verify_conclude(struct session *);
size_t verify_ctl_encode(unsigned char *, const struct ctl *);
int verify_ctl_decode(const unsigned char *, const unsigned char *, size_t, struct ctl *);

/* dgverify.c */
void dgverify_start(struct verify *, const struct config *, const struct endpoint *, double);
int dgverify_receive(struct verify *, const struct ctl *, double);
int dgverify_input_done(struct verify *, struct seqtrack *, double);
int dgverify_tick(struct session *, int, double);
int dgverify_wants_read(const struct verify *, int);
double dgverify_due(const struct verify *, int, double);
int dgverify_finished(const struct verify *);
int dgverify_send(int, const struct ctl *);

/* seqtrack.c */
void seqtrack_init(struct seqtrack *);
void seqtrack_add(struct seqtrack *, uint64_t);

/* endpoint.c */
int endpoint_connect(const struct config *, struct endpoint *, char *, size_t);
int endpoint_accept(const struct config *, struct listener *, struct endpoint *, char *, size_t);
void endpoint_abort(const struct config *, struct endpoint *);
void endpoint_close(struct endpoint *);

/* listener.c */
int listener_open(const struct config *, struct listener *, char *, size_t);
void listener_stop_accepting(const struct config *, struct listener *);
int listener_admits(const struct config *, struct listener *, const struct sockaddr *, socklen_t,
                    const char *);
void listener_forget_peer(struct listener *);
void listener_close(struct listener *);

/* flow.c */
struct pollfd;
int flow_init(struct flow *, const struct flow_setup *, struct flow_stats *);
enum pump_result flow_pump(struct flow *);
size_t flow_unsent(const struct flow *);
void flow_free(struct flow *);
int flow_poll_events(const struct flow *, struct pollfd *);
void flow_poll_result(struct flow *, const struct pollfd *, int);
long flow_wait_ms(const struct flow *, double);

/* iobuf.c */
int iobuf_init(struct iobuf *, size_t);
void iobuf_free(struct iobuf *);
size_t iobuf_len(const struct iobuf *);
size_t iobuf_room(const struct iobuf *);
char *iobuf_head(struct iobuf *);
char *iobuf_tail(struct iobuf *);
void iobuf_produced(struct iobuf *, size_t);
void iobuf_consumed(struct iobuf *, size_t);
void iobuf_compact(struct iobuf *);

/* log.c */
void log_set_verbose(int);
void log_verbose(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_error(const char *, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void log_fatal(int, const char *, ...) __attribute__((format(printf, 2, 3)));
int log_vformat(char *, size_t, int, const char *, va_list) __attribute__((format(printf, 4, 0)));
int log_format(char *, size_t, int, const char *, ...) __attribute__((format(printf, 4, 5)));

/* lowat.c */
void lowat_init(struct lowat *, int, size_t, size_t);
void lowat_read(struct lowat *, size_t);
void lowat_wait(struct lowat *, double);
long lowat_wait_ms(const struct lowat *, double);
int lowat_expired(struct lowat *, double);

/* options.c */
int options_parse(int, char **, struct config *, char *, size_t);
void options_usage(void);

/* progress.c */
void progress_start(struct progress *, const struct session *, int);
double progress_due(const struct progress *);
void progress_tick(struct progress *, double);
void progress_clear(struct progress *);

/* ratelimit.c */
void ratelimit_init(struct ratelimit *, uint64_t, size_t, int, double);
size_t ratelimit_allow(struct ratelimit *, double, size_t);
void ratelimit_spend(struct ratelimit *, size_t);
long ratelimit_wait_ms(const struct ratelimit *, double);

/* relay.c */
void relay_run(struct session *, int, int);

/* report.c */
void report_print(const struct session *, int);
void report_json_string(char *, size_t, const char *);

/* signals.c */
extern volatile sig_atomic_t signal_stop;
extern volatile sig_atomic_t signal_report;
void signals_init(void);
const char *signals_stop_name(void);

/* sock.c */
int sock_open(const struct config *, int, char *, size_t);
int sock_set_nonblock(int, int);
void sock_read_buffers(int, int *, int *);

/* transport.c */
const struct transport *transport_find(const char *);
const char *transport_names(void);
extern const struct transport transport_tcp, transport_udp, transport_unix, transport_unix_dgram,
    transport_unix_seqpacket;

/* zerocopy-linux.c or zerocopy-none.c, chosen by configure */
int zerocopy_available(void);
int zerocopy_pipe(int[2], size_t, size_t *);
void zerocopy_grow_pipe(int, size_t);
ssize_t zerocopy_splice(int, int, size_t);
ssize_t zerocopy_sendfile(int, int, size_t);

/* units.c */
int units_parse_size(const char *, uint64_t *);
int units_parse_port(const char *, int, int *);
int units_parse_millis(const char *, long *);
void units_format_bytes(uint64_t, char *, size_t);
void units_format_size(uint64_t, char *, size_t);

#endif
