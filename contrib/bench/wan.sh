#!/usr/bin/env bash
# wan.sh - fastcat against the stock tools over a long fat link, the WAN lab of tests/wanlab.bash
# (by hand, as root; not part of make check).
#
# The lab: two network namespaces, 1 Gbit/s, 100 ms RTT (2 x 50 ms), MTU 9000, a drop-tail queue
# of one bandwidth-delay product, Debian's TCP defaults and cubic inside (wanlab.bash says how).
# Every run: a receiver on host B, a sender on host A with a random file from /dev/shm on stdin.
# Stream tools' output goes into cksum, compared with the source's (byte-exact, else the run
# fails); iperf3 runs memory to memory, its byte counts noted. Mbit/s = bits / wall time, from
# the sender's start to the receiver's exit (connection setup and slow start included, the same
# for every tool). Rounds are interleaved (A B C A B C); the table shows medians.
#
# Usage: wan.sh [options]
#   -s MIB      bytes per run, in MiB (default 1024)
#   -n ROUNDS   rounds (default 1)
#   -t LIST     tools, comma-separated (default fastcat,nc.openbsd,socat-b1M,iperf3-P1,iperf3-P8);
#               every row of TOOL_TABLE below is one (fastcat-P* need a fastcat with -P;
#               fastcat-rel is -u --reliable, paced and repaired udp)
#   -L P        random loss each way, a probability (default 0; e.g. 0.001 = 0.1 %)
#   -r RATE     link rate (default 1gbit)        -d MS    one-way delay (default 50)
#   -m MTU      (default 9000)                   -q BYTES queue (default one BDP)
#   -c ALGO     congestion control inside the lab, both hosts (default cubic; e.g. bbr, reno);
#               the header shows what the lab got, and a lab that cannot get ALGO is an error
#   -a 'ARGS'   extra fastcat arguments, both ends (word-split), e.g. -a '-B 1M'
#   -F PATH     fastcat binary (default: src/fastcat of this tree)
#   -b TOOL     ratio baseline (default nc.openbsd if selected, else the first tool)
#   -T SEC      time-out per run (default 120 + the time at 10 Mbit/s)
#   -o FILE     also keep every run as a CSV row in FILE (and the table beside it, as .txt;
#               the medians as .tsv, and with python3 their plot as .png, both beside it too)
#   -p PNG      plot goodput against connections into PNG (plot-wan.py; the .tsv beside it)
#   -h          this help
# Needs: root, bash >= 5, iproute2, the lab's delay line (make tests/lab/delayline) where the
# kernel has no netem, and the tools (apt: netcat-openbsd socat iperf3). Every process started
# is killed by PID on exit, the lab taken down and the source file removed.
set -u
export LC_ALL=C

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
MIB=1024 ROUNDS=1 TOOLS=fastcat,nc.openbsd,socat-b1M,iperf3-P1,iperf3-P8 LOSS=0 RATE=1gbit DELAY=50
MTU=9000 CC=cubic QUEUE='' FC_EXTRA='' FASTCAT=$TOP/src/fastcat BASE='' TMO='' CHECK=1 CSV='' PNG=''

