#!/usr/bin/env bash
# chunk-sweep.sh - fastcat's throughput and CPU per chunk size (-B, both ends), TCP loopback.
#
# One fastcat pair per chunk size, the sizes interleaved round by round (4k 16k ... 4k 16k ...),
# after one warm-up round; receiver pinned to CPU 0, sender to CPU 1; source a random file in
# /dev/shm, sink /dev/null. The runs are done by tcp.sh (same measurement, same CSV columns;
# tool names fastcat-B<SIZE>); the table has one row per chunk size: median MB/s, min-max,
# median per-round ratio against the baseline chunk, CPU s/GiB of receiver + sender.
#
# Usage: chunk-sweep.sh [options]
#   -c 'SIZES'  chunk sizes, space- or comma-separated, fastcat SIZE syntax
#               (default '4k 16k 64k 96k 128k 256k 512k 1M 4M')
#   -b SIZE     ratio baseline (default 96k, fastcat's default, if in the list; else the first)
#   -s MIB      bytes per run, in MiB (default 2048)
#   -n ROUNDS   measured rounds (default 5)          -w N   warm-up rounds (default 1)
#   -F PATH     fastcat binary (default: src/fastcat of this tree)
#   -a 'ARGS'   extra fastcat arguments, both ends (before -B; do not pass -B here)
#   -k          check mode (receiver into cksum; see tcp.sh -h)
#   -P R,S      receiver CPU, sender CPU (default 0,1; 'none' = unpinned)
#   -o FILE     CSV path (default contrib/bench/results/chunk-sweep-YYYYmmdd-HHMMSS.csv)
#   -T SEC      time-out per process (default 60 + SIZE/10)
#   -h          this help
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CHUNKS='4k 16k 64k 96k 128k 256k 512k 1M 4M' BASE=
PASS=()
usage() { sed -n '2,/^set -u/p' "$0" | sed '/^set -u/d;s/^# \{0,1\}//'; }
while getopts "c:b:s:n:w:F:a:kP:o:T:h" o; do
	case $o in
	c) CHUNKS=$OPTARG ;;
	b) BASE=$OPTARG ;;
	k) PASS+=(-k) ;;
	s | n | w | F | a | P | o | T) PASS+=("-$o" "$OPTARG") ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || { echo "${0##*/}: unexpected argument '$1' (-h for help)" >&2; exit 2; }

tools='' first=''
for c in ${CHUNKS//,/ }; do
	[[ $c =~ ^[0-9]+([kKmMgG]|KiB|MiB|GiB)?$ ]] || { echo "${0##*/}: bad chunk size '$c'" >&2; exit 2; }
	tools+=${tools:+,}fastcat-B$c
	first=${first:-$c}
	[ -z "$BASE" ] && [ "$c" = 96k ] && BASE=96k
done
[ -n "$tools" ] || { echo "${0##*/}: no chunk size" >&2; exit 2; }
BASE=${BASE:-$first}
[[ ,$tools, == *,fastcat-B$BASE,* ]] || { echo "${0##*/}: baseline $BASE is not in the list" >&2; exit 2; }
BENCH_LABEL=chunk exec "$HERE/tcp.sh" -N chunk-sweep -t "$tools" -b "fastcat-B$BASE" "${PASS[@]}"
