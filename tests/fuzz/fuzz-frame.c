/*
 * fuzz-frame.c: libFuzzer harness for the --verify wire decoder (src/verify.c):
 *
 *   int verify_decode(const unsigned char *buf, size_t len, struct frame *out)
 *       header bytes consumed (> 0) for a whole frame header, 0 when more
 *       bytes are needed, -1 when malformed;
 *   int verify_hello(const unsigned char *buf, size_t len)
 *       1 for the full hello, 0 for a proper prefix of it, -1 otherwise;
 *   size_t verify_encode(unsigned char *out, const struct frame *fr)
 *       the encoder, checked against the decoder;
 *   int verify_ctl_decode(head, body, len, struct ctl *out)
 *       the control datagrams of --verify over udp/unix-dgram: 1, 0 (data)
 *       or -1; what decodes encodes back to the same bytes;
 *   int stripe_join_decode(p, struct stripe_join *), stripe_chunk_decode(p,
 *       struct stripe_chunk *), stripe_hello_seen(buf, len): -P's join
 *       (versions 1 and 2, -P --resume), chunk header (--sparse's zero
 *       record too) and hellos
 *       (src/stripe-wire.c): what decodes encodes back to the same bytes,
 *       within its bounds; a whole hello is one version's or the other's;
 *   int retry_join_decode(p, ...), retry_ack_decode(p, ...), retry_confirm_decode(p, ...),
 *       retry_stop_decode(p, ...), retry_verdict_decode(p, ...): --retry's join, ack,
 *       confirmation, the receiver's last word and its --verify verdict
 *       (src/retry-wire.c): round trips;
 *   int chain_opening_decode(p, ...), chain_answer_decode(p, ...), chain_piece_decode(p, ...),
 *       chain_ack_decode(p, len, ...), chain_results_length(p, len, ...),
 *       chain_results_decode(p, len, n, ...), chain_end_decode(p, length, ...): --chain's
 *       opening (a rejoin's too), answer, confirmation, results and end mark
 *       (src/chain/chain-wire.c): round trips, the results' entries within the list and
 *       each node once;
 *   int reliable_ack_decode(p, len, ...), reliable_hello_decode(...),
 *       reliable_end_decode(...), reliable_data_decode(...): --reliable's datagrams
 *       (src/reliable/reliable-wire.c): round trips, an acknowledgement's ranges in order;
 *   int resume_offer_decode(p, struct resume_offer *),
 *       resume_answer_decode(p, struct resume_answer *), resume_hello_seen(buf,
 *       len): --resume's offer, answer and hello (src/resume-wire.c): what
 *       decodes encodes back to the same bytes, its numbers within bounds.
 *
 * Each call gets an exact-size heap copy, so ASan sees any read past len.
 * Besides not crashing, the answers must agree with each other:
 *   - consumed <= len, and a DATA frame carries 1 to VERIFY_FRAME_MAX bytes;
 *   - what decodes encodes back to the very bytes it came from;
 *   - the same bytes decode the same way twice;
 *   - a header depends on its own bytes only: every prefix of at least
 *     `consumed` bytes decodes to the same frame, every shorter one needs more
 *     (or is already malformed); once a prefix is malformed, so is the input;
 *   - the hello: the empty input is a prefix of it; once a prefix is not one,
 *     no longer input is the hello or a prefix of it; once it is the hello,
 *     no longer input is a mere prefix.
 *
 * Build: FUZZ_SRC_frame = src/verify.c src/digest.c src/log.c src/stripe.c ...
 * (see Makefile.am; verify_conclude calls digest_final).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fastcat.h"
#include "chain/chain.h"
#include "reliable/reliable.h"
#include "resume/resume.h"
#include "retry/retry.h"
#include "stripe/stripe.h"
#include "verify/verify.h"

#define FUZZ_NAME "fuzz-frame"
#include "fuzz-check.h"

#define PREFIXES 64 /* the prefixes tried: headers are shorter than this */

/*
 * --chain's confirmation, and what comes back from a node: a confirmation
 * decodes from every prefix of its bytes as "not yet" and then the same;
 * the results' length is never past what a list can have.
 */
