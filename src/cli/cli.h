/*
 * cli.h: what cli/'s files share: one session's runner (session.c), which wires the features
 * into the opening and the relay, and what the transfers (transfer.c) keep for it.
 */
#ifndef FASTCAT_CLI_H
#define FASTCAT_CLI_H

#include "fastcat.h"
#include "chain/chain.h"
#include "reliable/reliable.h"
#include "report/report.h"
#include "stripe/stripe.h"
#include "verify/verify.h"

struct endpoint;
struct retry;

/* The features' state for one session, from its opening until its connections are closed. */
struct session_parts {
	struct stripe stripe;     /* -P: the session's other connections, and those joining */
	int striped;              /* ... -P opened them */
	struct verify verify;     /* --verify over one connection */
	struct retry *retry;      /* --retry at the receiver: from the sender's join, or NULL */
	struct chain chain;       /* --chain: the list, the next node, the results */
	int chained;              /* ... its opening ran */
	struct reliable reliable; /* --reliable: one end of its datagrams */
	struct progress progress; /* --progress, --interval, SIGUSR1 */
};

/* session.c */
void session_init(struct session *, const struct config *, const struct endpoint *,
                  struct listener *);
void session_restart(struct session *);
int session_run(struct session *, struct session_parts *, struct endpoint *, struct retry *,
                enum session_phase *);
void session_close(struct session *, struct session_parts *, struct endpoint *);
int session_end(struct session *, struct session_parts *, struct endpoint *);

/* transfer.c */
int transfer_connect(const struct config *);
int transfer_retry(const struct config *);
int transfer_listen(const struct config *);

#endif
