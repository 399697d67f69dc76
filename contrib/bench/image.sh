#!/usr/bin/env bash
# image.sh - a disk image over the WAN lab: fastcat --image at both ends against plain fastcat
# -P auto and nc.openbsd (by hand, as root; not part of make check).
#
# The image: -s MiB of which about 20 % is random data in runs of 1 to 64 MiB between runs of
# zeros (written zeros, not holes: what dd of a disk reads), made with a fixed seed. The lab:
# tests/wanlab.bash, 1 Gbit/s, 100 ms RTT, MTU 9000, cubic. Rounds are interleaved; each run
# starts a fresh receiver on host B and a sender on host A with the image on stdin:
#   image       fastcat -l --image >> FILE   /  fastcat --image       (the file: cmp, du)
#   Pauto       fastcat -l -P auto | cksum   /  fastcat -P auto
#   nc.openbsd  nc.openbsd -l | cksum        /  nc.openbsd -N
# Seconds are wall time from the sender's start to the end: the receiver's exit, or for the
# --image pair (whose receiver keeps listening, -k) the sender's exit 0, which it gives only
# once the receiver confirmed the whole file on disk and its XXH64. With -R N the image runs
# again with N resets: ss -K on one of the sender's connections, chosen at random, once the
# receiver's file has grown by a share of the image each time.
#
# Usage: image.sh [options]
#   -s MIB      image size in MiB (default 4096)
#   -n ROUNDS   rounds (default 1)
#   -t LIST     runs, comma-separated (default image,Pauto,nc.openbsd)
#   -R N        also the image through N resets of random connections (default 0: none)
#   -r RATE     link rate (default 1gbit)        -d MS    one-way delay (default 50)
#   -m MTU      (default 9000)                   -c ALGO  congestion control (default cubic)
#   -F PATH     fastcat binary (default: src/fastcat of this tree)
#   -T SEC      time-out per run (default 900)
#   -h          this help
# Needs: root, bash >= 5, iproute2, the lab's delay line (make tests/lab/delayline), nc.openbsd,
# about twice the image's size free in /dev/shm.
set -u
export LC_ALL=C

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
MIB=4096 ROUNDS=1 RUNS=image,Pauto,nc.openbsd RESETS=0 RATE=1gbit DELAY=50 MTU=9000 CC=cubic
FASTCAT=$TOP/src/fastcat TMO=900 CHECK=1

# shellcheck source=contrib/bench/lib.sh
. "$HERE/lib.sh"
while getopts "s:n:t:R:r:d:m:c:F:T:h" o; do
	case $o in
	s) MIB=$OPTARG ;; n) ROUNDS=$OPTARG ;; t) RUNS=$OPTARG ;; R) RESETS=$OPTARG ;;
	r) RATE=$OPTARG ;; d) DELAY=$OPTARG ;; m) MTU=$OPTARG ;; c) CC=$OPTARG ;;
	F) FASTCAT=$OPTARG ;; T) TMO=$OPTARG ;;
	h) usage; exit 0 ;; *) usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
bench_operands_sizes "$@"
[[ $RESETS =~ ^[0-9]+$ ]] || die "-R wants a number"
bench_lab_root
BYTES=$((MIB * 1048576))
bench_fastcat --image

# shellcheck source=tests/wanlab.bash
. "$TOP/tests/wanlab.bash"
reason=$(wanlab_skip_reason)
[ -z "$reason" ] || die "$reason"

# stop_run PID...: the run's processes and their children, by PID (the --image receiver keeps
# listening); waited for by PID, as the lab's delay line is a child of this script too.
stop_run() {
	local all=("$@") p
	for p in "$@"; do mapfile -t -O "${#all[@]}" all < <(descendants "$p"); done
	kill -TERM "${all[@]}" 2> /dev/null
	wait "$@" 2> /dev/null
}

