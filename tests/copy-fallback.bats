#!/usr/bin/env bats
# copy-fallback.bats - where --copy does not zero-copy: the runtime fallback to
# read/write (an O_APPEND stdout, stdin /dev/null), and where auto picks
# read/write (--checksum, datagrams, --send-only, a terminal).
#
# The payloads, pair and the splice probe are in copy.bash.

load helpers
load copy

setup_file() {
  copy_setup_file a.1048577 "a.$SZ" b.1048577
}

setup() {
  T=$BATS_TEST_TMPDIR
}

# ------------------------------------------------------------- fallback

# append_recv TRANSPORT FASTCAT-OPTIONS...: the listener sends a.SZ; the
# client, with stdin an empty file (nothing to send, no fallback there),
# appends what it receives to $T/app, which already holds a line.
# splice(2) into an O_APPEND file fails with EINVAL.
append_recv() {
  local tr=$1 rc
  shift
  printf 'old content, kept\n' >"$T/app"
  : >"$T/empty"
  listen_on "$tr" L --in "$BATS_FILE_TMPDIR/a.$SZ"
  run -0 --separate-stderr timeout -k 5 60 bash -c 'in=$1 out=$2; shift 2; "$@" <"$in" >>"$out"' \
    _ "$T/empty" "$T/app" "$FASTCAT" --report=json "$@" "${ADDR[@]}"
  printf '%s\n' "$stderr" >"$T/c.err"
  listener_ok 30
  { printf 'old content, kept\n'; cat "$BATS_FILE_TMPDIR/a.$SZ"; } >"$T/expected"
  assert_same_bytes "$T/expected" "$T/app"
  CJSON=$(json_report "$T/c.err")
  jq_is "$CJSON" .exit_status 0
  jq_is "$CJSON" .received.bytes "$SZ"
  jq_is "$CJSON" .received.copy rw
}

@test "tcp auto, stdout '>> file': -v names the method once (the fallback, no 'splice' line first), old content + exact payload, copy rw" {
  need_splice
  append_recv tcp -v
  run -0 cat "$T/c.err"
  refute_line 'fastcat: socket -> stdout: splice'
  assert_line 'fastcat: socket -> stdout: splice not supported here (Invalid argument); using read/write'
  run -0 grep -c 'socket -> stdout' "$T/c.err"
  assert_output 1
}

@test "tcp auto, stdout '>> file', no -v: the fallback is silent (only the JSON line)" {
  need_splice
  append_recv tcp
  run -1 grep -v '^{"fastcat":' "$T/c.err"   # 1: no other line
  assert_output ''
}

@test "tcp --copy=splice, stdout '>> file': the fallback is a warning without -v; exact, copy rw" {
  need_splice
  append_recv tcp --copy=splice
  run -0 grep -v '^{"fastcat":' "$T/c.err"
  assert_output 'fastcat: warning: socket -> stdout: splice not supported here (Invalid argument); using read/write'
}

@test "unix --copy=splice -B 16k, stdout '>> file': warning without -v; exact, copy rw" {
  need_splice
  append_recv unix --copy=splice -B 16k
  run -0 grep -v '^{"fastcat":' "$T/c.err"
  assert_output 'fastcat: warning: socket -> stdout: splice not supported here (Invalid argument); using read/write'
  jq_true "$CJSON" '.received.max_write <= 16384 and .received.max_read <= 16384'
}

# Regression: with reads of 10000 and writes of 16384 bytes the splice pipe
# (64 KiB by default) once held more than fastcat's buffer, and the
# fallback failed with EIO, the piped bytes lost. The pipe is now capped at
# the buffer's size.
@test "fallback with more bytes piped than one write (--read-size 10000 --write-size 16384, '>> file'): exact" {
  need_splice
  append_recv tcp --read-size 10000 --write-size 16384
}

