/*
 * reliable-rate.c: the --reliable sender's model of its path, after BBR (Cardwell et al.,
 * 2016): the rate it paces at and the bytes it lets be on the way come from two numbers it
 * measures, the bottleneck's rate (the largest delivery-rate sample of the last 10 rounds,
 * each a round trip of 5 ms at least) and the round trip with no queue (the least sample of
 * the last 10 s). Startup doubles the rate every round until three rounds in a row did not
 * deliver 25 % more; drain then empties the queue startup built; probe cycles its gain (5/4
 * for a round, 3/4 for one, then 1 for six), so that it finds more rate when the path frees
 * and drains what its probe queued. A random loss changes neither number, so it costs no
 * rate; a queue that stands raises the round trip, and the 3/4 phase drains it. Pure.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "reliable/reliable.h"

#define STARTUP_GAIN 2.885 /* 2/ln 2: the rate doubles every round trip */
#define FULL_GROWTH  1.25
#define FULL_ROUNDS  3
#define MIN_RTT_LIFE 10.0
#define CWND_GAIN    2.0
#define ROUND_FLOOR  0.005 /* seconds a round lasts at least: the pacer's timer is 1 ms */

static const double probe_gain[8] = {1.25, 0.75, 1, 1, 1, 1, 1, 1};

/* start_rate: the pace before any sample; ceiling: --rate-limit (0 none); now: the clock. */
void rate_init(struct rate_model *m, double start_rate, double ceiling, double now)
{
	memset(m, 0, sizeof *m);
	m->mode = RATE_STARTUP;
	m->start_rate = start_rate;
	m->ceiling = ceiling;
	m->round_start = m->phase_start = now;
}

static double gain(const struct rate_model *m)
{
	switch (m->mode) {
	case RATE_STARTUP: return STARTUP_GAIN;
	case RATE_DRAIN: return 1 / STARTUP_GAIN;
	default: return probe_gain[m->phase];
	}
}

/* The largest rate of the last RATE_ROUNDS rounds. */
static double window_max(const struct rate_model *m)
{
	double most = 0;

	for (unsigned i = 0; i < RATE_ROUNDS; i++)
		most = m->round_bw[i] > most ? m->round_bw[i] : most;
	return most;
}

/*
 * A round of the model: a round trip, but never shorter than the pacer can keep to. On
 * loopback a round trip is 0.1 ms while the sender wakes every millisecond: rounds that
 * short would hold the largest rate of the last 1 ms (a scheduling hiccup would cost it),
 * end startup on noise and give probing's 5/4 less time than one wake-up.
 */
static double round_len(const struct rate_model *m)
{
	return m->min_rtt > ROUND_FLOOR ? m->min_rtt : ROUND_FLOOR;
}

/* A round trip passed: startup's test for a full pipe. 1 when the mode changed. */
static int round_over(struct rate_model *m, double now)
{
	m->round++;
	m->round_start = now;
	m->round_bw[m->round % RATE_ROUNDS] = 0;
	if (m->mode != RATE_STARTUP)
		return 0;
	if (m->bw >= m->full_bw * FULL_GROWTH) {
		m->full_bw = m->bw;
		m->full_rounds = 0;
		return 0;
	}
	if (++m->full_rounds < FULL_ROUNDS)
		return 0;
	m->mode = RATE_DRAIN;
	snprintf(m->why, sizeof m->why,
	         "the delivery rate stopped growing at %.0f Mbit/s (%d round trips): draining the "
	         "queue the start built",
	         m->bw * 8 / 1e6, FULL_ROUNDS);
	return 1;
}

/* Drain is over once no more than one round trip's worth is on the way; probe's phases turn. */
static int phase_turn(struct rate_model *m, double now, double inflight)
{
	if (m->mode == RATE_DRAIN && inflight <= m->bw * m->min_rtt) {
		m->mode = RATE_PROBE;
		m->phase = 2; /* cruise first: the rate was just measured */
		m->phase_start = now;
		snprintf(m->why, sizeof m->why,
		         "drained: pacing at %.0f Mbit/s, round trip %.1f ms", m->bw * 8 / 1e6,
		         m->min_rtt * 1e3);
		return 1;
	}
	if (m->mode == RATE_PROBE && now - m->phase_start >= round_len(m)) {
		m->phase = (m->phase + 1) % 8;
		m->phase_start = now;
	}
	return 0;
}

/*
 * An acknowledgement's samples at now (rtt, rate: 0 when it gave none; app_limited: its
 * datagram went while the sender had less to send than the pace) and the bytes on the way
 * after it. 1 when the mode changed (why says how).
 *
 * As BBR: a sample the sender held back enters the rate only when it is higher, and a round
 * passes only with a sample that counts, so that stdin pausing (a disk seeking, a pipe
 * waiting for its writer) or acknowledgements that deliver nothing cost no rate.
 */
int rate_sample(struct rate_model *m, double now, double rtt, double rate, double inflight,
                int app_limited)
{
	int changed = 0, counts = rate > 0 && (!app_limited || rate >= m->bw);

	if (rtt > 0 &&
	    (m->min_rtt == 0 || rtt <= m->min_rtt || now - m->min_rtt_at > MIN_RTT_LIFE)) {
		m->min_rtt = rtt;
		m->min_rtt_at = now;
	}
	if (counts && rate > m->round_bw[m->round % RATE_ROUNDS])
		m->round_bw[m->round % RATE_ROUNDS] = rate;
	m->bw = window_max(m);
	if (counts && m->min_rtt > 0 && now - m->round_start >= round_len(m))
		changed = round_over(m, now);
	if (m->min_rtt > 0)
		changed |= phase_turn(m, now, inflight);
	return changed;
}

/* The rate to pace at now, bytes a second. */
double rate_pacing(const struct rate_model *m)
{
	double r = m->bw > 0 ? gain(m) * m->bw : m->start_rate;

	if (m->mode == RATE_STARTUP && r < m->start_rate)
		r = m->start_rate;
	return m->ceiling > 0 && r > m->ceiling ? m->ceiling : r;
}

/* The most bytes to let be on the way (at least `least`: a few datagrams). */
double rate_inflight(const struct rate_model *m, double least)
{
	double cap = m->mode == RATE_STARTUP ? STARTUP_GAIN : CWND_GAIN;

	if (!(m->bw > 0) || !(m->min_rtt > 0))
		return 1e18; /* nothing measured yet: the pace alone holds it back */
	cap *= m->bw * m->min_rtt;
	return cap > least ? cap : least;
}
