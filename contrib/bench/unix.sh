#!/usr/bin/env bash
# unix.sh - fastcat against the stock tools over Unix sockets and UDP loopback, by hand (not part
# of make check). Same method as tcp.sh: a receiver (stdin /dev/null) is started and ready, then a
# sender reads a random file from /dev/shm as stdin; tools interleaved (A B C ... A B C ...), one
# warm-up round first, receiver pinned to one CPU and sender to another; medians, per-round ratios,
# CPU s/GiB per end (GNU time). Each workload gets its own table (stdout) and CSV + table under
# contrib/bench/results/.
#
# Workloads (-w):
#   stream    AF_UNIX stream, 2048 MiB -> /dev/null; ratio vs nc.openbsd
#               fastcat      fastcat -lU PATH / fastcat -U PATH
#               nc.openbsd   nc.openbsd -lU / nc.openbsd -NU          (16 KiB)
#               socat        socat -u UNIX-LISTEN / UNIX-CONNECT       (8 KiB)
#               socat-b128k  the same with -b 131072
#               ncat         (only with -t) ncat -lU --recv-only / -U --send-only
#   dgram64k  AF_UNIX datagrams, 1024 MiB -> a /dev/shm file; ratio vs socat; loss from bytes
#               fastcat      fastcat --dgram-size 64k -lUu PATH / -Uu PATH (64 KiB datagrams)
#               socat        socat -u UNIX-RECV / UNIX-SENDTO          (8 KiB datagrams)
#               socat-b64k   the same with -b 65536                    (64 KiB)
#               nc.openbsd   nc.openbsd -luU / nc.openbsd -q 0 -uU     (16 KiB)
#               ncat         (only with -t) ncat -lU --udp --recv-only / -U --udp --send-only
#   seed      SIZE/1 KiB datagrams of exactly 1024 bytes over AF_UNIX datagram (2^20 at the
#             default 1024 MiB) -> /dev/null; ratio = wall / the bare loop's wall
#               fastcat      fastcat --dgram-size 1024 --checksum, both ends (digests compared)
#               bare         dgram_bench -f unix -m mmsg -s 1024 -n COUNT: sendmmsg/recvmmsg in
#                            two processes of one program, no stdin/stdout (the yardstick)
#               bare-plain   (only with -t) the same with one send()/recv() per datagram
#   udp       UDP 127.0.0.1, 512 MiB -> a /dev/shm file; goodput, loss %; ratio vs nc.openbsd
#               fastcat      fastcat --seq -lu / -u                    (65499 B + 8 B number)
#               fastcat-reliable  fastcat -lu --reliable / -u --reliable (65475 B + 32 B header;
#                            paced and repaired: nothing lost, the rate it finds)
#               nc.openbsd   nc.openbsd -lu / nc.openbsd -q 0 -u       (16 KiB)
#               socat        socat -u UDP-RECV / UDP-SENDTO            (8 KiB)
#               socat-b65507 (only with -t) the same with -b 65507
#               ncat         (only with -t) ncat -lu --recv-only / -u --send-only
#               floor        udp-floor.c (built into the work dir) fed by fastcat -q 0 -u: 4
#                            datagrams a recvmmsg into a cached buffer, each written; no order,
#                            no digest: what it takes is the most any receiver takes here
#
# Usage: unix.sh [options]
#   -w LIST     workloads, comma-separated (default stream,dgram64k,seed,udp)
#   -s MIB      bytes per run, in MiB, for every selected workload (default 2048, 1024, 1024, 512)
#   -n ROUNDS   measured rounds (default 5)          -W N   warm-up rounds (default 1)
#   -t LIST     tools, comma-separated (default: each workload's set above); a workload runs the
#               listed tools it knows
#   -b TOOL     ratio baseline (default as above), for the workloads that have it
#   -F PATH     fastcat binary (default: src/fastcat of this tree)
#   -a 'ARGS'   extra fastcat arguments, both ends (word-split)
#   -D PATH     dgram_bench.c, compiled into the work dir, or a built binary (default: $DGRAM_BENCH,
#               else /work/shared/research/perf/dgram_bench.c); without it 'bare' is skipped
#   -k          check mode: stream: the receiver writes into a pipe to cksum (costs receiver CPU:
#               tables marked CHECK MODE); dgram64k, udp: cksum of the sink file after the run
#               (when nothing was lost; the clock has stopped); seed: both fastcat digests must
#               also equal xxhsum -H1 of the source (they are compared with each other always)
#   -P R,S      receiver CPU, sender CPU (default 0,1; 'none' = unpinned; bare: both on R,S)
#   -o FILE     CSV path (default contrib/bench/results/NAME-WORKLOAD-YYYYmmdd-HHMMSS.csv; table
#               beside it as .txt); with several workloads -WORKLOAD is put before .csv
#   -N NAME     results name prefix (default unix)
#   -T SEC      time-out per process (default 60 + SIZE/10)
#   -i MS       datagram runs whose receiver does not exit by itself end once the sink file has
#               not grown for MS ms after the sender exited (default 500)
#   -h          this help
# Needs: bash >= 5.1, coreutils, iproute2 (ss), util-linux (taskset), GNU time (apt: time); gcc for
# the bare and floor rows; xxhsum for seed -k.
# Every process started is killed by PID on exit; the work dir in /dev/shm is removed.
set -u
export LC_ALL=C