# The tools, as data: NAME | receiver on host B | sender on host A. @FC@ is fastcat with -a's
# arguments, @B@ host B's address, @P@ the port, @N@ the bytes. A receiver without @P@ listens
# on port 0 and prints the port (fastcat -v); iperf3 rows (iperf3 -s) run memory to memory.
TOOL_TABLE=(
	'fastcat      | @FC@ -v -l @B@ 0                   | @FC@ @B@ @P@'
	'fastcat-P2   | @FC@ -v -l -P 2 @B@ 0              | @FC@ -P 2 @B@ @P@'
	'fastcat-P4   | @FC@ -v -l -P 4 @B@ 0              | @FC@ -P 4 @B@ @P@'
	'fastcat-P8   | @FC@ -v -l -P 8 @B@ 0              | @FC@ -P 8 @B@ @P@'
	'fastcat-P16  | @FC@ -v -l -P 16 @B@ 0             | @FC@ -P 16 @B@ @P@'
	'fastcat-Pauto| @FC@ -v -l -P auto @B@ 0           | @FC@ -P auto @B@ @P@'
	'fastcat-rel  | @FC@ -v -lu --reliable @B@ 0       | @FC@ -u --reliable @B@ @P@'
	'nc.openbsd   | nc.openbsd -l @B@ @P@              | nc.openbsd -N @B@ @P@'
	'socat        | socat -u TCP-LISTEN:@P@,reuseaddr,bind=@B@ STDOUT | socat -u STDIN TCP:@B@:@P@'
	'socat-b1M    | socat -b 1048576 -u TCP-LISTEN:@P@,reuseaddr,bind=@B@ STDOUT | socat -b 1048576 -u STDIN TCP:@B@:@P@'
	'iperf3-P1    | iperf3 -s -1 -B @B@ -p @P@         | iperf3 -c @B@ -p @P@ -P 1 -n @N@ -J'
	'iperf3-P8    | iperf3 -s -1 -B @B@ -p @P@         | iperf3 -c @B@ -p @P@ -P 8 -n @N@ -J'
)

# shellcheck source=contrib/bench/lib.sh
. "$HERE/lib.sh"
while getopts "s:n:t:L:r:d:m:c:q:a:F:b:T:o:p:h" o; do
	case $o in
	s) MIB=$OPTARG ;; n) ROUNDS=$OPTARG ;; t) TOOLS=$OPTARG ;; L) LOSS=$OPTARG ;;
	r) RATE=$OPTARG ;; d) DELAY=$OPTARG ;; m) MTU=$OPTARG ;; c) CC=$OPTARG ;; q) QUEUE=$OPTARG ;;
	a) FC_EXTRA=$OPTARG ;; F) FASTCAT=$OPTARG ;; b) BASE=$OPTARG ;; T) TMO=$OPTARG ;; o) CSV=$OPTARG ;;
	p) PNG=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || die "unexpected argument '$1' (-h for help)"
