#!/usr/bin/env bash
# reliable-share.sh - how --reliable shares a link: with a second --reliable flow, and with one
# TCP connection (fastcat, -P 1), each measured beside the same flow alone, in the same run
# (by hand, as root; not part of make check).
#
# The lab: tests/wanlab.bash, 1 Gbit/s, RTT 100 ms (2 x 50 ms), MTU 1500, a drop-tail queue of
# one bandwidth-delay product, no loss (or -L), cubic. Every flow sends /dev/zero from host A to its own
# receiver on host B for -t seconds; each receiver prints what it has every second
# (--interval 1), and a flow's rate is what it received from second -w to the end, over that
# time (so that startup is left out). The scenarios, one after another on the same lab:
#   reliable alone | reliable + reliable | tcp alone | tcp + reliable (started together)
# and the two numbers the issue asks for: the two --reliable flows' ratio (1.00: equal), and
# what TCP keeps beside --reliable, of what it gets alone.
#
# Usage: reliable-share.sh [options]
#   -t SECS     seconds a flow sends (default 30)      -w SECS  seconds left out at the start (default 10)
#   -d MS       one-way delay (default 50)             -r RATE  link rate (default 1gbit)
#   -L P        random loss each way, a probability (default 0; 0.01 = 1 %)
#   -F PATH     fastcat binary (default: src/fastcat of this tree)
#   -h          this help
# Needs: root, bash >= 5, iproute2, the lab's delay line (make tests/lab/delayline).
set -u
export LC_ALL=C

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
SECS=30 SKIP=10 DELAY=50 RATE=1gbit LOSS=0 FASTCAT=$TOP/src/fastcat

# shellcheck source=contrib/bench/lib.sh
. "$HERE/lib.sh"
while getopts "t:w:d:r:L:F:h" o; do
	case $o in
	t) SECS=$OPTARG ;; w) SKIP=$OPTARG ;; d) DELAY=$OPTARG ;; r) RATE=$OPTARG ;; L) LOSS=$OPTARG ;; F) FASTCAT=$OPTARG ;;
	h) usage; exit 0 ;; *) usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || die "unexpected argument '$1' (-h for help)"
[[ $SECS =~ ^[1-9][0-9]*$ && $SKIP =~ ^[0-9]+$ ]] && [ "$SKIP" -lt "$SECS" ] ||
	die "-t and -w want whole seconds, -w below -t"
[[ $LOSS =~ ^(0|0?\.[0-9]+|1)$ ]] || die "-L wants a probability (0 to 1), e.g. 0.01"
[ "$(id -u)" = 0 ] || die "needs root (network namespaces)"
bench_fastcat
export FASTCAT
# shellcheck source=tests/wanlab.bash
. "$TOP/tests/wanlab.bash"
reason=$(wanlab_skip_reason)
[ -z "$reason" ] || die "$reason"

PIDS=()
bench_workdir
trap 'cleanup; wanlab_down' EXIT
wanlab_up "fwshare$$" --rate "$RATE" --delay-ms "$DELAY" --loss "$LOSS" --mtu 1500 || die "the lab did not come up"

# bytes FILE SECOND -> the bytes received by that second, from the receiver's --interval lines
bytes() {
	awk -v s="$2" '$2 + 0 >= s && / s: / {
		for (i = 1; i < NF; i++) if ($i == "received") { v = $(i + 1); u = $(i + 2); break }
		sub(/\(.*/, "", u); m = 1
		if (u ~ /^KiB/) m = 1024; else if (u ~ /^MiB/) m = 1048576; else if (u ~ /^GiB/) m = 1073741824
		printf "%.0f\n", v * m; exit }' "$1"
}

# stop_receivers PID...: each and its children, by PID (not lib.sh's kill_started, whose bare
# wait would wait for the lab's delay line too)
stop_receivers() {
	local p all=()
	for p in "$@"; do
		all+=("$p")
		mapfile -t -O "${#all[@]}" all < <(descendants "$p")
	done
	kill -TERM "${all[@]}" 2> /dev/null
	wait "$@" 2> /dev/null
}

