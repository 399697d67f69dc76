#!/usr/bin/env bats
# resume.bats - --resume (doc/resume-protocol.md): a receiver (-l --resume)
# whose stdout is a partial file (>> FILE or 1<> FILE) gets the rest of the
# sender's stdin, which it skips (a file: seeked, a pipe: read through), and
# the file ends byte-exact; the sender sends no more than the rest (plus one
# chunk at most). A file that is not a prefix of the source is refused at
# both ends (exit 6) and stays as it was, byte for byte; a complete one gets
# nothing; a plain peer on either side is refused (exit 3) and nothing of the
# protocol lands in a file. Loopback only, listeners on port 0.

load helpers
load resume

setup() { resume_setup; }

# resume_listen NAME FILE [rw] [fastcat options...]: a -l --resume receiver on
# 127.0.0.1 port 0 with its stdout FILE opened without truncation: >> FILE,
# or with rw 1<> FILE (read-write at offset 0: fastcat must seek). JSON
# report; stderr in $T/NAME.err. Sets NAME_PID and NAME_PORT.
resume_listen() {
  local name=$1 file=$2 open=--append
  shift 2
  [[ ${1:-} == rw ]] && { open=--rw; shift; }
  fc_listen "$name" --out "$file" "$open" -- --resume --report=json "$@"
}

# send_from IN ARGS...: a --resume sender, stdin IN, JSON report in $T/c.err; $status.
send_from() {
  local in=$1
  shift
  status=0
  timeout -k 2 30 "$FASTCAT" --resume --report=json "$@" <"$in" >"$T/c.out" 2>"$T/c.err" || status=$?
}

# send_pipe IN ARGS...: the same with stdin a pipe from cat (nothing to seek).
send_pipe() {
  local in=$1
  shift
  status=0
  cat "$in" | timeout -k 2 30 "$FASTCAT" --resume --report=json "$@" >"$T/c.out" 2>"$T/c.err" || status=$?
}

# listener_status WANT: the receiver L exits WANT within 10 s.
listener_status() {
  local rc
  wait_exit rc "$L_PID" 10
  assert_equal "receiver exit $rc" "receiver exit $1"
}

@test "resume from a file (>> FILE): the rest is sent, seeked to, and the file ends byte-exact" {
  resume_listen L "$T/file"
  send_from "$A" 127.0.0.1 "$L_PORT"
  assert_equal "sender exit $status" "sender exit 0"
  listener_status 0
  assert_same_bytes "$A" "$T/file"
  both_reports
  jq_is "$CJSON" .sent.bytes $((SIZE - PART))
  jq_is "$CJSON" .resumed_at "$PART"
  jq_is "$CJSON" .skipped 0
  jq_is "$LJSON" .received.bytes $((SIZE - PART))
  jq_is "$LJSON" .resumed_at "$PART"
  jq_is "$LJSON" .skipped null
}

@test "resume from a pipe: the first L bytes are read and skipped, the rest sent, byte-exact" {
  resume_listen L "$T/file"
  send_pipe "$A" 127.0.0.1 "$L_PORT"
  assert_equal "sender exit $status" "sender exit 0"
  listener_status 0
  assert_same_bytes "$A" "$T/file"
  both_reports
  jq_is "$CJSON" .skipped "$PART"
  jq_is "$CJSON" .resumed_at "$PART"
  jq_true "$CJSON" ".sent.bytes <= $((SIZE - PART + CHUNK))"
  jq_is "$LJSON" .received.bytes $((SIZE - PART))
}

@test "resume into 1<> FILE: the receiver writes from the file's end, not from offset 0" {
  resume_listen L "$T/file" rw
  send_from "$A" 127.0.0.1 "$L_PORT"
  assert_equal "sender exit $status" "sender exit 0"
  listener_status 0
  assert_same_bytes "$A" "$T/file"
}

