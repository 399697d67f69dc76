/* retry-wire.c: --retry's wire messages: the sender's join, the receiver's ack and its
 * confirmations, coded and checked (pure, fuzzed by fuzz-frame). */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "fastcat.h"
#include "base/base.h"
#include "retry/retry.h"

static const unsigned char join_magic[4] = {'F', 'C', 'R', 'S'};
static const unsigned char ack_magic[4] = {'F', 'C', 'R', 'K'};
static const unsigned char confirm_magic[4] = {'F', 'C', 'R', 'C'};
static const unsigned char stop_magic[4] = {'F', 'C', 'R', 'E'};
static const unsigned char verdict_magic[4] = {'F', 'C', 'R', 'V'};
static const unsigned char zero[4];

/* Do these 4 bytes, where a --resume receiver waits for the answer, start a join instead? */
int retry_join_seen(const unsigned char *p)
{
	return memcmp(p, join_magic, sizeof join_magic) == 0;
}

void retry_join_encode(unsigned char *p, const struct retry_join *j)
{
	memset(p, 0, RETRY_JOIN_BYTES);
	memcpy(p, join_magic, sizeof join_magic);
	p[4] = RETRY_VERSION;
	p[5] = j->verify ? RETRY_JOIN_VERIFY : 0;
	wire_put(p + 8, j->id, 8);
	wire_put(p + 16, j->hold, 4);
	wire_put(p + 20, j->buffer, 4);
}

/* 0, or -1 for bytes that are not a join this version knows (session 0 is nobody's). */
int retry_join_decode(const unsigned char *p, struct retry_join *j)
{
	if (memcmp(p, join_magic, sizeof join_magic) != 0 || p[4] != RETRY_VERSION ||
	    (p[5] & ~RETRY_JOIN_VERIFY) != 0 || memcmp(p + 6, zero, 2) != 0)
		return -1;
	j->verify = p[5] & RETRY_JOIN_VERIFY;
	j->id = wire_get(p + 8, 8);
	j->hold = (uint32_t)wire_get(p + 16, 4);
	j->buffer = (uint32_t)wire_get(p + 20, 4);
	return j->id != 0 ? 0 : -1;
}

void retry_ack_encode(unsigned char *p, const struct retry_ack *a)
{
	memset(p, 0, RETRY_ACK_BYTES);
	memcpy(p, ack_magic, sizeof ack_magic);
	p[4] = RETRY_VERSION;
	p[5] = (unsigned char)a->status;
	p[6] =
	    (unsigned char)((a->keeps ? RETRY_ACK_KEEPS : 0) | (a->verify ? RETRY_ACK_VERIFY : 0));
	wire_put(p + 8, a->busy, 4);
}

/* 0, or -1 for an unknown status or flag, or a busy time on an ack that is not busy. */
int retry_ack_decode(const unsigned char *p, struct retry_ack *a)
{
	if (memcmp(p, ack_magic, sizeof ack_magic) != 0 || p[4] != RETRY_VERSION ||
	    p[5] > RETRY_BUSY || (p[6] & ~(RETRY_ACK_KEEPS | RETRY_ACK_VERIFY)) != 0 || p[7] != 0 ||
	    memcmp(p + 12, zero, sizeof zero) != 0)
		return -1;
	a->status = (enum retry_status)p[5];
	a->keeps = p[6] & RETRY_ACK_KEEPS;
	a->verify = (p[6] & RETRY_ACK_VERIFY) != 0;
	a->busy = (uint32_t)wire_get(p + 8, 4);
	return a->status == RETRY_BUSY || a->busy == 0 ? 0 : -1;
}

void retry_confirm_encode(unsigned char *p, uint64_t offset)
{
	memset(p, 0, RETRY_CONFIRM_BYTES);
	memcpy(p, confirm_magic, sizeof confirm_magic);
	wire_put(p + 8, offset, 8);
}

/* 0, or -1 for bytes that are not a confirmation. */
int retry_confirm_decode(const unsigned char *p, uint64_t *offset)
{
	if (memcmp(p, confirm_magic, sizeof confirm_magic) != 0 ||
	    memcmp(p + 4, zero, sizeof zero) != 0)
		return -1;
	*offset = wire_get(p + 8, 8);
	return 0;
}

/* Do these 4 bytes, where a confirmation may come, start the receiver's last word? */
int retry_stop_seen(const unsigned char *p)
{
	return memcmp(p, stop_magic, sizeof stop_magic) == 0;
}

void retry_stop_encode(unsigned char *p, const struct retry_stop *st)
{
	memset(p, 0, RETRY_STOP_BYTES);
	memcpy(p, stop_magic, sizeof stop_magic);
	p[4] = RETRY_VERSION;
	p[5] = (unsigned char)st->reason;
	p[6] = (unsigned char)st->what;
	wire_put(p + 8, st->offset, 8);
}

/* 0, or -1 for bytes that are not a last word (a reason this version does not know is named
 * as other). */
int retry_stop_decode(const unsigned char *p, struct retry_stop *st)
{
	if (memcmp(p, stop_magic, sizeof stop_magic) != 0 || p[4] != RETRY_VERSION || p[5] == 0 ||
	    (p[6] != RETRY_FAILED_WRITE && p[6] != RETRY_FAILED_SYNC) || p[7] != 0)
		return -1;
	st->reason = (enum retry_reason)p[5];
	st->what = (enum retry_failed)p[6];
	st->offset = wire_get(p + 8, 8);
	return 0;
}

/* Do these 4 bytes, after the end's confirmation, start the receiver's --verify verdict? */
int retry_verdict_seen(const unsigned char *p)
{
	return memcmp(p, verdict_magic, sizeof verdict_magic) == 0;
}

void retry_verdict_encode(unsigned char *p, uint64_t digest)
{
	memset(p, 0, RETRY_VERDICT_BYTES);
	memcpy(p, verdict_magic, sizeof verdict_magic);
	p[4] = RETRY_VERSION;
	wire_put(p + 8, digest, 8);
}

/* 0, or -1 for bytes that are not a verdict. */
int retry_verdict_decode(const unsigned char *p, uint64_t *digest)
{
	if (memcmp(p, verdict_magic, sizeof verdict_magic) != 0 || p[4] != RETRY_VERSION ||
	    memcmp(p + 5, zero, 3) != 0)
		return -1;
	*digest = wire_get(p + 8, 8);
	return 0;
}

/* The wire's reason for a failed write's errno. */
enum retry_reason retry_reason_of(int err)
{
	switch (err) {
	case ENOSPC: return RETRY_REASON_NOSPC;
	case EFBIG: return RETRY_REASON_FBIG;
	case EDQUOT: return RETRY_REASON_DQUOT;
	case EIO: return RETRY_REASON_IO;
	case EROFS: return RETRY_REASON_ROFS;
	case EPIPE: return RETRY_REASON_PIPE;
	default: return RETRY_REASON_OTHER;
	}
}

/* What the sender says of a reason: the local strerror where there is one. */
const char *retry_reason_name(enum retry_reason r)
{
	switch (r) {
	case RETRY_REASON_NOSPC: return strerror(ENOSPC);
	case RETRY_REASON_FBIG: return strerror(EFBIG);
	case RETRY_REASON_DQUOT: return strerror(EDQUOT);
	case RETRY_REASON_IO: return strerror(EIO);
	case RETRY_REASON_ROFS: return strerror(EROFS);
	case RETRY_REASON_PIPE: return "its stdout's reader went away";
	default: return "an error this fastcat has no name for";
	}
}
