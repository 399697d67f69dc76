/* relay.h: the relay's face for the layers above: run a session's two flows. */
#ifndef FASTCAT_RELAY_H
#define FASTCAT_RELAY_H

#include "fastcat.h"

/* copy.c */
const char *copy_method_name(enum copy_method);

/* relay.c */
void relay_run(struct session *, int, int);

/* zerocopy-linux.c or zerocopy-none.c, chosen by configure (the rest is in flow.h) */
int zerocopy_available(void);

#endif