bench_workdir
image_cleanup() {
	[ ${#PIDS[@]} -eq 0 ] || stop_run "${PIDS[@]}"
	PIDS=()
	cleanup
	wanlab_down
}
trap image_cleanup EXIT
wanlab_up "fwimg$$" --rate "$RATE" --delay-ms "$DELAY" --mtu "$MTU" --cc "$CC" ||
	die "the lab did not come up"

# make_image: SRCFILE, BYTES long, runs of 1-64 MiB of random data each followed by four times
# as many zeros (on average), from a fixed seed so that every run and round sees the same image.
make_image() {
	local pos=0 d z
	SRCFILE=$WORK/image
	RANDOM=20261205
	echo "creating the image: $MIB MiB, about 20 % random data, in $SRCFILE ..." >&2
	{
		while [ $pos -lt "$BYTES" ]; do
			d=$(((RANDOM % 64 + 1) * 1048576))
			z=$((d * (2 + RANDOM % 5)))
			head -c "$d" /dev/urandom
			head -c "$z" /dev/zero
			pos=$((pos + d + z))
		done
	} | head -c "$BYTES" > "$SRCFILE"
	[ "$(stat -c %s "$SRCFILE")" -eq "$BYTES" ] || die "could not create the image"
	DATA_BYTES=$(python3 -c '
import sys
n = 0
with open(sys.argv[1], "rb") as f:
    while True:
        b = f.read(1 << 20)
        if not b:
            break
        n += len(b) - b.count(0)
print(n)' "$SRCFILE" 2> /dev/null || echo '?')
	SRC_CKSUM=$(cksum < "$SRCFILE")
}
make_image

RESULTS=$WORK/runs.csv
echo "round,run,wall_s,mbit_s,allocated_pct,status,note" > "$RESULTS"

# reset_some N FILE: N times, once FILE grew by a share of the image, ss -K one of the sender's
# established connections to the receiver, chosen at random.
reset_some() {
	local n=$1 file=$2 k conns pick
	for k in $(seq "$n"); do
		while [ "$(stat -c %s "$file" 2> /dev/null || echo 0)" -lt $((BYTES / (n + 1) * k)) ]; do
			sleep 0.1
		done
		mapfile -t conns < <(wanlab_a ss -Htn state established "( dst $WL_B_IP )" |
			awk '{ n = split($3, a, ":"); print a[n] }')
		[ ${#conns[@]} -gt 0 ] || continue
		pick=${conns[RANDOM % ${#conns[@]}]}
		wanlab_a ss -K state established "( sport = :$pick )" > /dev/null 2>&1
		echo "  reset $k/$n: connection from port $pick" >&2
	done
}

# run_one RUN ROUND: one CSV row.
run_one() {
	local run=$1 round=$2 port=0 rpid spid rrc=0 src t0 t1 status=ok note='' alloc=- resets=0
	local recv send out=$WORK/recv.img ckpid=''
	rm -f "$WORK"/r.* "$WORK"/s.* "$out"
	case $run in
	image | image-resets)
		recv=("$FASTCAT" -v -l --image "$WL_B_IP" 0) send=("$FASTCAT" -v --image)
		[ "$run" = image-resets ] && resets=$RESETS
		: > "$out"
		wanlab_b timeout -k 2 "$TMO" "${recv[@]}" < /dev/null >> "$out" 2> "$WORK/r.err" &
		;;
	Pauto | nc.openbsd)
		if [ "$run" = Pauto ]; then
			recv=("$FASTCAT" -v -l -P auto "$WL_B_IP" 0) send=("$FASTCAT" -v -P auto)
		else
			port=$((40000 + RANDOM % 10000))
			recv=(nc.openbsd -l "$WL_B_IP" "$port") send=(nc.openbsd -N)
		fi
		mkfifo "$WORK/r.fifo"
		cksum < "$WORK/r.fifo" > "$WORK/r.cksum" &
		ckpid=$!
		PIDS+=("$ckpid")
		wanlab_b timeout -k 2 "$TMO" "${recv[@]}" < /dev/null > "$WORK/r.fifo" 2> "$WORK/r.err" &
		;;
	esac
	rpid=$!
	PIDS+=("$rpid")
	for _ in $(seq 500); do
		if [ "$port" = 0 ]; then
			port=$(sed -n 's/.*listening on .*:\([0-9][0-9]*\)$/\1/p' "$WORK/r.err" | head -n 1)
			port=${port:-0}
			[ "$port" != 0 ] && break
		elif [ -n "$(wanlab_b ss -Hltn "sport = :$port")" ]; then
			break
		fi
		sleep 0.01
	done
	t0=$(usec)
	wanlab_a timeout -k 2 "$TMO" "${send[@]}" "$WL_B_IP" "$port" < "$SRCFILE" > /dev/null 2> "$WORK/s.err" &
	spid=$!
	PIDS+=("$spid")
	[ "$resets" -gt 0 ] && reset_some "$resets" "$out"
	wait "$spid"
	src=$?
	if [ -n "$ckpid" ]; then
		wait "$rpid"
		rrc=$?
	fi
	t1=$(usec)
	stop_run "${PIDS[@]}"
	PIDS=()
	[ -n "$ckpid" ] && wait "$ckpid" 2> /dev/null
	if [ "$src" != 0 ] || [ "$rrc" != 0 ]; then status=fail note="exit codes send $src recv $rrc"; fi
	if [ -n "$ckpid" ]; then
		[ "$(cat "$WORK/r.cksum" 2> /dev/null)" = "$SRC_CKSUM" ] || { status=fail note="$note; cksum differs"; }
	else
		cmp -s "$SRCFILE" "$out" || { status=fail note="$note; cmp differs"; }
		alloc=$(awk -v a=$(($(stat -c '%b * %B' "$out"))) -v b="$BYTES" 'BEGIN { printf "%.1f", 100 * a / b }')
		grep -q '^fastcat: verified:' "$WORK/s.err" || { status=fail note="$note; not verified"; }
		note="$note $(grep -o 'retry: [0-9]* retr[a-z]*' "$WORK/s.err" | head -n 1)"
		note="$note; $(grep -o 'zeros .* not sent' "$WORK/s.err" | head -n 1)"
	fi
	[ $status = ok ] || echo "WARN $run round $round: $note; send: $(tail -n 3 "$WORK/s.err" | tr '\n' ' ')" >&2
	awk -v r="$round" -v t="$run" -v b="$BYTES" -v w=$((t1 - t0)) -v a="$alloc" -v st="$status" \
		-v note="${note//,/;}" 'BEGIN { ws = w / 1e6
		printf "%d,%s,%.3f,%.1f,%s,%s,%s\n", r, t, ws, (ws > 0 ? b * 8 / ws / 1e6 : 0), a, st, note }' >> "$RESULTS"
	echo "$run round $round: $(tail -n 1 "$RESULTS" | cut -d, -f3-7)" >&2
}

IFS=, read -r -a SEL <<< "$RUNS"
[ "$RESETS" -gt 0 ] && SEL+=(image-resets)
for round in $(seq "$ROUNDS"); do
	for run in "${SEL[@]}"; do run_one "$run" "$round"; done
done

echo
echo "image.sh: $MIB MiB image ($DATA_BYTES bytes not zero), $RATE, RTT $((2 * DELAY)) ms, MTU $MTU, $CC, $ROUNDS round(s), $(date -u +%Y-%m-%d)"
awk -F, -v order="${SEL[*]}" '
NR > 1 { k = ++n[$2]; w[$2, k] = $3; mb[$2, k] = $4; al[$2] = $5; st[$2] = st[$2] " " $6; nt[$2] = $7 }
END {
	printf "| run | seconds | Mbit/s (of the image) | vs Pauto | allocated | status | note |\n|---|---:|---:|---:|---:|---|---|\n"
	c = split(order, names, " ")
	for (i = 1; i <= c; i++) { t = names[i]; s = 0; for (k = 1; k <= n[t]; k++) s += w[t, k]; sec[t] = n[t] ? s / n[t] : 0 }
	for (i = 1; i <= c; i++) {
		t = names[i]; m = 0; for (k = 1; k <= n[t]; k++) m += mb[t, k]
		r = sec["Pauto"] > 0 ? sprintf("%.0f %%", 100 * sec[t] / sec["Pauto"]) : "-"
		printf "| %s | %.1f | %.0f | %s | %s | %s | %s |\n", t, sec[t], n[t] ? m / n[t] : 0, r, (al[t] == "-" ? "-" : al[t] " %"), st[t], nt[t]
	}
}' "$RESULTS"
