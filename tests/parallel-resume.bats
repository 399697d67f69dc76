#!/usr/bin/env bats
# parallel-resume.bats - -P with --resume (doc/stripe-protocol.md, version 2;
# doc/resume-protocol.md, "-P"): a -l -P --resume receiver whose stdout is a
# partial file gets the rest of the sender's stdin striped over N connections,
# the chunks' offsets starting at the file's length; from a file the sender
# seeks, from a pipe it reads and drops the first L bytes. The file ends
# byte-exact and the sender sends the rest only; a file that is not a prefix
# is refused at both ends (exit 6) and stays as it was; a complete one gets
# nothing; --verify confirms the whole file; an end without --resume is told
# what to give and gets nothing. -P 4 --retry into -l -k -P --resume goes
# through one lost connection (ss -K), from a file and from a pipe, the whole
# session reconnecting. Loopback, listeners on port 0.

load helpers
load resume

setup() { resume_setup; }

# plisten [fastcat options...]: a -v -l --resume receiver with JSON report,
# stdout appended to $T/file, stderr $T/L.err. Sets L_PID and L_PORT.
plisten() { fc_listen L --out "$T/file" --append -- --report=json "$@"; }

# psend FEED [fastcat options...]: the sender from the source file (FEED file)
# or through a pipe (FEED pipe); JSON report and -v in $T/c.err; $status.
psend() {
  local feed=$1
  shift
  status=0
  if [[ $feed == pipe ]]; then
    cat "$A" | timeout -k 2 30 "$FASTCAT" -v --report=json "$@" 127.0.0.1 "$L_PORT" \
      >/dev/null 2>"$T/c.err" || status=$?
  else
    timeout -k 2 30 "$FASTCAT" -v --report=json "$@" 127.0.0.1 "$L_PORT" <"$A" \
      >/dev/null 2>"$T/c.err" || status=$?
  fi
}

# receiver_status WANT: the receiver exits WANT within 10 s.
receiver_status() {
  local rc
  wait_exit rc "$L_PID" 10
  assert_equal "receiver exit $rc" "receiver exit $1"
}

# resumed FEED N: -P N --resume at both ends; byte-exact, the rest sent (at
# most one chunk more per connection), both reports resumed at PART.
resumed() {
  plisten -P 1 --resume
  psend "$1" -P "$2" --resume
  assert_equal "sender exit $status" "sender exit 0"
  receiver_status 0
  assert_same_bytes "$A" "$T/file"
  both_reports
  jq_true "$CJSON" ".sent.bytes <= $((SIZE - PART + $2 * CHUNK))"
  jq_is "$LJSON" .received.bytes $((SIZE - PART))
  jq_is "$CJSON" .resumed_at "$PART"
  jq_is "$LJSON" .resumed_at "$PART"
  jq_true "$CJSON" "(.streams | length) == $2"
  grep -q -- "-P: $2 connections from" "$T/L.err" || fail "no striped session: $(cat "$T/L.err")"
}

@test "-P 4 --resume from a file: the rest striped from the file's length, byte-exact" {
  resumed file 4
  jq_is "$CJSON" .skipped 0
}

@test "-P 4 --resume from a pipe: the first L bytes read and skipped, the rest striped, byte-exact" {
  resumed pipe 4
  jq_is "$CJSON" .skipped "$PART"
}

@test "-P 3 --resume: the human report says 'resumed at L (NN %)' at both ends" {
  "$FASTCAT" -l -P 1 --resume --report 127.0.0.1 0 -v >>"$T/file" 2>"$T/L.err" </dev/null 3>&- &
  L_PID=$!
  fc_track "$L_PID"
  wait_for_line "$T/L.err" 'listening on .*:([0-9]+)$' "$L_PID"
  L_PORT=$(sed -nE 's/.*listening on .*:([0-9]+)$/\1/p' "$T/L.err")
  timeout 30 "$FASTCAT" -P 3 --resume --report 127.0.0.1 "$L_PORT" <"$A" 2>"$T/c.err" >/dev/null
  receiver_status 0
  grep -Fxq "fastcat: resumed at $PART (41 %)" "$T/c.err" || fail "sender: $(cat "$T/c.err")"
  grep -Fxq "fastcat: resumed at $PART (41 %)" "$T/L.err" || fail "receiver: $(cat "$T/L.err")"
  assert_same_bytes "$A" "$T/file"
}

@test "-P 4 --resume, a file that is not a prefix: both ends exit 6, the file unchanged, nothing sent" {
  local before
  printf 'X' | dd of="$T/file" bs=1 seek=$((PART - 10)) conv=notrunc status=none
  before=$(sha_of "$T/file")
  plisten -P 1 --resume
  psend file -P 4 --resume
  assert_equal "sender exit $status" "sender exit 6"
  receiver_status 6
  not_a_prefix "$before"
}

@test "-P 4 --resume, a complete file: nothing sent, exit 0 at both ends" {
  cp "$A" "$T/file"
  plisten -P 1 --resume
  psend pipe -P 4 --resume
  assert_equal "sender exit $status" "sender exit 0"
  receiver_status 0
  assert_same_bytes "$A" "$T/file"
  both_reports
  jq_is "$CJSON" .sent.bytes 0
  jq_is "$LJSON" .received.bytes 0
  jq_is "$LJSON" .resumed_at "$SIZE"
}

@test "-P 2 --resume, an empty file: a whole striped transfer" {
  : >"$T/file"
  plisten -P 1 --resume
  psend file -P 2 --resume
  assert_equal "sender exit $status" "sender exit 0"
  receiver_status 0
  assert_same_bytes "$A" "$T/file"
}

