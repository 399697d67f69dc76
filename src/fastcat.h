/* fastcat.h: the shared types, exit codes and every prototype, grouped by file. */
#ifndef FASTCAT_H
#define FASTCAT_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#define FASTCAT_VERSION "0.1.0"

/* Exit statuses: the whole contract with scripts. */
#define EXIT_OK      0
#define EXIT_RUNTIME 1 /* network or I/O failure, timeout, interruption */
#define EXIT_USAGE   2 /* bad command line */

#define KIB ((size_t)1024)
#define MIB (1024 * KIB)

/*
 * Default bytes per read()/write(). Measured on the project machine (TCP
 * loopback, 1 GiB from tmpfs, see doc/HACKING.md): 512 KiB sits on the flat
 * top of the curve, clear of the 128 KiB dip, and keeps RSS small.
 */
#define CHUNK_DEFAULT (512 * KIB)
#define CHUNK_MIN     ((size_t)1)
#define CHUNK_MAX     (64 * MIB)
#define SOCKBUF_MAX   (1024 * MIB)

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
	const struct transport *transport;
	size_t read_size;       /* bytes per read() */
	size_t write_size;      /* at most bytes per write() */
	int sndbuf;             /* requested SO_SNDBUF, 0 = kernel default */
	int rcvbuf;             /* requested SO_RCVBUF, 0 = kernel default */
	long timeout_ms;        /* -w: connect and idle timeout, -1 = none */
	long quit_after_eof_ms; /* -q: wait for the peer after stdin EOF, -1 = forever */
	int exit_on_peer_eof;   /* stop once the peer's EOF is flushed */
	int recv_only;          /* -d: never read stdin */
	int send_only;          /* --send-only: never read the socket */
	enum report_format report;
};

/* One direction's counters. */
struct flow_stats {
	uint64_t bytes;   /* bytes delivered to the destination */
	uint64_t reads;   /* read() calls on the source, EAGAIN included */
	uint64_t writes;  /* write() calls on the destination, EAGAIN included */
	size_t max_read;  /* most bytes one read() returned */
	size_t max_write; /* most bytes one write() took */
	double started;   /* monotonic seconds when the connection opened */
	double finished;  /* monotonic seconds at this direction's EOF, 0 = running */
};

/* A connected socket and what is known about it. */
struct endpoint {
	int fd;
	int sndbuf;     /* effective SO_SNDBUF read back from the kernel */
	int rcvbuf;     /* effective SO_RCVBUF read back from the kernel */
	char local[64]; /* printable "addr:port" */
	char peer[64];
};

/* A listening socket kept across connections with -k. */
struct listener {
	int fd;
	char local[64];
};

/* What one connection achieved; the relay fills it, the report prints it. */
struct session {
	const struct config *cfg;
	const struct endpoint *ep;
	struct flow_stats sent;     /* stdin -> socket */
	struct flow_stats received; /* socket -> stdout */
	int exit_status;
	char error[256]; /* the one-line reason, empty on success */
};

/* Fixed-size buffer: data lives in [head, tail); never moved, reset when empty. */
struct iobuf {
	char *data;
	size_t cap;
	size_t head;
	size_t tail;
};

/* A transport: the socket parameters that tell one from another. */
struct transport {
	const char *name;
	int socktype;
	int protocol;
};

struct addrinfo;

/* addr.c */
int addr_resolve(const char *, const char *, int, int, int, struct addrinfo **, char *, size_t);
void addr_format(const struct sockaddr *, socklen_t, char *, size_t);
void addr_format_fd(int, int, char *, size_t);

/* endpoint.c */
int endpoint_connect(const struct config *, struct endpoint *, char *, size_t);
int endpoint_listen(const struct config *, struct listener *, char *, size_t);
int endpoint_accept(struct listener *, struct endpoint *, char *, size_t);
void endpoint_close(struct endpoint *);
void listener_close(struct listener *);

/* iobuf.c */
int iobuf_init(struct iobuf *, size_t);
void iobuf_free(struct iobuf *);
size_t iobuf_len(const struct iobuf *);
size_t iobuf_room(const struct iobuf *);
char *iobuf_head(struct iobuf *);
char *iobuf_tail(struct iobuf *);
void iobuf_produced(struct iobuf *, size_t);
void iobuf_consumed(struct iobuf *, size_t);

/* log.c */
void log_set_verbose(int);
void log_verbose(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_error(const char *, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void log_fatal(int, const char *, ...) __attribute__((format(printf, 2, 3)));

/* options.c */
int options_parse(int, char **, struct config *, char *, size_t);
void options_usage(void);

/* relay.c */
void relay_run(struct session *, int, int);

/* report.c */
double report_now(void);
void report_print(const struct session *, int);

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
extern const struct transport transport_default;

/* units.c */
int units_parse_size(const char *, uint64_t *);
int units_parse_port(const char *, int, int *);
int units_parse_millis(const char *, long *);
void units_format_bytes(uint64_t, char *, size_t);
void units_format_size(uint64_t, char *, size_t);

#endif
