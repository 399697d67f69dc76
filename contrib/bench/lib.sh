# lib.sh - helpers shared by the bench scripts (sourced, not run): messages, CPU pinning,
# per-end CPU timing, killing every process a run started (by PID), free ports, fastcat's JSON.
# The caller sets PIDS+=(pid) for what it starts and WORK to its scratch directory.
# shellcheck shell=bash

usage() { sed -n '2,/^set -u/p' "$0" | sed '/^set -u/d;s/^# \{0,1\}//'; }
die() { echo "${0##*/}: $*" >&2; exit 2; }
# bench_operands_sizes "$@": after getopts, no operand left, and MIB and ROUNDS positive integers.
bench_operands_sizes() {
	[ $# -eq 0 ] || die "unexpected argument '$1' (-h for help)"
	[[ $MIB =~ ^[1-9][0-9]*$ ]] || die "-s wants a size in MiB"
	[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "-n wants a positive number"
}

# shellcheck disable=SC2034 # PINB: only unix.sh's seed workload uses it
bench_pin() { # R,S | none
	case $1 in
	none) PINR=() PINS=() PINB=() ;;
	*,*)
		command -v taskset > /dev/null || die "needs taskset (util-linux) for -P; use -P none"
		PINR=(taskset -c "${1%,*}") PINS=(taskset -c "${1#*,}") PINB=(taskset -c "$1")
		{ "${PINR[@]}" true && "${PINS[@]}" true; } || die "bad -P $1 (this machine has $(nproc) CPUs)" ;;
	*) die "-P wants R,S or none" ;;
	esac
}

# CPU time of one end. GNU time reports the rusage that wait4() returns for its child, which
# includes the child's own reaped children (timeout -> tool). Without it, a bash wrapper's
# `times` gives the same kernel figures (children line), at ms resolution.
bench_timer() {
	if [ "${BENCH_TIMER:-}" != bash ] && [ -x /usr/bin/time ] && /usr/bin/time -f '%U %S' -o /dev/null true 2> /dev/null; then
		TIMER=gnu
	else
		TIMER=bash
		echo "note: GNU time not found (apt-get install time); using bash 'times' around each end" >&2
	fi
}
# GNU time's format: "user sys" seconds; compare.sh sets '%U %S %M' (+ peak RSS in KiB; the bash
# fallback cannot measure it and writes "user sys" only)
TIMER_FMT='%U %S'
timer_cmd() { # TIMEFILE -> TIMER_CMD=(...): a command prefix that runs the rest of the line and writes TIMER_FMT to TIMEFILE
	if [ "$TIMER" = gnu ]; then
		TIMER_CMD=(/usr/bin/time -f "$TIMER_FMT" -o "$1")
		return 0
	fi
	# shellcheck disable=SC2016
	TIMER_CMD=(bash -c '"$@"; rc=$?; times > "$0.raw"; awk '\''NR == 2 { for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); printf "%.3f%s", t[1] * 60 + t[2], (i == 1 ? " " : "\n") } }'\'' "$0.raw" > "$0"; exit $rc' "$1")
}
timed() { # TIMEFILE CMD... -> exec CMD under a timer that writes "user sys" seconds to TIMEFILE
	timer_cmd "$1"
	shift
	exec "${TIMER_CMD[@]}" "$@"
}

