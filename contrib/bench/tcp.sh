#!/usr/bin/env bash
# tcp.sh - fastcat against the stock tools over TCP loopback, by hand (not part of make check).
#
# Every run: a receiver listens on 127.0.0.1 (stdin /dev/null, stdout /dev/null), then a sender
# sends a random file from /dev/shm (stdin redirected from it) and half-closes at EOF.
#   wall   = from the sender's start to the receiver's exit (the receiver is already listening)
#   MB/s   = 10^6 bytes / wall
#   CPU    = user+sys of each end (GNU time; kernel accounting, reaped children included)
# Tools run interleaved (A B C ... A B C ...), one warm-up round first, receiver pinned to one
# CPU and sender to another. Results: a markdown table on stdout, every run as a CSV row (and
# the table) under contrib/bench/results/.
#
# Usage: tcp.sh [options]
#   -s MIB      bytes per run, in MiB (default 2048)
#   -n ROUNDS   measured rounds (default 5)          -w N   warm-up rounds (default 1)
#   -t LIST     tools, comma-separated (default: all below)
#                 fastcat      fastcat -l / fastcat                    (96 KiB chunks by default)
#                 fastcat-BSZ  fastcat with -B SZ on both ends, e.g. fastcat-B1M
#                 nc.openbsd   nc.openbsd -l / nc.openbsd -N
#                 socat        socat -u TCP-LISTEN / socat -u TCP       (8 KiB)
#                 socat-b1M    the same with -b 1048576
#                 ncat         ncat -l --recv-only / ncat --send-only
#                 iperf3-l1M   iperf3 -s -1 / iperf3 -c -l 1M -n SIZE   (memory source, no file)
#   -b TOOL     ratio baseline (default nc.openbsd if selected, else the first tool)
#   -F PATH     fastcat binary (default: src/fastcat of this tree)
#   -a 'ARGS'   extra fastcat arguments, both ends (word-split), e.g. -a '-B 1M'
#   -k          check mode: the receiver writes into a pipe to cksum (CRC + byte count compared
#               with the source; iperf3: bytes from its JSON). Costs receiver CPU: use it to
#               check, not to compare timings.
#   -P R,S      receiver CPU, sender CPU (default 0,1; 'none' = unpinned)
#   -o FILE     CSV path (default contrib/bench/results/NAME-YYYYmmdd-HHMMSS.csv; the table
#               goes beside it as .txt)
#   -N NAME     results name prefix (default tcp)
#   -T SEC      time-out per process (default 60 + SIZE/10)
#   -h          this help
# Needs: bash >= 5, coreutils, iproute2 (ss), util-linux (taskset), GNU time (apt: time).
# Every process started is killed by PID on exit; the source file is removed.
set -u
export LC_ALL=C

HOST=127.0.0.1
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MIB=2048 ROUNDS=5 WARM=1 TOOLS='' BASE='' FASTCAT=$HERE/../../src/fastcat FC_EXTRA='' CHECK=0
PIN=0,1 CSV='' NAME=tcp TMO=''
ALL_TOOLS=fastcat,nc.openbsd,socat,socat-b1M,ncat,iperf3-l1M

# shellcheck source=contrib/bench/lib.sh
. "$HERE/lib.sh"
while getopts "s:n:w:t:b:F:a:kP:o:N:T:h" o; do
	case $o in
	s) MIB=$OPTARG ;; n) ROUNDS=$OPTARG ;; w) WARM=$OPTARG ;; t) TOOLS=$OPTARG ;;
	b) BASE=$OPTARG ;; F) FASTCAT=$OPTARG ;; a) FC_EXTRA=$OPTARG ;; k) CHECK=1 ;;
	P) PIN=$OPTARG ;; o) CSV=$OPTARG ;; N) NAME=$OPTARG ;; T) TMO=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || die "unexpected argument '$1' (-h for help)"
[[ $MIB =~ ^[1-9][0-9]*$ ]] || die "-s wants a size in MiB"
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "-n wants a positive number"
[[ $WARM =~ ^[0-9]+$ ]] || die "-w wants a number"
BYTES=$((MIB * 1048576))
TMO=${TMO:-$((60 + MIB / 10))}
read -r -a FC_ARGS <<< "$FC_EXTRA"
[ -n "$TOOLS" ] || TOOLS=$ALL_TOOLS
[ "${BASH_VERSINFO[0]}" -ge 5 ] || die "needs bash >= 5 (EPOCHREALTIME)"
command -v ss > /dev/null || die "needs ss (iproute2)"

