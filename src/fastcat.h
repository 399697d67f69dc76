/*
 * fastcat.h: the types every layer above base shares: what the command line asked for (struct
 * config), a direction's counters, TCP's figures, and the record of a session that the relay
 * fills and the report prints. Types only: each folder's header has its functions.
 */
#ifndef FASTCAT_H
#define FASTCAT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "base/base.h"

#define FASTCAT_VERSION "0.1.0"

/* Default bytes per read()/write(), measured (TCP loopback, 2 GiB from tmpfs; doc/HACKING.md):
 * 96 KiB was the fastest and cheapest size of the sweep, 1.19x 512 KiB, 2.2x 128 KiB. */
#define CHUNK_DEFAULT    (96 * KIB)
#define CHUNK_MIN        ((size_t)1)
#define CHUNK_MAX        (64 * MIB)
#define SOCKBUF_MAX      (1024 * MIB)
#define SEQ_HEADER_BYTES 8 /* --seq: the sequence number in front of each datagram */

/*
 * What the peer said of the whole stream, and what this end made of it: --verify's END and
 * VERDICT (frames, control datagrams) and -P's end marks fill it; verify_conclude judges.
 * With --resume the counts and digests are of the whole file.
 */
struct verdict {
	int end_seen;              /* the peer's END arrived ... */
	uint64_t peer_bytes;       /* ... saying it sent this many bytes */
	uint64_t peer_digest;      /* ... with this XXH64 */
	uint64_t delivered_bytes;  /* what we had written of them at its END (our VERDICT) */
	uint64_t delivered_digest; /* ... and its XXH64 */
	int verdict_seen;          /* the peer's VERDICT arrived ... */
	uint64_t confirmed_bytes;  /* ... saying it wrote this many of ours */
	uint64_t confirmed_digest; /* ... with this XXH64 */
	int verified;              /* both directions confirmed (verify_conclude) */
};

/*
 * --resume with --verify: the bytes before this session's data (the receiver's file), gone
 * through once, so that the digests both ends compare are the whole file's (resume.c).
 */
struct prefix {
	struct digest digest; /* their XXH64 state, where the flow's digest goes on from ... */
	uint64_t sent;        /* ... how many, when they are of what we send (the sender) */
	uint64_t received;    /* ... or of what we receive (the receiver) */
};

