#!/usr/bin/env bash
# wan-matrix.sh - fastcat -P auto against every fixed stripe count, path by path, over a matrix
# of WAN lab paths (RTT, rate, MTU, congestion control); by hand, as root, not part of make check.
#
# Each path is one run of wan.sh (its own lab, source file and interleaved rounds) with the tools
# fastcat (= -P 1, "plain"), fastcat-P2, -P4, -P8, -P16 and fastcat-Pauto, kept in the output dir
# as pN-RTTms-RATE-MTU-CC.{csv,txt,tsv,png,log}. Then one table, a row a path: the median Mbit/s
# of each count, the best fixed count (1 to 16) and its Mbit/s, -P auto as % of it and of plain,
# and a verdict: "ok" when auto >= 85 % of the best fixed count and auto >= plain (within 5 %,
# the noise of one run: where one connection fills the link, auto is plain), else "MISS"
# ("-" when a cell is missing). Failed cells are "-". The table goes to stdout and DIR/matrix.md,
# the figures to DIR/matrix.tsv and, with python3, a plot to DIR/matrix.png (plot-matrix.py).
#
# Usage: wan-matrix.sh [options]
#   -n ROUNDS   rounds per path (wan.sh -n; default 1)
#   -s MIB      bytes per run, the same for every path (default: 12 s at the path's link rate,
#               rounded up to a MiB, at most -S: 716 MiB at 500mbit, 1431 at 1gbit, 2862 at 2gbit)
#   -S MIB      the most the default size may be (default 3072)
#   -P PATHS    a subset of the default matrix by index (1,3,8 or 2-5), or a file of path lines
#   -o DIR      output dir (default: a new /tmp/wan-matrix.XXXXXX)
#   -F PATH     fastcat binary (default: src/fastcat of this tree), passed to wan.sh
#   -w 'ARGS'   more wan.sh options for every path (word-split), e.g. -w '-L 0.001'
#   -q          quick (a smoke test, no numbers to keep): every path at -s 32 (unless -s is
#               given), tools fastcat and fastcat-Pauto only
#   -l          list the paths (the default matrix, or -P's) with size and a time guess, and exit
#   -h          this help
# A path line is "RTT_MS RATE MTU CC", e.g. "50 1gbit 9000 bbr"; RTT is the round trip, wan.sh
# gets half of it as its one-way -d. In a -P file, # starts a comment and empty lines are skipped.
# Every size is also capped to what fits in memory: the source file sits in /dev/shm (RAM), so a
# path whose size does not fit in MemAvailable less 1 GiB (or /dev/shm) runs smaller, with a note.
# Time: every run plus making each path's source (~1 s per 200 MiB); -l makes a guess. The
# default matrix at one round: 9 paths x 6 runs of >= 12 s each (more where few connections are
# window-bound or the lab cannot carry the rate): 20 minutes at least, per round.
# Exit status: 0 when every run of every path passed, 1 if any failed (wan.sh's exit status),
# 2 on a usage error, 128 + N after signal N (the table of the paths done is still written).
# Needs: root and what wan.sh needs (the lab's delay line where the kernel has no netem). On exit
# or a signal it stops the wan.sh it started (which takes its lab down and removes its source),
# then removes whatever that wan.sh left behind.
set -u
export LC_ALL=C

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
ROUNDS=1 FIXED_MIB='' CAP_MIB=3072 SUBSET='' OUT='' FASTCAT=$TOP/src/fastcat WAN_EXTRA='' QUICK=0 LIST=0
SECONDS_AT_RATE=12
TOOLS=fastcat,fastcat-P2,fastcat-P4,fastcat-P8,fastcat-P16,fastcat-Pauto

# The default matrix, a path a line: RTT_MS RATE MTU CC (index = line number).
DEFAULT_PATHS=$(
	cat << 'EOF'
10 1gbit 1500 cubic
10 2gbit 9000 bbr
50 500mbit 1500 cubic
50 1gbit 9000 bbr
50 2gbit 9000 cubic
200 500mbit 9000 bbr
200 1gbit 1500 cubic
100 1gbit 9000 cubic
2 1gbit 1500 cubic
EOF
)

