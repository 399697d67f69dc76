#!/usr/bin/env bash
# compare.sh - fastcat and the stock tools side by side, over TCP loopback and Unix stream, from a
# tmpfs file and from a pipe, by hand (not part of make check).
#
# Every run: a receiver listens (stdin /dev/null, stdout /dev/null), then a sender sends SIZE MiB of
# random data and ends at EOF. Source "file": the sender's stdin is a file in /dev/shm. Source
# "pipe": dd if=FILE bs=1M | SENDER (dd unpinned and not counted: the sender's CPU/RSS are its own).
#   wall = from the sender's start to the receiver's exit;  MB/s = 10^6 bytes / wall
#   CPU  = user+sys of each end, s/GiB;  RSS = peak resident set of each end, MiB (GNU time %U %S %M)
# Warm-up round(s) first, then interleaved rounds (A B C ... A B C ...) over every tool x transport
# x source; receiver pinned to one CPU, sender to another; medians, and per-round ratios against
# nc.openbsd measured in the same round, transport and source. Results under contrib/bench/results/:
# a summary CSV (one row per tool x transport x source), every run in NAME-...-runs.csv, the table
# (stdout and .txt) and PNG charts (gnuplot, if installed).
#
# Usage: compare.sh [options]
#   -s MIB      bytes per run, in MiB (default 2048)
#   -n ROUNDS   measured rounds (default 5)          -W N   warm-up rounds (default 1)
#   -t LIST     tools, comma-separated (default: all below; missing ones are skipped with a note)
#                 fastcat         fastcat -l / fastcat      (--copy=auto: sendfile from a file, splice
#                                                           from a pipe; unix: -lU / -U)
#                 fastcat-rw      the same with --copy=rw   (read/write, 96 KiB)
#                 nc.openbsd      nc.openbsd -l / -N        (unix: -lU / -NU)
#                 nc.traditional  nc.traditional -l -s H -p P / -q 0 H P       (tcp only)
#                 ncat            ncat -l --recv-only / --send-only            (unix: -U)
#                 socat           socat -u TCP-LISTEN / TCP (unix: UNIX-LISTEN / UNIX-CONNECT; 8 KiB)
#                 socat-b1M       the same with -b 1048576
#                 mbuffer         mbuffer -q -4 -I H:P -o - / -q -4 -O H:P     (tcp only)
#                 iperf3          iperf3 -s -1 / -c -n SIZE (128 KiB)           (tcp only, memory
#                 iperf3-Z        the same with -Z (zero-copy: sendfile)         source: skipped for
#                 iperf3-l1M      the same with -l 1M                            the pipe source)
#               also fastcat-BSIZE and fastcat-rw-BSIZE (-B SIZE on both ends)
#   -x LIST     transports: tcp,unix (default both)
#   -i LIST     sources: file,pipe (default both; with -S: file)
#   -S          chunk-size sweep instead: fastcat alone, -B SIZE on both ends, --copy=auto and rw
#               (rows fastcat-BSIZE, fastcat-rw-BSIZE)
#   -c 'SIZES'  chunk sizes for -S, space- or comma-separated (default '16k 64k 96k 256k 1M 4M')
#   -b TOOL     ratio baseline (default nc.openbsd; with -S fastcat-B96k), else the first tool run
#   -F PATH     fastcat binary (default: src/fastcat of this tree)
#   -a 'ARGS'   extra fastcat arguments, both ends (word-split)
#   -k          check mode: every receiver writes into a pipe to cksum (CRC + byte count compared
#               with the source; iperf3: its JSON counts noted, not checked). Costs receiver CPU:
#               use it to check, not to compare timings.
#   -P R,S      receiver CPU, sender CPU (default 0,1; 'none' = unpinned)
#   -o FILE     summary CSV (default contrib/bench/results/NAME-YYYYmmdd-HHMMSS.csv); beside it,
#               named FILE without .csv plus: -runs.csv (every run), .txt (the table), and the
#               plots -TRANSPORT-SOURCE.png (-S: .png)
#   -N NAME     results name prefix (default compare; with -S compare-sweep)
#   -T SEC      time-out per process (default 60 + SIZE/10)
#   -h          this help
# Needs: bash >= 5.1, coreutils, iproute2 (ss), util-linux (taskset), GNU time (apt: time);
# gnuplot for the plots (apt: gnuplot-nox; without it the plots are skipped with a note).
# Every process started is killed by PID on exit; the work dir in /dev/shm is removed.
set -u
export LC_ALL=C