static void check_chain_back(const uint8_t *data, size_t size)
{
	unsigned char enc[CHAIN_ACK_BYTES];
	struct chain_ack a, b;
	size_t total;
	int rc = chain_ack_decode(data, size, &a);

	CHECK(rc >= -1 && rc <= 1, "chain_ack_decode: %d", rc);
	if (rc == 1) {
		chain_ack_encode(enc, &a);
		CHECK(memcmp(enc, data, CHAIN_ACK_BYTES) == 0,
		      "a confirmation encodes back differently");
		for (size_t k = 0; k < CHAIN_ACK_BYTES; k++)
			CHECK(chain_ack_decode(data, k, &b) == 0, "a confirmation's %zu bytes", k);
	}
	rc = chain_results_length(data, size, &total);
	CHECK(rc >= -1 && rc <= 1, "chain_results_length: %d", rc);
	CHECK(rc != 0 || (total >= CHAIN_RESULTS_HEAD && total <= CHAIN_RESULTS_MAX),
	      "results of %zu bytes", total);
}

/*
 * --chain's opening, answer, results and end mark: what decodes encodes back
 * (the results in index order: decoded again, the same entries).
 */
static void check_chain(const uint8_t *data, size_t size)
{
	unsigned char enc[CHAIN_RESULTS_MAX];
	struct chain_opening o;
	struct chain_results r, again;
	uint64_t v;

	if (size >= CHAIN_OPENING_BYTES && chain_opening_decode(data, &o) == 0) {
		CHECK(o.index < o.count && o.count <= CHAIN_MAX && o.text_len <= CHAIN_TEXT_MAX,
		      "an opening for node %u of %u", o.index, o.count);
		CHECK(o.rejoin == (data[5] == CHAIN_REJOIN), "a rejoin read from byte %u", data[5]);
		CHECK(o.lanes >= 1 && o.lanes <= CHAIN_LANES_MAX && o.lane < o.lanes,
		      "lane %u of %u connections", o.lane, o.lanes);
		chain_opening_encode(enc, &o);
		CHECK(memcmp(enc, data, CHAIN_OPENING_BYTES) == 0,
		      "an opening encodes back differently");
	}
	check_chain_back(data, size);
	if (size >= CHAIN_ANSWER_BYTES && chain_answer_decode(data, &v) == 0) {
		chain_answer_encode(enc, v);
		CHECK(memcmp(enc, data, CHAIN_ANSWER_BYTES) == 0,
		      "an answer encodes back differently");
	}
	if (size >= 1 &&
	    chain_results_decode(data + 1, size - 1, data[0] % (CHAIN_MAX + 1), &r) == 0) {
		size_t len = chain_results_encode(enc, &r);

		CHECK(len == size - 1, "results of %zu bytes encode to %zu", size - 1, len);
		CHECK(chain_results_decode(enc, len, CHAIN_MAX, &again) == 0 &&
		          memcmp(&again, &r, sizeof r) == 0,
		      "results decode differently once encoded");
		for (unsigned i = data[0] % (CHAIN_MAX + 1); i < CHAIN_MAX; i++)
			CHECK(!r.have[i], "results for node %u of a list of %u", i,
			      data[0] % (CHAIN_MAX + 1));
	}
	if (size >= CHAIN_END_BYTES) {
		uint64_t length = 0;

		for (int i = 16; i < 24; i++)
			length = length << 8 | data[i];
		if (chain_end_decode(data, length, &v) == 0) {
			chain_end_encode(enc, length, v);
			CHECK(memcmp(enc, data, CHAIN_END_BYTES) == 0,
			      "an end mark encodes back differently");
			CHECK(chain_end_decode(data, length + 1, &v) != 0,
			      "an end mark of another length taken");
		}
	}
	if (size >= CHAIN_PIECE_HEAD) {
		uint64_t at;
		size_t len;

		if (chain_piece_decode(data, &at, &len) == 0) {
			CHECK(len >= 1 && len <= CHAIN_CHUNK, "a piece of %zu bytes", len);
			chain_piece_encode(enc, at, len);
			CHECK(memcmp(enc, data, CHAIN_PIECE_HEAD) == 0,
			      "a piece's header encodes back differently");
		}
	}
}

/* enc, len bytes encoded from data's fields, with data's tag (a receiver's), is data. */
static int same_bytes(unsigned char *enc, size_t len, const uint8_t *data, size_t size, size_t cmp)
{
	struct reliable_head h;

	if (reliable_head_decode(data, size, &h) != 0)
		return 0;
	reliable_head_tag(enc, h.tag);
	return len == cmp && memcmp(enc, data, cmp) == 0;
}

/*
 * --reliable's datagrams: what decodes encodes back to the same bytes (the receiver's tag
 * put back); an acknowledgement's ranges lie beyond cum, in order, none empty.
 */