@test "the human report says 'resumed at L (NN %)' at both ends, and the skip from a pipe" {
  local rc
  "$FASTCAT" -l --resume --report 127.0.0.1 0 -v >>"$T/file" 2>"$T/L.err" </dev/null 3>&- &
  L_PID=$!
  fc_track "$L_PID"
  wait_for_line "$T/L.err" 'listening on .*:([0-9]+)$' "$L_PID"
  L_PORT=$(sed -nE 's/.*listening on .*:([0-9]+)$/\1/p' "$T/L.err")
  timeout 30 "$FASTCAT" --resume --report 127.0.0.1 "$L_PORT" <"$A" 2>"$T/c.err" >/dev/null
  wait_exit rc "$L_PID" 10
  assert_equal "receiver exit $rc" "receiver exit 0"
  grep -Fxq "fastcat: resumed at $PART (41 %)" "$T/c.err" || fail "sender: $(cat "$T/c.err")"
  grep -Fxq "fastcat: resumed at $PART (41 %)" "$T/L.err" || fail "receiver: $(cat "$T/L.err")"
  head -c "$PART" "$A" >"$T/file2"
  "$FASTCAT" -l --resume --report 127.0.0.1 0 -v >>"$T/file2" 2>"$T/L2.err" </dev/null 3>&- &
  L_PID=$!
  fc_track "$L_PID"
  wait_for_line "$T/L2.err" 'listening on .*:([0-9]+)$' "$L_PID"
  L_PORT=$(sed -nE 's/.*listening on .*:([0-9]+)$/\1/p' "$T/L2.err")
  cat "$A" | timeout 30 "$FASTCAT" --resume --report 127.0.0.1 "$L_PORT" 2>"$T/c2.err" >/dev/null
  wait_exit rc "$L_PID" 10
  grep -Fxq "fastcat: resumed at $PART; $PART bytes of stdin read and skipped" "$T/c2.err" ||
    fail "sender from a pipe: $(cat "$T/c2.err")"
  assert_same_bytes "$A" "$T/file2"
}

@test "a file that is not a prefix of the source: both ends exit 6, saying so, and the file is unchanged" {
  local before
  mkpayload "$T/file" "$PART"   # as long as the real part, other bytes
  before=$(sha_of "$T/file")
  resume_listen L "$T/file"
  send_from "$A" 127.0.0.1 "$L_PORT"
  assert_equal "sender exit $status" "sender exit 6"
  listener_status 6
  not_a_prefix "$before"
  jq_is "$CJSON" .exit_status 6
}

@test "only the last byte differs (from a pipe): refused with exit 6, file unchanged" {
  local before
  printf 'X' | dd of="$T/file" bs=1 seek=$((PART - 1)) conv=notrunc status=none
  cmp -s "$T/file" <(head -c "$PART" "$A") && fail "the test file still matches"
  before=$(sha_of "$T/file")
  resume_listen L "$T/file"
  send_pipe "$A" 127.0.0.1 "$L_PORT"
  assert_equal "sender exit $status" "sender exit 6"
  listener_status 6
  assert_equal "$(sha_of "$T/file")" "$before"
}

@test "a source shorter than the file: mismatch, exit 6 at both ends, file unchanged" {
  local before
  cat "$A" "$A" >"$T/file"
  before=$(sha_of "$T/file")
  resume_listen L "$T/file"
  send_from "$A" 127.0.0.1 "$L_PORT"
  assert_equal "sender exit $status" "sender exit 6"
  listener_status 6
  assert_equal "$(sha_of "$T/file")" "$before"
  error_line_in "$T/c.err" "stdin has only $SIZE bytes, fewer than the receiver's file \\($((2 * SIZE))\\)"
  error_line_in "$T/L.err" "the sender's stdin has only $SIZE bytes"
  # from a pipe the sender learns it only by reading: the same refusal
  resume_listen L "$T/file"
  send_pipe "$A" 127.0.0.1 "$L_PORT"
  assert_equal "sender exit $status" "sender exit 6"
  listener_status 6
  assert_equal "$(sha_of "$T/file")" "$before"
}