HOST=127.0.0.1
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MIB=2048 ROUNDS=5 WARM=1 TOOLS='' XPORTS=tcp,unix SOURCES='' SWEEP=0 CHUNKS='16k 64k 96k 256k 1M 4M'
BASE='' FASTCAT=$HERE/../../src/fastcat FC_EXTRA='' CHECK=0 PIN=0,1 CSV='' NAME='' TMO=''
ALL_TOOLS=fastcat,fastcat-rw,nc.openbsd,nc.traditional,ncat,socat,socat-b1M,mbuffer,iperf3,iperf3-Z,iperf3-l1M

# shellcheck source=contrib/bench/lib.sh
. "$HERE/lib.sh"
while getopts "s:n:W:t:x:i:Sc:b:F:a:kP:o:N:T:h" o; do
	case $o in
	s) MIB=$OPTARG ;; n) ROUNDS=$OPTARG ;; W) WARM=$OPTARG ;; t) TOOLS=$OPTARG ;;
	x) XPORTS=$OPTARG ;; i) SOURCES=$OPTARG ;; S) SWEEP=1 ;; c) CHUNKS=$OPTARG ;;
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
[[ $WARM =~ ^[0-9]+$ ]] || die "-W wants a number"
[ -z "$TMO" ] || [[ $TMO =~ ^[1-9][0-9]*$ ]] || die "-T wants seconds"
[ "${BASH_VERSINFO[0]}${BASH_VERSINFO[1]}" -ge 51 ] || die "needs bash >= 5.1 (wait -n -p)"
command -v ss > /dev/null || die "needs ss (iproute2)"
BYTES=$((MIB * 1048576))
TMO=${TMO:-$((60 + MIB / 10))}
read -r -a FC_ARGS <<< "$FC_EXTRA"
IFS=, read -r -a XS <<< "$XPORTS"
for x in "${XS[@]}"; do [[ $x == tcp || $x == unix ]] || die "unknown transport '$x' (tcp, unix)"; done
[ ${#XS[@]} -gt 0 ] || die "no transport"
if [ $SWEEP = 1 ]; then
	[ -z "$TOOLS" ] || die "-S runs fastcat alone: no -t"
	NAME=${NAME:-compare-sweep} SOURCES=${SOURCES:-file}
	for c in ${CHUNKS//,/ }; do
		[[ $c =~ ^[0-9]+([kKmMgG]|KiB|MiB|GiB)?$ ]] || die "bad chunk size '$c'"
		TOOLS+=${TOOLS:+,}fastcat-B$c,fastcat-rw-B$c
		[ -z "$BASE" ] && [ "$c" = 96k ] && BASE=fastcat-B96k
	done
	[ -n "$TOOLS" ] || die "no chunk size"
fi
NAME=${NAME:-compare} SOURCES=${SOURCES:-file,pipe} TOOLS=${TOOLS:-$ALL_TOOLS} BASE=${BASE:-nc.openbsd}
IFS=, read -r -a SRCS <<< "$SOURCES"
for s in "${SRCS[@]}"; do [[ $s == file || $s == pipe ]] || die "unknown source '$s' (file, pipe)"; done
[ ${#SRCS[@]} -gt 0 ] || die "no source"

bench_pin "$PIN"
bench_timer
TIMER_FMT='%U %S %M' # + peak RSS (KiB)

# ---- tools: spec TOOL TRANSPORT ENDPOINT (port or socket path) -> RECV=() SEND=() NEED (binary)
# READY (stderr: fastcat's "listening on"; ss) MEM (1: the sender has its own memory source);
# returns 1 if the tool cannot use TRANSPORT, 2 if the tool is unknown
spec() {
	local t=$1 x=$2 ep=$3 b=() r s
	RECV=() SEND=() MEM=0 READY=ss NEED=${t%%-*}
	case $t in
	fastcat | fastcat-rw | fastcat-B?* | fastcat-rw-B?*)
		local a=(--report=json "${FC_ARGS[@]}")
		[[ $t == fastcat-rw* ]] && a+=(--copy=rw)
		[[ $t == fastcat*-B?* ]] && a+=(-B "${t##*-B}")
		NEED=$FASTCAT READY=stderr
		if [ "$x" = tcp ]; then r=(-l "$HOST" "$ep") s=("$HOST" "$ep"); else r=(-lU "$ep") s=(-U "$ep"); fi
		RECV=("$FASTCAT" -v "${a[@]}" "${r[@]}") SEND=("$FASTCAT" "${a[@]}" "${s[@]}") ;;
	nc.openbsd)
		if [ "$x" = tcp ]; then RECV=(nc.openbsd -l "$HOST" "$ep") SEND=(nc.openbsd -N "$HOST" "$ep")
		else RECV=(nc.openbsd -lU "$ep") SEND=(nc.openbsd -NU "$ep"); fi ;;
	nc.traditional)
		[ "$x" = tcp ] || return 1
		RECV=(nc.traditional -l -s "$HOST" -p "$ep") SEND=(nc.traditional -q 0 "$HOST" "$ep") ;;
	ncat)
		if [ "$x" = tcp ]; then RECV=(ncat -l --recv-only "$HOST" "$ep") SEND=(ncat --send-only "$HOST" "$ep")
		else RECV=(ncat -lU --recv-only "$ep") SEND=(ncat -U --send-only "$ep"); fi ;;
	socat | socat-b1M)
		[ "$t" = socat-b1M ] && b=(-b 1048576)
		if [ "$x" = tcp ]; then r=("TCP-LISTEN:$ep,reuseaddr,bind=$HOST") s=("TCP:$HOST:$ep")
		else r=("UNIX-LISTEN:$ep,unlink-early") s=("UNIX-CONNECT:$ep"); fi
		RECV=(socat "${b[@]}" -u "${r[@]}" STDOUT) SEND=(socat "${b[@]}" -u STDIN "${s[@]}") ;;
	mbuffer)
		[ "$x" = tcp ] || return 1
		RECV=(mbuffer -q -4 -I "$HOST:$ep" -o -) SEND=(mbuffer -q -4 -O "$HOST:$ep") ;;
	iperf3 | iperf3-Z | iperf3-l1M)
		[ "$x" = tcp ] || return 1
		case $t in iperf3-Z) b=(-Z) ;; iperf3-l1M) b=(-l 1M) ;; esac
		[ $CHECK = 1 ] && b+=(-J)
		MEM=1
		RECV=(iperf3 -s -1 -B "$HOST" -p "$ep") SEND=(iperf3 -c "$HOST" -p "$ep" -n "$BYTES" "${b[@]}") ;;
	*) return 2 ;;
	esac
	return 0
}