bench_pin "$PIN"

bench_timer

# ---- tools: spec_X PORT sets RECV=() SEND=() READY (stderr|ss) MEM (0|1) NEED (binary)
spec_fastcat() { # PORT [EXTRA...]
	local p=$1
	shift
	NEED=$FASTCAT READY=stderr MEM=0
	RECV=("$FASTCAT" -v --report=json "${FC_ARGS[@]}" "$@" -l "$HOST" "$p")
	SEND=("$FASTCAT" --report=json "${FC_ARGS[@]}" "$@" "$HOST" "$p")
}
spec_nc.openbsd() {
	NEED=nc.openbsd READY=ss MEM=0
	RECV=(nc.openbsd -l "$HOST" "$1") SEND=(nc.openbsd -N "$HOST" "$1")
}
spec_socat() { # PORT [-b N]
	local p=$1
	shift
	NEED=socat READY=ss MEM=0
	RECV=(socat "$@" -u "TCP-LISTEN:$p,reuseaddr,bind=$HOST" STDOUT)
	SEND=(socat "$@" -u STDIN "TCP:$HOST:$p")
}
spec_ncat() {
	NEED=ncat READY=ss MEM=0
	RECV=(ncat -l --recv-only "$HOST" "$1") SEND=(ncat --send-only "$HOST" "$1")
}
spec_iperf3() { # PORT [-J]
	local p=$1
	shift
	NEED=iperf3 READY=ss MEM=1
	RECV=(iperf3 -s -1 -B "$HOST" -p "$p")
	SEND=(iperf3 -c "$HOST" -p "$p" -l 1M -n "$BYTES" "$@")
}
tool_spec() { # TOOL PORT -> sets the spec variables; 1 if unknown
	case $1 in
	fastcat) spec_fastcat "$2" ;;
	fastcat-B?*) spec_fastcat "$2" -B "${1#fastcat-B}" ;;
	nc.openbsd) spec_nc.openbsd "$2" ;;
	socat) spec_socat "$2" ;;
	socat-b1M) spec_socat "$2" -b 1048576 ;;
	ncat) spec_ncat "$2" ;;
	iperf3-l1M) if [ $CHECK = 1 ]; then spec_iperf3 "$2" -J; else spec_iperf3 "$2"; fi ;;
	*) return 1 ;;
	esac
}

