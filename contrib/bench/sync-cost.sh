#!/usr/bin/env bash
# sync-cost.sh - what --sync costs: alternating pairs of a transfer without and with --sync at the
# receiver, on loopback TCP, into a file in a directory of your choice, by hand (not in make check).
#
#   contrib/bench/sync-cost.sh [-F PATH] [-d DIR] [-m verify|retry] [-n PAIRS] [-s MIB]
#
# verify: `fastcat -l --verify [--sync] > DIR/FILE` and `fastcat --verify < SOURCE`, timed from the
# sender's start to the receiver's exit (its verdict waits for the sync). retry: `fastcat -l -k
# --resume [--sync] >> DIR/FILE` and `fastcat --retry 3 < SOURCE`, timed to the sender's exit,
# which waits for the final confirmation (each confirmation, per --sync-every, waits for a sync).
# SOURCE (random) is in /dev/shm. DIR decides what is measured: /dev/shm (tmpfs: fdatasync has
# nothing to do) or a directory on a disk. A pair runs plain then --sync, the next --sync then
# plain; one warm-up pair first. Printed: each side's median seconds, the median of the per-pair
# ratios sync/plain, and the receiver's own count of its syncs and their time (-v).
#
# Options:
#   -F PATH     fastcat (default src/fastcat of this tree)   -n PAIRS  measured pairs (default 5)
#   -d DIR      where the received file goes (default /dev/shm)
#   -m MODE     verify (default) or retry                    -s MIB    bytes per run (default 1024)
set -u -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=contrib/bench/lib.sh
. "$here/lib.sh"

F=$here/../../src/fastcat PAIRS=5 MIB=1024 DIR=/dev/shm MODE=verify CHECK=0
while getopts 'F:d:m:n:s:h' o; do
	case $o in
	F) F=$OPTARG ;; d) DIR=$OPTARG ;; m) MODE=$OPTARG ;; n) PAIRS=$OPTARG ;; s) MIB=$OPTARG ;;
	h) usage; exit 0 ;; *) usage >&2; exit 2 ;;
	esac
done
[ -x "$F" ] || die "$F is not an executable"
[ -d "$DIR" ] && [ -w "$DIR" ] || die "-d $DIR: not a writable directory"
[[ $MODE == verify || $MODE == retry ]] || die "-m takes verify or retry"
[[ $PAIRS =~ ^[1-9][0-9]*$ && $MIB =~ ^[1-9][0-9]*$ ]] || die "-n and -s take integers"
BYTES=$((MIB * 1024 * 1024))
bench_workdir
bench_source
OUT=$(mktemp "$DIR/fastcat-sync.XXXXXX") || die "cannot make a file in $DIR"
trap 'rm -f "$OUT"; cleanup' EXIT

# run_one plain|sync -> "seconds syncs sync_seconds" on stdout, or nothing when the run failed
run_one() {
	local kind=$1 port t0 t1 rpid recv=(-l) send=() size said
	port=$(free_port) || return 1
	: >"$OUT"
	sync
	rm -f "$WORK/r.err"
	if [ "$MODE" = verify ]; then recv+=(--verify) send=(--verify); else recv+=(-k --resume) send=(--retry 3); fi
	[ "$kind" = sync ] && recv+=(--sync)
	timeout 120 "$F" -v "${recv[@]}" 127.0.0.1 "$port" </dev/null >>"$OUT" 2>"$WORK/r.err" &
	rpid=$!
	PIDS+=("$rpid")
	for _ in $(seq 200); do grep -q 'listening on' "$WORK/r.err" 2>/dev/null && break; sleep 0.01; done
	t0=$(usec)
	if ! timeout 120 "$F" "${send[@]}" 127.0.0.1 "$port" <"$SRCFILE" >/dev/null 2>"$WORK/s.err"; then
		echo "sync-cost.sh: $kind: the sender failed: $(head -n 1 "$WORK/s.err")" >&2
		kill_started
		return 1
	fi
	if [ "$MODE" = verify ]; then wait "$rpid"; fi
	t1=$(usec)
	kill_started
	PIDS=()
	size=$(stat -c %s "$OUT")
	[ "$size" = "$BYTES" ] || { echo "sync-cost.sh: $kind wrote $size of $BYTES bytes" >&2; return 1; }
	said=$(sed -n 's/.*synced to disk \([0-9]*\) times\{0,1\}, \([0-9.]*\) s.*/\1 \2/p' "$WORK/r.err")
	awk -v us=$((t1 - t0)) -v said="${said:-0 0}" 'BEGIN { printf "%.3f %s\n", us / 1e6, said }'
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

echo "sync-cost.sh: $F, $MODE into $DIR ($(df -PT "$DIR" | awk 'NR == 2 { print $2 }')), $PAIRS pairs (+1 warm-up) of $MIB MiB, load $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$WORK/p" && : >"$WORK/q" && : >"$WORK/r" && : >"$WORK/n"
for pair in $(seq 0 "$PAIRS"); do
	if ((pair % 2)); then order="sync plain"; else order="plain sync"; fi
	for kind in $order; do
		v=$(run_one "$kind") || exit 1
		if [ "$kind" = plain ]; then mp=${v%% *}; else mq=${v%% *} ms=${v#* }; fi
	done
	((pair == 0)) && continue # warm-up
	echo "$mp" >>"$WORK/p" && echo "$mq" >>"$WORK/q" && echo "$ms" >>"$WORK/n"
	awk -v a="$mp" -v b="$mq" 'BEGIN { printf "%.4f\n", b / a }' >>"$WORK/r"
done
printf '%10s %10s %11s %17s %22s\n' "plain s" "--sync s" "sync/plain" "min-max" "syncs, s in them"
printf '%10s %10s %11s %17s %22s\n' "$(median <"$WORK/p")" "$(median <"$WORK/q")" "$(median <"$WORK/r")" \
	"$(sort -g "$WORK/r" | sed -n '1p;$p' | paste -sd- -)" \
	"$(tail -n 1 "$WORK/n" | cut -d' ' -f1), $(cut -d' ' -f2 "$WORK/n" | median)"
