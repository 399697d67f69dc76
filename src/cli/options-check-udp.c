/* options-check-udp.c: after parsing, udp's own: --reliable's combinations, and multicast's. */
#include "config.h"

#include <sys/socket.h>

#include "fastcat.h"
#include "net/net.h"
#include "cli/options.h"

/*
 * --reliable: one stream over udp between two fastcats, one way, checked end to end by its
 * own count and XXH64; what it cannot do yet is refused, not half done.
 */
int options_check_reliable(struct config *cfg, const struct seen *seen, struct failure *fail)
{
	const char *with;

	(void)seen;
	if (!cfg->reliable)
		return 0;
	/* a Unix datagram socket loses nothing: its sender waits while the receiver's queue is full
	 */
	if (cfg->transport->family == AF_UNIX && cfg->transport->datagram)
		return failure_set(fail, EXIT_USAGE,
		                   "--reliable: udp only (-u); %s loses nothing (its sender waits "
		                   "for room): --verify confirms count and XXH64 there",
		                   cfg->transport->name);
	if (cfg->transport != &transport_udp)
		return failure_set(fail, EXIT_USAGE, "--reliable: udp only (-u), not %s",
		                   cfg->transport->name);
	if (cfg->verify)
		return failure_set(fail, EXIT_USAGE,
		                   "--reliable checks the receiver's count and XXH64 itself: leave "
		                   "--verify out");
	with = cfg->parallel != 0 ? "-P"
	       : cfg->chain       ? "--chain"
	       : cfg->retry != 0  ? "--retry"
	       : cfg->resume      ? "--resume"
	       : cfg->seq         ? "--seq"
	       : cfg->recv_only   ? "-d"
	       : cfg->send_only   ? "--send-only"
	                          : NULL;
	if (with != NULL)
		return failure_set(fail, EXIT_USAGE, "--reliable and %s: cannot be combined", with);
	return 0;
}

/*
 * Multicast: --receivers and --min-rate are the --reliable sender's, --ttl the udp sender's,
 * --mcast-if udp's.
 */
int options_check_multicast(struct config *cfg, const struct seen *seen, struct failure *fail)
{
	const char *opt = cfg->mcast_ttl != 0 ? "--ttl" : cfg->mcast_if ? "--mcast-if" : NULL;

	(void)seen;
	if (cfg->receivers != 0 && (!cfg->reliable || cfg->listen))
		return failure_set(fail, EXIT_USAGE,
		                   "--receivers: the --reliable sender's to a "
		                   "multicast group (-u --reliable GROUP PORT)");
	if (cfg->min_rate != 0 && (!cfg->reliable || cfg->listen))
		return failure_set(fail, EXIT_USAGE,
		                   "--min-rate: the --reliable sender's to a "
		                   "multicast group (-u --reliable GROUP PORT)");
	if (opt != NULL && cfg->transport != &transport_udp)
		return failure_set(fail, EXIT_USAGE, "%s: udp only (-u), not %s", opt,
		                   cfg->transport->name);
	if (cfg->mcast_ttl != 0 && cfg->listen)
		return failure_set(fail, EXIT_USAGE, "--ttl: the sender's, not -l's");
	return 0;
}