# shellcheck source=contrib/bench/lib.sh
. "$HERE/lib.sh"
while getopts "n:s:S:P:o:F:w:qlh" o; do
	case $o in
	n) ROUNDS=$OPTARG ;; s) FIXED_MIB=$OPTARG ;; S) CAP_MIB=$OPTARG ;; P) SUBSET=$OPTARG ;;
	o) OUT=$OPTARG ;; F) FASTCAT=$OPTARG ;; w) WAN_EXTRA=$OPTARG ;; q) QUICK=1 ;; l) LIST=1 ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || die "unexpected argument '$1' (-h for help)"
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "-n wants a positive number"
[ -z "$FIXED_MIB" ] || [[ $FIXED_MIB =~ ^[1-9][0-9]*$ ]] || die "-s wants a size in MiB"
[[ $CAP_MIB =~ ^[1-9][0-9]*$ ]] || die "-S wants a size in MiB"
if [ "$QUICK" = 1 ]; then
	FIXED_MIB=${FIXED_MIB:-32}
	TOOLS=fastcat,fastcat-Pauto
fi
read -r -a WAN_ARGS <<< "$WAN_EXTRA"
case $FASTCAT in /*) ;; *) FASTCAT=$PWD/$FASTCAT ;; esac

# ---- the paths: P_IDX P_RTT P_RATE P_MTU P_CC, one element a path
P_IDX=() P_RTT=() P_RATE=() P_MTU=() P_CC=()
add_path() { # INDEX "RTT RATE MTU CC" WHERE
	local rtt rate mtu cc extra
	read -r rtt rate mtu cc extra <<< "$2"
	{ [ -n "$cc" ] && [ -z "$extra" ]; } || die "$3: want 'RTT_MS RATE MTU CC', got '$2'"
	{ [[ $rtt =~ ^[0-9]+(\.[0-9]+)?$ ]] && awk -v r="$rtt" 'BEGIN { exit !(r > 0) }'; } ||
		die "$3: RTT '$rtt' is not a number of ms above 0"
	[[ $rate =~ ^[0-9]+(\.[0-9]+)?[kmg]?bit$ ]] || die "$3: rate '$rate' is not like 500mbit or 1gbit"
	{ [[ $mtu =~ ^[0-9]+$ ]] && [ "$mtu" -ge 1280 ] && [ "$mtu" -le 65535 ]; } || die "$3: MTU '$mtu' is not 1280 to 65535"
	[[ $cc =~ ^[a-z][a-z0-9_]*$ ]] || die "$3: '$cc' is not a congestion control name"
	P_IDX+=("$1") P_RTT+=("$rtt") P_RATE+=("$rate") P_MTU+=("$mtu") P_CC+=("$cc")
}
mapfile -t DEF < <(printf '%s\n' "$DEFAULT_PATHS")
if [ -z "$SUBSET" ]; then
	for i in "${!DEF[@]}"; do add_path $((i + 1)) "${DEF[i]}" "default path $((i + 1))"; done
elif [[ $SUBSET =~ ^[0-9,-]+$ ]]; then
	declare -A seen=()
	IFS=, read -r -a parts <<< "$SUBSET"
	for part in "${parts[@]}"; do
		[ -n "$part" ] || continue
		if [[ $part =~ ^([0-9]+)-([0-9]+)$ ]]; then lo=${BASH_REMATCH[1]} hi=${BASH_REMATCH[2]}
		elif [[ $part =~ ^[0-9]+$ ]]; then lo=$part hi=$part
		else die "-P: '$part' is no index or range"; fi
		{ [ "$lo" -ge 1 ] && [ "$hi" -le ${#DEF[@]} ] && [ "$lo" -le "$hi" ]; } ||
			die "-P: '$part': the default matrix has paths 1 to ${#DEF[@]} (-l lists them)"
		for ((i = lo; i <= hi; i++)); do
			[ -z "${seen[$i]:-}" ] || continue
			seen[$i]=1
			add_path "$i" "${DEF[i - 1]}" "default path $i"
		done
	done
elif [ -f "$SUBSET" ] && [ -r "$SUBSET" ]; then
	n=0 ln=0
	while IFS= read -r line || [ -n "$line" ]; do
		ln=$((ln + 1))
		line=${line%%#*}
		[[ $line =~ ^[[:space:]]*$ ]] && continue
		n=$((n + 1))
		add_path "$n" "$line" "$SUBSET line $ln"
	done < "$SUBSET"
else
	die "-P wants indexes (1,3,8 or 2-5) or a readable file of path lines, not '$SUBSET'"
fi
[ ${#P_IDX[@]} -gt 0 ] || die "no path to run"

rate_mbit() { awk -v r="$1" 'BEGIN { u = tolower(r); sub(/bit$/, "", u); m = 1e-6
	if (u ~ /k$/) m = 1e-3; else if (u ~ /m$/) m = 1; else if (u ~ /g$/) m = 1e3
	sub(/[kmg]$/, "", u); printf "%g\n", u * m }'; }
rate_label() { awk -v m="$(rate_mbit "$1")" 'BEGIN { if (m >= 1000) printf "%gG\n", m / 1000; else printf "%gM\n", m }'; }
half() { awk -v r="$1" 'BEGIN { printf "%g\n", r / 2 }'; }
# path_mib RATE -> the default size: SECONDS_AT_RATE at the link rate, rounded up to a MiB, at most CAP_MIB
path_mib() {
	[ -z "$FIXED_MIB" ] || { echo "$FIXED_MIB"; return; }
	awk -v m="$(rate_mbit "$1")" -v s="$SECONDS_AT_RATE" -v cap="$CAP_MIB" 'BEGIN {
		b = m * 1e6 / 8 * s / 1048576; n = int(b); if (n < b) n++; if (n < 1) n = 1
		print (n > cap ? cap : n) }'
}
# mem_mib -> the largest source that fits now: MemAvailable less 1 GiB (the lab's queues, socket
# buffers and everything else on the machine), and /dev/shm's free space less bench_source's 64 MiB
mem_mib() {
	local avail shm
	avail=$(awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo)
	shm=$(df -Pk /dev/shm 2> /dev/null | awk 'NR == 2 { print int($4 / 1024) }')
	avail=$((${avail:-0} - 1024)) shm=$((${shm:-0} - 64 - 16))
	echo $((avail < shm ? avail : shm))
}
# est_s RTT RATE MIB -> a guess at one path's time (one round): each run at 90 % of the link rate,
# or at what its connections carry if that is less: two thirds of the lab's 4 MiB send buffer per
# round trip each (README: 224 Mbit/s at 100 ms); auto at 90 % of the link rate; + 2 s a run
# (setup, the pause between runs) + making the source (200 MiB/s)
est_s() {
	awk -v rtt="$1" -v m="$(rate_mbit "$2")" -v mib="$3" -v tools="$TOOLS" 'BEGIN {
		n = split(tools, t, ","); s = mib / 200
		for (i = 1; i <= n; i++) {
			c = t[i]; sub(/^fastcat-?P?/, "", c); if (c == "") c = 1
			r = 0.9 * m; if (c != "auto") { w = c * 4194304 * 8 / (rtt / 1000) / 1e6 * 2 / 3; if (w < r) r = w }
			s += mib * 8.388608 / r + 2
		}
		printf "%d\n", s }'
}

TOTAL_S=0
for i in "${!P_IDX[@]}"; do
	mib=$(path_mib "${P_RATE[i]}")
	TOTAL_S=$((TOTAL_S + ROUNDS * $(est_s "${P_RTT[i]}" "${P_RATE[i]}" "$mib")))
done
if [ "$LIST" = 1 ]; then
	printf '%3s  %-26s  %5s  %s\n' '#' 'path (RTT RATE MTU CC)' 'MiB' 'about (one round)'
	for i in "${!P_IDX[@]}"; do
		mib=$(path_mib "${P_RATE[i]}")
		printf '%3s  %-26s  %5s  %s s\n' "${P_IDX[i]}" "${P_RTT[i]} ${P_RATE[i]} ${P_MTU[i]} ${P_CC[i]}" "$mib" \
			"$(est_s "${P_RTT[i]}" "${P_RATE[i]}" "$mib")"
	done
	echo "tools: $TOOLS; $ROUNDS round(s): about $(((TOTAL_S + 59) / 60)) min in all (memory now allows $(mem_mib) MiB a source)"
	exit 0
fi

[ "${BASH_VERSINFO[0]}" -ge 5 ] || die "needs bash >= 5"
[ "$(id -u)" = 0 ] || die "needs root (wan.sh's network namespaces)"
[ -x "$FASTCAT" ] || die "$FASTCAT is not an executable (cd $TOP && make)"
"$FASTCAT" --help-all 2>&1 | grep -q -- '--parallel' || die "$FASTCAT has no -P"
export FASTCAT
# shellcheck source=tests/wanlab.bash
. "$TOP/tests/wanlab.bash" # for wanlab_down of a lab a killed wan.sh left behind
reason=$(wanlab_skip_reason)
[ -z "$reason" ] || die "$reason"
if [ -z "$OUT" ]; then
	OUT=$(mktemp -d /tmp/wan-matrix.XXXXXX) || die "mktemp failed"
else
	mkdir -p "$OUT" || die "cannot make $OUT"
fi
OUT=$(cd "$OUT" && pwd)

# ---- the wan.sh running now (CHILD) and the tail that shows its log (TAILPID); STOP: a signal came
CHILD='' TAILPID='' CHILD_LOG='' STOP=0 NSIG=0
alive() { # PID: exists and is no zombie
	local s
	s=$(cat "/proc/$1/stat" 2> /dev/null) || return 1
	s=${s##*) }
	[ "${s%% *}" != Z ]
}
child_wait() { # -> CHILD_RC, the child's exit status, also when a signal interrupted the wait
	local n
	while :; do
		n=$NSIG
		wait "$CHILD"
		CHILD_RC=$?
		[ "$NSIG" = "$n" ] && return 0
		[ "$STOP" = 0 ] || return 0 # a signal to stop: stop_child takes over
	done
}
# child_leftovers: after CHILD has ended, what it may have left (only if it was killed before its
# own clean-up ran): its lab fwbenchPID and the work dir its log names; both are removed
child_leftovers() {
	local dir
	if [ -e "/run/netns/fwbench${CHILD}a" ] || [ -e "/run/netns/fwbench${CHILD}b" ] || [ -d "$WL_RUN/fwbench$CHILD" ]; then
		echo "note: wan.sh (PID $CHILD) left its lab fwbench$CHILD: taking it down" >&2
		WL_NAME=fwbench$CHILD wanlab_down
	fi
	dir=$(sed -n 's|^creating the source: .* in \(/dev/shm/fastcat-bench\.[A-Za-z0-9]*\)/source \.\.\.$|\1|p' "$CHILD_LOG" 2> /dev/null | head -n 1)
	if [ -n "$dir" ] && [ -d "$dir" ]; then
		echo "note: wan.sh (PID $CHILD) left $dir: removing it" >&2
		rm -rf "$dir"
	fi
}
# stop_child: TERM the running wan.sh (its traps stop its runs, take its lab down and remove its
# source), give it 20 s, then TERM/KILL it and its descendants by PID (lib.sh's kill_started)
stop_child() {
	local n=0
	[ -n "$CHILD" ] || return 0
	if alive "$CHILD"; then
		kill -TERM "$CHILD" 2> /dev/null
		while alive "$CHILD" && [ $n -lt 200 ]; do sleep 0.1; n=$((n + 1)); done
		if alive "$CHILD"; then
			PIDS=("$CHILD")
			kill_started
		fi
	fi
	wait "$CHILD" 2> /dev/null
	CHILD_RC=$?
	child_leftovers
	CHILD=''
}
stop_tail() {
	[ -n "$TAILPID" ] || return 0
	kill -TERM "$TAILPID" 2> /dev/null
	wait "$TAILPID" 2> /dev/null
	TAILPID=''
}
# shellcheck disable=SC2317 # called by the traps
on_signal() {
	NSIG=$((NSIG + 1))
	[ "$STOP" != 0 ] || echo "wan-matrix.sh: $2: stopping the running wan.sh, then the table of what is done" >&2
	STOP=$1
	[ -z "$CHILD" ] || kill -TERM "$CHILD" 2> /dev/null
}
# shellcheck disable=SC2317 # called by the EXIT trap
matrix_cleanup() {
	trap - EXIT
	trap '' INT TERM HUP
	stop_child
	stop_tail
}
trap matrix_cleanup EXIT
trap 'on_signal 130 interrupted' INT
trap 'on_signal 143 terminated' TERM
trap 'on_signal 129 "hung up"' HUP

# ---- the table's figures, one row a path, in matrix.tsv
TSV=$OUT/matrix.tsv MD=$OUT/matrix.md
TSV_COLS='path	rtt_ms	rate	rate_mbit	mtu	cc	lab_cc	mib	plain	p2	p4	p8	p16	auto	best_n	best_mbit	auto_pct_best	auto_pct_plain	verdict	runs_ok	runs	wan_rc	files'
# collect INDEX RTT RATE MTU CC MIB BASE RC -> one row of matrix.tsv, from wan.sh's BASE.tsv and
# BASE.txt (its medians and its header); a missing file or tool leaves '-'
collect() {
	local hdr lab_cc=- tsv=$OUT/$7.tsv
	hdr=$(head -n 1 "$OUT/$7.txt" 2> /dev/null)
	if [[ $hdr =~ ,\ ([a-z]+),\ ([a-z0-9_]+)\;\ tcp_wmem ]]; then
		LAB_IMPL=${BASH_REMATCH[1]} lab_cc=${BASH_REMATCH[2]}
	fi
	[ -f "$tsv" ] || tsv=/dev/null
	awk -F'\t' -v OFS='\t' -v idx="$1" -v rtt="$2" -v rate="$3" -v mbit="$(rate_mbit "$3")" -v mtu="$4" \
		-v cc="$5" -v lab_cc="$lab_cc" -v mib="$6" -v base="$7" -v rc="$8" '
	/^#/ || $1 == "tool" { next }
	$2 != "" && $2 != "-" && $3 != "" && $3 != "-" { v[$2] = $3 + 0 }
	$5 ~ /^[0-9]+\/[0-9]+$/ { split($5, r, "/"); ok += r[1]; all += r[2] }
	END {
		best_n = "-"; best = -1
		n = split("1 2 4 8 16", fixed, " ")
		for (i = 1; i <= n; i++) { c = fixed[i]; cell[c] = (c in v) ? v[c] : "-"
			if ((c in v) && v[c] > best) { best = v[c]; best_n = c } }
		cell["auto"] = ("auto" in v) ? v["auto"] : "-"
		pb = pp = verdict = "-"
		if (("auto" in v) && best > 0) pb = sprintf("%.0f", 100 * v["auto"] / best)
		if (("auto" in v) && (1 in v) && v[1] > 0) pp = sprintf("%.0f", 100 * v["auto"] / v[1])
		if (("auto" in v) && (1 in v) && best > 0)
			verdict = (v["auto"] >= 0.85 * best && v["auto"] >= 0.95 * v[1]) ? "ok" : "MISS"
		print idx, rtt, rate, mbit, mtu, cc, lab_cc, mib, cell[1], cell[2], cell[4], cell[8], cell[16], \
			cell["auto"], best_n, (best >= 0 ? best : "-"), pb, pp, verdict, ok + 0, all + 0, rc, base
	}' "$tsv" >> "$TSV"
}
# table: matrix.tsv -> the markdown table
table() {
	awk -F'\t' '
	function lab(m) { return m >= 1000 ? sprintf("%gG", m / 1000) : sprintf("%gM", m) }
	function pct(x) { return x == "-" ? x : x " %" }
	BEGIN {
		printf "| %2s | %6s | %4s | %5s | %-5s | %5s | %5s | %5s | %5s | %5s | %5s | %5s | %6s | %6s | %9s | %10s | %7s | %5s |\n", \
			"#", "RTT ms", "rate", "MTU", "cc", "MiB", "plain", "P2", "P4", "P8", "P16", "auto", "best N", \
			"Mbit/s", "auto/best", "auto/plain", "verdict", "runs"
		print "|---:|-------:|-----:|------:|-------|------:|------:|------:|------:|------:|------:|------:|-------:|-------:|----------:|-----------:|---------|------:|"
	}
	/^#/ || $1 == "path" { next }
	{
		cc = $6; if ($7 != "-" && $7 != $6) cc = $7 " (asked " $6 ")"
		printf "| %2s | %6s | %4s | %5s | %-5s | %5s | %5s | %5s | %5s | %5s | %5s | %5s | %6s | %6s | %9s | %10s | %-7s | %5s |\n", \
			$1, $2, lab($4), $5, cc, $8, $9, $10, $11, $12, $13, $14, $15, $16, pct($17), pct($18), $19, $20 "/" $21
	}' "$TSV"
}

GIT_REV=$(git -C "$(dirname "$FASTCAT")" describe --always --dirty 2> /dev/null || echo "?")
FC_VER=$("$FASTCAT" -V 2> /dev/null | head -n 1)
if [ -n "$FIXED_MIB" ]; then SIZE_NOTE="$FIXED_MIB MiB per run"; else
	SIZE_NOTE="MiB per run: ${SECONDS_AT_RATE} s at the link rate, at most $CAP_MIB (the MiB column)"
fi
LAB_IMPL=''
START=$(date '+%F %T')
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
{
	printf '# wan-matrix.sh %s\n' "$START"
	printf '# title %s\n' "wan-matrix.sh: -P auto vs the best fixed -P N, $ROUNDS round(s)$([ "$QUICK" = 0 ] || echo ", QUICK"), git $GIT_REV"
	printf '%s\n' "$TSV_COLS"
} > "$TSV"

echo "wan-matrix.sh: ${#P_IDX[@]} path(s), tools $TOOLS, $ROUNDS round(s), about $(((TOTAL_S + 59) / 60)) min (a guess); output in $OUT" >&2
[ "$QUICK" = 0 ] || echo "wan-matrix.sh: QUICK MODE: a smoke test, not for conclusions" >&2
FAILED=0
for i in "${!P_IDX[@]}"; do
	[ "$STOP" = 0 ] || break
	idx=${P_IDX[i]} rtt=${P_RTT[i]} rate=${P_RATE[i]} mtu=${P_MTU[i]} cc=${P_CC[i]}
	mib=$(path_mib "$rate")
	fit=$(mem_mib)
	if [ "$mib" -gt "$fit" ]; then
		echo "note: path $idx ($rtt ms $rate $mtu $cc) wants $mib MiB a run, but only $fit MiB fit in memory now (MemAvailable less 1 GiB, /dev/shm less 64 MiB): running it with $fit MiB, so its runs are shorter than planned" >&2
		mib=$fit
	fi
	base=p$idx-${rtt}ms-$rate-$mtu-$cc
	CHILD_LOG=$OUT/$base.log
	rm -f "$OUT/$base".{csv,txt,tsv,png,log}
	if [ "$mib" -lt 1 ]; then
		echo "wan-matrix.sh: path $idx: no memory for a source file; skipped" >&2
		echo "no memory for a source file" > "$CHILD_LOG"
		collect "$idx" "$rtt" "$rate" "$mtu" "$cc" 0 "$base" nomem
		FAILED=$((FAILED + 1))
		continue
	fi
	echo "=== path $idx: RTT $rtt ms, $rate, MTU $mtu, $cc; $mib MiB a run ($((i + 1)) of ${#P_IDX[@]}) ===" >&2
	args=(-t "$TOOLS" -n "$ROUNDS" -s "$mib" -r "$rate" -d "$(half "$rtt")" -m "$mtu" -c "$cc" -F "$FASTCAT"
		-o "$OUT/$base.csv" "${WAN_ARGS[@]}")
	echo "wan.sh ${args[*]}" > "$CHILD_LOG"
	"$HERE/wan.sh" "${args[@]}" < /dev/null >> "$CHILD_LOG" 2>&1 &
	CHILD=$!
	tail -n +1 -s 0.5 --pid="$CHILD" -f "$CHILD_LOG" >&2 &
	TAILPID=$!
	child_wait
	[ "$STOP" = 0 ] || stop_child # a signal came: wan.sh ends (or is ended) and cleans up
	rc=$CHILD_RC
	wait "$TAILPID" 2> /dev/null
	TAILPID=''
	[ -z "$CHILD" ] || child_leftovers
	CHILD=''
	if [ "$rc" != 0 ]; then
		FAILED=$((FAILED + 1))
		echo "wan-matrix.sh: path $idx: wan.sh exited $rc (log: $CHILD_LOG)" >&2
	fi
	collect "$idx" "$rtt" "$rate" "$mtu" "$cc" "$mib" "$base" "$rc"
done
NOT_RUN=$((${#P_IDX[@]} - $(awk -F'\t' '!/^#/ && $1 != "path"' "$TSV" | wc -l)))
STOPPED=''
[ "$NOT_RUN" = 0 ] || STOPPED="; not run (stopped): $NOT_RUN"

{
	echo "# wan-matrix.sh: $START; ${FC_VER:-fastcat} (git $GIT_REV, $FASTCAT); $(nproc) CPUs, $(uname -r); $SIZE_NOTE; $ROUNDS round(s); lab ${LAB_IMPL:-?}; tools $TOOLS${WAN_EXTRA:+; wan.sh options: $WAN_EXTRA}"
	echo "# load average at start: $LOAD0; at end: $(cut -d' ' -f1-3 /proc/loadavg); paths with a failed run: $FAILED of ${#P_IDX[@]}$STOPPED"
	[ "$QUICK" = 0 ] || echo "# QUICK MODE: a smoke test (small runs, plain and auto only): not for conclusions"
	echo
	table
	echo
	echo "Mbit/s: wan.sh's median over the rounds (bits / wall time from the sender's start: setup and slow start count)."
	echo "plain = fastcat without -P (one connection, -P 1); best N = the fixed count (1 to 16) with the most Mbit/s;"
	echo "verdict ok: auto >= 85 % of the best fixed count and auto >= 95 % of plain (noise); '-': a run failed. Per path: p*.txt, p*.csv, p*.log."
} > "$MD"
cat "$MD"
echo "table: $MD; figures: $TSV" >&2
if command -v python3 > /dev/null; then
	if python3 "$HERE/plot-matrix.py" "$TSV" "$OUT/matrix.png"; then
		echo "plot: $OUT/matrix.png" >&2
	else
		echo "note: plot-matrix.py failed; no plot" >&2
	fi
else
	echo "note: no python3, no plot" >&2
fi
[ "$STOP" = 0 ] || exit "$STOP"
[ "$FAILED" = 0 ]