HOST=127.0.0.1
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WLS='' MIB_OPT='' ROUNDS=5 WARM=1 TOOLS='' BASE_OPT='' FASTCAT=$HERE/../../src/fastcat FC_EXTRA='' CHECK=0
PIN=0,1 CSV_OPT='' NAME=unix TMO_OPT='' IDLE_MS=500
DGB_SRC=${DGRAM_BENCH:-/work/shared/research/perf/dgram_bench.c}
ALL_WLS=stream,dgram64k,seed,udp
# shellcheck source=contrib/bench/lib.sh
. "$HERE/lib.sh"

while getopts "w:s:n:W:t:b:F:a:D:kP:o:N:T:i:h" o; do
	case $o in
	w) WLS=$OPTARG ;; s) MIB_OPT=$OPTARG ;; n) ROUNDS=$OPTARG ;; W) WARM=$OPTARG ;; t) TOOLS=$OPTARG ;;
	b) BASE_OPT=$OPTARG ;; F) FASTCAT=$OPTARG ;; a) FC_EXTRA=$OPTARG ;; D) DGB_SRC=$OPTARG ;;
	k) CHECK=1 ;; P) PIN=$OPTARG ;; o) CSV_OPT=$OPTARG ;; N) NAME=$OPTARG ;; T) TMO_OPT=$OPTARG ;;
	i) IDLE_MS=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || die "unexpected argument '$1' (-h for help)"
[ -z "$MIB_OPT" ] || [[ $MIB_OPT =~ ^[1-9][0-9]*$ ]] || die "-s wants a size in MiB"
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "-n wants a positive number"
[[ $WARM =~ ^[0-9]+$ ]] || die "-W wants a number"
[[ $IDLE_MS =~ ^[1-9][0-9]*$ ]] || die "-i wants milliseconds"
[ -z "$TMO_OPT" ] || [[ $TMO_OPT =~ ^[1-9][0-9]*$ ]] || die "-T wants seconds"
read -r -a FC_ARGS <<< "$FC_EXTRA"
[ "${BASH_VERSINFO[0]}${BASH_VERSINFO[1]}" -ge 51 ] || die "needs bash >= 5.1 (wait -n -p)"
command -v ss > /dev/null || die "needs ss (iproute2)"
bench_pin "$PIN"
bench_timer

# ---- workloads and tools
wl_tools() { # WORKLOAD -> default tools, optional tools
	case $1 in
	stream) echo "fastcat,nc.openbsd,socat,socat-b128k ncat" ;;
	dgram64k) echo "fastcat,socat,socat-b64k,nc.openbsd ncat" ;;
	seed) echo "fastcat,bare bare-plain" ;;
	udp) echo "fastcat,fastcat-reliable,nc.openbsd,socat,floor socat-b65507,ncat" ;;
	esac
}
wl_base() { case $1 in stream | udp) echo nc.openbsd ;; dgram64k) echo socat ;; seed) echo bare ;; esac; }
wl_mib() { case $1 in stream) echo 2048 ;; dgram64k | seed) echo 1024 ;; udp) echo 512 ;; esac; }