@test "--copy=splice with stdin /dev/null: warns once, before any splice, that a device uses read/write; exits 0, sent copy rw, receives every byte" {
  need_splice
  fc_listen L --in "$BATS_FILE_TMPDIR/a.1048577"
  run -0 --separate-stderr fcx /dev/null "$T/c.out" --copy=splice --report=json 127.0.0.1 "$L_PORT"
  printf '%s\n' "$stderr" >"$T/c.err"
  listener_ok 30
  assert_same_bytes "$BATS_FILE_TMPDIR/a.1048577" "$T/c.out"
  run -0 grep -v '^{"fastcat":' "$T/c.err"
  assert_output 'fastcat: warning: --copy=splice: stdin -> socket uses read/write: stdin is a device'
  CJSON=$(json_report "$T/c.err")
  jq_is "$CJSON" .sent.copy rw
  jq_is "$CJSON" .sent.bytes 0
  jq_is "$CJSON" .received.copy splice
}

# ------------------------------------------------------ where auto is rw

@test "auto with --checksum: copy rw both ways at both ends; digests match xxhsum -H1" {
  local rc want_a want_b
  fc_listen L --in "$BATS_FILE_TMPDIR/b.1048577" --checksum --report=json
  run -0 run_client pipe file "$BATS_FILE_TMPDIR/a.$SZ" --checksum --report=json 127.0.0.1 "$L_PORT"
  listener_ok 30
  assert_same_bytes "$BATS_FILE_TMPDIR/a.$SZ" "$T/L.out"
  assert_same_bytes "$BATS_FILE_TMPDIR/b.1048577" "$T/c.out"
  both_reports
  for j in "$CJSON" "$LJSON"; do
    jq_is "$j" .sent.copy rw
    jq_is "$j" .received.copy rw
  done
  if command -v xxhsum >/dev/null; then
    want_a=$(xxhsum -H1 <"$BATS_FILE_TMPDIR/a.$SZ") want_a=${want_a%% *}
    want_b=$(xxhsum -H1 <"$BATS_FILE_TMPDIR/b.1048577") want_b=${want_b%% *}
    jq_is "$CJSON" .sent.xxh64 "$want_a"
    jq_is "$LJSON" .received.xxh64 "$want_a"
    jq_is "$LJSON" .sent.xxh64 "$want_b"
    jq_is "$CJSON" .received.xxh64 "$want_b"
  else
    jq_is "$LJSON" .received.xxh64 "$(jq -r .sent.xxh64 <<<"$CJSON")"
    jq_is "$CJSON" .received.xxh64 "$(jq -r .sent.xxh64 <<<"$LJSON")"
  fi
}

@test "auto -v with --checksum: logs 'read/write (--checksum reads the bytes)' per direction" {
  local rc
  fc_listen L --checksum
  run -0 run_client file file "$BATS_FILE_TMPDIR/a.1048577" -v --checksum 127.0.0.1 "$L_PORT"
  wait_exit rc "$L_PID" 30
  assert_same_bytes "$BATS_FILE_TMPDIR/a.1048577" "$T/L.out"
  run -0 cat "$T/c.err"
  if [[ -z ${FC_NO_SPLICE:-} ]]; then
    assert_line 'fastcat: stdin -> socket: read/write (--checksum reads the bytes)'
    assert_line 'fastcat: socket -> stdout: read/write (--checksum reads the bytes)'
  fi
  assert_line --regexp '^fastcat: sent 1048577 bytes .* by rw'
  assert_line --regexp '^fastcat: received 0 bytes .* by rw'
}

@test "auto over udp: copy rw both ways at both ends, byte-exact" {
  mkpayload "$T/a" 300000
  fc_listen L -u --report=json
  run -0 run_client file file "$T/a" -u --report=json 127.0.0.1 "$L_PORT"
  listener_ok 30
  assert_same_bytes "$T/a" "$T/L.out"
  both_reports
  for j in "$CJSON" "$LJSON"; do
    jq_is "$j" .sent.copy rw
    jq_is "$j" .received.copy rw
  done
}

@test "auto over unix-dgram and unix-seqpacket: copy rw both ways at both ends, byte-exact" {
  local rc tr
  mkpayload "$T/a" 300000
  for tr in unix-dgram unix-seqpacket; do
    fc_ulisten L --addr "$T/$tr.sock" -- --transport "$tr" --report=json
    run -0 run_client pipe file "$T/a" --transport "$tr" --report=json "$T/$tr.sock"
    wait_exit rc "$L_PID" 30
    assert_equal "$tr listener exit $rc" "$tr listener exit 0"
    assert_same_bytes "$T/a" "$T/L.out"
    both_reports
    jq_is "$CJSON" .transport "$tr"
    for j in "$CJSON" "$LJSON"; do
      jq_is "$j" .sent.copy rw
      jq_is "$j" .received.copy rw
    done
  done
}

