/* compat.h: what configure found missing, filled in here so that no .c file needs an #if. */
#ifndef FASTCAT_COMPAT_H
#define FASTCAT_COMPAT_H

#include <sys/socket.h>

/*
 * Without MSG_NOSIGNAL a send to a peer that has gone raises SIGPIPE, which
 * signals_init ignores for the whole process before any socket exists: the
 * send fails with EPIPE either way.
 */
#if !HAVE_DECL_MSG_NOSIGNAL
#define MSG_NOSIGNAL 0
#endif

#endif