# spec TOOL ENDPOINT (unix path or UDP port) -> RECV=() SEND=() SOLO=() NEED, MISSING (why a
# NEED path may not be there; empty: not built yet), READY
# (stderr|ssx|path|ssu), SELF_END (1: the receiver exits at the end of the data by itself)
spec() {
	local t=$1 ep=$2
	RECV=() SEND=() SOLO=() SELF_END=0 READY=path NEED=${t%%-*} MISSING=
	case $W:$t in
	*:fastcat)
		local both=(--report=json "${FC_ARGS[@]}")
		NEED=$FASTCAT READY=stderr SELF_END=1
		case $W in
		stream) RECV=(-lU "$ep") SEND=(-U "$ep") ;;
		dgram64k) both+=(--dgram-size 64k) RECV=(-lUu "$ep") SEND=(-Uu "$ep") ;;
		seed) both+=(--dgram-size 1024 --checksum) RECV=(-lUu "$ep") SEND=(-Uu "$ep") ;;
		udp) both+=(--seq) RECV=(-lu "$HOST" "$ep") SEND=(-u "$HOST" "$ep") ;;
		esac
		RECV=("$FASTCAT" -v "${both[@]}" "${RECV[@]}") SEND=("$FASTCAT" "${both[@]}" "${SEND[@]}") ;;
	udp:fastcat-reliable)
		NEED=$FASTCAT READY=stderr SELF_END=1
		RECV=("$FASTCAT" -v --report=json "${FC_ARGS[@]}" -lu --reliable "$HOST" "$ep")
		SEND=("$FASTCAT" --report=json "${FC_ARGS[@]}" -u --reliable "$HOST" "$ep") ;;
	stream:nc.openbsd) READY=ssx SELF_END=1 RECV=(nc.openbsd -lU "$ep") SEND=(nc.openbsd -NU "$ep") ;;
	stream:socat | stream:socat-b128k)
		local b=()
		[ "$t" = socat-b128k ] && b=(-b 131072)
		READY=ssx SELF_END=1
		RECV=(socat "${b[@]}" -u "UNIX-LISTEN:$ep,unlink-early" STDOUT) SEND=(socat "${b[@]}" -u STDIN "UNIX-CONNECT:$ep") ;;
	stream:ncat) READY=ssx SELF_END=1 RECV=(ncat -lU --recv-only "$ep") SEND=(ncat -U --send-only "$ep") ;;
	dgram64k:socat | dgram64k:socat-b64k)
		local b=()
		[ "$t" = socat-b64k ] && b=(-b 65536)
		RECV=(socat "${b[@]}" -u "UNIX-RECV:$ep,unlink-early" STDOUT) SEND=(socat "${b[@]}" -u STDIN "UNIX-SENDTO:$ep") ;;
	dgram64k:nc.openbsd) RECV=(nc.openbsd -luU "$ep") SEND=(nc.openbsd -q 0 -uU "$ep") ;;
	dgram64k:ncat) RECV=(ncat -lU --udp --recv-only "$ep") SEND=(ncat -U --udp --send-only "$ep") ;;
	seed:bare | seed:bare-plain)
		local m=mmsg
		[ "$t" = bare-plain ] && m=plain
		NEED=$DGB MISSING="no dgram_bench ($DGB_SRC not found or not built; -D PATH)"
		READY=none SOLO=("$DGB" -f unix -m "$m" -s 1024 -n $((BYTES / 1024))) ;;
	udp:floor)
		NEED=$FLOOR MISSING="udp-floor.c not built (gcc)" READY=ssu RECV=("$FLOOR" "$HOST" "$ep") SEND=("$FASTCAT" -q 0 -u "$HOST" "$ep") ;;
	udp:nc.openbsd) READY=ssu RECV=(nc.openbsd -lu "$HOST" "$ep") SEND=(nc.openbsd -q 0 -u "$HOST" "$ep") ;;
	udp:socat | udp:socat-b65507)
		local b=()
		[ "$t" = socat-b65507 ] && b=(-b 65507)
		READY=ssu
		RECV=(socat "${b[@]}" -u "UDP-RECV:$ep,bind=$HOST" STDOUT) SEND=(socat "${b[@]}" -u STDIN "UDP-SENDTO:$HOST:$ep") ;;
	udp:ncat) READY=ssu RECV=(ncat -lu --recv-only "$HOST" "$ep") SEND=(ncat -u --send-only "$HOST" "$ep") ;;
	*) return 1 ;;
	esac
}