@test "a complete file: nothing is sent, exit 0 at both ends" {
  cp "$A" "$T/file"
  resume_listen L "$T/file"
  send_from "$A" 127.0.0.1 "$L_PORT"
  assert_equal "sender exit $status" "sender exit 0"
  listener_status 0
  assert_same_bytes "$A" "$T/file"
  both_reports
  jq_is "$CJSON" .sent.bytes 0
  jq_is "$LJSON" .received.bytes 0
  jq_is "$LJSON" .resumed_at "$SIZE"
}

@test "an empty file: --resume is a whole transfer" {
  : >"$T/file"
  resume_listen L "$T/file"
  send_pipe "$A" 127.0.0.1 "$L_PORT"
  assert_equal "sender exit $status" "sender exit 0"
  listener_status 0
  assert_same_bytes "$A" "$T/file"
}

@test "-l --resume with stdout not a regular file (a pipe, > /dev/null): exit 2 at once" {
  local exp='fastcat: --resume needs stdout to be a regular file (use >> FILE)'
  run -2 --separate-stderr bash -c 'set -o pipefail; "$1" -l --resume 127.0.0.1 0 </dev/null | cat' _ "$FASTCAT"
  assert_equal "$stderr" "$exp"
  run -2 --separate-stderr timeout 10 "$FASTCAT" -l --resume 127.0.0.1 0 </dev/null >/dev/null
  assert_equal "$stderr" "$exp"
  run -2 --separate-stderr timeout 10 "$FASTCAT" -l --resume 127.0.0.1 0 </dev/null 1<"$T/file"
  assert_equal "$stderr" "$exp"
}

@test "-l --resume with stdout > FILE (truncated, write-only): exit 2 before anything listens" {
  printf 'part of the stream' >"$T/file"
  # (bash -c: run captures the command's stdout; the redirection must be the command's own)
  run -2 --separate-stderr bash -c 'timeout 10 "$1" -v -l --resume 127.0.0.1 0 </dev/null >"$2"' _ "$FASTCAT" "$T/file"
  assert_equal "$stderr" "fastcat: --resume needs stdout opened without truncation (>> FILE or 1<> FILE): > FILE empties the file"
  # >> FILE keeps the file: that listener listens (until timeout ends it)
  run -124 --separate-stderr bash -c 'timeout 1 "$1" -v -l --resume 127.0.0.1 0 </dev/null >>"$2"' _ "$FASTCAT" "$T/file"
  [[ $stderr == *"listening on 127.0.0.1:"* ]] || fail "$stderr"
}

@test "--verify --resume: the confirmed XXH64 is the whole file's, byte-exact" {
  resume_listen L "$T/file" --verify
  send_from "$A" --verify 127.0.0.1 "$L_PORT"
  assert_equal "sender exit $status" "sender exit 0"
  listener_status 0
  assert_same_bytes "$A" "$T/file"
  both_reports
  jq_is "$CJSON" .verified true
  jq_is "$LJSON" .verified true
  jq_is "$CJSON" .sent.bytes $((SIZE - PART))
  # both digests are of all SIZE bytes, and agree
  jq_is "$LJSON" .received.xxh64 "$(jq -r .sent.xxh64 <<<"$CJSON")"
  local want
  want=$(xxh64_of "$A")
  [[ -z $want ]] || jq_is "$LJSON" .received.xxh64 "$want"
}

@test "--verify --resume from a pipe: verified over the whole file" {
  resume_listen L "$T/file" --verify
  send_pipe "$A" --verify 127.0.0.1 "$L_PORT"
  assert_equal "sender exit $status" "sender exit 0"
  listener_status 0
  assert_same_bytes "$A" "$T/file"
  both_reports
  jq_is "$LJSON" .verified true
  jq_is "$CJSON" .skipped "$PART"
}