@test "--send-only: the discarded receive direction is rw, the sending one zero-copy" {
  fc_listen L --in "$BATS_FILE_TMPDIR/b.1048577"
  run -0 run_client file file "$BATS_FILE_TMPDIR/a.1048577" --send-only --report=json 127.0.0.1 "$L_PORT"
  listener_ok 30
  assert_same_bytes "$BATS_FILE_TMPDIR/a.1048577" "$T/L.out"
  assert_equal "stdout bytes: $(stat -c %s "$T/c.out")" "stdout bytes: 0"
  CJSON=$(json_report "$T/c.err")
  jq_is "$CJSON" .sent.copy "$(method auto stdin-file)"
  jq_is "$CJSON" .received.copy rw
}

@test "a terminal on stdin and stdout: auto uses rw both ways; --copy=splice warns and uses rw" {
  need script
  need_splice
  local rc
  printf 'reply from the listener\n' >"$T/reply"
  mkfifo "$T/tin"
  hold_open HOLD "$T/tin" 30
  fc_listen L --in "$T/reply"
  # script(1) gives fastcat a pty as stdin and stdout; stderr goes to a file
  bg_start S "$T/tin" "$T/s.out" script -q -e -c \
    "$(printf '%q ' "$FASTCAT" -v --report=json 127.0.0.1 "$L_PORT") 2>$(printf '%q' "$T/c.err")" /dev/null
  wait_exit rc "$S_PID" 10
  assert_equal "fastcat on a tty: exit $rc" "fastcat on a tty: exit 0"
  grep -q 'reply from the listener' "$T/s.out" || fail "reply not received: $(cat "$T/s.out")"
  CJSON=$(json_report "$T/c.err")
  jq_is "$CJSON" .sent.copy rw
  jq_is "$CJSON" .received.copy rw
  run -0 cat "$T/c.err"
  assert_line 'fastcat: stdin -> socket: read/write (a terminal)'
  assert_line 'fastcat: socket -> stdout: read/write (a terminal)'

  fc_listen L2 --in "$T/reply"
  bg_start S2 "$T/tin" "$T/s2.out" script -q -e -c \
    "$(printf '%q ' "$FASTCAT" --copy=splice --report=json 127.0.0.1 "$L2_PORT") 2>$(printf '%q' "$T/c2.err")" /dev/null
  wait_exit rc "$S2_PID" 10
  assert_equal "fastcat --copy=splice on a tty: exit $rc" "fastcat --copy=splice on a tty: exit 0"
  CJSON=$(json_report "$T/c2.err")
  jq_is "$CJSON" .sent.copy rw
  jq_is "$CJSON" .received.copy rw
  run -0 cat "$T/c2.err"
  assert_line 'fastcat: warning: --copy=splice: stdin -> socket uses read/write: a terminal'
  assert_line 'fastcat: warning: --copy=splice: socket -> stdout uses read/write: a terminal'
}

@test "auto, stdin /dev/null (the demo's receiver): -v says read/write once, no fallback; the empty direction says it moved nothing" {
  need_splice
  fc_listen L --in "$BATS_FILE_TMPDIR/a.1048577"
  run -0 --separate-stderr fcx /dev/null "$T/c.out" -v 127.0.0.1 "$L_PORT"
  printf '%s\n' "$stderr" >"$T/c.err"
  listener_ok 30
  assert_same_bytes "$BATS_FILE_TMPDIR/a.1048577" "$T/c.out"
  run -0 cat "$T/c.err"
  assert_line 'fastcat: stdin -> socket: read/write (stdin is a device)'
  refute_line --partial 'not supported here'
  assert_line --regexp '^fastcat: sent 0 bytes \(0 B\) in [0-9.]+ s: nothing moved; [0-9]+ reads?, by rw$'
  run -0 grep -c 'stdin -> socket' "$T/c.err"
  assert_output 1
}
