/* listener.h: the listening socket -l keeps across connections (listener.c). */
#ifndef LISTENER_H
#define LISTENER_H

#include <sys/socket.h>

#include "fastcat.h"

/* A listening socket kept across connections with -k; for a datagram transport, the socket
 * itself. */
struct listener {
	int fd;
	char local[112];
	char created_path[112]; /* the Unix socket file this listener made, removed at close */
	int served;             /* a connectionless listener had a peer already (-k) */
	char refused[112];      /* the peer refused last, logged once for a run of refusals */
	uint64_t held;          /* -k --resume: the --retry session a lost connection left ... */
	double held_until;      /* ... refusing other senders until then (retry-wire.c's hold) */
};

/* listener.c */
int listener_open(const struct config *, struct listener *, char *, size_t);
void listener_stop_accepting(const struct config *, struct listener *);
int listener_admits(const struct config *, struct listener *, const struct sockaddr *, socklen_t,
                    const char *);
void listener_forget_peer(struct listener *);
void listener_close(struct listener *);

#endif