IFS=, read -r -a WANT_WL <<< "${WLS:-$ALL_WLS}"
for w in "${WANT_WL[@]}"; do [[ ,$ALL_WLS, == *,$w,* ]] || die "unknown workload '$w' (known: $ALL_WLS)"; done
[ ${#WANT_WL[@]} -gt 0 ] || die "no workload"
if [ -n "$TOOLS" ]; then # every name must be known to a selected workload
	IFS=, read -r -a WANT_T <<< "$TOOLS"
	for t in "${WANT_T[@]}"; do
		ok=0
		for w in "${WANT_WL[@]}"; do [[ " $(wl_tools "$w" | tr , ' ') " == *" $t "* ]] && ok=1; done
		[ $ok = 1 ] || die "no selected workload knows tool '$t' (-h lists them)"
	done
fi
[[ $("$FASTCAT" --help 2>&1) == *--report* ]] || echo "note: $FASTCAT is missing or does not look like fastcat (cd $(cd "$HERE/../.." && pwd) && make)" >&2

# ---- work dir, cleanup
bench_workdir

build_c() { # SOURCE NAME -> the program built into the work dir, or /nonexistent/NAME (a note said why)
	if command -v gcc > /dev/null && gcc -O2 -o "$WORK/$2" "$1" 2> "$WORK/gcc.err"; then echo "$WORK/$2"; else
		echo "note: cannot build $1: $(head -c 300 "$WORK/gcc.err" 2> /dev/null)" >&2
		echo "/nonexistent/$2"
	fi
}

DGB= FLOOR=
if [[ ,${WLS:-$ALL_WLS}, == *,seed,* ]]; then # the bare loop, built from the research notes' source
	if [ -f "$DGB_SRC" ] && [[ $DGB_SRC == *.c ]]; then DGB=$(build_c "$DGB_SRC" dgram_bench)
	elif [ -x "$DGB_SRC" ]; then DGB=$DGB_SRC
	else DGB=/nonexistent/dgram_bench; fi
fi
[[ ,${WLS:-$ALL_WLS}, == *,udp,* ]] && FLOOR=$(build_c "$HERE/udp-floor.c" udp-floor) # a ceiling

source_file() { # BYTES SINKBYTES -> path of a random file of BYTES (a prefix of a bigger one if any)
	local f=$WORK/source-$1 g avail_kib
	[ -f "$f" ] && { echo "$f"; return 0; }
	avail_kib=$(df -Pk /dev/shm | awk 'NR == 2 { print $4 }')
	[ "${avail_kib:-0}" -gt $((($1 + $2) / 1024 + 65536)) ] ||
		die "/dev/shm has ${avail_kib:-0} KiB free, needs $((($1 + $2) / 1048576)) MiB + 64 MiB"
	for g in "$WORK"/source-*; do
		[ -f "$g" ] && [ "${g##*-}" -gt "$1" ] && { head -c "$1" "$g" > "$f"; break; }
	done
	if [ ! -s "$f" ]; then
		echo "creating the source: $(($1 / 1048576)) MiB of random data in $f ..." >&2
		head -c "$1" /dev/urandom > "$f"
	fi
	[ "$(stat -c %s "$f")" -eq "$1" ] || die "could not create the source file"
	echo "$f"
}

csv_row() { # ROUND TOOL WALL_US RTIME STIME RRC SRC RBYTES STATUS NOTE DGRAMS LOST END
	local ru rs su ss_
	read -r ru rs < <(tail -n 1 "$4" 2> /dev/null)
	read -r su ss_ < <(tail -n 1 "$5" 2> /dev/null)
	awk -v r="$1" -v t="$2" -v b="$BYTES" -v w="$3" -v ru="$ru" -v rs="$rs" -v su="$su" -v ss="$ss_" \
		-v rrc="$6" -v src="$7" -v rb="$8" -v st="$9" -v note="${10//,/;}" -v dg="${11}" -v lost="${12}" -v end="${13}" 'BEGIN {
		ws = w / 1e6; got = (rb != "" ? rb : b)
		printf "%d,%s,%d,%.6f,%.1f,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", r, t, b, ws, (ws > 0 ? got / ws / 1e6 : 0),
			ru, rs, su, ss, rrc, src, rb, st, note, dg, lost, end }' >> "$CSV"
}
stop_receiver() { # PID -> TERM to the tool at the bottom of the chain, so that time/timeout report
	local p leaf=()
	for p in $(descendants "$1"); do [ -z "$(cat /proc/"$p"/task/*/children 2> /dev/null)" ] && leaf+=("$p"); done
	[ ${#leaf[@]} -gt 0 ] && kill -TERM "${leaf[@]}" 2> /dev/null
	for _ in $(seq 30); do kill -0 "$1" 2> /dev/null || break; sleep 0.1; done
	kill -0 "$1" 2> /dev/null && kill_started
	wait "$1" 2> /dev/null
}

# In a VM whose balloon takes back free pages (virtio free page reporting), the first touch of
# a page the host took back costs a host fault: a 1 GiB sink of such pages took 2.2 s more to
# write than one of pages just freed, whichever tool wrote it. So each run's sink is preceded
# by a file of as many bytes written and removed, and every tool gets pages just freed.
warm_sink_pages() {
	head -c "$BYTES" /dev/zero > "$WORK/warm" && rm -f "$WORK/warm"
}

run_solo() { # TOOL ROUND: one program that forks its own receiver (bare)
	local tool=$1 round=$2 t0 t1 spid src status=ok note='' got rbytes=''
	t0=$(usec)
	timed "$WORK/s.time" "${PINB[@]}" timeout -k 2 "$TMO" "${SOLO[@]}" < /dev/null > "$WORK/s.out" 2> "$WORK/s.err" &
	spid=$!
	PIDS+=("$spid")
	wait "$spid"
	src=$?
	t1=$(usec)
	PIDS=()
	# "unix mmsg  size   1024: sent N, received M (loss X%) in T s: ..."
	got=$(sed -n 's/.*received \([0-9]*\) (loss.*/\1/p' "$WORK/s.out")
	[ -n "$got" ] && rbytes=$((got * 1024))
	note="self-timed $(sed -n 's/.* in \([0-9.]*\) s:.*/\1/p' "$WORK/s.out") s; CPU of both processes in send columns"
	[ "$src" = 0 ] || status=fail note="$note; exit code $src"
	[ "$got" = $((BYTES / 1024)) ] || status=fail note="$note; received ${got:-?} of $((BYTES / 1024)) datagrams"
	[ $status = ok ] || echo "WARN $tool round $round: $note: $(head -c 300 "$WORK/s.err")" >&2
	csv_row "$round" "$tool" $((t1 - t0)) /dev/null "$WORK/s.time" - "$src" "$rbytes" "$status" "$note" "$got" "" exit
}

run_one() { # TOOL ROUND -> one CSV row; a line on stderr if it failed
	local tool=$1 round=$2 ep=0 note='' rbytes='' status=ok dgrams='' lost='' end=exit
	rm -f "$WORK"/r.* "$WORK"/s.* "$WORK/sink"
	SEQ=$((SEQ + 1))
	[ "$W" = udp ] || ep=$WORK/u$SEQ.sock
	spec "$tool" "$ep"
	[ ${#SOLO[@]} -gt 0 ] && { run_solo "$tool" "$round"; return; }
	if [ "$READY" = ssu ]; then
		ep=$(free_port u) || { echo "$tool: no free port" >&2; return 1; }
		spec "$tool" "$ep"
	fi
	local sink=/dev/null ckpid=
	if [ "$SINKFILE" = 1 ]; then
		sink=$WORK/sink
		warm_sink_pages
		: > "$sink"
	elif [ $CHECK = 1 ] && [ "$W" = stream ]; then
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
		case $READY in
		stderr) grep -q 'listening on' "$WORK/r.err" 2> /dev/null && ready=1 ;;
		ssx) [ -n "$(ss -Hlx "src = $ep" 2> /dev/null)" ] && ready=1 ;;
		path) [ -S "$ep" ] && ready=1 ;;
		ssu) [ -n "$(ss -Hlun "sport = :$ep" 2> /dev/null)" ] && ready=1 ;;
		esac
		[ $ready = 1 ] && break
		kill -0 "$rpid" 2> /dev/null || break
		sleep 0.01
	done
	if [ $ready = 1 ] && [ "$READY" = stderr ] && [ "$W" = udp ]; then
		ep=$(sed -n 's/.*listening on .*:\([0-9][0-9]*\)$/\1/p' "$WORK/r.err" | head -n 1)
		[ -n "$ep" ] && spec "$tool" "$ep" || ready=0
	fi
	if [ $ready = 0 ]; then
		echo "WARN $tool round $round: the receiver did not start: $(head -c 300 "$WORK/r.err")" >&2
		kill_started
		csv_row "$round" "$tool" 0 /dev/null /dev/null - - "" fail "receiver did not start" "" "" ""
		return 1
	fi
	local t0 t1 spid rrc src who rc
	t0=$(usec)
	timed "$WORK/s.time" "${PINS[@]}" timeout -k 2 "$TMO" "${SEND[@]}" < "$SRCFILE" > /dev/null 2> "$WORK/s.err" &
	spid=$!
	PIDS+=("$spid")
	wait -n -p who "$rpid" "$spid"
	rc=$?
	if [ "$who" = "$rpid" ]; then # the receiver ended (at the end of the data)
		rrc=$rc
		t1=$(usec)
		wait "$spid"
		src=$?
	else # the sender ended first: datagram receivers may never see an end; stop them once idle
		src=$rc
		if [ "$SINKFILE" = 1 ]; then
			local last=-1 tl now sz
			tl=$(usec)
			while kill -0 "$rpid" 2> /dev/null; do
				sz=$(stat -c %s "$sink")
				now=$(usec)
				if [ "$sz" != "$last" ]; then last=$sz tl=$now; elif [ $((now - tl)) -ge $((IDLE_MS * 1000)) ]; then end=idle; break; fi
				sleep 0.02
			done
		fi
		if [ $end = idle ]; then stop_receiver "$rpid"; rrc=stopped; else wait "$rpid"; rrc=$?; fi
		t1=$(usec)
	fi
	[ -n "$ckpid" ] && wait "$ckpid"
	PIDS=()
	[ "$W" = udp ] || rm -f "$ep"

	# bytes received; end of the clock: with a sink file, its last write (mtime) for every tool
	if [[ $tool == fastcat* ]]; then
		rbytes=$(json_num "$WORK/r.err" received bytes)
		dgrams=$(json_num "$WORK/r.err" received datagrams)
		lost=$(json_num "$WORK/r.err" received lost)
	fi
	if [ "$SINKFILE" = 1 ]; then
		local m
		rbytes=$(stat -c %s "$sink")
		m=$(stat -c %.6Y "$sink")
		[ "$rbytes" -gt 0 ] && t1=${m/./}
	fi

	# completeness
	if [ "$src" != 0 ]; then status=fail note="sender exit code $src"; fi
	if [ "$rrc" = stopped ]; then
		if [ "$SELF_END" = 1 ] && [ "$W" = udp ]; then note="${note:+$note; }receiver stopped after ${IDLE_MS} ms idle (EOF datagram lost)"
		elif [ "$SELF_END" = 1 ]; then status=fail note="${note:+$note; }receiver did not end: stopped after ${IDLE_MS} ms idle"
		else note="${note:+$note; }receiver stopped after ${IDLE_MS} ms idle"; fi
	elif [ "$rrc" != 0 ] && ! { [ "$W" = udp ] && [ "$rrc" = 5 ] && grep -q 'datagrams lost' "$WORK/r.err"; }; then
		status=fail note="${note:+$note; }receiver exit code $rrc"
	fi
	if [ -n "$ckpid" ]; then
		local got
		got=$(cat "$WORK/r.cksum" 2> /dev/null)
		rbytes=${got#* }
		if [ "$got" = "$SRC_CKSUM" ]; then note="${note:+$note; }cksum ok"; else
			status=fail note="${note:+$note; }cksum '$got' != source '$SRC_CKSUM'"
		fi
	fi
	if [ "$SINKFILE" = 1 ] && [ $CHECK = 1 ] && [ "$rbytes" = "$BYTES" ]; then
		if [ "$(cksum < "$sink")" = "$SRC_CKSUM" ]; then note="${note:+$note; }cksum ok"; else
			status=fail note="${note:+$note; }cksum of the sink != source"
		fi
	fi
	if [ -z "$rbytes" ] || [ "$rbytes" = 0 ]; then
		[ $CHECK = 1 ] || [ "$SINKFILE" = 1 ] || [[ $tool == fastcat* ]] && status=fail note="${note:+$note; }nothing received"
	elif [ "$rbytes" != "$BYTES" ]; then
		note="${note:+$note; }received $rbytes of $BYTES bytes"
		# a loss is a result for UDP, and for the stock tools over Unix datagrams; a failure otherwise
		[ "$W" = udp ] || { [ "$W" = dgram64k ] && [[ $tool != fastcat* ]]; } || status=fail
	fi
	[ -n "$lost" ] && [ "$lost" != 0 ] && note="${note:+$note; }--seq: $lost datagrams lost"
	if [ "$W" = seed ] && [[ $tool == fastcat* ]]; then
		local rx sx
		rx=$(json_num "$WORK/r.err" received xxh64) sx=$(json_num "$WORK/s.err" sent xxh64)
		[ "$dgrams" = $((BYTES / 1024)) ] || status=fail note="${note:+$note; }received ${dgrams:-?} datagrams, not $((BYTES / 1024))"
		if [ -z "$rx" ] || [ "$rx" != "$sx" ]; then status=fail note="${note:+$note; }xxh64 received '$rx' != sent '$sx'"
		elif [ $CHECK = 1 ] && [ "$rx" != "$SRC_XXH" ]; then status=fail note="${note:+$note; }xxh64 $rx != source $SRC_XXH"
		else note="${note:+$note; }xxh64 $rx both ends${SRC_XXH:+ = source}"; fi
	fi
	if [ $status != ok ]; then
		echo "WARN $tool round $round: $note; recv: $(tr '\n' ' ' < "$WORK/r.err" | head -c 300) send: $(tr '\n' ' ' < "$WORK/s.err" | head -c 300)" >&2
	fi
	csv_row "$round" "$tool" $((t1 - t0)) "$WORK/r.time" "$WORK/s.time" "$rrc" "$src" "$rbytes" "$status" "$note" "$dgrams" "$lost" "$end"
}

summary() { # CSV -> markdown table of the measured rounds (MODE: plain | loss | time)
	awk -F, -v base="$BASE" -v order="${SEL[*]}" -v mode="$1" '
	function median(a, n,   i, j, t, x) {
		for (i = 1; i <= n; i++) x[i] = a[i]
		for (i = 2; i <= n; i++) { t = x[i]; for (j = i - 1; j >= 1 && x[j] > t; j--) x[j + 1] = x[j]; x[j + 1] = t }
		return n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2
	}
	NR > 1 && $1 >= 1 {
		all[$2]++
		if ($13 != "ok") next
		k = ++n[$2]; got = ($12 != "" ? $12 : $3); gib = got / 1073741824
		mbs[$2, k] = $5; wall[$2, k] = $4; ls[$2, k] = 100 * (1 - got / $3)
		rc[$2, k] = ($6 + $7) / gib; sc[$2, k] = ($8 + $9) / gib; norc[$2] = ($6 == "")
		byround[$1, $2] = (mode == "time" ? $4 : $5); rounds[$1] = 1
	}
	END {
		rh = (mode == "time" ? "wall ratio vs " : "ratio vs ") base; rw = length(rh); ch = "CPU s/GiB recv + send"
		dash = "----------------------------------------"
		if (mode == "time") {
			fmt = "| %-14s | %7s | %-13s | %7s | %" rw "s | %21s | %5s |\n"
			printf fmt, "tool", "wall s", "min-max", "MB/s", rh, ch, "runs"
			printf "|%s|%s|%s|%s|%s|%s|%s|\n", substr(dash, 1, 16), "--------:", substr(dash, 1, 15), "--------:", substr(dash, 1, rw + 1) ":", substr(dash, 1, 22) ":", "------:"
		} else {
			lh = (mode == "loss" ? "| loss % median (max) " : "")
			fmt = "| %-14s | %7s | %-11s | %" rw "s | %21s " (mode == "loss" ? "| %19s " : "%s") "| %5s |\n"
			printf fmt, "tool", "MB/s", "min-max", rh, ch, (mode == "loss" ? "loss % median (max)" : ""), "runs"
			printf "|%s|%s|%s|%s|%s|%s------:|\n", substr(dash, 1, 16), "--------:", substr(dash, 1, 13), substr(dash, 1, rw + 1) ":", substr(dash, 1, 22) ":", (mode == "loss" ? "--------------------:|" : "")
		}
		cnt = split(order, names, " ")
		for (i = 1; i <= cnt; i++) {
			t = names[i]; m = n[t]
			if (!m) {
				if (mode == "time") printf fmt, t, "-", "-", "-", "-", "-", "0/" all[t]
				else printf fmt, t, "-", "-", "-", "-", (mode == "loss" ? "-" : ""), "0/" all[t]
				continue
			}
			lo = 1e18; hi = 0; lmax = 0
			for (k = 1; k <= m; k++) {
				v[k] = (mode == "time" ? wall[t, k] : mbs[t, k]); if (v[k] < lo) lo = v[k]; if (v[k] > hi) hi = v[k]
				u[k] = mbs[t, k]; a[k] = rc[t, k]; b[k] = sc[t, k]; l[k] = ls[t, k]; if (l[k] > lmax) lmax = l[k]
			}
			q = 0
			for (r in rounds) if (((r, base) in byround) && ((r, t) in byround) && byround[r, base] > 0) rr[++q] = byround[r, t] / byround[r, base]
			ratio = (q ? sprintf("%.2f", median(rr, q)) : "-")
			cpu = (norc[t] ? sprintf("%.2f (both ends)", median(b, m)) : sprintf("%.2f + %.2f", median(a, m), median(b, m)))
			if (mode == "time")
				printf fmt, t, sprintf("%.3f", median(v, m)), sprintf("%.3f-%.3f", lo, hi), sprintf("%.0f", median(u, m)), ratio, cpu, m "/" all[t]
			else
				printf fmt, t, sprintf("%.0f", median(v, m)), sprintf("%.0f-%.0f", lo, hi), ratio, cpu,
					(mode == "loss" ? sprintf("%.2f (%.2f)", median(l, m), lmax) : ""), m "/" all[t]
			delete rr; delete v; delete u; delete a; delete b; delete l
		}
	}' "$CSV"
}

run_workload() { # W is set
	local mib t base_ok=0 sinkb=0 what mode
	mib=${MIB_OPT:-$(wl_mib "$W")}
	BYTES=$((mib * 1048576))
	TMO=${TMO_OPT:-$((60 + mib / 10))}
	[ "$W" = seed ] && [ $((BYTES % 1024)) != 0 ] && die "seed: SIZE must be a multiple of 1 KiB"
	SINKFILE=0
	case $W in dgram64k | udp) SINKFILE=1 sinkb=$BYTES ;; esac

	# selected tools; the missing ones are skipped with a note
	local def opt
	read -r def opt <<< "$(wl_tools "$W")"
	IFS=, read -r -a WANT <<< "${TOOLS:-$def}"
	SEL=()
	for t in "${WANT[@]}"; do
		[ -n "$t" ] || continue
		[[ ,$def,$opt, == *,$t,* ]] || continue
		spec "$t" 0 || continue
		if [[ $NEED == */* ]]; then
			if [ ! -x "$NEED" ]; then
				echo "note: $W: skipping $t: ${MISSING:-$NEED not found (cd $(cd "$HERE/../.." && pwd) && make)}" >&2
				continue
			fi
		elif ! command -v "$NEED" > /dev/null; then
			echo "note: $W: skipping $t: $NEED is not installed" >&2
			continue
		fi
		SEL+=("$t")
	done
	[ ${#SEL[@]} -gt 0 ] || { echo "note: $W: no tool to run" >&2; return 0; }
	BASE=$(wl_base "$W")
	for t in "${SEL[@]}"; do [ "$t" = "$BASE_OPT" ] && BASE=$BASE_OPT; done
	for t in "${SEL[@]}"; do [ "$t" = "$BASE" ] && base_ok=1; done
	[ $base_ok = 1 ] || BASE=${SEL[0]}

	SRCFILE=$(source_file "$BYTES" "$sinkb") || exit 2
	SRC_CKSUM="" SRC_XXH=""
	[ $CHECK = 1 ] && [ "$W" != seed ] && SRC_CKSUM=$(cksum < "$SRCFILE")
	if [ $CHECK = 1 ] && [ "$W" = seed ]; then
		command -v xxhsum > /dev/null || die "seed -k needs xxhsum (apt: xxhash)"
		SRC_XXH=$(xxhsum -H1 < "$SRCFILE" | cut -d' ' -f1)
	fi

	local stamp
	stamp=$(date +%Y%m%d-%H%M%S)
	if [ -z "$CSV_OPT" ]; then
		mkdir -p "$HERE/results" || die "cannot create $HERE/results"
		CSV=$HERE/results/$NAME-$W-$stamp.csv
	elif [ ${#WANT_WL[@]} -gt 1 ]; then
		CSV=${CSV_OPT%.csv}-$W.csv
	else
		CSV=$CSV_OPT
	fi
	local txt=${CSV%.csv}.txt
	echo "round,tool,bytes,wall_s,mb_s,recv_user_s,recv_sys_s,send_user_s,send_sys_s,recv_rc,send_rc,recv_bytes,status,note,datagrams,lost,end" > "$CSV" ||
		die "cannot write $CSV"

	case $W in
	stream) what="${mib} MiB random from /dev/shm -> AF_UNIX stream -> /dev/null" mode=plain ;;
	dgram64k) what="${mib} MiB random from /dev/shm -> AF_UNIX datagrams (fastcat 64 KiB) -> /dev/shm file; wall ends at the sink's last write" mode=loss ;;
	seed) what="$((BYTES / 1024)) datagrams of 1024 B (${mib} MiB) from /dev/shm -> AF_UNIX datagram -> /dev/null; fastcat --dgram-size 1024 --checksum; bare = dgram_bench (both processes on CPUs ${PIN})" mode=time ;;
	udp) what="${mib} MiB random from /dev/shm -> UDP $HOST -> /dev/shm file; goodput = bytes received / wall; wall ends at the sink's last write" mode=loss ;;
	esac
	local git_rev fc_ver header
	git_rev=$(git -C "$HERE" describe --always --dirty 2> /dev/null || echo "?")
	fc_ver=$("$FASTCAT" -V 2> /dev/null | head -n 1)
	header="# $NAME-$W: $what; $ROUNDS rounds + $WARM warm-up, interleaved; pin recv,send=${PIN}; $(nproc) CPUs, $(uname -r); ${fc_ver:-fastcat} (git $git_rev)${FC_EXTRA:+; fastcat args: $FC_EXTRA}; $(date '+%F %T')"
	if [ $CHECK = 1 ]; then
		case $W in
		stream) header="$header
# CHECK MODE (-k): receivers write into a pipe to cksum; timings are not comparable with normal runs" ;;
		seed) header="$header
# CHECK MODE (-k): fastcat's digests compared with xxhsum -H1 of the source (timings unaffected)" ;;
		*) header="$header
# CHECK MODE (-k): the sink file is compared with the source by cksum after each run (timings unaffected)" ;;
		esac
	fi
	echo "$header" >&2
	echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
	for ((r = 1 - WARM; r <= ROUNDS; r++)); do
		for t in "${SEL[@]}"; do
			run_one "$t" "$r"
			sleep 0.1
		done
		echo "$W: round $r done ($([ $r -lt 1 ] && echo warm-up || echo "of $ROUNDS"))" >&2
	done
	{
		echo "$header"
		echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg); failures: $(awk -F, 'NR > 1 && $13 != "ok"' "$CSV" | wc -l)"
		echo
		summary $mode
		echo
	} | tee "$txt"
	echo "runs: $CSV" >&2
	echo "table: $txt" >&2
	awk -F, 'NR > 1 && $13 != "ok" { bad = 1 } END { exit bad }' "$CSV" || FAILED=1
}

SEQ=0 FAILED=0
for W in "${WANT_WL[@]}"; do
	run_workload
	rm -f "$WORK"/sink
done
exit $FAILED
