#!/usr/bin/env bash
# multicast.sh - one stream to N machines at once over a multicast group: fastcat --reliable
# --receivers N against the same stream to one receiver (by hand, as root; not part of make
# check).
#
# The lab: tests/chainlab.bash, host 0 (the sender) and hosts 1..N on one switch (its
# multicast snooping off: the group floods), each host's link shaped to RATE both ways (tbf),
# 224.0.0.0/4 routed on each host's eth0. The stream: -s MiB of random bytes in /dev/shm,
# each receiver's file in /dev/shm too. For each N:
#   group   fastcat -lu --reliable 239.1.2.3 PORT > FILE on hosts 1..N
#           fastcat -u --reliable --receivers N 239.1.2.3 PORT < stream on host 0
#   lossy   the same, with receiver 1 losing LOSS % of the group's datagrams that reach it
#           (an nftables rule in its own namespace): the seconds, every file still exact
# Seconds are wall time from the sender's start until every receiver exited; every file is
# compared with the stream (cmp). The ratio column is each time over N = 1's.
#
# Usage: multicast.sh [options]
#   -s MIB      the stream's size in MiB (default 256)
#   -N LIST     the receiver counts, space-separated (default "1 2 4 8")
#   -r RATE     each host's link (default 200mbit)
#   -L LOSS     also the lossy run, receiver 1 losing LOSS % (default: none; e.g. 2)
#   -F PATH     fastcat binary (default: src/fastcat of this tree)
#   -T SEC      time-out per run (default 600)
#   -h          this help
# Needs: root, bash >= 5, iproute2 (tc with tbf), nftables for -L, (N + 1) x MIB free in
# /dev/shm.
set -u
export LC_ALL=C

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
MIB=256 ROUNDS=1 COUNTS="1 2 4 8" RATE=200mbit LOSS= FASTCAT=$TOP/src/fastcat TMO=600 PORT=9000
GROUP=239.1.2.3

# shellcheck source=contrib/bench/lib.sh
. "$HERE/lib.sh"
while getopts "s:N:r:L:F:T:h" o; do
	case $o in
	s) MIB=$OPTARG ;; N) COUNTS=$OPTARG ;; r) RATE=$OPTARG ;; L) LOSS=$OPTARG ;;
	F) FASTCAT=$OPTARG ;; T) TMO=$OPTARG ;;
	h) usage; exit 0 ;; *) usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
bench_operands_sizes "$@"
bench_lab_root
bench_counts "$COUNTS"
[[ -z $LOSS || $LOSS =~ ^[0-9]+$ && $LOSS -le 50 ]] || die "-L wants a whole percentage, 0 to 50"
[[ -z $LOSS ]] || command -v nft > /dev/null || die "-L needs nft (apt-get install nftables)"
bench_fastcat --receivers

# shellcheck source=tests/chainlab.bash
. "$TOP/tests/chainlab.bash"
reason=$(chainlab_skip_reason)
[ -z "$reason" ] || die "$reason"

WORK=$(mktemp -d /dev/shm/fcmcast.XXXXXX) || die "cannot make a directory in /dev/shm"
mcast_cleanup() {
	chainlab_down
	rm -rf "$WORK"
}
trap mcast_cleanup EXIT
trap 'exit 130' INT TERM
chainlab_up "fcmc$$" "$MAXN" "$RATE" || die "the lab did not come up"
ip netns exec "${CL_NAME}sw" ip link set br0 type bridge mcast_snooping 0 || die "no bridge"
for ((i = 0; i <= MAXN; i++)); do
	chainlab_host "$i" ip route add 224.0.0.0/4 dev eth0 || die "no multicast route on host $i"
done
SRC=$WORK/stream
head -c $((MIB * 1048576)) /dev/urandom > "$SRC"

secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

# lossy_host I PCT: host I drops PCT % of the group's datagrams that reach it (0: none).
lossy_host() {
	chainlab_host "$1" nft delete table inet fclab 2> /dev/null
	[ "$2" -gt 0 ] || return 0
	chainlab_host "$1" nft -f - <<-EOF
		table inet fclab {
			chain in {
				type filter hook input priority 0;
				ip daddr $GROUP udp dport $PORT numgen random mod 100 < $2 drop
			}
		}
	EOF
}

run_group() { # N -> "seconds exact"
	local n=$1 t0 t1 i ok=0 pids=()
	for ((i = 1; i <= n; i++)); do
		chainlab_host "$i" timeout "$TMO" "$FASTCAT" -lu --reliable "$GROUP" "$PORT" \
			> "$WORK/out$i" 2> "$WORK/err$i" &
		pids+=($!)
	done
	sleep 0.5 # the joins
	t0=$EPOCHREALTIME
	chainlab_host 0 timeout "$TMO" "$FASTCAT" -u --reliable --receivers "$n" "$GROUP" "$PORT" \
		< "$SRC" > /dev/null 2> "$WORK/sender.err"
	for p in "${pids[@]}"; do wait "$p"; done
	t1=$EPOCHREALTIME
	for ((i = 1; i <= n; i++)); do cmp -s "$SRC" "$WORK/out$i" && ok=$((ok + 1)); done
	rm -f "$WORK"/out*
	echo "$(secs "$t0" "$t1") $ok/$n"
}

ratio() { [[ $1 == - || -z $2 ]] && echo - || awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

echo "# multicast.sh: $MIB MiB, each link $RATE${LOSS:+, receiver 1 losing $LOSS % in the lossy run}, $(date -u +%F)"
printf '%-3s %9s %9s %9s %9s %s\n' N group_s group/1 lossy_s lossy/group "exact(group lossy)"
ONE=
for n in $COUNTS; do
	read -ra g <<< "$(run_group "$n")"
	[ -z "$ONE" ] && [ "$n" = 1 ] && ONE=${g[0]}
	l=(- -)
	if [ -n "$LOSS" ] && [ "$n" -gt 1 ]; then
		lossy_host 1 "$LOSS"
		read -ra l <<< "$(run_group "$n")"
		lossy_host 1 0
	fi
	printf '%-3s %9s %9s %9s %9s %s %s\n' "$n" "${g[0]}" "$(ratio "${g[0]}" "$ONE")" "${l[0]}" \
		"$(ratio "${l[0]}" "${g[0]}")" "${g[1]}" "${l[1]}"
done
