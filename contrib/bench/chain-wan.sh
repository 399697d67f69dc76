#!/usr/bin/env bash
# chain-wan.sh - --chain with -P per hop over a long link: a chain of 2 whose first hop crosses
# the WAN lab (host A to host B, RATE, the one-way delays given) and whose second is local on
# host B, for -P 1, -P N and -P auto, beside one plain transfer over the same link
# (fastcat -P auto to one receiver, and nc.openbsd) in the same run (by hand, as root; not part
# of make check).
#
# The lab: tests/wanlab.bash (the delay line; no netem on this kernel). The stream: -s MiB of
# random bytes in /dev/shm; each receiver's file in /dev/shm too, compared with the stream
# (cmp). Seconds: wall time from the sender's start until every receiver exited; speed: the
# same round's nc.openbsd seconds over these (2.00x: twice as fast). Delays are one way.
#
# Usage: chain-wan.sh [options]
#   -s MIB      the stream's size in MiB (default 256)
#   -d LIST     one-way delays in ms, space-separated (default "0 5 25 50")
#   -P LIST     the chain's -P values (default "1 8 auto")
#   -r RATE     the link's rate (default 1gbit)
#   -n ROUNDS   rounds, the runs alternating within each (default 1)
#   -F PATH     fastcat binary (default: src/fastcat of this tree)
#   -h          this help
# Needs: root, bash >= 5, iproute2, nc.openbsd, 3 x MIB free in /dev/shm.
set -u
export LC_ALL=C

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
MIB=256 DELAYS="0 5 25 50" PS="1 8 auto" RATE=1gbit ROUNDS=1 CHECK=0
FASTCAT=$TOP/src/fastcat

# shellcheck source=contrib/bench/lib.sh
. "$HERE/lib.sh"
while getopts "s:d:P:r:n:F:h" o; do
	case $o in
	s) MIB=$OPTARG ;; d) DELAYS=$OPTARG ;; P) PS=$OPTARG ;; r) RATE=$OPTARG ;;
	n) ROUNDS=$OPTARG ;; F) FASTCAT=$OPTARG ;;
	h) usage; exit 0 ;; *) usage >&2; exit 2 ;;
	esac
done
bench_lab_root
bench_fastcat
command -v nc.openbsd >/dev/null || die "needs nc.openbsd"
BYTES=$((MIB * 1048576))
export FASTCAT
# shellcheck source=tests/wanlab.bash
. "$TOP/tests/wanlab.bash"
bench_workdir
bench_source
trap 'wanlab_down; cleanup' EXIT

# run NAME CMD...: CMD on host A after the receivers, the seconds until all exited; every file
# compared with the stream. RECEIVERS: "file command..." lines, each run on host B.
run() {
	local name=$1 start end pids=() ok=exact line out
	shift
	while IFS= read -r line; do
		out=${line%% *}
		rm -f "$out"
		wanlab_b bash -c "exec ${line#* } < /dev/null > $out 2>/dev/null" &
		pids+=($!)
	done <<<"$RECEIVERS"
	sleep 0.5
	start=$(usec)
	wanlab_a timeout 600 "$@" <"$SRCFILE" >/dev/null 2>"$WORK/$name.err"
	wait "${pids[@]}"
	end=$(usec)
	while IFS= read -r line; do
		cmp -s "$SRCFILE" "${line%% *}" || ok=DIFFERS
	done <<<"$RECEIVERS"
	SECS=$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.2f", (e - s) / 1e6 }')
	[ "$name" = nc.openbsd ] && NC_SECS=$SECS
	printf '%-6s %-24s %8s s %8.0f Mbit/s %6.2fx nc  %s\n' "$DELAY" "$name" "$SECS" \
		"$(awk -v b="$BYTES" -v s="$SECS" 'BEGIN { print b * 8 / s / 1e6 }')" \
		"$(awk -v n="$NC_SECS" -v s="$SECS" 'BEGIN { print n / s }')" "$ok"
}

B=$WL_B_IP
printf '%-6s %-24s %10s %15s %9s  %s\n' "delay" "run" "seconds" "rate" "speed" "files"
for DELAY in $DELAYS; do
	wanlab_up fcchw --rate "$RATE" --delay-ms "$DELAY" >/dev/null || die "the lab did not come up"
	for ((r = 1; r <= ROUNDS; r++)); do
		RECEIVERS="$WORK/nc.out nc.openbsd -l $B 9001"
		run "nc.openbsd" nc.openbsd -N "$B" 9001
		RECEIVERS="$WORK/p.out $FASTCAT -l -P auto $B 9001"
		run "fastcat -P auto (1 rcv)" "$FASTCAT" -P auto "$B" 9001
		for p in $PS; do
			RECEIVERS="$WORK/c1.out $FASTCAT -l --chain $B 9001
$WORK/c2.out $FASTCAT -l --chain 127.0.0.1 9002"
			run "chain of 2, -P $p" "$FASTCAT" --chain -P "$p" "$B:9001,127.0.0.1:9002" 9
		done
	done
	wanlab_down
done
