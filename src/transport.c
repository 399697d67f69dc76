/* transport.c: the table of transports; what differs between them is data, not branches. */
#include "config.h"

#include <netinet/in.h>
#include <string.h>

#include "fastcat.h"

const struct transport transport_default = {"tcp", SOCK_STREAM, IPPROTO_TCP};

static const struct transport *const transports[] = {
    &transport_default,
};

const struct transport *transport_find(const char *name)
{
	for (size_t i = 0; i < sizeof transports / sizeof transports[0]; i++)
		if (strcmp(transports[i]->name, name) == 0)
			return transports[i];
	return NULL;
}
