#!/usr/bin/env bats
# image.bats - disk images between two fastcats: --sparse (runs of zero blocks and a file's
# holes go as -P's ZERO chunks, never read from a hole nor sent; a receiver writing a file
# makes holes, one writing a pipe writes the zeros; the digest is of the bytes, zeros and
# all), and --image, one flag at each end for -P auto, --retry, --resume, --verify, --sparse
# and --sync: byte-exact, verified and holey through resets, and a plain peer refused before
# a byte moves. Loopback, listeners on port 0.

load helpers
load retry

setup() {
  T=$BATS_TEST_TMPDIR
  A=$T/source
  : >"$T/file"
}

# holey FILE: 64 MiB of which 4 MB are data (3 MB at 5 MiB, 1 MB at 40 MiB), the rest
# holes made by truncate, a trailing one too.
holey() {
  truncate -s 64M "$1"
  head -c 3000000 /dev/urandom | dd of="$1" bs=1M seek=5 conv=notrunc status=none
  head -c 1000000 /dev/urandom | dd of="$1" bs=1M seek=40 conv=notrunc status=none
}

# zero_heavy FILE: random runs between runs of zeros (written, not holes), ending in zeros:
# 22000123 bytes, 21 MB of them zeros.
zero_heavy() {
  {
    head -c 500000 /dev/urandom
    head -c 9000000 /dev/zero
    head -c 499999 /dev/urandom
    head -c 7000000 /dev/zero
    head -c 124 /dev/urandom
    head -c 5000000 /dev/zero
  } >"$1"
}

# allocated FILE: the bytes its blocks take on disk.
allocated() { echo $(($(stat -c '%b * %B' "$1"))); }

# holes_in FILE: it takes less than half its size on disk (where the file system has holes).
holes_in() {
  local size alloc
  size=$(stat -c %s "$1")
  alloc=$(allocated "$1")
  ((alloc < size / 2)) || fail "$1: $alloc bytes allocated of $size: no holes"
}

# sparse_pair FEED [sender options]: A through -l -P auto into $T/file and a -P 2 --sparse
# sender (FEED: file or pipe); both exit 0, byte-exact. CJSON, LJSON: their reports.
sparse_pair() {
  local feed=$1 rc
  shift
  fc_listen L --out "$T/file" --append -- -P auto --report=json
  send_bg "$feed" -P 2 --sparse "$@"
  sender_status
  [[ $status == 0 ]] || fail "sender exit $status: $(cat "$T/c.err")"
  wait_exit rc "$L_PID" 10
  assert_equal "receiver exit $rc" "receiver exit 0"
  assert_same_bytes "$A" "$T/file"
  CJSON=$(json_report "$T/c.err")
  LJSON=$(json_report "$T/L.err")
}

@test "--sparse from a file with holes: the holes are not read (strace), nor sent; the receiver's file has them, the trailing one too; byte-exact" {
  need strace
  holey "$A"
  fc_listen L --out "$T/file" --append -- -P auto --report=json
  run -0 --separate-stderr "${STRACE[@]}" -f -e trace=read -o "$T/st" -- \
    timeout -k 2 30 "$FASTCAT" --report=json -P 2 --sparse 127.0.0.1 "$L_PORT" <"$A"
  printf '%s\n' "$stderr" >"$T/c.err"
  listener_ok 10
  assert_same_bytes "$A" "$T/file"
  local read
  read=$(awk -F' = ' '/read\(0,/ && $2 > 0 { n += $2 } END { print n + 0 }' "$T/st")
  ((read <= 8 * 1048576)) || fail "the sender read $read bytes of stdin's 64 MiB"
  CJSON=$(json_report "$T/c.err")
  LJSON=$(json_report "$T/L.err")
  jq_true "$CJSON" '.sent.zero_bytes >= 60 * 1048576'
  jq_true "$LJSON" '.received.zero_bytes >= 60 * 1048576'
  holes_in "$T/file"
}

@test "--sparse from a zero-heavy pipe: byte-exact, the zero runs counted at both ends and holes in the file, its end too" {
  zero_heavy "$A"
  sparse_pair pipe
  jq_true "$CJSON" '.sent.zero_bytes >= 20000000 and .sent.zero_bytes <= 21000000'
  jq_is "$LJSON" .received.zero_bytes "$(jq -r .sent.zero_bytes <<<"$CJSON")"
  assert_equal "$(stat -c %s "$T/file")" 22000123
  holes_in "$T/file"
}