/* --resume: where this session's data starts in the whole stream (resume.c), for the report. */
struct resume {
	int on;             /* the handshake agreed: the data goes on from offset */
	uint64_t offset;    /* L: the receiver's file length, the bytes not sent again */
	uint64_t total;     /* the source's whole length; UINT64_MAX: not known (a pipe) */
	uint64_t skipped;   /* the sender, from a pipe: bytes of stdin read and dropped */
	unsigned retries;   /* --retry, the sender: reconnections made, all told */
	uint64_t confirmed; /* --retry: the offset the receiver confirmed as written */
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

#define BENCH_LINKS     7  /* --bench: pipe, memcpy, tcp, udp, unix, unix-dgram, unix-seqpacket */
#define BENCH_SIZES_MAX 16 /* entries in --bench-sizes */

#define CONN_MAX 64 /* -P: at most this many TCP connections carry one stream (stripe/) */

/* -P: the connections of a session, in the order of their index; fd[0] is the endpoint's. */
struct conns {
	int fd[CONN_MAX];
	unsigned n; /* how many; 0: no -P, the endpoint's one connection */
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
	size_t dgram_size;  /* --dgram-size: cut the stream into datagrams this big, 0 = per read */
	int dgram_eof;      /* a zero-length datagram marks EOF (--no-dgram-eof: 0) */
	int checksum;       /* --checksum: XXH64 of each direction in the report */
	int seq;            /* --seq: number datagrams, count losses (both ends) */
	int verify;         /* --verify: frame the data, both ends confirm count and digest */
	int sparse;         /* --sparse: -P's sender sends runs of zeros as a count */
	int image;          /* --image: a file between two fastcats, with everything on */
	int chain;          /* --chain: the host operand lists the receivers; -l: a node */
	int reliable;       /* --reliable: udp numbered, acknowledged, repaired and paced */
	unsigned receivers; /* --receivers: a multicast sender waits for this many (0: 1) */
	uint64_t
	    min_rate; /* --min-rate: ... and drops one that holds the group below it, bytes/s */
	unsigned mcast_ttl;   /* --ttl: a multicast datagram's hops (0: 1) */
	const char *mcast_if; /* --mcast-if: the interface a group is sent on and joined on */
	int resume;         /* --resume: -l goes on with the file on stdout, the sender after it */
	unsigned retry;     /* --retry: reconnect and resume up to this many times (sender) */
	long retry_wait_ms; /* --retry-wait: the first wait, doubled up to 8 s */
	uint64_t replay_buffer; /* --replay-buffer: a pipe's bytes kept until confirmed */
	int sync;               /* --sync: the receiver's stdout on disk before it says done */
	uint64_t sync_every;    /* --sync-every: with --retry, confirm (and sync) per this much */
	struct acl acl;         /* --allow/--deny: the peers a TCP or UDP listener takes */
	mode_t unix_mode;       /* --unix-mode: a Unix listener's socket file mode (default 0600) */
	uint64_t rate_limit;    /* --rate-limit: bytes per second, each direction; 0 = unlimited */
	size_t rcvlowat; /* --rcvlowat: wake per this many bytes while data queues, 0 = off */
	const char *congestion; /* --congestion: TCP_CONGESTION to set, NULL = default */
	enum copy_mode copy;
	enum report_format report;
	int progress;     /* --progress: a live line on stderr, when it is a terminal */
	long interval_ms; /* --interval: one plain progress line per interval, 0 = none */
	uint64_t size;    /* --size: bytes expected (stdin's, or with -d the peer's), 0 = unknown */
	unsigned parallel; /* -P: connections one stream is striped over; 0 = no -P (plain) */
	int parallel_auto; /* -P auto: start with one, add while it helps */
	/* --chain -P N: connections on every hop (0: -P auto, each hop its own count) */
	unsigned chain_lanes;
	/* --bench: measure this machine's pipes, memcpy and transports; no connection */
	int bench;
	long bench_ms;                       /* --bench-time: the whole run, milliseconds */
	unsigned bench_links;                /* --bench-transports: bit i = bench_links[i] */
	size_t bench_sizes[BENCH_SIZES_MAX]; /* --bench-sizes: ascending, no repeats */
	size_t bench_nsizes;
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
	size_t read_size;      /* the chunks it read and wrote: -B as the flow decided it */
	size_t write_size;     /* ... (flow-setup.c: transport, datagram and pipe limits) */
	uint64_t zero_bytes;   /* --sparse: of bytes, the zero runs that went as a count */
	uint64_t syncs;        /* --sync: fdatasync calls on stdout ... */
	double sync_seconds;   /* ... and the time they took */
};

/* TCP_INFO of one connection, read once per report (tcpinfo.h); NAN: not given; bits/s. */
struct tcp_stats {
	int valid;                /* TCP_INFO answered at least once */
	double rtt_ms;            /* smoothed round-trip time */
	double min_rtt_ms;        /* the lowest RTT seen (Linux >= 4.6) */
	double rttvar_ms;         /* the RTT's mean deviation */
	double cwnd_bytes;        /* congestion window: snd_cwnd segments x snd_mss */
	double mss;               /* snd_mss: bytes a segment */
	double retransmits;       /* segments sent again, all told (tcpi_total_retrans) */
	double delivery_rate_bps; /* the kernel's latest goodput estimate (>= 4.9) */
	double pacing_rate_bps;   /* NAN too while the kernel does not pace (~0) */
	double busy_s;            /* seconds with data to send (>= 4.10) ... */
	double rwnd_limited_s;    /* ... of them held back by the peer's receive window */
	double sndbuf_limited_s;  /* ... of them held back by our send buffer */
	double bytes_acked;       /* the peer acknowledged, all told (>= 4.1; -P auto's goodput) */
	double snd_wnd_bytes;     /* the peer's receive window (>= 5.4) */
	char congestion[16];      /* TCP_CONGESTION read back; "" = unknown */
};

struct endpoint;
struct listener;

/* Where a session stopped: connecting, in the opening (-P's, --resume's), or relaying. */
enum session_phase { PHASE_CONNECT, PHASE_OPENING, PHASE_RELAY };

/*
 * One session: what one connection (-P: one set of them) achieved, from its opening to its
 * end. The relay fills the counters, the features what they agreed and concluded, and the
 * report prints it; --retry's sessions add up in the first.
 */
/* --chain, at the sender: what became of one receiver (chain-end.c), for the JSON report. */
struct receiver_outcome {
	char name[272];    /* host:port as the list gives it */
	const char *state; /* "whole", "write_failed", "not_reached", "lost", "cut", "short" */
	int err;           /* its errno, 0: none or unknown */
	uint64_t bytes;    /* written to its stdout (lost: forwarded to it) */
	uint64_t digest;   /* XXH64 of what it received; whole and write_failed only */
	int exact;         /* it wrote the whole stream sent */
	const char *why;   /* what became of it, in words (NULL: err says, or nothing to say) */
	/* --reliable to a multicast group: the path to it and what it asked for */
	int reliable;
	unsigned tag;
	double path, rtt, min_rtt; /* bytes/s; seconds */
	uint64_t acks, gap_acks, lost_bytes;
};

/* --reliable: what its datagrams did (reliable/), for the report; counts of this end's view. */
struct reliable_figures {
	int on;
	size_t payload;          /* data bytes a datagram */
	uint64_t datagrams;      /* data datagrams sent (repairs too), or received */
	uint64_t repairs;        /* the sender: of them, sent again ... */
	uint64_t repaired_bytes; /* ... with these bytes */
	uint64_t acks;           /* acknowledgements received, or sent */
	uint64_t gap_acks;       /* ... of them naming gaps (the NAKs) */
	uint64_t probes;         /* the sender: times no acknowledgement came in time */
	uint64_t duplicates;     /* the receiver: datagrams that came again */
	uint64_t dropped;        /* ... beyond its store: dropped, to come again */
	double bottleneck;       /* the sender: the path's rate it measured, bytes/s ... */
	double pacing;           /* ... and the pace at the end */
	double min_rtt, srtt;    /* seconds */
	uint64_t confirmed;      /* the sender: bytes the receiver confirmed as written */
	unsigned receivers;      /* the sender: those served (a multicast group: each one) */
};

struct session {
	const struct config *cfg;
	const struct endpoint *ep;  /* the connection (-P: the first) */
	struct listener *listener;  /* -l: where the connection came from (-k --resume holds) */
	struct conns conns;         /* -P: the session's connections */
	struct flow_stats sent;     /* stdin -> socket */
	struct flow_stats received; /* socket -> stdout */
	size_t receive_buffer;      /* bytes one receive can take (for the truncation warning) */
	struct resume resume;       /* --resume: where the data started */
	struct prefix prefix;       /* --resume --verify: the bytes before it, digested */
	struct verdict verdict;     /* --verify, -P's ends: what the peer confirmed */
	struct tcp_stats tcp;       /* tcp: TCP_INFO at the last report (report.c reads it) */
	struct tcp_stats conn_tcp[CONN_MAX]; /* -P: each connection's; tcp sums them up */
	off_t stdin_at; /* --retry: where stdin's data starts in its file, -1: not a file (resume.c)
	                 */
	int lost_errno; /* errno of the socket failure that ended the relay, 0: another cause */
	int write_errno;   /* errno of the stdout write that ended the relay, 0: none failed */
	int write_synced;  /* ... and it was --sync's fdatasync */
	int close_plainly; /* the peer must read our last words (a refusal): close, do not reset */
	int one_way; /* -P, --retry: the data goes one way, the sender's stdin to the receiver's */
	struct failure failure;  /* how it failed: the exit status and the one-line reason */
	char auto_decision[160]; /* -P auto, sending: what it decided (stripe-auto.c), for the hint
	                          */
	const struct receiver_outcome *receivers; /* --chain's, a multicast sender's: each one */
	uint64_t slowest; /* --chain's sender: the least any receiver confirmed (--progress) */
	unsigned nreceivers;
	struct reliable_figures reliable; /* --reliable */
};

#endif