# scenario NAME KIND... (reliable|tcp): the flows at once; their Mbit/s in RATES
scenario() {
	local name=$1 kind i port err
	shift
	local -a recv=() send=() errs=()
	RATES=()
	i=0
	for kind in "$@"; do
		i=$((i + 1))
		port=$((47000 + i))
		err=$WORK/$name.$i.err
		errs+=("$err")
		case $kind in
		reliable) wanlab_b "$FASTCAT" -v --interval 1 -lu --reliable "$WL_B_IP" "$port" < /dev/null > /dev/null 2> "$err" & ;;
		tcp) wanlab_b "$FASTCAT" -v --interval 1 -l "$WL_B_IP" "$port" < /dev/null > /dev/null 2> "$err" & ;;
		esac
		recv+=($!)
		PIDS+=($!)
	done
	sleep 0.5
	i=0
	for kind in "$@"; do
		i=$((i + 1))
		port=$((47000 + i))
		case $kind in
		reliable) wanlab_a timeout "$SECS" "$FASTCAT" -u --reliable "$WL_B_IP" "$port" < /dev/zero > /dev/null 2> /dev/null & ;;
		tcp) wanlab_a timeout "$SECS" "$FASTCAT" "$WL_B_IP" "$port" < /dev/zero > /dev/null 2> /dev/null & ;;
		esac
		send+=($!)
		PIDS+=($!)
	done
	wait "${send[@]}" 2> /dev/null
	sleep 1.5 # the last interval lines
	stop_receivers "${recv[@]}" # a --reliable one would wait 10 s for its silent sender
	PIDS=()
	for err in "${errs[@]}"; do
		local a b
		a=$(bytes "$err" "$SKIP") b=$(bytes "$err" $((SECS - 1)))
		if [ -z "$a" ] || [ -z "$b" ]; then
			RATES+=(-)
			echo "WARN $name: no interval lines in $err: $(head -c 300 "$err")" >&2
		else
			RATES+=("$(awk -v a="$a" -v b="$b" -v t=$((SECS - 1 - SKIP)) 'BEGIN { printf "%.0f", (b - a) * 8 / t / 1e6 }')")
		fi
	done
	echo "$name: ${RATES[*]} Mbit/s" >&2
	sleep 2 # the queue drains before the next
}

scenario reliable-alone reliable
rel_alone=${RATES[0]}
scenario reliable-pair reliable reliable
pair_a=${RATES[0]} pair_b=${RATES[1]}
scenario tcp-alone tcp
tcp_alone=${RATES[0]}
scenario tcp-beside tcp reliable
tcp_beside=${RATES[0]} rel_beside=${RATES[1]}

echo "# reliable-share.sh: lab $RATE, RTT $((2 * DELAY)) ms, MTU 1500, one-BDP queue, loss $LOSS each way; each flow $SECS s, rates from second $SKIP on; $("$FASTCAT" -V 2> /dev/null | head -n 1) (git $(git -C "$HERE" describe --always --dirty 2> /dev/null || echo '?')); $(date '+%F %T')"
echo
echo "| flows | Mbit/s | share |"
echo "|---|---:|---:|"
awk -v ra="$rel_alone" -v pa="$pair_a" -v pb="$pair_b" -v ta="$tcp_alone" -v tb="$tcp_beside" -v rb="$rel_beside" '
	function r(a, b) { return (a == "-" || b == "-" || b == 0) ? "-" : sprintf("%.2f", a / b) }
	BEGIN {
		printf "| --reliable alone | %s | |\n", ra
		printf "| two --reliable at once | %s + %s | the smaller over the larger: %s |\n", pa, pb, (pa + 0 < pb + 0 ? r(pa, pb) : r(pb, pa))
		printf "| TCP (fastcat -P 1) alone | %s | |\n", ta
		printf "| TCP beside --reliable | %s + %s | TCP keeps %s of its rate alone |\n", tb, rb, r(tb, ta)
	}'
