#!/usr/bin/env bats
# transfer.bats - byte-exact transfers, both directions at once (the client
# sends a.SIZE while the listener sends b.SIZE on the same connection), for
# several sizes and chunk sizes (-B applies to both fastcat ends), over
# IPv4 127.0.0.1 and IPv6 ::1.

load helpers

setup_file() {
  local s
  for s in 0 1 1048577 67108864; do
    mkpayload "$BATS_FILE_TMPDIR/a.$s" "$s"
    mkpayload "$BATS_FILE_TMPDIR/b.$s" "$s"
  done
}

# xfer ADDR SIZE CHUNK
xfer() {
  local addr=$1 size=$2 chunk=$3 a b T=$BATS_TEST_TMPDIR opts=() rc
  if [[ $addr == *:* ]]; then skip_unless_ipv6; fi
  [[ $chunk == default ]] || opts=(-B "$chunk")
  a=$BATS_FILE_TMPDIR/a.$size
  b=$BATS_FILE_TMPDIR/b.$size
  fc_listen L --addr "$addr" --in "$b" "${opts[@]}"
  run -0 fcx "$a" "$T/c.out" "${opts[@]}" "$addr" "$L_PORT"
  wait_exit rc "$L_PID" 60
  assert_equal "listener exit $rc" "listener exit 0"
  assert_same_bytes "$a" "$T/L.out"   # client -> listener
  assert_same_bytes "$b" "$T/c.out"   # listener -> client
  rm -f "$T/L.out" "$T/c.out"
}

@test "IPv4 0 B, -B 1: both directions byte-exact" { xfer 127.0.0.1 0 1; }
@test "IPv4 0 B, -B 7: both directions byte-exact" { xfer 127.0.0.1 0 7; }
@test "IPv4 0 B, -B 4096: both directions byte-exact" { xfer 127.0.0.1 0 4096; }
@test "IPv4 0 B, default chunk: both directions byte-exact" { xfer 127.0.0.1 0 default; }
@test "IPv4 0 B, -B 1M: both directions byte-exact" { xfer 127.0.0.1 0 1M; }
@test "IPv4 1 B, -B 1: both directions byte-exact" { xfer 127.0.0.1 1 1; }
@test "IPv4 1 B, -B 7: both directions byte-exact" { xfer 127.0.0.1 1 7; }
@test "IPv4 1 B, -B 4096: both directions byte-exact" { xfer 127.0.0.1 1 4096; }
@test "IPv4 1 B, default chunk: both directions byte-exact" { xfer 127.0.0.1 1 default; }
@test "IPv4 1 B, -B 1M: both directions byte-exact" { xfer 127.0.0.1 1 1M; }
@test "IPv4 1 MiB+1, -B 1: both directions byte-exact" { xfer 127.0.0.1 1048577 1; }
@test "IPv4 1 MiB+1, -B 7: both directions byte-exact" { xfer 127.0.0.1 1048577 7; }
@test "IPv4 1 MiB+1, -B 4096: both directions byte-exact" { xfer 127.0.0.1 1048577 4096; }
@test "IPv4 1 MiB+1, default chunk: both directions byte-exact" { xfer 127.0.0.1 1048577 default; }
@test "IPv4 1 MiB+1, -B 1M: both directions byte-exact" { xfer 127.0.0.1 1048577 1M; }
@test "IPv4 64 MiB, -B 4096: both directions byte-exact" { xfer 127.0.0.1 67108864 4096; }
@test "IPv4 64 MiB, default chunk: both directions byte-exact" { xfer 127.0.0.1 67108864 default; }
@test "IPv4 64 MiB, -B 1M: both directions byte-exact" { xfer 127.0.0.1 67108864 1M; }
@test "IPv6 0 B, -B 1: both directions byte-exact" { xfer ::1 0 1; }
@test "IPv6 0 B, -B 7: both directions byte-exact" { xfer ::1 0 7; }
@test "IPv6 0 B, -B 4096: both directions byte-exact" { xfer ::1 0 4096; }
@test "IPv6 0 B, default chunk: both directions byte-exact" { xfer ::1 0 default; }
@test "IPv6 0 B, -B 1M: both directions byte-exact" { xfer ::1 0 1M; }
@test "IPv6 1 B, -B 1: both directions byte-exact" { xfer ::1 1 1; }
@test "IPv6 1 B, -B 7: both directions byte-exact" { xfer ::1 1 7; }
@test "IPv6 1 B, -B 4096: both directions byte-exact" { xfer ::1 1 4096; }
@test "IPv6 1 B, default chunk: both directions byte-exact" { xfer ::1 1 default; }
@test "IPv6 1 B, -B 1M: both directions byte-exact" { xfer ::1 1 1M; }
@test "IPv6 1 MiB+1, -B 1: both directions byte-exact" { xfer ::1 1048577 1; }
@test "IPv6 1 MiB+1, -B 7: both directions byte-exact" { xfer ::1 1048577 7; }
@test "IPv6 1 MiB+1, -B 4096: both directions byte-exact" { xfer ::1 1048577 4096; }
@test "IPv6 1 MiB+1, default chunk: both directions byte-exact" { xfer ::1 1048577 default; }
@test "IPv6 1 MiB+1, -B 1M: both directions byte-exact" { xfer ::1 1048577 1M; }
@test "IPv6 64 MiB, -B 4096: both directions byte-exact" { xfer ::1 67108864 4096; }
@test "IPv6 64 MiB, default chunk: both directions byte-exact" { xfer ::1 67108864 default; }
@test "IPv6 64 MiB, -B 1M: both directions byte-exact" { xfer ::1 67108864 1M; }

@test "no address listens on [::] dual-stack (IPv4 and IPv6 clients); -4 listens on 0.0.0.0 (private netns)" {
  skip_unless_unshare
  skip_unless_ipv6
  local T=$BATS_TEST_TMPDIR
  mkpayload "$T/p4" 5000
  mkpayload "$T/p6" 7000
  # wildcard listeners only inside a private network namespace
  run -0 timeout 60 unshare -n env BATS_TEST_TMPDIR="$T" FASTCAT="$FASTCAT" bash -c '
    set -e
    . "$1"
    trap fc_cleanup EXIT
    ip link set lo up
    T=$BATS_TEST_TMPDIR
    fc_listen D --addr "" -k -d
    grep "listening on" "$T/D.err"
    fcx "$T/p4" /dev/null 127.0.0.1 "$D_PORT"
    wait_for_size "$T/D.out" 5000
    fcx "$T/p6" /dev/null ::1 "$D_PORT"
    wait_for_size "$T/D.out" 12000
    fc_listen F --addr "" -4 -d
    grep "listening on" "$T/F.err"
  ' _ "$BATS_TEST_DIRNAME/helpers.bash"
  assert_line --regexp '^fastcat: listening on \[::\]:[0-9]+$'
  assert_line --regexp '^fastcat: listening on 0\.0\.0\.0:[0-9]+$'
  cat "$T/p4" "$T/p6" >"$T/expected"
  assert_same_bytes "$T/expected" "$T/D.out"
}
