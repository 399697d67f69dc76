#!/usr/bin/env bash
# chain.sh - one stream to N machines over the chain lab: fastcat --chain against a star (the
# sender tees the stream into N fastcats at once) and N transfers in a row (by hand, as root;
# not part of make check).
#
# The lab: tests/chainlab.bash, host 0 and hosts 1..N on one switch, each host's link shaped
# to RATE both ways (tbf). The stream: -s MiB of random bytes in /dev/shm, each receiver's
# file in /dev/shm too. For each N:
#   chain   fastcat -l --chain > FILE on hosts 1..N   /  fastcat --chain h1,...,hN
#   star    fastcat -l > FILE on hosts 1..N           /  tee into N fastcats on host 0
#   row     fastcat -l > FILE on host i               /  fastcat hi, for i = 1..N in turn
# Seconds are wall time from the sender's start until every receiver exited. Every file is
# compared with the stream (cmp). RSS: the largest peak RSS of a chain's receivers (GNU time).
# With -K, the chain again with receiver N/2 + 1 killed once the last receiver has half the
# stream: the seconds until every other receiver exited, and whether each ended byte-exact.
#
# Usage: chain.sh [options]
#   -s MIB      the stream's size in MiB (default 256)
#   -N LIST     the receiver counts, space-separated (default "1 2 4 8")
#   -t LIST     runs, comma-separated (default chain,star,row)
#   -r RATE     each host's link (default 200mbit)
#   -K          also the chain with a receiver killed at 50 %
#   -F PATH     fastcat binary (default: src/fastcat of this tree)
#   -T SEC      time-out per run (default 600)
#   -h          this help
# Needs: root, bash >= 5, iproute2 (tc with tbf), GNU time for the RSS, 2 x (N + 1) x MIB free
# in /dev/shm at most.
set -u
export LC_ALL=C

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
MIB=256 ROUNDS=1 COUNTS="1 2 4 8" RUNS=chain,star,row RATE=200mbit KILL=0
FASTCAT=$TOP/src/fastcat TMO=600 PORT=9000

# shellcheck source=contrib/bench/lib.sh
. "$HERE/lib.sh"
while getopts "s:N:t:r:KF:T:h" o; do
	case $o in
	s) MIB=$OPTARG ;; N) COUNTS=$OPTARG ;; t) RUNS=$OPTARG ;; r) RATE=$OPTARG ;;
	K) KILL=1 ;; F) FASTCAT=$OPTARG ;; T) TMO=$OPTARG ;;
	h) usage; exit 0 ;; *) usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
bench_operands_sizes "$@"
bench_lab_root
bench_counts "$COUNTS"
bench_fastcat --chain
[ -x /usr/bin/time ] || die "needs GNU time for the RSS (apt-get install time)"

# shellcheck source=tests/chainlab.bash
. "$TOP/tests/chainlab.bash"
reason=$(chainlab_skip_reason)
[ -z "$reason" ] || die "$reason"

WORK=$(mktemp -d /dev/shm/fcchain.XXXXXX) || die "cannot make a directory in /dev/shm"
chain_cleanup() {
	chainlab_down
	rm -rf "$WORK"
}
trap chain_cleanup EXIT
trap 'exit 130' INT TERM
chainlab_up "fcch$$" "$MAXN" "$RATE" || die "the lab did not come up"
SRC=$WORK/stream
head -c $((MIB * 1048576)) /dev/urandom > "$SRC"

