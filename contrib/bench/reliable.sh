#!/usr/bin/env bash
# reliable.sh - --reliable (paced, repaired udp) against TCP and the stock tools, by hand (as
# root; not part of make check): over the WAN lab at several loss rates (wan.sh) and over
# loopback against nc.openbsd -u (unix.sh's udp workload). One table a condition, each with
# its ratios against nc.openbsd measured in the same run; a summary of --reliable's share of
# the link at the end.
#
# The lab: 1 Gbit/s, 100 ms RTT (2 x 50 ms), MTU 1500 (the links people use; --reliable sizes
# its datagrams by the path's MTU), a drop-tail queue of one bandwidth-delay product, random
# loss each way. Mbit/s = bits / wall time from the sender's start to the receiver's exit, byte-
# exact (cksum) or the run fails. TCP over 100 ms with loss and 1448-byte segments moves a few
# Mbit/s (about 1.2 MSS / (RTT sqrt(loss)) a connection): so that a table stays in minutes,
# fastcat -P 1 and nc.openbsd move 32 MiB at 0.1 % loss and 8 MiB at 1 %, and -P 8 moves 32 MiB
# at 1 %, where --reliable always moves MIB; the table says which.
#
# Usage: reliable.sh [options]
#   -s MIB      bytes per lab run, in MiB (default 256)
#   -L LIST     loss rates each way, space-separated probabilities (default "0 0.001 0.01")
#   -n ROUNDS   rounds (default 1)
#   -l MIB      loopback bytes, in MiB (default 1024; 0: no loopback table)
#   -F PATH     fastcat binary (default: src/fastcat of this tree)
#   -o DIR      keep every table and CSV in DIR (default: contrib/bench/results)
#   -h          this help
# Needs: what wan.sh and unix.sh need (root, bash >= 5, iproute2, nc.openbsd, GNU time, the
# lab's delay line: make tests/lab/delayline).
set -u
export LC_ALL=C

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
MIB=256 LOSSES="0 0.001 0.01" ROUNDS=1 LOOP_MIB=1024 FASTCAT=$TOP/src/fastcat
OUT=$HERE/results

# shellcheck source=contrib/bench/lib.sh
. "$HERE/lib.sh"
while getopts "s:L:n:l:F:o:h" o; do
	case $o in
	s) MIB=$OPTARG ;; L) LOSSES=$OPTARG ;; n) ROUNDS=$OPTARG ;; l) LOOP_MIB=$OPTARG ;;
	F) FASTCAT=$OPTARG ;; o) OUT=$OPTARG ;;
	h) usage; exit 0 ;; *) usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || die "unexpected argument '$1' (-h for help)"
[[ $MIB =~ ^[1-9][0-9]*$ ]] || die "-s wants a size in MiB"
[[ $LOOP_MIB =~ ^[0-9]+$ ]] || die "-l wants a size in MiB (0: none)"
[ "$(id -u)" = 0 ] || die "needs root (network namespaces)"
bench_fastcat
"$FASTCAT" --help-all 2>&1 | grep -q -- '--reliable' || die "$FASTCAT has no --reliable"
mkdir -p "$OUT" || die "cannot create $OUT"
stamp=$(date +%Y%m%d-%H%M%S)

mib_for() { # TOOL LOSS -> MiB a run
	awk -v t="$1" -v l="$2" -v m="$MIB" 'BEGIN {
		s = m
		if (t == "fastcat-P8" && l >= 0.005) s = 32
		if (t == "fastcat" || t == "nc.openbsd") s = l >= 0.005 ? 8 : l >= 0.0005 ? 32 : m
		print (s < m ? s : m) }'
}
mbit() { # CSV TOOL -> the median Mbit/s of its ok runs, or -
	awk -F, -v t="$2" 'NR > 1 && $2 == t && $8 == "ok" { v[++n] = $5 }
	END { if (!n) { print "-"; exit }
		for (i = 2; i <= n; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
		print n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }' "$1"
}

summary=()
fail=0
for loss in $LOSSES; do
	declare -A got=() size=()
	for t in fastcat-rel fastcat-P8 fastcat nc.openbsd; do
		size[$t]=$(mib_for "$t" "$loss")
		csv=$OUT/reliable-lab-$loss-$t-$stamp.csv
		echo "== lab 1 Gbit/s, 100 ms, MTU 1500, loss $loss each way: $t, ${size[$t]} MiB" >&2
		bash "$HERE/wan.sh" -F "$FASTCAT" -m 1500 -L "$loss" -s "${size[$t]}" -n "$ROUNDS" -t "$t" -o "$csv" || fail=1
		got[$t]=$(mbit "$csv" "$t")
	done
	summary+=("$(awk -v l="$loss" -v r="${got[fastcat-rel]}" -v p8="${got[fastcat-P8]}" -v p1="${got[fastcat]}" \
		-v nc="${got[nc.openbsd]}" -v m="${size[fastcat-rel]}" -v s8="${size[fastcat-P8]}" -v s1="${size[fastcat]}" '
		function ratio(a, b) { return (a == "-" || b == "-" || b == 0) ? "-" : sprintf("%.1fx", a / b) }
		BEGIN { printf "| %g %% | %s (%s MiB) | %s (%s MiB) | %s (%s MiB) | %s (%s MiB) | %s | %s | %s |", l * 100, r, m, p8, s8, p1, s1, nc, s1,
			(r == "-" ? "-" : sprintf("%.0f %%", r / 10)), ratio(r, p8), ratio(r, nc) }')")
	unset got size
done

{
	echo "# reliable.sh: lab 1 Gbit/s, RTT 100 ms, MTU 1500, one-BDP drop-tail queue; $ROUNDS round(s), medians; $("$FASTCAT" -V 2> /dev/null | head -n 1) (git $(git -C "$HERE" describe --always --dirty 2> /dev/null || echo '?')); $(date '+%F %T')"
	echo "# Mbit/s = bits / wall time from the sender's start, byte-exact; the MiB a run beside each"
	echo
	echo "| loss each way | --reliable | -P 8 | -P 1 | nc.openbsd | --reliable, of the link | vs -P 8 | vs nc |"
	echo "|---:|---:|---:|---:|---:|---:|---:|---:|"
	printf '%s\n' "${summary[@]}"
} | tee "$OUT/reliable-lab-$stamp.txt"

if [ "$LOOP_MIB" -gt 0 ]; then
	echo >&2
	echo "== loopback: $LOOP_MIB MiB, --reliable against nc.openbsd -u" >&2
	bash "$HERE/unix.sh" -F "$FASTCAT" -w udp -s "$LOOP_MIB" -n "$((ROUNDS < 3 ? 3 : ROUNDS))" \
		-t fastcat-reliable,nc.openbsd -o "$OUT/reliable-loopback-$stamp.csv" || fail=1
fi
exit $fail