@test "a --resume sender and a plain fastcat receiver: exit 3 at once, nothing sent" {
  local rc start
  fc_listen L --out "$T/plain.out"
  start=$(now_us)
  send_from "$A" 127.0.0.1 "$L_PORT"
  assert_equal "sender exit $status" "sender exit 3"
  (($(elapsed_ms "$start") < 4000)) || fail "the sender took $(elapsed_ms "$start") ms to give up"
  error_line_in "$T/c.err" "is not a fastcat --resume receiver"
  wait_exit rc "$L_PID" 10
  [[ $rc != 0 ]] || fail "the plain receiver took the empty stream for a whole one (exit 0)"
  assert_equal "$(stat -c %s "$T/plain.out")" 0
}

@test "a --resume sender and nc -l: exit 3 within the patience, nothing sent" {
  need nc.openbsd
  local rc
  nc_listen N --out "$T/nc.out" -N
  send_from "$A" -w 2 127.0.0.1 "$N_PORT"
  assert_equal "sender exit $status" "sender exit 3"
  error_line_in "$T/c.err" "is not a fastcat --resume receiver"
  wait_exit rc "$N_PID" 10
  assert_equal "$(stat -c %s "$T/nc.out")" 0
}

@test "a plain fastcat sender and a --resume receiver: refused at both ends, the file unchanged" {
  local before
  before=$(sha_of "$T/file")
  resume_listen L "$T/file"
  status=0
  timeout 30 "$FASTCAT" 127.0.0.1 "$L_PORT" <"$A" >"$T/c.out" 2>"$T/c.err" || status=$?
  [[ $status == 3 || $status == 5 ]] || fail "plain sender exit $status: $(cat "$T/c.err")"
  listener_status 3
  error_line_in "$T/L.err" "is not a fastcat --resume sender"
  assert_equal "$(sha_of "$T/file")" "$before"
  # it did see the hello when it came first: the message says what to do
  if ((status == 3)); then error_line_in "$T/c.err" "give --resume at this end"; fi
}

@test "nc as the sender to a --resume receiver: refused (exit 3), the file unchanged" {
  need nc.openbsd
  local before
  before=$(sha_of "$T/file")
  resume_listen L "$T/file"
  timeout 30 nc.openbsd -N 127.0.0.1 "$L_PORT" <"$A" >"$T/nc.out" 2>/dev/null || true
  listener_status 3
  assert_equal "$(sha_of "$T/file")" "$before"
}

@test "unix stream: resume from a file, byte-exact" {
  local rc sock=$T/r.sock
  "$FASTCAT" -v -lU --resume --report=json "$sock" >>"$T/file" 2>"$T/L.err" </dev/null 3>&- &
  L_PID=$!
  fc_track "$L_PID"
  wait_for_socket "$sock" "$L_PID"
  send_from "$A" -U "$sock"
  assert_equal "sender exit $status" "sender exit 0"
  wait_exit rc "$L_PID" 10
  assert_equal "receiver exit $rc" "receiver exit 0"
  assert_same_bytes "$A" "$T/file"
  CJSON=$(json_report "$T/c.err")
  jq_is "$CJSON" .sent.bytes $((SIZE - PART))
}

@test "-k --resume: each connection resumes where the file stands" {
  local rc
  head -c 1000000 "$A" >"$T/file"
  resume_listen L "$T/file" -k
  head -c 3000000 "$A" >"$T/first"
  send_from "$T/first" 127.0.0.1 "$L_PORT"
  assert_equal "first sender exit $status" "first sender exit 0"
  send_pipe "$A" 127.0.0.1 "$L_PORT"
  assert_equal "second sender exit $status" "second sender exit 0"
  CJSON=$(json_report "$T/c.err")
  jq_is "$CJSON" .skipped 3000000
  kill -TERM "$L_PID"
  wait_exit rc "$L_PID" 10
  assert_same_bytes "$A" "$T/file"
}
