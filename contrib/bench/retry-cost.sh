#!/usr/bin/env bash
# retry-cost.sh - what --retry's confirmations cost on loopback TCP: alternating pairs of a plain
# transfer and a --retry one, by hand (not in make check).
#
#   contrib/bench/retry-cost.sh [-F PATH] [-n PAIRS] [-s MIB] [-r N] [-a 'ARGS']
#
# Plain: `fastcat -l > FILE` and `fastcat < SOURCE`. Retry: `fastcat -l -k --resume >> FILE` and
# `fastcat --retry N < SOURCE` (the receiver confirms its written offset per MiB or 50 ms, the
# sender keeps what is not yet confirmed). FILE and SOURCE (random) are in /dev/shm; the
# receiver on CPU 0, the sender on CPU 1. A pair runs plain then retry, the next pair retry then
# plain, so that drift on this shared machine hits both alike; one warm-up pair first. Wall =
# from the sender's start to the file holding every byte (the -k receiver is then stopped).
# Printed: each side's median MB/s, the median of the per-pair ratios retry/plain and their range.
#
# Options:
#   -F PATH     fastcat (default src/fastcat of this tree)   -n PAIRS  measured pairs (default 8)
#   -s MIB      bytes per run (default 1024)                  -r N      --retry N (default 3)
#   -P R,S      receiver,sender CPUs (default 0,1; none = no pinning)
#   -a 'ARGS'   extra fastcat arguments, both ends of both kinds (e.g. -a --copy=rw: the same
#               copy method, since a plain receiver splices into the file)
set -u -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=contrib/bench/lib.sh
. "$here/lib.sh"

F=$here/../../src/fastcat PAIRS=8 MIB=1024 RETRIES=3 PIN=0,1 CHECK=0 EXTRA=
while getopts 'F:n:s:r:P:a:h' o; do
	case $o in
	F) F=$OPTARG ;; n) PAIRS=$OPTARG ;; s) MIB=$OPTARG ;; r) RETRIES=$OPTARG ;; P) PIN=$OPTARG ;;
	a) EXTRA=$OPTARG ;;
	h) usage; exit 0 ;; *) usage >&2; exit 2 ;;
	esac
done
[ -x "$F" ] || die "$F is not an executable"
[[ $PAIRS =~ ^[1-9][0-9]*$ && $MIB =~ ^[1-9][0-9]*$ && $RETRIES =~ ^[0-9]+$ ]] ||
	die "-n, -s and -r take integers"
BYTES=$((MIB * 1024 * 1024))
bench_pin "$PIN"
bench_workdir
bench_source
read -r -a extra <<<"$EXTRA"

# run_one plain|retry -> MB/s on stdout, or nothing when the run failed
run_one() {
	local kind=$1 port t0 t1 rpid recv=(-l) send=() size
	port=$(free_port) || return 1
	: >"$WORK/out"
	rm -f "$WORK/r.err"
	[ "$kind" = retry ] && recv=(-l -k --resume) send=(--retry "$RETRIES")
	"${PINR[@]}" timeout 120 "$F" -v "${extra[@]}" "${recv[@]}" 127.0.0.1 "$port" </dev/null >>"$WORK/out" 2>"$WORK/r.err" &
	rpid=$!
	PIDS+=("$rpid")
	for _ in $(seq 200); do grep -q 'listening on' "$WORK/r.err" 2>/dev/null && break; sleep 0.01; done
	t0=$(usec)
	if ! "${PINS[@]}" timeout 120 "$F" "${extra[@]}" "${send[@]}" 127.0.0.1 "$port" <"$SRCFILE" >/dev/null 2>"$WORK/s.err"; then
		echo "retry-cost.sh: $kind: the sender failed: $(head -n 1 "$WORK/s.err")" >&2
		kill_started
		return 1
	fi
	# a --retry sender exits once the receiver confirmed its end: every byte is in the file
	if [ "$kind" = plain ]; then wait "$rpid"; fi
	t1=$(usec)
	kill_started
	PIDS=()
	size=$(stat -c %s "$WORK/out")
	[ "$size" = "$BYTES" ] || { echo "retry-cost.sh: $kind wrote $size of $BYTES bytes" >&2; return 1; }
	awk -v b="$BYTES" -v us=$((t1 - t0)) 'BEGIN { printf "%.1f\n", b / us }'
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

echo "retry-cost.sh: $F ${EXTRA:+($EXTRA) }--retry $RETRIES, $PAIRS pairs (+1 warm-up) of $MIB MiB, load $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$WORK/p" && : >"$WORK/q" && : >"$WORK/r"
for pair in $(seq 0 "$PAIRS"); do
	if ((pair % 2)); then order="retry plain"; else order="plain retry"; fi
	for kind in $order; do
		v=$(run_one "$kind") || exit 1
		if [ "$kind" = plain ]; then mp=$v; else mq=$v; fi
	done
	((pair == 0)) && continue # warm-up
	echo "$mp" >>"$WORK/p" && echo "$mq" >>"$WORK/q"
	awk -v a="$mp" -v b="$mq" 'BEGIN { printf "%.4f\n", b / a }' >>"$WORK/r"
done
printf '%10s %10s %14s %17s\n' "plain MB/s" "retry MB/s" "retry/plain" "min-max"
printf '%10s %10s %14s %17s\n' "$(median <"$WORK/p")" "$(median <"$WORK/q")" "$(median <"$WORK/r")" \
	"$(sort -g "$WORK/r" | sed -n '1p;$p' | paste -sd- -)"
