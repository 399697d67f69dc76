#!/usr/bin/env bash
# ab.sh - is fastcat B slower than fastcat A? Alternating pairs of runs, by hand (not in make check).
#
#   contrib/bench/ab.sh -A /tmp/before/src/fastcat [-B src/fastcat] [-n PAIRS] [-s MIB] [-x tcp,unix]
#   contrib/bench/ab.sh -A src/fastcat -a '-P 1' -S --sparse -x tcp   (an option's cost: B = A + it)
#
# Each pair runs A and B once each on the same transport and source file, in the order AB, then
# BA in the next pair, so that drift on this shared machine hits both alike. One run: a receiver
# (fastcat -l ... >/dev/null, pinned to CPU 0) and a sender (fastcat ... <FILE, CPU 1), SIZE MiB
# of random data from /dev/shm; wall = from the sender's start to the receiver's exit, and the
# receiver's --report=json must count every byte. Printed per transport: A's and B's median MB/s,
# the median of the per-pair ratios B/A and their range. Extra fastcat arguments (-a) go to both
# ends of both binaries; -S's to B's sender only.
#
# Options:
#   -A PATH     the baseline binary (required)       -B PATH   the candidate (default src/fastcat)
#   -n PAIRS    measured pairs per transport (default 8), after one warm-up pair
#   -s MIB      bytes per run (default 2048)         -x LIST   transports: tcp,unix (default both)
#   -a 'ARGS'   extra fastcat arguments, both ends   -P R,S    receiver,sender CPUs (default 0,1)
#   -S 'ARGS'   extra arguments for B's sender only (-B defaults to -A's binary then)
set -u -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=contrib/bench/lib.sh
. "$here/lib.sh"

A= B= PAIRS=8 MIB=2048 TRANSPORTS=tcp,unix EXTRA= SEXTRA= PIN=0,1 CHECK=0
while getopts 'A:B:n:s:x:a:S:P:h' o; do
	case $o in
	A) A=$OPTARG ;; B) B=$OPTARG ;; n) PAIRS=$OPTARG ;; s) MIB=$OPTARG ;;
	x) TRANSPORTS=$OPTARG ;; a) EXTRA=$OPTARG ;; S) SEXTRA=$OPTARG ;; P) PIN=$OPTARG ;;
	h) usage; exit 0 ;; *) usage >&2; exit 2 ;;
	esac
done
[ -n "$A" ] || die "-A PATH is required (the baseline fastcat)"
if [ -z "$B" ] && [ -n "$SEXTRA" ]; then B=$A; fi
B=${B:-$here/../../src/fastcat}
for bin in "$A" "$B"; do [ -x "$bin" ] || die "$bin is not an executable"; done
[[ $PAIRS =~ ^[1-9][0-9]*$ && $MIB =~ ^[1-9][0-9]*$ ]] || die "-n and -s take positive integers"
BYTES=$((MIB * 1024 * 1024))
bench_pin "$PIN"
bench_workdir
bench_source
read -r -a extra <<<"$EXTRA"
read -r -a sextra <<<"$SEXTRA"

# run_one BIN TRANSPORT [SENDER ARGS...] -> MB/s on stdout, or nothing when the run failed
run_one() {
	local bin=$1 t=$2 port addr=() u=() t0 t1 got
	shift 2
	rm -f "$WORK/r.err"
	if [ "$t" = unix ]; then
		addr=("$WORK/sock") u=(-U)
		rm -f "$WORK/sock"
		"${PINR[@]}" timeout 120 "$bin" -v --report=json "${extra[@]}" -l -U "$WORK/sock" </dev/null >/dev/null 2>"$WORK/r.err" &
	else
		port=$(free_port) || return 1
		addr=(127.0.0.1 "$port")
		"${PINR[@]}" timeout 120 "$bin" -v --report=json "${extra[@]}" -l 127.0.0.1 "$port" </dev/null >/dev/null 2>"$WORK/r.err" &
	fi
	PIDS+=($!)
	local rpid=$!
	for _ in $(seq 200); do grep -q 'listening on' "$WORK/r.err" 2>/dev/null && break; sleep 0.01; done
	t0=$(usec)
	if ! "${PINS[@]}" timeout 120 "$bin" "${extra[@]}" "$@" "${u[@]}" "${addr[@]}" <"$SRCFILE" >/dev/null 2>"$WORK/s.err"; then
		echo "ab.sh: $bin over $t: the sender failed: $(head -n 1 "$WORK/s.err")" >&2
		kill_started
		return 1
	fi
	wait "$rpid"
	t1=$(usec)
	PIDS=()
	got=$(json_num "$WORK/r.err" received bytes)
	[ "$got" = "$BYTES" ] || { echo "ab.sh: $bin over $t delivered ${got:-?} of $BYTES bytes" >&2; return 1; }
	awk -v b="$BYTES" -v us=$((t1 - t0)) 'BEGIN { printf "%.1f\n", b / us }'
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

echo "ab.sh: A=$A B=$B${SEXTRA:+ (sender + $SEXTRA)}, $PAIRS pairs (+1 warm-up) of $MIB MiB, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %10s %10s %12s %17s\n' transport "A MB/s" "B MB/s" "B/A median" "B/A min-max"
fail=0
for t in ${TRANSPORTS//,/ }; do
	: >"$WORK/a" && : >"$WORK/b" && : >"$WORK/r"
	for pair in $(seq 0 "$PAIRS"); do
		if ((pair % 2)); then order="B A"; else order="A B"; fi
		ma= mb=
		for w in $order; do
			bin=$A && [ "$w" = B ] && bin=$B
			args=() && [ "$w" = B ] && args=("${sextra[@]}")
			v=$(run_one "$bin" "$t" "${args[@]}") || { fail=1; continue 2; }
			if [ "$w" = A ]; then ma=$v; else mb=$v; fi
		done
		((pair == 0)) && continue # warm-up
		echo "$ma" >>"$WORK/a" && echo "$mb" >>"$WORK/b"
		awk -v a="$ma" -v b="$mb" 'BEGIN { printf "%.4f\n", b / a }' >>"$WORK/r"
	done
	printf '%-6s %10s %10s %12s %17s\n' "$t" "$(median <"$WORK/a")" "$(median <"$WORK/b")" \
		"$(median <"$WORK/r")" "$(sort -g "$WORK/r" | sed -n '1p;$p' | paste -sd- -)"
done
exit $fail