# ---- selected tools; the missing ones are skipped with a note
IFS=, read -r -a WANT <<< "$TOOLS"
SEL=()
for t in "${WANT[@]}"; do
	[ -n "$t" ] || continue
	tool_spec "$t" 0 || die "unknown tool '$t' (known: $ALL_TOOLS, fastcat-BSIZE)"
	if [[ $NEED == */* ]]; then
		[ -x "$NEED" ] || { echo "note: skipping $t: $NEED not found (cd $(cd "$HERE/../.." && pwd) && make)" >&2; continue; }
	elif ! command -v "$NEED" > /dev/null; then
		echo "note: skipping $t: $NEED is not installed" >&2
		continue
	fi
	[[ $t == fastcat* ]] && [[ $("$FASTCAT" --help 2>&1) != *--report* ]] && die "$FASTCAT does not look like fastcat"
	SEL+=("$t")
done
[ ${#SEL[@]} -gt 0 ] || die "no tool to run"
if [ -z "$BASE" ]; then
	BASE=${SEL[0]}
	for t in "${SEL[@]}"; do [ "$t" = nc.openbsd ] && BASE=nc.openbsd; done
fi

# ---- work dir, cleanup
PIDS=()
WORK=
bench_workdir
bench_source

# ---- results
RESULTS=$HERE/results
STAMP=$(date +%Y%m%d-%H%M%S)
if [ -z "$CSV" ]; then
	mkdir -p "$RESULTS" || die "cannot create $RESULTS"
	CSV=$RESULTS/$NAME-$STAMP.csv
fi
TXT=${CSV%.csv}.txt
echo "round,tool,bytes,wall_s,mb_s,recv_user_s,recv_sys_s,send_user_s,send_sys_s,recv_rc,send_rc,recv_bytes,status,note" > "$CSV" ||
	die "cannot write $CSV"

csv_row() { # ROUND TOOL WALL_US RTIME STIME RRC SRC RBYTES STATUS NOTE
	local ru rs su ss_
	read -r ru rs < <(tail -n 1 "$4" 2> /dev/null)
	read -r su ss_ < <(tail -n 1 "$5" 2> /dev/null)
	awk -v r="$1" -v t="$2" -v b="$BYTES" -v w="$3" -v ru="$ru" -v rs="$rs" -v su="$su" -v ss="$ss_" \
		-v rrc="$6" -v src="$7" -v rb="$8" -v st="$9" -v note="${10//,/;}" 'BEGIN {
		ws = w / 1e6
		printf "%d,%s,%d,%.6f,%.1f,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", r, t, b, ws, (ws > 0 ? b / ws / 1e6 : 0),
			ru, rs, su, ss, rrc, src, rb, st, note }' >> "$CSV"
}

run_one() { # TOOL ROUND -> one CSV row; a line on stderr if it failed
	local tool=$1 round=$2 port=0 note='' rbytes='' status=ok
	rm -f "$WORK"/r.* "$WORK"/s.*
	tool_spec "$tool" 0
	if [ "$READY" = ss ]; then
		port=$(free_port t) || { echo "$tool: no free port" >&2; return 1; }
		tool_spec "$tool" "$port"
	fi
	local sink=/dev/null ckpid=
	if [ $CHECK = 1 ] && [ "$MEM" = 0 ]; then
		mkfifo "$WORK/r.fifo"
		cksum < "$WORK/r.fifo" > "$WORK/r.cksum" &
		ckpid=$!
		PIDS+=("$ckpid")
		sink=$WORK/r.fifo
	fi
	timed "$WORK/r.time" "${PINR[@]}" timeout -k 2 "$TMO" "${RECV[@]}" < /dev/null > "$sink" 2> "$WORK/r.err" &
	local rpid=$!
	PIDS+=("$rpid")
	local ready=0
	for _ in $(seq 500); do # 5 s
		if [ "$READY" = stderr ]; then
			grep -q 'listening on' "$WORK/r.err" 2> /dev/null && ready=1
		else
			[ -n "$(ss -Hltn "sport = :$port" 2> /dev/null)" ] && ready=1
		fi
		[ $ready = 1 ] && break
		kill -0 "$rpid" 2> /dev/null || break
		sleep 0.01
	done
	if [ $ready = 1 ] && [ "$READY" = stderr ]; then
		port=$(sed -n 's/.*listening on .*:\([0-9][0-9]*\)$/\1/p' "$WORK/r.err" | head -n 1)
		[ -n "$port" ] && tool_spec "$tool" "$port" || ready=0
	fi
	if [ $ready = 0 ]; then
		echo "WARN $tool round $round: the receiver did not start: $(head -c 300 "$WORK/r.err")" >&2
		kill_started
		csv_row "$round" "$tool" 0 /dev/null /dev/null - - "" fail "receiver did not start"
		return 1
	fi
	local t0 t1 spid rrc src
	t0=$(usec)
	if [ "$MEM" = 1 ]; then
		timed "$WORK/s.time" "${PINS[@]}" timeout -k 2 "$TMO" "${SEND[@]}" < /dev/null > "$WORK/s.out" 2> "$WORK/s.err" &
	else
		timed "$WORK/s.time" "${PINS[@]}" timeout -k 2 "$TMO" "${SEND[@]}" < "$SRCFILE" > /dev/null 2> "$WORK/s.err" &
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

	# completeness: exit codes always; fastcat's own report always (free); cksum/iperf3 JSON in -k
	if [ "$rrc" != 0 ] || [ "$src" != 0 ]; then status=fail note="exit codes recv $rrc send $src"; fi
	if [[ $tool == fastcat* ]]; then
		rbytes=$(sed -n 's/.*"received":{"bytes":\([0-9]*\).*/\1/p' "$WORK/r.err" | tail -n 1)
	fi
	check_delivery "$ckpid"
	if [ -n "$rbytes" ] && [ "$rbytes" != "$BYTES" ]; then
		status=fail note="${note:+$note; }received $rbytes of $BYTES bytes"
	elif [ $CHECK = 1 ] && [ "$MEM" = 0 ] && [ -z "$rbytes" ]; then
		status=fail note="${note:+$note; }no byte count"
	fi
	if [ $status != ok ]; then
		echo "WARN $tool round $round: $note; recv: $(tr '\n' ' ' < "$WORK/r.err" | head -c 300) send: $(tr '\n' ' ' < "$WORK/s.err" | head -c 300)" >&2
	fi
	csv_row "$round" "$tool" $((t1 - t0)) "$WORK/r.time" "$WORK/s.time" "$rrc" "$src" "$rbytes" "$status" "$note"
}

summary() { # CSV -> markdown table of the measured rounds
	awk -F, -v base="$BASE" -v order="${SEL[*]}" -v lab="${BENCH_LABEL:-tool}" '
	function median(a, n,   i, j, t, x) {
		for (i = 1; i <= n; i++) x[i] = a[i]
		for (i = 2; i <= n; i++) { t = x[i]; for (j = i - 1; j >= 1 && x[j] > t; j--) x[j + 1] = x[j]; x[j + 1] = t }
		return n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2
	}
	NR > 1 && $1 >= 1 {
		all[$2]++
		if ($13 != "ok") next
		k = ++n[$2]; gib = $3 / 1073741824
		mbs[$2, k] = $5; rc[$2, k] = ($6 + $7) / gib; sc[$2, k] = ($8 + $9) / gib
		byround[$1, $2] = $5; rounds[$1] = 1
	}
	END {
		rb = base; if (lab == "chunk") sub(/^fastcat-B/, "", rb)
		rh = "ratio vs " rb; rw = length(rh); ch = "CPU s/GiB recv + send"
		fmt = "| %-14s | %7s | %-11s | %" rw "s | %21s | %5s |\n"
		printf fmt, lab, "MB/s", "min-max", rh, ch, "runs"
		dash = "----------------------------------------"
		printf "|%s|%s|%s|%s|%s|%s|\n", substr(dash, 1, 16), "--------:", substr(dash, 1, 13), substr(dash, 1, rw + 1) ":", substr(dash, 1, 22) ":", "------:"
		cnt = split(order, names, " ")
		for (i = 1; i <= cnt; i++) {
			t = names[i]; m = n[t]; d = t
			if (lab == "chunk") sub(/^fastcat-B/, "", d)
			if (!m) { printf fmt, d, "-", "-", "-", "-", "0/" all[t]; continue }
			lo = 1e18; hi = 0
			for (k = 1; k <= m; k++) { v[k] = mbs[t, k]; if (v[k] < lo) lo = v[k]; if (v[k] > hi) hi = v[k]; a[k] = rc[t, k]; b[k] = sc[t, k] }
			q = 0
			for (r in rounds) if (((r, base) in byround) && ((r, t) in byround) && byround[r, base] > 0) rr[++q] = byround[r, t] / byround[r, base]
			printf fmt, d, sprintf("%.0f", median(v, m)), sprintf("%.0f-%.0f", lo, hi),
				(q ? sprintf("%.2f", median(rr, q)) : "-"), sprintf("%.2f + %.2f", median(a, m), median(b, m)), m "/" all[t]
			delete rr; delete v; delete a; delete b
		}
	}' "$1"
}

git_rev=$(git -C "$HERE" describe --always --dirty 2> /dev/null || echo "?")
fc_ver=$("$FASTCAT" -V 2> /dev/null | head -n 1)
header="# $NAME: ${MIB} MiB random from /dev/shm -> TCP 127.0.0.1 -> /dev/null; $ROUNDS rounds + $WARM warm-up, interleaved; pin recv,send=${PIN}; $(nproc) CPUs, $(uname -r); ${fc_ver:-fastcat} (git $git_rev)${FC_EXTRA:+; fastcat args: $FC_EXTRA}; $(date '+%F %T')"
[ $CHECK = 1 ] && header="$header
# CHECK MODE (-k): receivers write into a pipe to cksum; timings are not comparable with normal runs"
echo "$header" >&2
echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for ((r = 1 - WARM; r <= ROUNDS; r++)); do
	for t in "${SEL[@]}"; do
		run_one "$t" "$r"
		sleep 0.1
	done
	echo "round $r done ($([ $r -lt 1 ] && echo warm-up || echo "of $ROUNDS"))" >&2
done
{
	echo "$header"
	echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg); failures: $(awk -F, 'NR > 1 && $13 != "ok"' "$CSV" | wc -l)"
	echo
	summary "$CSV"
} | tee "$TXT"
echo "runs: $CSV" >&2
echo "table: $TXT" >&2
awk -F, 'NR > 1 && $13 != "ok" { bad = 1 } END { exit bad }' "$CSV"