@test "-P auto --resume on loopback: byte-exact from the file's length, an auto session at the receiver" {
  plisten -P auto --resume
  psend file -P auto --resume --rate-limit 16M
  assert_equal "sender exit $status" "sender exit 0"
  receiver_status 0
  assert_same_bytes "$A" "$T/file"
  both_reports
  jq_is "$CJSON" .resumed_at "$PART"
  jq_is "$LJSON" .received.bytes $((SIZE - PART))
  grep -q -- '-P auto: a session from' "$T/L.err" || fail "no auto session: $(cat "$T/L.err")"
}

@test "-P 4 --resume --verify, from a file and from a pipe: verified over the whole file" {
  local want
  for feed in file pipe; do
    head -c "$PART" "$A" >"$T/file"
    plisten -P 1 --resume --verify
    psend "$feed" -P 4 --resume --verify
    assert_equal "$feed: sender exit $status" "$feed: sender exit 0"
    receiver_status 0
    assert_same_bytes "$A" "$T/file"
    both_reports
    jq_is "$CJSON" .verified true
    jq_is "$LJSON" .verified true
    jq_is "$LJSON" .received.xxh64 "$(jq -r .sent.xxh64 <<<"$CJSON")"
    want=$(xxh64_of "$A")
    [[ -z $want ]] || jq_is "$LJSON" .received.xxh64 "$want"
  done
}

@test "-P --resume --verify at the sender only: the receiver cannot confirm the whole file and says so (exit 6)" {
  plisten -P 1 --resume
  psend file -P 2 --resume --verify
  [[ $status != 0 ]] || fail "the sender exited 0"
  receiver_status 6
  error_line_in "$T/L.err" "needs --verify at this end too"
}

@test "-P --resume sender, -l -P receiver without --resume: exit 3 naming -l -P --resume, the receiver writes nothing" {
  fc_listen L -P 1 -w 2
  run -3 --separate-stderr fcx "$A" "$T/c.out" -P 4 --resume 127.0.0.1 "$L_PORT"
  [[ $stderr == *"is a fastcat -P receiver without --resume (give -l -P auto --resume at the other end)"* ]] ||
    fail "$stderr"
  kill "$L_PID" 2>/dev/null || true
  [[ ! -s $T/L.out ]] || fail "the receiver wrote $(stat -c %s "$T/L.out") bytes"
}

@test "-P sender without --resume, -l -P --resume receiver: exit 3 naming --resume; the file unchanged, the receiver serves the next" {
  plisten -P 1 --resume
  status=0
  timeout 10 "$FASTCAT" -P 4 127.0.0.1 "$L_PORT" <"$A" >/dev/null 2>"$T/p.err" || status=$?
  assert_equal "plain -P sender exit $status" "plain -P sender exit 3"
  grep -Fq "is a fastcat -l -P --resume receiver (it goes on with a file it has part of); give --resume at this end" "$T/p.err" ||
    fail "$(cat "$T/p.err")"
  assert_equal "$(stat -c %s "$T/file")" "$PART"
  psend file -P 2 --resume
  assert_equal "sender exit $status" "sender exit 0"
  receiver_status 0
  assert_same_bytes "$A" "$T/file"
}

# retry_through_loss FEED: -P 4 --retry 3 into -l -k -P --resume, rate-limited so
# that ss -K on one of the sender's connections lands mid-transfer; the whole
# session reconnects and goes on from the receiver's confirmed length.
retry_through_loss() {
  local rc sport
  : >"$T/file"
  mkpayload "$A" 12000000 # 3 s at 4 MB/s
  plisten -k -P 1 --resume
  (
    rc=0
    if [[ $1 == pipe ]]; then
      cat "$A" | timeout -k 2 60 "$FASTCAT" -v --report=json -P 4 --retry 3 --rate-limit 4M \
        127.0.0.1 "$L_PORT" >/dev/null 2>"$T/c.err" || rc=$?
    else
      timeout -k 2 60 "$FASTCAT" -v --report=json -P 4 --retry 3 --rate-limit 4M \
        127.0.0.1 "$L_PORT" <"$A" >/dev/null 2>"$T/c.err" || rc=$?
    fi
    echo "$rc" >"$T/c.rc"
  ) 3>&- &
  C_PID=$!
  fc_track "$C_PID"
  wait_for_size "$T/file" 3000000 20
  sport=$(ss -Htn state established "( dport = :$L_PORT )" | awk 'NR == 3 { n = split($3, a, ":"); print a[n] }')
  [[ -n $sport ]] || fail "no third connection in ss"
  ss -K state established "( sport = :$sport )" >/dev/null 2>&1 || true
  wait_exit rc "$C_PID" 60
  [[ -s $T/c.rc ]] || fail "the sender did not finish: $(cat "$T/c.err")"
  [[ $(cat "$T/c.rc") == 0 ]] || fail "sender exit $(cat "$T/c.rc"): $(cat "$T/c.err")"
  assert_same_bytes "$A" "$T/file"
  CJSON=$(json_report "$T/c.err")
  striped_retry_once 12000000 '[1-4] of 4'
  jq_true "$CJSON" "(.streams | length) == 4"
}

@test "-P 4 --retry 3 from a file through one lost connection: the whole session reconnects, byte-exact, exit 0, retries 1" {
  need ss
  retry_through_loss file
}

@test "-P 4 --retry 3 from a pipe through one lost connection: resent from the replay buffer, byte-exact, exit 0, retries 1" {
  need ss
  retry_through_loss pipe
}