# ---- selected tools (missing ones skipped with a note) and the runs of one round, in order
IFS=, read -r -a WANT <<< "$TOOLS"
SEL=()
for t in "${WANT[@]}"; do
	[ -n "$t" ] || continue
	spec "$t" tcp 0
	[ $? = 2 ] && die "unknown tool '$t' (known: $ALL_TOOLS, fastcat-BSIZE, fastcat-rw-BSIZE)"
	if [[ $NEED == */* ]]; then
		[ -x "$NEED" ] || { echo "note: skipping $t: $NEED not found (cd $(cd "$HERE/../.." && pwd) && make)" >&2; continue; }
		[[ $("$NEED" --help 2>&1) == *--copy* ]] || die "$NEED does not look like fastcat with --copy"
	elif ! command -v "$NEED" > /dev/null; then
		echo "note: skipping $t: $NEED is not installed" >&2
		continue
	fi
	SEL+=("$t")
done
[ ${#SEL[@]} -gt 0 ] || die "no tool to run"
RUNS=() # "TRANSPORT SOURCE TOOL"
declare -A NOTED=()
for x in "${XS[@]}"; do
	for s in "${SRCS[@]}"; do
		for t in "${SEL[@]}"; do
			if ! spec "$t" "$x" 0; then
				[ -n "${NOTED[$t $x]:-}" ] || echo "note: skipping $t over $x: it has no Unix-socket mode" >&2
				NOTED[$t $x]=1
				continue
			fi
			if [ "$s" = pipe ] && [ "$MEM" = 1 ]; then
				[ -n "${NOTED[$t $s]:-}" ] || echo "note: skipping $t for the pipe source: no pipe mode (it sends its own memory)" >&2
				NOTED[$t $s]=1
				continue
			fi
			RUNS+=("$x $s $t")
		done
	done
done
[ ${#RUNS[@]} -gt 0 ] || die "nothing to run"

# ---- work dir, cleanup
bench_workdir
bench_source

# ---- results
if [ -z "$CSV" ]; then
	mkdir -p "$HERE/results" || die "cannot create $HERE/results"
	CSV=$HERE/results/$NAME-$(date +%Y%m%d-%H%M%S).csv
fi
OUT=${CSV%.csv}
RUNCSV=$OUT-runs.csv TXT=$OUT.txt
echo "round,transport,source,tool,bytes,wall_s,mb_s,recv_user_s,recv_sys_s,recv_rss_mib,send_user_s,send_sys_s,send_rss_mib,feed_user_s,feed_sys_s,recv_rc,send_rc,feed_rc,recv_bytes,copy_send,copy_recv,status,note" > "$RUNCSV" ||
	die "cannot write $RUNCSV"
: > "$CSV" || die "cannot write $CSV"

csv_row() { # ROUND X SRC TOOL WALL_US RTIME STIME FTIME RRC SRC_RC FEED_RC RBYTES COPY_S COPY_R STATUS NOTE
	local ru rs rm su ss_ sm fu fs
	read -r ru rs rm < <(tail -n 1 "$6" 2> /dev/null)
	read -r su ss_ sm < <(tail -n 1 "$7" 2> /dev/null)
	read -r fu fs _ < <(tail -n 1 "$8" 2> /dev/null)
	awk -v r="$1" -v x="$2" -v s="$3" -v t="$4" -v b="$BYTES" -v w="$5" -v ru="$ru" -v rs="$rs" -v rm="$rm" \
		-v su="$su" -v ss="$ss_" -v sm="$sm" -v fu="$fu" -v fs="$fs" -v rrc="$9" -v src="${10}" -v frc="${11}" \
		-v rb="${12}" -v cs="${13}" -v cr="${14}" -v st="${15}" -v note="${16//,/;}" 'BEGIN {
		ws = w / 1e6
		printf "%d,%s,%s,%s,%d,%.6f,%.1f,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", r, x, s, t, b, ws,
			(ws > 0 ? b / ws / 1e6 : 0), ru, rs, (rm != "" ? sprintf("%.1f", rm / 1024) : ""), su, ss,
			(sm != "" ? sprintf("%.1f", sm / 1024) : ""), fu, fs, rrc, src, frc, rb, cs, cr, st, note }' >> "$RUNCSV"
}

run_one() { # TRANSPORT SOURCE TOOL ROUND -> one row in the runs CSV; a line on stderr if it failed
	local x=$1 src=$2 tool=$3 round=$4 ep=0 note='' rbytes='' status=ok cs='' cr='' frc=''
	rm -f "$WORK"/r.* "$WORK"/s.*
	SEQ=$((SEQ + 1))
	[ "$x" = unix ] && ep=$WORK/u$SEQ.sock
	spec "$tool" "$x" "$ep"
	if [ "$x" = tcp ] && [ "$READY" = ss ]; then
		ep=$(free_port t) || { echo "$tool: no free port" >&2; return 1; }
		spec "$tool" "$x" "$ep"
	fi
	local sink=/dev/null ckpid=
	if [ $CHECK = 1 ] && [ "$MEM" = 0 ]; then
		mkfifo "$WORK/r.fifo"
		cksum < "$WORK/r.fifo" > "$WORK/r.cksum" &
		ckpid=$!
		PIDS+=("$ckpid")
		sink=$WORK/r.fifo
	fi
	# pin -> timeout -> time -> tool: GNU time's child is the tool itself, so %M is its own peak RSS
	timer_cmd "$WORK/r.time"
	"${PINR[@]}" timeout -k 2 "$TMO" "${TIMER_CMD[@]}" "${RECV[@]}" < /dev/null > "$sink" 2> "$WORK/r.err" &
	local rpid=$!
	PIDS+=("$rpid")
	local ready=0
	for _ in $(seq 500); do # 5 s
		case $READY:$x in
		stderr:*) grep -q 'listening on' "$WORK/r.err" 2> /dev/null && ready=1 ;;
		ss:tcp) [ -n "$(ss -Hltn "sport = :$ep" 2> /dev/null)" ] && ready=1 ;;
		ss:unix) [ -n "$(ss -Hlx "src = $ep" 2> /dev/null)" ] && ready=1 ;;
		esac
		[ $ready = 1 ] && break
		kill -0 "$rpid" 2> /dev/null || break
		sleep 0.01
	done
	if [ $ready = 1 ] && [ "$READY" = stderr ] && [ "$x" = tcp ]; then # fastcat listens on port 0
		ep=$(sed -n 's/.*listening on .*:\([0-9][0-9]*\)$/\1/p' "$WORK/r.err" | head -n 1)
		[ -n "$ep" ] && spec "$tool" "$x" "$ep" || ready=0
	fi
	if [ $ready = 0 ]; then
		echo "WARN $tool $x $src round $round: the receiver did not start: $(head -c 300 "$WORK/r.err")" >&2
		kill_started
		csv_row "$round" "$x" "$src" "$tool" 0 /dev/null /dev/null /dev/null - - - "" "" "" fail "receiver did not start"
		return 1
	fi
	local t0 t1 spid rrc='' src_rc who rc
	t0=$(usec)
	timer_cmd "$WORK/s.time"
	if [ "$src" = pipe ]; then
		local snd=("${PINS[@]}" timeout -k 2 "$TMO" "${TIMER_CMD[@]}" "${SEND[@]}")
		timer_cmd "$WORK/s.feedtime"
		(
			"${TIMER_CMD[@]}" dd if="$SRCFILE" bs=1M status=none 2> "$WORK/s.dderr" | "${snd[@]}" > /dev/null 2> "$WORK/s.err"
			st=("${PIPESTATUS[@]}")
			echo "${st[0]}" > "$WORK/s.ddrc"
			exit "${st[1]}"
		) &
	elif [ "$MEM" = 1 ]; then
		"${PINS[@]}" timeout -k 2 "$TMO" "${TIMER_CMD[@]}" "${SEND[@]}" < /dev/null > "$WORK/s.out" 2> "$WORK/s.err" &
	else
		"${PINS[@]}" timeout -k 2 "$TMO" "${TIMER_CMD[@]}" "${SEND[@]}" < "$SRCFILE" > /dev/null 2> "$WORK/s.err" &
	fi
	spid=$!
	PIDS+=("$spid")
	wait -n -p who "$rpid" "$spid"
	rc=$?
	if [ "$who" = "$rpid" ]; then
		rrc=$rc
		t1=$(usec)
		wait "$spid"
		src_rc=$?
	else
		src_rc=$rc
		if [ "$rc" != 0 ]; then # a failed sender: give the receiver 2 s to end, then stop it
			for _ in $(seq 200); do kill -0 "$rpid" 2> /dev/null || break; sleep 0.01; done
			if kill -0 "$rpid" 2> /dev/null; then
				kill_started # reaps them too
				rrc=stopped ckpid='' note="receiver stopped after the sender failed"
			fi
		fi
		if [ "${rrc:-}" != stopped ]; then
			wait "$rpid"
			rrc=$?
		fi
		t1=$(usec)
	fi
	[ -n "$ckpid" ] && wait "$ckpid"
	PIDS=()
	[ "$x" = unix ] && rm -f "$ep"
	[ "$src" = pipe ] && frc=$(cat "$WORK/s.ddrc" 2> /dev/null || echo '?')

	# completeness: exit codes always; fastcat's own report always; cksum in -k
	if [ "$rrc" != 0 ] || [ "$src_rc" != 0 ] || { [ -n "$frc" ] && [ "$frc" != 0 ]; }; then
		status=fail note="${note:+$note; }exit codes recv $rrc send $src_rc${frc:+ dd $frc}"
	fi
	if [[ $tool == fastcat* ]]; then
		rbytes=$(json_num "$WORK/r.err" received bytes)
		cr=$(json_num "$WORK/r.err" received copy)
		cs=$(json_num "$WORK/s.err" sent copy)
		[ -n "$rbytes" ] || status=fail note="${note:+$note; }no report from the receiver"
	fi
	check_delivery "$ckpid"
	if [ -n "$rbytes" ] && [ "$rbytes" != "$BYTES" ]; then
		status=fail note="${note:+$note; }received $rbytes of $BYTES bytes"
	fi
	if [ $status != ok ]; then
		echo "WARN $tool $x $src round $round: $note; recv: $(tr '\n' ' ' < "$WORK/r.err" | head -c 300) send: $(cat "$WORK/s.err" "$WORK/s.dderr" 2> /dev/null | tr '\n' ' ' | head -c 300)" >&2
	fi
	csv_row "$round" "$x" "$src" "$tool" $((t1 - t0)) "$WORK/r.time" "$WORK/s.time" "$WORK/s.feedtime" \
		"$rrc" "$src_rc" "$frc" "$rbytes" "$cs" "$cr" "$status" "$note"
}

# ---- summary: the table (stdout) and the summary CSV ($CSV), from the runs CSV
summary() {
	awk -F, -v base="$BASE" -v order="${SEL[*]}" -v xs="${XS[*]}" -v srcs="${SRCS[*]}" -v sumcsv="$CSV" \
		-v bytes="$BYTES" '
	function median(a, n,   i, j, t, x) {
		for (i = 1; i <= n; i++) x[i] = a[i]
		for (i = 2; i <= n; i++) { t = x[i]; for (j = i - 1; j >= 1 && x[j] > t; j--) x[j + 1] = x[j]; x[j + 1] = t }
		return n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2
	}
	function bytesof(c,   n, u) { # fastcat SIZE -> bytes
		n = c + 0; u = tolower(substr(c, length(n "") + 1, 1))
		return n * (u == "k" ? 1024 : u == "m" ? 1048576 : u == "g" ? 1073741824 : 1)
	}
	NR > 1 && $1 >= 1 {
		g = $2 SUBSEP $3; t = $4; all[g, t]++
		if ($22 != "ok") next
		k = ++n[g, t]; gib = $5 / 1073741824
		mbs[g, t, k] = $7; rc[g, t, k] = ($8 + $9) / gib; sc[g, t, k] = ($11 + $12) / gib
		rm[g, t, k] = $10; sm[g, t, k] = $13
		if (!((g, t) in cs)) { cs[g, t] = $20; cr[g, t] = $21 }
		if (cs[g, t] != $20) cs[g, t] = "mixed"
		if (cr[g, t] != $21) cr[g, t] = "mixed"
		byround[g, $1, t] = $7; rounds[$1] = 1
	}
	END {
		print "transport,source,tool,copy_mode,chunk,chunk_bytes,bytes,mb_s_median,mb_s_min,mb_s_max,ratio_vs,ratio_median,recv_cpu_s_per_gib,send_cpu_s_per_gib,recv_rss_mib,send_rss_mib,copy_send,copy_recv,runs_ok,runs" > sumcsv
		cnt = split(order, names, " "); nx = split(xs, X, " "); ns = split(srcs, S, " ")
		dash = "----------------------------------------"
		for (xi = 1; xi <= nx; xi++) for (si = 1; si <= ns; si++) {
			g = X[xi] SUBSEP S[si]
			b = ""; first = ""
			for (i = 1; i <= cnt; i++) if ((g, names[i]) in all) { if (first == "") first = names[i]; if (names[i] == base && n[g, names[i]]) b = base }
			if (first == "") continue
			if (b == "") b = first
			printf "## %s, %s source (%s)\n\n", X[xi], S[si], (S[si] == "file" ? "< /dev/shm/.../source" : "dd if=/dev/shm/.../source bs=1M | sender")
			rh = "ratio vs " b; rw = length(rh)
			fmt = "| %-16s | %7s | %-11s | %" rw "s | %21s | %19s | %-17s | %5s |\n"
			printf fmt, "tool", "MB/s", "min-max", rh, "CPU s/GiB recv + send", "RSS MiB recv + send", "copy send / recv", "runs"
			printf "|%s|%s|%s|%s|%s|%s|%s|%s|\n", substr(dash, 1, 18), "--------:", substr(dash, 1, 13), substr(dash, 1, rw + 1) ":", substr(dash, 1, 22) ":", substr(dash, 1, 20) ":", substr(dash, 1, 19), "------:"
			for (i = 1; i <= cnt; i++) {
				t = names[i]
				if (!((g, t) in all)) continue
				mode = "-"; chunk = ""
				if (t ~ /^fastcat/) { mode = (t ~ /^fastcat-rw/ ? "rw" : "auto"); if (t ~ /-B./) { chunk = t; sub(/.*-B/, "", chunk) } }
				m = n[g, t]
				if (!m) {
					printf fmt, t, "-", "-", "-", "-", "-", "-", "0/" all[g, t]
					printf "%s,%s,%s,%s,%s,%s,%d,,,,%s,,,,,,,,0,%d\n", X[xi], S[si], t, mode, chunk, (chunk != "" ? bytesof(chunk) : ""), bytes, b, all[g, t] > sumcsv
					continue
				}
				lo = 1e18; hi = 0
				for (k = 1; k <= m; k++) {
					v[k] = mbs[g, t, k]; if (v[k] < lo) lo = v[k]; if (v[k] > hi) hi = v[k]
					a[k] = rc[g, t, k]; c[k] = sc[g, t, k]; p[k] = rm[g, t, k]; q_[k] = sm[g, t, k]
				}
				q = 0
				for (r in rounds) if (((g, r, b) in byround) && ((g, r, t) in byround) && byround[g, r, b] > 0) rr[++q] = byround[g, r, t] / byround[g, r, b]
				ratio = (q ? sprintf("%.2f", median(rr, q)) : "")
				rss = (p[1] != "" ? sprintf("%.1f + %.1f", median(p, m), median(q_, m)) : "-")
				copy = (cs[g, t] != "" || cr[g, t] != "" ? cs[g, t] " / " cr[g, t] : "-")
				printf fmt, t, sprintf("%.0f", median(v, m)), sprintf("%.0f-%.0f", lo, hi), (ratio != "" ? ratio : "-"),
					sprintf("%.2f + %.2f", median(a, m), median(c, m)), rss, copy, m "/" all[g, t]
				printf "%s,%s,%s,%s,%s,%s,%d,%.1f,%.1f,%.1f,%s,%s,%.3f,%.3f,%s,%s,%s,%s,%d,%d\n", X[xi], S[si], t, mode, chunk,
					(chunk != "" ? bytesof(chunk) : ""), bytes, median(v, m), lo, hi, b, ratio, median(a, m), median(c, m),
					(p[1] != "" ? sprintf("%.1f", median(p, m)) : ""), (q_[1] != "" ? sprintf("%.1f", median(q_, m)) : ""),
					cs[g, t], cr[g, t], m, all[g, t] > sumcsv
				delete rr; delete v; delete a; delete c; delete p; delete q_
			}
			print ""
		}
	}' "$RUNCSV"
}

# ---- plots (gnuplot): MB/s per tool for each transport x source; -S: MB/s vs chunk size
plots() {
	if ! command -v gnuplot > /dev/null; then
		echo "note: gnuplot not found (apt-get install gnuplot-nox): no plots" >&2
		return 0
	fi
	local term='pngcairo' x s dat png made=()
	gnuplot -e 'set terminal pngcairo' > /dev/null 2>&1 || term=png
	local sub="$MIB MiB per run, median of $ROUNDS rounds (bars: min-max)"
	[ $CHECK = 1 ] && sub="$sub, CHECK MODE"
	if [ $SWEEP = 0 ]; then
		for x in "${XS[@]}"; do
			for s in "${SRCS[@]}"; do
				dat=$WORK/plot-$x-$s.dat png=$OUT-$x-$s.png
				awk -F, -v x="$x" -v s="$s" 'NR > 1 && $1 == x && $2 == s && $19 > 0 {
					printf "\"%s\" %s %s %s %d\n", $3, $8, $9, $10, ($3 ~ /^fastcat/ ? 1 : 2) }' "$CSV" > "$dat"
				[ -s "$dat" ] || continue
				gnuplot > "$WORK/gnuplot.err" 2>&1 <<-EOF || { echo "note: gnuplot failed for $png: $(head -c 300 "$WORK/gnuplot.err")" >&2; continue; }
					set terminal $term size 1000,560 noenhanced
					set output '$png'
					set title "$NAME: $x, $s source -> /dev/null\n$sub"
					set ylabel 'MB/s (10^6 bytes/s)'
					set yrange [0:*]
					set style fill solid 0.6 border -1
					set boxwidth 0.6
					set xtics rotate by -30 nomirror
					set grid ytics
					set key off
					set linetype 1 lc rgb '#d1495b'
					set linetype 2 lc rgb '#4472c4'
					plot '$dat' using 0:2:5:xtic(1) with boxes lc variable, \
					     '' using 0:2:3:4 with yerrorbars lc rgb 'black' pt 0 ps 0, \
					     '' using 0:(\$4):(sprintf('%.0f', \$2)) with labels offset 0,0.8
				EOF
				made+=("$png")
			done
		done
	else
		local series=() tics='' c cb mode plot='' all_cb=() xlo xhi
		for c in ${CHUNKS//,/ }; do
			cb=$(awk -F, -v c="$c" 'NR > 1 && $5 == c { print $6 / 1024; exit }' "$CSV")
			[ -n "$cb" ] && tics+=${tics:+, }"\"$c\" $cb" && all_cb+=("$cb")
		done
		read -r xlo xhi < <(printf '%s\n' "${all_cb[@]}" | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { print lo / 1.5, hi * 1.5 }')
		for x in "${XS[@]}"; do
			for s in "${SRCS[@]}"; do
				for mode in auto rw; do
					dat=$WORK/plot-$x-$s-$mode.dat
					awk -F, -v x="$x" -v s="$s" -v m="$mode" 'NR > 1 && $1 == x && $2 == s && $4 == m && $6 != "" && $19 > 0 {
						print $6 / 1024, $8, $9, $10 }' "$CSV" | sort -n > "$dat"
					[ -s "$dat" ] || continue
					series+=("$dat")
					local lbl="$x --copy=$mode"
					[ ${#SRCS[@]} -gt 1 ] && lbl="$x $s --copy=$mode"
					plot+="${plot:+, }'$dat' using 1:2:3:4 with yerrorlines lw 2 title '$lbl'"
				done
			done
		done
		if [ ${#series[@]} -gt 0 ]; then
			png=$OUT.png
			if gnuplot > "$WORK/gnuplot.err" 2>&1 <<-EOF; then made+=("$png"); else echo "note: gnuplot failed for $png: $(head -c 300 "$WORK/gnuplot.err")" >&2; fi
				set terminal $term size 1000,560 noenhanced
				set output '$png'
				set title "$NAME: fastcat throughput vs chunk size (-B, both ends), ${SRCS[*]} source -> /dev/null\n$sub"
				set xlabel 'chunk size (-B)'
				set ylabel 'MB/s (10^6 bytes/s)'
				set logscale x 2
				set xrange [$xlo:$xhi]
				set xtics ($tics)
				set yrange [0:*]
				set grid
				set key below
				plot $plot
			EOF
		fi
	fi
	[ ${#made[@]} -gt 0 ] && printf 'plot: %s\n' "${made[@]}" >&2
	return 0
}

git_rev=$(git -C "$HERE" describe --always --dirty 2> /dev/null || echo "?")
fc_ver=$("$FASTCAT" -V 2> /dev/null | head -n 1)
mb_buf=
if [[ " ${SEL[*]} " == *" mbuffer "* ]]; then
	mb_buf=$(mbuffer -v 5 -i /dev/null -o /dev/null 2>&1 | sed -n 's/.*default buffer set to \(.*\)/\1/p' | head -n 1)
	mb_buf="; mbuffer default buffer: ${mb_buf:-?}"
fi
what=
for s in "${SRCS[@]}"; do
	case $s in file) what+="${what:+, }file (< /dev/shm)" ;; pipe) what+="${what:+, }pipe (dd bs=1M |)" ;; esac
done
header="# $NAME: ${MIB} MiB random; sources ${what}; transports ${XS[*]// /, }; sink /dev/null; $ROUNDS rounds + $WARM warm-up, interleaved; pin recv,send=${PIN}; $(nproc) CPUs, $(uname -r); ${fc_ver:-fastcat} (git $git_rev)${FC_EXTRA:+; fastcat args: $FC_EXTRA}$mb_buf; $(date '+%F %T')"
[ $CHECK = 1 ] && header="$header
# CHECK MODE (-k): receivers write into a pipe to cksum; timings are not comparable with normal runs"
echo "$header" >&2
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "# load average at start: $LOAD0; ${#RUNS[@]} runs per round" >&2
SEQ=0
for ((r = 1 - WARM; r <= ROUNDS; r++)); do
	for run in "${RUNS[@]}"; do
		read -r x s t <<< "$run"
		run_one "$x" "$s" "$t" "$r"
		sleep 0.1
	done
	echo "round $r done ($([ $r -lt 1 ] && echo warm-up || echo "of $ROUNDS"))" >&2
done
{
	echo "$header"
	echo "# load average at start: $LOAD0, at end: $(cut -d' ' -f1-3 /proc/loadavg); failures: $(awk -F, 'NR > 1 && $22 != "ok"' "$RUNCSV" | wc -l)"
	echo
	summary
} | tee "$TXT"
plots
echo "summary: $CSV" >&2
echo "runs: $RUNCSV" >&2
echo "table: $TXT" >&2
awk -F, 'NR > 1 && $22 != "ok" { bad = 1 } END { exit bad }' "$RUNCSV"
