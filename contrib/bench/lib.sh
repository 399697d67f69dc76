# lib.sh - helpers shared by the bench scripts (sourced, not run): messages, CPU pinning,
# per-end CPU timing, and killing every process a run started, by PID.
# The caller sets PIDS+=(pid) for what it starts and WORK to its scratch directory.
# shellcheck shell=bash

usage() { sed -n '2,/^set -u/p' "$0" | sed '/^set -u/d;s/^# \{0,1\}//'; }
die() { echo "${0##*/}: $*" >&2; exit 2; }

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
timed() { # TIMEFILE CMD... -> exec CMD under a timer that writes "user sys" seconds to TIMEFILE
	local tf=$1
	shift
	if [ "$TIMER" = gnu ]; then
		exec /usr/bin/time -f '%U %S' -o "$tf" "$@"
	fi
	# shellcheck disable=SC2016
	exec bash -c '"$@"; rc=$?; times > "$0.raw"; awk '\''NR == 2 { for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); printf "%.3f%s", t[1] * 60 + t[2], (i == 1 ? " " : "\n") } }'\'' "$0.raw" > "$0"; exit $rc' "$tf" "$@"
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

usec() { echo "${EPOCHREALTIME/./}"; }