@test "--sparse into a pipe at the receiver: the zeros are written, byte-exact" {
  zero_heavy "$A"
  bg_listen L /dev/null "$T/p.out" 'listening on .*:([0-9]+)$' \
    bash -c '"$1" -v -l -P auto 127.0.0.1 0 | cat' _ "$FASTCAT"
  send_bg file -P 2 --sparse
  sender_status
  [[ $status == 0 ]] || fail "sender exit $status: $(cat "$T/c.err")"
  listener_ok 10
  assert_same_bytes "$A" "$T/p.out"
}

@test "--sparse --verify: verified, and the digest is of the bytes with their zeros (the same as a plain -P --checksum's)" {
  zero_heavy "$A"
  sparse_pair file --verify
  local sparse_digest
  sparse_digest=$(jq -r .sent.xxh64 <<<"$CJSON")
  jq_is "$CJSON" .verified true
  : >"$T/file"
  fc_listen L --out "$T/file" --append -- -P auto --report=json
  send_bg file -P 2 --checksum
  sender_status
  jq_is "$(json_report "$T/c.err")" .sent.xxh64 "$sparse_digest"
}

@test "--sparse on random data: nothing counted as zeros, byte-exact" {
  mkpayload "$A" 5000001
  sparse_pair pipe
  jq_is "$CJSON" '.sent.zero_bytes // 0' 0
}

# image_resets FEED: the --image pair from A (random runs between zeros) through two resets.
image_resets() {
  {
    head -c 5000000 /dev/urandom
    head -c 30000000 /dev/zero
    head -c 7000000 /dev/urandom
  } >"$A"
  keep_listen --image
  send_bg "$1" --image --rate-limit 4M
  wait_for_size "$T/file" 2000000 20
  reset_sender
  wait_for_count "$T/L.err" 'resumed session' 1 "$L_PID" 20
  wait_for_size "$T/file" 38000000 20
  reset_sender
  sender_status
  [[ $status == 0 ]] || fail "sender exit $status: $(cat "$T/c.err")"
  assert_same_bytes "$A" "$T/file"
  CJSON=$(json_report "$T/c.err")
  jq_is "$CJSON" .verified true
  jq_true "$CJSON" '.retries >= 1'
  grep -q 'fastcat: --sync: stdout synced to disk' "$T/L.err" ||
    fail "the receiver did not sync: $(cat "$T/L.err")"
  holes_in "$T/file"
}

@test "--image at both ends, from a file through resets: byte-exact, verified, synced, the zeros a hole" {
  image_resets file
}

@test "--image at both ends, from a pipe through resets: byte-exact, verified, synced, the zeros a hole" {
  image_resets pipe
}

@test "an --image sender facing nc.openbsd or a plain fastcat: exit 3 before a byte moves, nothing in their output" {
  need nc.openbsd
  mkpayload "$A" 100000
  nc_listen N --out "$T/nc.out"
  run -3 --separate-stderr fcx "$A" /dev/null --image -w 1 127.0.0.1 "$N_PORT"
  [[ $stderr == *"is not a fastcat -P receiver"* ]] || fail "$stderr"
  kill "$N_PID" 2>/dev/null || true
  assert_equal "$(wc -c <"$T/nc.out")" 0
  fc_listen L
  run -3 --separate-stderr fcx "$A" /dev/null --image -w 2 127.0.0.1 "$L_PORT"
  [[ $stderr == *"is not a fastcat -P receiver"* ]] || fail "$stderr"
  assert_equal "$(wc -c <"$T/L.out")" 0
}

@test "--image, each part turned off or tuned by its own option: -P 2 --retry 0 --no-sparse --no-verify, the receiver --no-sync" {
  zero_heavy "$A"
  fc_listen L --out "$T/file" --append -- --image --no-sync --no-verify --report=json
  send_bg file --image -P 2 --retry 0 --no-sparse --no-verify
  sender_status
  [[ $status == 0 ]] || fail "sender exit $status: $(cat "$T/c.err")"
  assert_same_bytes "$A" "$T/file"
  CJSON=$(json_report "$T/c.err")
  jq_is "$CJSON" '.streams | length' 2
  jq_is "$CJSON" '.sent.zero_bytes // 0' 0
  jq_is "$CJSON" .verified null
  ! grep -q 'synced to disk' "$T/L.err" || fail "the receiver synced: $(cat "$T/L.err")"
}