now() { echo "$EPOCHREALTIME"; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

# receivers N ARGS...: fastcat -v -l ARGS 0.0.0.0 PORT on hosts 1..N (under GNU time), each
# into $WORK/out$i; waits until each listens. RPIDS: their PIDs. FROM (default 1): the first.
receivers() {
	local n=$1 i
	shift
	RPIDS=()
	for ((i = ${FROM:-1}; i <= n; i++)); do
		rm -f "$WORK/out$i"
		chainlab_host "$i" /usr/bin/time -f %M -o "$WORK/rss$i" \
			timeout "$TMO" "$FASTCAT" -v -l "$@" 0.0.0.0 "$PORT" > "$WORK/out$i" 2> "$WORK/err$i" &
		RPIDS+=($!)
	done
	for ((i = ${FROM:-1}; i <= n; i++)); do
		for _ in $(seq 100); do grep -q "listening on" "$WORK/err$i" 2> /dev/null && break; sleep 0.05; done
	done
}

# waited PIDS...: wait for each; how many exited non-zero.
waited() {
	local bad=0 p
	for p in "$@"; do wait "$p" || bad=$((bad + 1)); done
	echo "$bad"
}

# exact N [SKIP]: how many of out1..outN (but SKIP) are the stream.
exact() {
	local n=$1 skip=${2:-0} i ok=0
	for ((i = 1; i <= n; i++)); do
		[ "$i" = "$skip" ] && continue
		cmp -s "$SRC" "$WORK/out$i" && ok=$((ok + 1))
	done
	echo "$ok"
}

# fastcat_under PID: the fastcat process PID runs (under GNU time and timeout).
fastcat_under() {
	local c
	for c in $(pgrep -P "$1"); do
		if [ "$(cat "/proc/$c/comm" 2> /dev/null)" = fastcat ]; then
			echo "$c"
			return 0
		fi
		fastcat_under "$c" && return 0
	done
	return 1
}

list_of() {
	local n=$1 i l=
	for ((i = 1; i <= n; i++)); do l+="${l:+,}$(chainlab_ip "$i")"; done
	echo "$l"
}

run_chain() { # N [KILL] -> "seconds exact rss"
	local n=$1 victim=${2:-0} t0 t1 bad rss=0 i r
	receivers "$n" --chain
	t0=$(now)
	chainlab_host 0 timeout "$TMO" "$FASTCAT" --chain "$(list_of "$n")" "$PORT" < "$SRC" \
		> /dev/null 2> "$WORK/sender.err" &
	local spid=$!
	if [ "$victim" -gt 0 ]; then
		while [ "$(stat -c %s "$WORK/out$n" 2> /dev/null || echo 0)" -lt $((MIB * 524288)) ]; do
			sleep 0.05
		done
		kill -KILL "$(fastcat_under "${RPIDS[$((victim - 1))]}")"
	fi
	wait "$spid"
	bad=$(waited "${RPIDS[@]}")
	t1=$(now)
	for ((i = 1; i <= n; i++)); do
		r=$(tail -n 1 "$WORK/rss$i" 2> /dev/null)
		[[ $r =~ ^[0-9]+$ ]] && [ "$r" -gt "$rss" ] && rss=$r
	done
	echo "$(secs "$t0" "$t1") $(exact "$n" "$victim")/$((n - (victim > 0))) $((rss / 1024))"
}

run_star() { # N -> "seconds exact"
	local n=$1 t0 t1 i script
	receivers "$n"
	script='n=$1 f=$2 p=$3; shift 3; fifos=()
		for ((i = 1; i <= n; i++)); do mkfifo "$W/fifo$i"; fifos+=("$W/fifo$i")
			"$f" "$1" "$p" < "$W/fifo$i" & shift; done
		tee "${fifos[@]}" > /dev/null; wait'
	t0=$(now)
	# shellcheck disable=SC2046
	chainlab_host 0 env W="$WORK" bash -c "$script" star "$n" "$FASTCAT" "$PORT" \
		$(list_of "$n" | tr , ' ') < "$SRC" 2> "$WORK/sender.err"
	waited "${RPIDS[@]}" > /dev/null
	t1=$(now)
	rm -f "$WORK"/fifo*
	echo "$(secs "$t0" "$t1") $(exact "$n")/$n"
}

run_row() { # N -> "seconds exact"
	local n=$1 t0 t1 i ok=0
	t0=$(now)
	for ((i = 1; i <= n; i++)); do
		FROM=$i receivers "$i"
		chainlab_host 0 timeout "$TMO" "$FASTCAT" "$(chainlab_ip "$i")" "$PORT" < "$SRC" \
			> /dev/null 2> "$WORK/sender.err"
		waited "${RPIDS[@]}" > /dev/null
		cmp -s "$SRC" "$WORK/out$i" && ok=$((ok + 1))
		rm -f "$WORK/out$i"
	done
	t1=$(now)
	echo "$(secs "$t0" "$t1") $ok/$n"
}
# (each run's files go once counted: /dev/shm holds at most N + 1 streams at once)

echo "# chain.sh: $MIB MiB, each link $RATE, $(date -u +%F)"
printf '%-3s %9s %9s %9s %10s %9s %9s %s\n' N chain_s star_s row_s chain/ch1 star/chain row/chain "exact(chain star row) rss_MiB"
ONE=
for n in $COUNTS; do
	c=(- - -) s=(- -) r=(- -)
	[[ ,$RUNS, == *,chain,* ]] && read -ra c <<< "$(run_chain "$n")"
	[[ ,$RUNS, == *,star,* ]] && read -ra s <<< "$(run_star "$n")"
	[[ ,$RUNS, == *,row,* ]] && read -ra r <<< "$(run_row "$n")"
	[ -z "$ONE" ] && [ "$n" = 1 ] && ONE=${c[0]}
	ratio() { [[ $1 == - || $2 == - || -z $2 ]] && echo - || awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
	printf '%-3s %9s %9s %9s %10s %9s %9s %s %s %s %s\n' "$n" "${c[0]}" "${s[0]}" "${r[0]}" \
		"$(ratio "${c[0]}" "$ONE")" "$(ratio "${s[0]}" "${c[0]}")" "$(ratio "${r[0]}" "${c[0]}")" \
		"${c[1]}" "${s[1]}" "${r[1]}" "${c[2]}"
done
if [ "$KILL" = 1 ]; then
	n=$MAXN victim=$((MAXN / 2 + 1))
	[ "$n" -ge 2 ] || die "-K needs a count of 2 or more"
	read -ra k <<< "$(run_chain "$n" "$victim")"
	echo "# chain of $n, receiver $victim killed at 50 %: ${k[0]} s (whole chain: see above), the others exact: ${k[1]}"
	sed 's/^/#   sender: /' "$WORK/sender.err" | grep -- '--chain' || true
fi
