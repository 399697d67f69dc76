#!/usr/bin/env bats
# chunk.bats - -B / --read-size / --write-size bound every read() and write()
# on the data fds (stdin, stdout, socket): checked with strace and with the
# JSON report's max_read / max_write. The strace and JSON checks run with
# --copy=rw, where every move is a read(2) or write(2); splice and sendfile
# sizes are checked in copy-splice.bats.

load helpers

setup_file() {
  mkpayload "$BATS_FILE_TMPDIR/A" 1048577   # client -> listener
  mkpayload "$BATS_FILE_TMPDIR/B" 262147    # listener -> client
}

setup() {
  A=$BATS_FILE_TMPDIR/A
  B=$BATS_FILE_TMPDIR/B
  T=$BATS_TEST_TMPDIR
}

STRACE_SET=read,write,recvfrom,sendto,connect,accept,accept4,close

# both_ways LISTENER_OPTS... -- CLIENT_OPTS...: bidirectional transfer with
# --report=json on both ends; sets LJSON and CJSON.
both_ways() {
  local lopts=() rc
  while (($#)) && [[ $1 != -- ]]; do lopts+=("$1"); shift; done
  shift
  fc_listen L --in "$B" --report=json --copy=rw "${lopts[@]}"
  run -0 --separate-stderr fcx "$A" "$T/c.out" --report=json --copy=rw "$@" 127.0.0.1 "$L_PORT"
  printf '%s\n' "$stderr" >"$T/c.err"
  listener_ok 30
  assert_same_bytes "$A" "$T/L.out"
  assert_same_bytes "$B" "$T/c.out"
  LJSON=$(json_report "$T/L.err")
  CJSON=$(json_report "$T/c.err")
}

@test "-B 4096: strace shows no read/write on stdin, stdout or socket above 4096 bytes (both ends)" {
  command -v strace >/dev/null || skip "strace not installed"
  FC_PREFIX=("${STRACE[@]}" -ff -qq -s 0 -o "$T/ltr" -e "trace=$STRACE_SET")
  fc_listen L --in "$B" -B 4096 --copy=rw
  FC_PREFIX=()
  FC_TIMEOUT=60 run -0 io "$A" "$T/c.out" \
    "${STRACE[@]}" -ff -qq -s 0 -o "$T/ctr" -e "trace=$STRACE_SET" "$FASTCAT" -B 4096 --copy=rw 127.0.0.1 "$L_PORT"
  listener_ok 30
  assert_same_bytes "$A" "$T/L.out"
  assert_same_bytes "$B" "$T/c.out"
  run -0 check_strace_sizes "$T/ctr" 4096 4096
  assert_line --regexp '^read stdin: [0-9]+ calls, max 4096$'
  assert_line --regexp '^write sock: [0-9]+ calls, max 4096$'
  run -0 check_strace_sizes "$T/ltr" 4096 4096
  assert_line --regexp '^read stdin: [0-9]+ calls, max 4096$'
  assert_line --regexp '^write sock: [0-9]+ calls, max 4096$'
}

@test "-B 4096: JSON report max_read/max_write <= 4096 on both ends, sizes reported" {
  both_ways -B 4096 -- -B 4096
  local j
  for j in "$LJSON" "$CJSON"; do
    jq_is "$j" '[.chunk_size, .read_size, .write_size] | map(tostring) | join(" ")' "4096 4096 4096"
    jq_true "$j" '[.sent.max_read, .sent.max_write, .received.max_read, .received.max_write] | all(. <= 4096)'
    jq_is "$j" .sent.max_read 4096     # stdin is a regular file: full reads
    jq_is "$j" .sent.max_write 4096
  done
  jq_true "$CJSON" '.sent.reads >= 257 and .sent.writes >= 257'
}

@test "--read-size 1000 --write-size 3000: reads <= 1000, writes <= 3000 (JSON)" {
  both_ways --read-size 1000 --write-size 3000 -- --read-size 1000 --write-size 3000
  local j
  for j in "$LJSON" "$CJSON"; do
    # (chunk_size with both overridden is not pinned down by the contract)
    jq_is "$j" '[.read_size, .write_size] | map(tostring) | join(" ")' "1000 3000"
    jq_true "$j" '[.sent.max_read, .received.max_read] | all(. <= 1000)'
    jq_true "$j" '[.sent.max_write, .received.max_write] | all(. <= 3000)'
    jq_is "$j" .sent.max_read 1000
  done
}

@test "--write-size 1000 with --read-size 4096: writes are split to <= 1000 bytes (strace and JSON)" {
  command -v strace >/dev/null || skip "strace not installed"
  fc_listen L --in "$B" --read-size 4096 --write-size 1000 --report=json --copy=rw
  FC_TIMEOUT=60 run -0 io "$A" "$T/c.out" \
    "${STRACE[@]}" -ff -qq -s 0 -o "$T/ctr" -e "trace=$STRACE_SET" \
    "$FASTCAT" --read-size 4096 --write-size 1000 --copy=rw 127.0.0.1 "$L_PORT"
  listener_ok 30
  assert_same_bytes "$A" "$T/L.out"
  assert_same_bytes "$B" "$T/c.out"
  run -0 check_strace_sizes "$T/ctr" 4096 1000
  assert_line --regexp '^read stdin: [0-9]+ calls, max 4096$'
  assert_line --regexp '^write sock: [0-9]+ calls, max 1000$'
  local j
  j=$(json_report "$T/L.err")
  jq_is "$j" '[.read_size, .write_size] | map(tostring) | join(" ")' "4096 1000"
  jq_is "$j" .sent.max_read 4096
  jq_is "$j" .sent.max_write 1000
  jq_true "$j" '.received.max_write <= 1000 and .received.max_read <= 4096'
}

@test "-B 7 --read-size 100: read size overridden, write size stays 7 (JSON), data intact" {
  # (which of 7 / 100 the report's chunk_size shows is not pinned down by the contract)
  both_ways -B 7 --read-size 100 -- -B 7 --read-size 100
  local j
  for j in "$LJSON" "$CJSON"; do
    jq_is "$j" '[.read_size, .write_size] | map(tostring) | join(" ")' "100 7"
    jq_true "$j" '[.sent.max_read, .received.max_read] | all(. <= 100)'
    jq_true "$j" '[.sent.max_write, .received.max_write] | all(. <= 7)'
    jq_is "$j" .sent.max_write 7
  done
}

@test "size suffixes: 1, 4k, 4K, 4KiB, 1m, 1M, 1MiB, 64MiB give the expected chunk_size" {
  local spec want rc
  printf 'x' >"$T/one"
  for spec in 1:1 4k:4096 4K:4096 4KiB:4096 1m:1048576 1M:1048576 1MiB:1048576 64MiB:67108864; do
    want=${spec#*:}
    fc_listen L --report=json -B "${spec%%:*}"
    run -0 fcx "$T/one" "$T/c.out" 127.0.0.1 "$L_PORT"
    wait_exit rc "$L_PID" 20
    assert_equal "listener -B ${spec%%:*} exit $rc" "listener -B ${spec%%:*} exit 0"
    jq_is "$(json_report "$T/L.err")" .chunk_size "$want"
  done
}
