#!/usr/bin/env bash
# demo.sh FASTCAT [SIZE_MIB]: the main job. A fastcat listener on a free loopback port,
# SIZE_MIB (default 1024) MiB from dd piped through a fastcat client, both reports printed,
# and the byte count checked at the far end. Exits non-zero if anything was lost.
set -euo pipefail

fastcat=${1:?usage: demo.sh FASTCAT [SIZE_MIB]}
mib=${2:-1024}
dir=$(mktemp -d)
receiver=
cleanup() {
	[ -n "$receiver" ] && kill "$receiver" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT

# The listener's stdout goes to wc -c; its -v stderr names the port it got.
("$fastcat" -v -l 127.0.0.1 0 </dev/null 2>"$dir/listener.err" | wc -c >"$dir/count") &
receiver=$!
for _ in $(seq 200); do
	grep -q 'listening on' "$dir/listener.err" 2>/dev/null && break
	sleep 0.05
done
port=$(sed -n 's/.*listening on .*:\([0-9][0-9]*\)$/\1/p' "$dir/listener.err")
[ -n "$port" ] || { echo "demo: the listener did not start:" >&2; cat "$dir/listener.err" >&2; exit 1; }

echo "demo: dd if=/dev/zero bs=1M count=$mib | fastcat -v 127.0.0.1 $port   (listener: fastcat -v -l 127.0.0.1 0 | wc -c)"
echo "--- sender"
dd if=/dev/zero bs=1M count="$mib" status=none | "$fastcat" -v 127.0.0.1 "$port"
wait "$receiver"
receiver=
echo "--- receiver"
cat "$dir/listener.err"
got=$(tr -d ' ' <"$dir/count")
want=$((mib * 1024 * 1024))
if [ "$got" != "$want" ]; then
	echo "demo: FAILED: the receiver wrote $got bytes, $want were sent" >&2
	exit 1
fi
echo "demo: OK: $got bytes arrived"