static void check_reliable(const uint8_t *data, size_t size)
{
	unsigned char enc[RELIABLE_ACK_MAX];
	struct reliable_ack a;
	struct reliable_hello h;
	struct reliable_end e;
	struct reliable_data d;
	uint64_t last;
	size_t n;

	if (reliable_ack_decode(data, size, &a) == 0) {
		last = a.cum;
		for (unsigned i = 0; i < a.n; i++) {
			CHECK(a.range[i].from > last && a.range[i].to > a.range[i].from,
			      "range %u of %u out of order", i, a.n);
			last = a.range[i].to;
		}
		n = reliable_ack_encode(enc, wire_get(data + 8, 8), &a);
		CHECK(same_bytes(enc, n, data, size, size),
		      "an acknowledgement encodes back differently");
	}
	/* -k: a hello (and only a hello) may start a session */
	CHECK(reliable_stale(data, size) ==
	          (reliable_hello_decode(data, size, &h) != 0 || data[4] != RELIABLE_HELLO),
	      "-k would take a datagram that is no hello for a session's start, or drop a hello");
	if (reliable_hello_decode(data, size, &h) == 0) {
		n = reliable_hello_encode(enc, (enum reliable_type)data[4], wire_get(data + 8, 8),
		                          &h);
		CHECK(same_bytes(enc, n, data, size, size), "a hello encodes back differently");
	}
	if (reliable_end_decode(data, size, &e) == 0) {
		n = reliable_end_encode(enc, (enum reliable_type)data[4], wire_get(data + 8, 8),
		                        &e);
		CHECK(same_bytes(enc, n, data, size, size), "an end encodes back differently");
	}
	if (reliable_data_decode(data, size, &d) == 0) {
		n = reliable_data_encode(enc, wire_get(data + 8, 8), &d);
		CHECK(same_bytes(enc, n, data, size, RELIABLE_DATA_HEAD) &&
		          size > RELIABLE_DATA_HEAD,
		      "a data header encodes back differently");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* verify_decode on exactly the first len bytes, in a block of their own. */
static int decode(const uint8_t *data, size_t len, struct frame *out)
{
	unsigned char *buf = malloc(len ? len : 1);
	int rc;

	if (buf == NULL)
		abort();
	memcpy(buf, data, len);
	memset(out, 0, sizeof *out);
	rc = verify_decode(buf, len, out);
	free(buf);
	return rc;
}

static int hello(const uint8_t *data, size_t len)
{
	unsigned char *buf = malloc(len ? len : 1);
	int rc;

	if (buf == NULL)
		abort();
	memcpy(buf, data, len);
	rc = verify_hello(buf, len);
	free(buf);
	return rc;
}

static void check_decode(const uint8_t *data, size_t size)
{
	struct frame whole, again, part;
	int rc = decode(data, size, &whole), p;
	size_t last = size < PREFIXES ? size : PREFIXES;

	CHECK(rc >= -1 && (rc <= 0 || (size_t)rc <= size), "consumed %d of %zu bytes", rc, size);
	CHECK(rc <= 0 || whole.type != FRAME_DATA ||
	          (whole.len >= 1 && whole.len <= VERIFY_FRAME_MAX),
	      "a DATA frame of %u bytes", (unsigned)whole.len);
	CHECK(rc <= 0 || (whole.type == FRAME_DATA ? rc == FRAME_HEADER : rc == FRAME_TRAILER),
	      "frame type 0x%02x took %d bytes", (unsigned)whole.type, rc);
	if (rc > 0) {
		unsigned char enc[FRAME_TRAILER];
		size_t n = verify_encode(enc, &whole);
		CHECK(n == (size_t)rc && memcmp(enc, data, n) == 0,
		      "decoded %d bytes, they encode back to %zu other bytes", rc, n);
	}
	CHECK(decode(data, size, &again) == rc &&
	          (rc <= 0 || memcmp(&whole, &again, sizeof whole) == 0),
	      "the same %zu bytes decode differently", size);

	for (size_t k = 0; k < last; k++) {
		p = decode(data, k, &part);
		if (rc > 0 && k >= (size_t)rc)
			CHECK(p == rc && memcmp(&whole, &part, sizeof whole) == 0,
			      "%zu bytes: %d, all %zu: %d", k, p, size, rc);
		else if (rc > 0)
			CHECK(p == 0, "header of %d bytes: its first %zu say %d", rc, k, p);
		else
			CHECK(p == 0 || p == -1, "%zu bytes: %d, all %zu: %d", k, p, size, rc);
		CHECK(p != -1 || rc == -1, "malformed at %zu bytes, %d at %zu", k, rc, size);
	}
}

static void check_hello(const uint8_t *data, size_t size)
{
	size_t last = size < PREFIXES ? size : PREFIXES;
	int rc = hello(data, size), prev = 0, p;

	CHECK(rc >= -1 && rc <= 1, "verify_hello: %d", rc);
	CHECK(hello(data, size) == rc, "verify_hello of the same bytes differs");
	CHECK(hello(data, 0) == 0, "the empty input is not a prefix of the hello");
	for (size_t k = 1; k <= last; k++) {
		p = k == size ? rc : hello(data, k);
		CHECK(p >= -1 && p <= 1, "verify_hello: %d", p);
		CHECK(prev != -1 || p == -1, "not the hello at %zu bytes, %d at %zu", k - 1, p, k);
		CHECK(prev != 1 || p != 0, "the hello at %zu bytes, a prefix at %zu", k - 1, k);
		prev = p;
	}
	CHECK(prev != -1 || rc == -1, "not the hello at %zu bytes, %d at %zu", last, rc, size);
	CHECK(prev != 1 || rc != 0, "the hello at %zu bytes, a prefix at %zu", last, size);
}

/*
 * verify_ctl_decode, the --verify control datagram decoder, on the input as
 * one datagram (header and body in blocks of their own, as --seq reads
 * them): what decodes as a control datagram encodes back to the same bytes.
 */
static void check_ctl(const uint8_t *data, size_t size)
{
	unsigned char *head, *body, out[CTL_MAX];
	size_t len = size - CTL_HEADER;
	struct ctl c;
	int rc;

	if (size < CTL_HEADER)
		return;
	head = malloc(CTL_HEADER);
	body = malloc(len ? len : 1);
	if (head == NULL || body == NULL)
		abort();
	memcpy(head, data, CTL_HEADER);
	memcpy(body, data + CTL_HEADER, len);
	rc = verify_ctl_decode(head, body, len, &c);
	CHECK(rc >= -1 && rc <= 1, "rc %d", rc);
	if (rc == 1) {
		size_t n = verify_ctl_encode(out, &c);
		CHECK(n == size && memcmp(out, data, n) == 0,
		      "type %c: encodes to %zu bytes of %zu", c.type, n, size);
	}
	free(head);
	free(body);
}

/* What a chunk header that decoded may say, by its type (--sparse's Z: no payload). */
static int chunk_in_bounds(const struct stripe_chunk *c)
{
	switch (c->type) {
	case STRIPE_DATA:
		return c->len >= 1 && c->len <= STRIPE_CHUNK_MAX &&
		       c->offset <= UINT64_MAX - c->len;
	case STRIPE_ZERO: return c->len >= STRIPE_ZERO_MIN && c->offset <= UINT64_MAX - c->len;
	case STRIPE_END:
	case STRIPE_VERDICT: return c->len == STRIPE_TRAILER_BYTES && c->count <= CONN_MAX;
	default: return 0;
	}
}

/* -P's join and chunk header: round trips and bounds; the hello: prefix rules. */
static void check_stripe(const uint8_t *data, size_t size)
{
	unsigned char *buf = malloc(size ? size : 1), enc[STRIPE_JOIN_BYTES];
	struct stripe_join j;
	struct stripe_chunk c;
	int h;

	if (buf == NULL)
		abort();
	memcpy(buf, data, size);
	if (size >= STRIPE_JOIN_BYTES && stripe_join_decode(buf, &j) == 0) {
		/* count 0: -P auto, the session grows to at most STRIPE_AUTO_MAX */
		CHECK(j.count == STRIPE_AUTO ? j.index < STRIPE_AUTO_MAX
		                             : j.count <= CONN_MAX && j.index < j.count,
		      "join count %u index %u", j.count, j.index);
		stripe_join_encode(enc, &j);
		CHECK(memcmp(enc, buf, STRIPE_JOIN_BYTES) == 0, "a join encodes back differently");
	}
	if (size >= STRIPE_CHUNK_BYTES && stripe_chunk_decode(buf, &c) == 0) {
		CHECK(chunk_in_bounds(&c), "chunk type 0x%02x len %u", (unsigned)c.type,
		      (unsigned)c.len);
		stripe_chunk_encode(enc, &c);
		CHECK(memcmp(enc, buf, STRIPE_CHUNK_BYTES) == 0,
		      "a chunk header encodes back differently");
	}
	h = stripe_hello_seen(buf, size);
	CHECK(h >= -1 && h <= 1 && (size > 0 || h == 0), "hello %d at %zu bytes", h, size);
	CHECK(h != 0 || size < STRIPE_HELLO_BYTES, "a prefix of %zu bytes", size);
	CHECK(h != 1 || memcmp(buf, stripe_hello_resumes(buf) ? stripe_hello_resume : stripe_hello,
	                       STRIPE_HELLO_BYTES) == 0,
	      "a hello of neither version");
	free(buf);
}

/* --resume's offer and answer: round trips and bounds; the hello: prefix rules. */
static void check_resume(const uint8_t *data, size_t size)
{
	unsigned char *buf = malloc(size ? size : 1), enc[RESUME_OFFER_BYTES];
	struct resume_offer o;
	struct resume_answer a;
	int h;

	if (buf == NULL)
		abort();
	memcpy(buf, data, size);
	if (size >= RESUME_OFFER_BYTES && resume_offer_decode(buf, &o) == 0) {
		CHECK(o.window <= o.length && o.window <= RESUME_WINDOW_MAX,
		      "offer length %llu window %u", (unsigned long long)o.length,
		      (unsigned)o.window);
		resume_offer_encode(enc, &o);
		CHECK(memcmp(enc, buf, RESUME_OFFER_BYTES) == 0,
		      "an offer encodes back differently");
	}
	if (size >= RESUME_ANSWER_BYTES && resume_answer_decode(buf, &a) == 0) {
		CHECK(a.verdict == RESUME_SHORT
		          ? a.total < a.length
		          : (a.verdict == RESUME_GO || a.verdict == RESUME_DIFFERS) &&
		                (a.total == RESUME_UNKNOWN || a.total >= a.length),
		      "answer verdict %d length %llu total %llu", (int)a.verdict,
		      (unsigned long long)a.length, (unsigned long long)a.total);
		resume_answer_encode(enc, &a);
		CHECK(memcmp(enc, buf, RESUME_ANSWER_BYTES) == 0,
		      "an answer encodes back differently");
	}
	h = resume_hello_seen(buf, size);
	CHECK(h >= -1 && h <= 1 && (size > 0 || h == 0), "hello %d at %zu bytes", h, size);
	CHECK(h != 0 || size < RESUME_HELLO_BYTES, "a prefix of %zu bytes", size);
	free(buf);
}

/*
 * --retry's join, ack, confirmation, last word and verdict: what decodes
 * encodes back to the same bytes, and none reads as another.
 */
static void check_retry(const uint8_t *data, size_t size)
{
	unsigned char enc[RETRY_JOIN_BYTES];
	struct retry_join j;
	struct retry_ack a;
	struct retry_stop st;
	uint64_t off;

	if (size >= RETRY_JOIN_BYTES && retry_join_decode(data, &j) == 0) {
		CHECK(j.id != 0 && retry_join_seen(data), "a join of session 0");
		retry_join_encode(enc, &j);
		CHECK(memcmp(enc, data, RETRY_JOIN_BYTES) == 0, "a join encodes back differently");
	}
	if (size >= RETRY_ACK_BYTES && retry_ack_decode(data, &a) == 0) {
		CHECK(a.status <= RETRY_BUSY && (a.status == RETRY_BUSY || a.busy == 0),
		      "ack status %d busy %u", (int)a.status, (unsigned)a.busy);
		retry_ack_encode(enc, &a);
		CHECK(memcmp(enc, data, RETRY_ACK_BYTES) == 0, "an ack encodes back differently");
	}
	if (size >= RETRY_CONFIRM_BYTES && retry_confirm_decode(data, &off) == 0) {
		retry_confirm_encode(enc, off);
		CHECK(memcmp(enc, data, RETRY_CONFIRM_BYTES) == 0,
		      "a confirmation encodes back differently");
	}
	if (size >= RETRY_STOP_BYTES && retry_stop_decode(data, &st) == 0) {
		CHECK(st.reason != 0 && retry_stop_seen(data) &&
		          retry_reason_name(st.reason) != NULL,
		      "a last word of reason %d", (int)st.reason);
		CHECK(retry_confirm_decode(data, &off) != 0, "a last word reads as a confirmation");
		retry_stop_encode(enc, &st);
		CHECK(memcmp(enc, data, RETRY_STOP_BYTES) == 0,
		      "a last word encodes back differently");
	}
	if (size >= RETRY_VERDICT_BYTES && retry_verdict_decode(data, &off) == 0) {
		CHECK(retry_verdict_seen(data) && retry_confirm_decode(data, &off) != 0 &&
		          retry_stop_decode(data, &st) != 0,
		      "a verdict reads as another message");
		retry_verdict_decode(data, &off);
		retry_verdict_encode(enc, off);
		CHECK(memcmp(enc, data, RETRY_VERDICT_BYTES) == 0,
		      "a verdict encodes back differently");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_retry(data, size);
	check_chain(data, size);
	check_reliable(data, size);
	check_resume(data, size);
	check_stripe(data, size);
	check_decode(data, size);
	check_hello(data, size);
	check_ctl(data, size);
	return 0;
}