[[ $MIB =~ ^[1-9][0-9]*$ ]] || die "-s wants a size in MiB"
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "-n wants a positive number"
[[ $LOSS =~ ^(0|0?\.[0-9]+|1)$ ]] || die "-L wants a probability (0 to 1), e.g. 0.001"
[[ $MTU =~ ^[0-9]+$ ]] || die "-m wants a number"
[[ $CC =~ ^[a-z][a-z0-9_]*$ ]] || die "-c wants a congestion control name, e.g. cubic or bbr"
[ "${BASH_VERSINFO[0]}" -ge 5 ] || die "needs bash >= 5 (EPOCHREALTIME)"
[ "$(id -u)" = 0 ] || die "needs root (network namespaces)"
BYTES=$((MIB * 1048576))
TMO=${TMO:-$((120 + BYTES * 8 / 10000000))}
read -r -a FC_ARGS <<< "$FC_EXTRA"
case $FASTCAT in /*) ;; *) FASTCAT=$PWD/$FASTCAT ;; esac
export FASTCAT

# shellcheck source=tests/wanlab.bash
. "$TOP/tests/wanlab.bash"
reason=$(wanlab_skip_reason)
[ -z "$reason" ] || die "$reason"

# ---- the table's rows: tool_row NAME -> ROW_RECV=() ROW_SEND=() ROW_MEM (0|1); 1 if unknown
tool_row() {
	local row name
	for row in "${TOOL_TABLE[@]}"; do
		name=${row%%|*}
		name=${name// /}
		[ "$name" = "$1" ] || continue
		row=${row#*|}
		read -r -a ROW_RECV <<< "${row%%|*}"
		read -r -a ROW_SEND <<< "${row#*|}"
		ROW_MEM=0
		[ "${ROW_RECV[0]}" = iperf3 ] && ROW_MEM=1
		return 0
	done
	return 1
}
# expand PORT WORD... -> CMD=(...): the placeholders filled in (@FC@ becomes several words)
expand() {
	local port=$1 w
	shift
	CMD=()
	for w in "$@"; do
		case $w in
		@FC@) CMD+=("$FASTCAT" "${FC_ARGS[@]}") ;;
		*) w=${w//@B@/$WL_B_IP} w=${w//@P@/$port} w=${w//@N@/$BYTES}; CMD+=("$w") ;;
		esac
	done
}

IFS=, read -r -a WANT <<< "$TOOLS"
SEL=()
for t in "${WANT[@]}"; do
	[ -n "$t" ] || continue
	tool_row "$t" || die "unknown tool '$t' (known: $(for r in "${TOOL_TABLE[@]}"; do r=${r%%|*}; printf '%s ' "${r// /}"; done))"
	need=${ROW_RECV[0]}
	if [ "$need" = @FC@ ]; then
		[ -x "$FASTCAT" ] || { echo "note: skipping $t: $FASTCAT not found (cd $TOP && make)" >&2; continue; }
		if [[ " ${ROW_SEND[*]} " == *" -P "* ]] && ! "$FASTCAT" --help-all 2>&1 | grep -q -- '--parallel'; then
			echo "note: skipping $t: this fastcat has no -P" >&2
			continue
		fi
	elif ! command -v "$need" > /dev/null; then
		echo "note: skipping $t: $need is not installed" >&2
		continue
	fi
	SEL+=("$t")
done
[ ${#SEL[@]} -gt 0 ] || die "no tool to run"
if [ -z "$BASE" ]; then
	BASE=${SEL[0]}
	for t in "${SEL[@]}"; do [ "$t" = nc.openbsd ] && BASE=nc.openbsd; done
fi

# ---- the lab, the work dir, the source; everything goes at exit
bench_workdir
wan_cleanup() { cleanup; wanlab_down; }
trap wan_cleanup EXIT
lab_args=(--rate "$RATE" --delay-ms "$DELAY" --loss "$LOSS" --mtu "$MTU" --cc "$CC")
[ -z "$QUEUE" ] || lab_args+=(--queue "$QUEUE")
wanlab_up "fwbench$$" "${lab_args[@]}" || die "the lab did not come up"
[ "$WL_CC" = "$CC" ] || die "-c $CC: the lab got '$WL_CC' (available here: $(cat /proc/sys/net/ipv4/tcp_available_congestion_control 2> /dev/null); modprobe tcp_$CC?)"
bench_source

RESULTS=$WORK/runs.csv
echo "round,tool,bytes,wall_s,mbit_s,recv_rc,send_rc,status,note" > "$RESULTS"
NEXT_PORT=40000

run_one() { # TOOL ROUND -> one CSV row; a line on stderr if it failed
	# shellcheck disable=SC2034 # rbytes: check_delivery sets it
	local tool=$1 round=$2 port note='' status=ok rbytes='' ready=0 sink=/dev/null ckpid=''
	local rpid spid rrc src t0 t1
	rm -f "$WORK"/r.* "$WORK"/s.*
	tool_row "$tool"
	local MEM=$ROW_MEM
	if [[ " ${ROW_RECV[*]} " == *@P@* ]]; then port=$((NEXT_PORT++)); else port=0; fi
	expand "$port" "${ROW_RECV[@]}"
	local recv=("${CMD[@]}")
	if [ "$MEM" = 0 ]; then
		mkfifo "$WORK/r.fifo"
		cksum < "$WORK/r.fifo" > "$WORK/r.cksum" &
		ckpid=$!
		PIDS+=("$ckpid")
		sink=$WORK/r.fifo
	fi
	wanlab_b timeout -k 2 "$TMO" "${recv[@]}" < /dev/null > "$sink" 2> "$WORK/r.err" &
	rpid=$!
	PIDS+=("$rpid")
	for _ in $(seq 500); do # 5 s
		if [ "$port" = 0 ]; then
			port=$(sed -n 's/.*listening on .*:\([0-9][0-9]*\)$/\1/p' "$WORK/r.err" 2> /dev/null | head -n 1)
			[ -n "$port" ] && ready=1 || port=0
		else
			[ -n "$(wanlab_b ss -Hltn "sport = :$port" 2> /dev/null)" ] && ready=1
		fi
		[ $ready = 1 ] && break
		kill -0 "$rpid" 2> /dev/null || break
		sleep 0.01
	done
	if [ $ready = 0 ]; then
		echo "WARN $tool round $round: the receiver did not start: $(head -c 300 "$WORK/r.err")" >&2
		kill_started
		echo "$round,$tool,$BYTES,0,0,-,-,fail,receiver did not start" >> "$RESULTS"
		return 1
	fi
	expand "$port" "${ROW_SEND[@]}"
	t0=$(usec)
	if [ "$MEM" = 1 ]; then
		wanlab_a timeout -k 2 "$TMO" "${CMD[@]}" < /dev/null > "$WORK/s.out" 2> "$WORK/s.err" &
	else
		wanlab_a timeout -k 2 "$TMO" "${CMD[@]}" < "$SRCFILE" > /dev/null 2> "$WORK/s.err" &
	fi
	spid=$!
	PIDS+=("$spid")
	wait "$rpid"
	rrc=$?
	t1=$(usec)
	wait "$spid"
	src=$?
	[ -n "$ckpid" ] && wait "$ckpid"
	PIDS=()
	if [ "$rrc" != 0 ] || [ "$src" != 0 ]; then status=fail note="exit codes recv $rrc send $src"; fi
	check_delivery "$ckpid"
	if [ $status != ok ]; then
		echo "WARN $tool round $round: $note; recv: $(tr '\n' ' ' < "$WORK/r.err" | head -c 300) send: $(tr '\n' ' ' < "$WORK/s.err" | head -c 300)" >&2
	fi
	awk -v r="$round" -v t="$tool" -v b="$BYTES" -v w=$((t1 - t0)) -v rrc="$rrc" -v src="$src" \
		-v st="$status" -v note="${note//,/;}" 'BEGIN {
		ws = w / 1e6; printf "%d,%s,%d,%.3f,%.1f,%s,%s,%s,%s\n", r, t, b, ws, (ws > 0 ? b * 8 / ws / 1e6 : 0), rrc, src, st, note }' >> "$RESULTS"
	echo "$tool round $round: $(tail -n 1 "$RESULTS" | cut -d, -f4,5 | awk -F, '{ printf "%.1f s, %.0f Mbit/s", $1, $2 }') ($status)" >&2
}

summary() { # CSV -> markdown table: median Mbit/s, median seconds, ratio vs BASE, runs ok
	awk -F, -v base="$BASE" -v order="${SEL[*]}" '
	function median(a, n,   i, j, t, x) {
		for (i = 1; i <= n; i++) x[i] = a[i]
		for (i = 2; i <= n; i++) { t = x[i]; for (j = i - 1; j >= 1 && x[j] > t; j--) x[j + 1] = x[j]; x[j + 1] = t }
		return n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2
	}
	NR > 1 { all[$2]++; if ($8 != "ok") next; k = ++n[$2]; mb[$2, k] = $5; ws[$2, k] = $4 }
	END {
		for (t in n) { for (k = 1; k <= n[t]; k++) { v[k] = mb[t, k]; s[k] = ws[t, k] } med[t] = median(v, n[t]); sec[t] = median(s, n[t]) }
		printf "| %-13s | %7s | %7s | %13s | %4s |\n", "tool", "Mbit/s", "s", "vs " base, "ok"
		printf "|---------------|--------:|--------:|--------------:|-----:|\n"
		cnt = split(order, names, " ")
		for (i = 1; i <= cnt; i++) {
			t = names[i]
			if (!n[t]) { printf "| %-13s | %7s | %7s | %13s | %4s |\n", t, "-", "-", "-", "0/" all[t]; continue }
			r = (n[base] && med[base] > 0) ? sprintf("%.2f", med[t] / med[base]) : "-"
			printf "| %-13s | %7.0f | %7.1f | %13s | %4s |\n", t, med[t], sec[t], r, n[t] "/" all[t]
		}
	}' "$1"
}

# summary_tsv CSV -> the medians for plot-wan.py: '# key value' lines, then one row a tool:
# tool, connections (N of fastcat -P N, 1 for fastcat, auto, '-' for the others), Mbit/s
# ('-' when no run was ok), seconds, runs ok/all.
summary_tsv() {
	printf '# link_mbit %s\n' "$(awk -v r="$RATE" 'BEGIN { u = tolower(r); sub(/bit$/, "", u); m = 1e-6
		if (u ~ /k$/) m = 1e-3; else if (u ~ /m$/) m = 1; else if (u ~ /g$/) m = 1e3
		sub(/[kmg]$/, "", u); print u * m }')"
	printf '# title wan.sh %s MiB, %s, RTT %s ms, MTU %s, loss %s\n' "$MIB" "$RATE" \
		"$(awk -v d="$DELAY" 'BEGIN { print 2 * d }')" "$MTU" "$LOSS"
	printf 'tool\tconnections\tmbit_s\tseconds\tok\n'
	summary "$1" | awk -F'|' 'NR > 2 {
		for (i = 2; i <= 6; i++) gsub(/^ +| +$/, "", $i)
		n = "-"
		if ($2 == "fastcat") n = 1
		else if ($2 ~ /^fastcat-P/) { n = $2; sub(/^fastcat-P/, "", n) }
		printf "%s\t%s\t%s\t%s\t%s\n", $2, n, $3, $4, $6 }'
}

git_rev=$(git -C "$HERE" describe --always --dirty 2> /dev/null || echo "?")
fc_ver=$("$FASTCAT" -V 2> /dev/null | head -n 1)
header="# wan.sh: ${MIB} MiB, lab $RATE, RTT $(awk -v d="$DELAY" 'BEGIN { print 2 * d }') ms, MTU $MTU, loss $LOSS each way, queue ${QUEUE:-one BDP}, $WL_IMPL, $WL_CC; tcp_wmem $(wanlab_a sysctl -n net.ipv4.tcp_wmem | tr '\t' ' '), tcp_rmem $(wanlab_a sysctl -n net.ipv4.tcp_rmem | tr '\t' ' '); $ROUNDS round(s); $(nproc) CPUs, $(uname -r); ${fc_ver:-fastcat} (git $git_rev)${FC_EXTRA:+; fastcat args: $FC_EXTRA}; $(date '+%F %T')"
echo "$header" >&2
echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for ((r = 1; r <= ROUNDS; r++)); do
	for t in "${SEL[@]}"; do
		run_one "$t" "$r"
		sleep 0.5 # the last FINs and ACKs cross the link before the next run
	done
done
{
	echo "$header"
	echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg); failures: $(awk -F, 'NR > 1 && $8 != "ok"' "$RESULTS" | wc -l)"
	[ "$WL_IMPL" != delayline ] || wanlab_stats | sed 's/^/# delay line /'
	echo
	summary "$RESULTS"
} | if [ -n "$CSV" ]; then tee "${CSV%.csv}.txt"; else cat; fi
[ -z "$CSV" ] || { cp "$RESULTS" "$CSV" && echo "runs: $CSV, table: ${CSV%.csv}.txt" >&2; }
[ -n "$PNG" ] || [ -z "$CSV" ] || PNG=${CSV%.csv}.png
if [ -n "$PNG" ]; then
	summary_tsv "$RESULTS" > "${PNG%.png}.tsv"
	if command -v python3 > /dev/null; then
		python3 "$HERE/plot-wan.py" "${PNG%.png}.tsv" "$PNG" &&
			echo "medians: ${PNG%.png}.tsv, plot: $PNG" >&2
	else
		echo "note: no python3, no plot; medians: ${PNG%.png}.tsv" >&2
	fi
fi
awk -F, 'NR > 1 && $8 != "ok" { bad = 1 } END { exit bad }' "$RESULTS"
