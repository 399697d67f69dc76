/* wire.h: what every wire format shares: big-endian numbers and a handshake's blocking moves. */
#ifndef WIRE_H
#define WIRE_H

#include <stddef.h>
#include <stdint.h>

/* wire.c: big-endian numbers of the wire formats */
void wire_put(unsigned char *, uint64_t, int);
uint64_t wire_get(const unsigned char *, int);
int wire_match(const unsigned char *, size_t, const void *, size_t);

/* handshake.c */
size_t handshake_move(int, unsigned char *, size_t, int, double);

#endif