PIDS=()
WORK=
descendants() { # PID -> its descendants, depth first
	local c
	# shellcheck disable=SC2013 # the file is one line of PIDs
	for c in $(cat /proc/"$1"/task/*/children 2> /dev/null); do
		echo "$c"
		descendants "$c"
	done
}
kill_started() { # every process started for the current run, and their children, by PID
	local all=() p
	for p in "${PIDS[@]}"; do
		kill -0 "$p" 2> /dev/null || continue
		all+=("$p")
		mapfile -t -O "${#all[@]}" all < <(descendants "$p")
	done
	PIDS=()
	[ ${#all[@]} -gt 0 ] || return 0
	kill -TERM "${all[@]}" 2> /dev/null
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		local alive=()
		for p in "${all[@]}"; do kill -0 "$p" 2> /dev/null && alive+=("$p"); done
		[ ${#alive[@]} -gt 0 ] || break
		sleep 0.1
	done
	for p in "${all[@]}"; do kill -0 "$p" 2> /dev/null && kill -KILL "$p" 2> /dev/null; done
	wait 2> /dev/null
	return 0
}
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	trap - EXIT INT TERM HUP
	kill_started
	[ -n "$WORK" ] && rm -rf "$WORK"
}

# bench_workdir: the traps that clean up (EXIT, INT, TERM, HUP) and a fresh work dir in /dev/shm
# (sets WORK). bench_source then writes BYTES (MIB MiB) of random data there as the source file
# (sets SRCFILE, and SRC_CKSUM when CHECK=1).
bench_workdir() {
	trap cleanup EXIT
	trap 'echo "interrupted" >&2; exit 130' INT
	trap 'echo "terminated" >&2; exit 143' TERM
	trap 'echo "hung up" >&2; exit 129' HUP
	WORK=$(mktemp -d /dev/shm/fastcat-bench.XXXXXX) || die "mktemp failed"
}
# shellcheck disable=SC2034 # SRCFILE, SRC_CKSUM: read by the scripts that source this file
bench_source() {
	local avail_kib
	avail_kib=$(df -Pk /dev/shm | awk 'NR == 2 { print $4 }')
	[ "${avail_kib:-0}" -gt $((MIB * 1024 + 65536)) ] || die "/dev/shm has ${avail_kib:-0} KiB free, needs $MIB MiB + 64 MiB"
	SRCFILE=$WORK/source
	echo "creating the source: $MIB MiB of random data in $SRCFILE ..." >&2
	head -c "$BYTES" /dev/urandom > "$SRCFILE"
	[ "$(stat -c %s "$SRCFILE")" -eq "$BYTES" ] || die "could not create the source file"
	SRC_CKSUM=
	if [ "$CHECK" = 1 ]; then SRC_CKSUM=$(cksum < "$SRCFILE"); fi
}

json_bytes() { # KEY -> the first "bytes" after "KEY" in iperf3's JSON (s.out)
	awk -v k="\"$1\"" 'index($0, k) { f = 1 } f && /"bytes"/ { gsub(/[^0-9]/, ""); print; exit }' "$WORK/s.out"
}
# check_delivery CKPID: in the caller's run_one, judge what arrived. With a cksum reader (check
# mode) its result against the source's sets rbytes, status and note; for iperf3 (MEM=1) its
# own counts are noted. Uses WORK, SRC_CKSUM, MEM, CHECK.
# shellcheck disable=SC2034 # rbytes, status: the caller's locals (bash scoping is dynamic)
check_delivery() {
	if [ -n "$1" ]; then
		local got
		got=$(cat "$WORK/r.cksum" 2> /dev/null)
		rbytes=${got#* }
		if [ "$got" = "$SRC_CKSUM" ]; then note="${note:+$note; }cksum ok"; else
			status=fail note="${note:+$note; }cksum '$got' != source '$SRC_CKSUM'"
		fi
	elif [ "$MEM" = 1 ] && [ "$CHECK" = 1 ]; then
		# iperf3 is no stream tool: -n stops at a block boundary >= SIZE and the server stops
		# counting at the end of the test, so its counts are approximate: noted, not checked
		note="${note:+$note; }iperf3 json: sent $(json_bytes sum_sent) recv $(json_bytes sum_received)"
	fi
}
free_port() { # [t|u] -> a port nothing uses (no listener, no connection, no TIME_WAIT), below the ephemeral range
	local p
	for _ in $(seq 100); do
		p=$((20000 + RANDOM % 12000))
		[ -z "$(ss -H"${1:-t}"an "( sport = :$p or dport = :$p )" 2> /dev/null)" ] && { echo "$p"; return 0; }
	done
	return 1
}
json_num() { # FILE SECTION KEY -> KEY's value inside "SECTION":{...} of the last JSON line of FILE (number or word)
	grep '^{' "$1" 2> /dev/null | tail -n 1 | sed -n "s/.*\"$2\":{[^}]*\"$3\":\"\{0,1\}\([0-9A-Za-z._-]*\).*/\1/p"
}

usec() { echo "${EPOCHREALTIME/./}"; }

bench_lab_root() { # the namespace labs need bash >= 5 (EPOCHREALTIME) and root
	[ "${BASH_VERSINFO[0]}" -ge 5 ] || die "needs bash >= 5 (EPOCHREALTIME)"
	[ "$(id -u)" = 0 ] || die "needs root (network namespaces)"
}

bench_fastcat() { # [OPTION]: $FASTCAT made absolute, built, and (with OPTION) one that has it
	case $FASTCAT in /*) ;; *) FASTCAT=$PWD/$FASTCAT ;; esac
	[ -x "$FASTCAT" ] || die "$FASTCAT not found (cd $TOP && make)"
	[ -z "${1:-}" ] || "$FASTCAT" --help-all 2>&1 | grep -q -- "$1" || die "this fastcat has no $1"
}

bench_counts() { # LIST -> MAXN, the largest of LIST's receiver counts (each 1 to 32)
	local n
	MAXN=0
	for n in $1; do
		[[ $n =~ ^[1-9][0-9]*$ ]] && [ "$n" -le 32 ] || die "-N wants counts of 1 to 32"
		[ "$n" -gt "$MAXN" ] && MAXN=$n
	done
}
