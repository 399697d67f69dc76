#!/usr/bin/env bats
# retry.bats - --retry N (doc/resume-protocol.md, "--retry"): a sender whose connection is
# reset (ss -K on its socket) reconnects to a -l -k --resume receiver and goes on where the
# receiver's file stands: from a file it seeks, from a pipe it resends out of its replay
# buffer; the file ends byte-exact and the sender exits 0, its report counting the retries.
# A receiver without -k, or without --resume, gets a sender that says what it needs. The
# replay buffer bounds what a pipe sender holds while the receiver is stopped (SIGSTOP):
# it stops reading stdin, and its peak RSS stays under the buffer plus a few MiB. The lab's
# blackouts are tests/retry-wan.bats'. Loopback, listeners on port 0; the senders are slowed
# with --rate-limit so that the resets land mid-transfer, and each reset waits for the
# receiver's file to grow, not for a time.

load helpers
load retry

setup() { retry_setup; }

# two_resets FEED: a --retry transfer through two resets, each once the file has grown.
two_resets() {
  keep_listen -k --resume
  send_bg "$1" --retry 5 --rate-limit "$RATE"
  wait_for_size "$T/file" 2000000 20
  reset_sender
  wait_for_count "$T/L.err" 'resumed session' 1 "$L_PID" 20
  wait_for_size "$T/file" 6000000 20
  reset_sender
  wait_for_count "$T/L.err" 'resumed session' 2 "$L_PID" 20
  sender_status
  [[ $status == 0 ]] || fail "sender exit $status: $(cat "$T/c.err")"
  assert_same_bytes "$A" "$T/file"
  CJSON=$(json_report "$T/c.err")
  jq_is "$CJSON" .retries 2
  jq_is "$CJSON" .confirmed "$SIZE"
  grep -Eq '^fastcat: connection lost after .* \(.*\); retry 1/5 in 0\.5 s$' "$T/c.err" ||
    fail "no 'connection lost' line: $(cat "$T/c.err")"
}

@test "--retry from a file: through two connection resets, byte-exact, exit 0, retries 2" {
  two_resets file
}

@test "--retry from a pipe: through two connection resets, resent from the replay buffer, byte-exact" {
  two_resets pipe
}

# restart_receiver: SIGKILL the receiver once the file has grown (a crash: what it wrote stays,
# what it confirmed is in the file), then start it again on the same file and port.
restart_receiver() {
  local port=$L_PORT rc
  wait_for_size "$T/file" 4000000 20
  kill -KILL "$L_PID"
  wait_exit rc "$L_PID" 10
  _open=append bg_listen L /dev/null "$T/file" 'listening on .*:([0-9]+)$' \
    "$FASTCAT" -v -l -k --resume 127.0.0.1 "$port"
}

@test "--retry from a pipe, the receiver killed and started again on the same file: the sender checks the file's tail against its replay buffer and goes on, byte-exact" {
  keep_listen -k --resume
  send_bg pipe --retry 5 --rate-limit "$RATE"
  restart_receiver
  sender_status
  [[ $status == 0 ]] || fail "sender exit $status: $(cat "$T/c.err")"
  assert_same_bytes "$A" "$T/file"
  grep -q 'no longer holds this session (restarted, or its hold ran out): its file.s tail is checked' \
    "$T/c.err" || fail "the sender did not say the receiver forgot: $(cat "$T/c.err")"
  grep -q 'new session' "$T/L.err" || fail "the restarted receiver did not start anew"
}

@test "--retry from a pipe, the receiver started again on a file whose tail differs: exit 6 at both ends, the file untouched" {
  keep_listen -k --resume
  send_bg pipe --retry 5 --rate-limit "$RATE"
  wait_for_size "$T/file" 4000000 20
  local port=$L_PORT rc size before
  kill -STOP "$L_PID"
  size=$(stat -c %s "$T/file")
  printf 'X' | dd of="$T/file" bs=1 seek=$((size - 1)) conv=notrunc status=none
  kill -KILL "$L_PID"
  wait_exit rc "$L_PID" 10
  before=$(sha_of "$T/file")
  _open=append bg_listen L /dev/null "$T/file" 'listening on .*:([0-9]+)$' \
    "$FASTCAT" -v -l -k --resume 127.0.0.1 "$port"
  sender_status
  [[ $status == 6 ]] || fail "sender exit $status, want 6: $(cat "$T/c.err")"
  grep -q 'is not a prefix' "$T/c.err" || fail "message: $(cat "$T/c.err")"
  assert_equal "$(sha_of "$T/file")" "$before"
}

@test "--retry, receiver without -k: the transfer goes, a lost connection is not retried and the message says what the receiver needs" {
  keep_listen --resume
  send_bg file --retry 3 --rate-limit "$RATE"
  wait_for_size "$T/file" 1000000 20
  reset_sender
  sender_status
  [[ $status == 5 ]] || fail "sender exit $status, want 5: $(cat "$T/c.err")"
  grep -q 'does not keep listening: a lost connection cannot be retried (give it -l -k --resume)' \
    "$T/c.err" || fail "no warning at the start: $(cat "$T/c.err")"
  grep -q 'not retried: the receiver does not keep listening (give it -l -k --resume)' \
    "$T/c.err" || fail "no advice at the end: $(cat "$T/c.err")"
}

@test "--retry, receiver without --resume: exit 3 at once, no retry, naming -l -k --resume; the file gets nothing" {
  keep_listen -k
  send_bg file --retry 3
  sender_status
  [[ $status == 3 ]] || fail "sender exit $status, want 3: $(cat "$T/c.err")"
  grep -q 'is not a fastcat --resume receiver.*give -l -k --resume at the other end' "$T/c.err" ||
    fail "no advice: $(cat "$T/c.err")"
  ! grep -q 'retry 1/' "$T/c.err" || fail "it retried: $(cat "$T/c.err")"
  [[ ! -s $T/file ]] || fail "the receiver wrote $(stat -c %s "$T/file") bytes"
}

@test "--retry with nobody listening: retries with a doubling wait, then exit 3 (never connected)" {
  closed_port
  run --separate-stderr timeout -k 2 20 "$FASTCAT" -v --retry 2 --retry-wait 0.1 127.0.0.1 \
    "$CLOSED_PORT" </dev/null
  [[ $status == 3 ]] || fail "exit $status, want 3: $stderr"
  [[ $stderr == *"retry 1/2 in 0.1 s"* && $stderr == *"retry 2/2 in 0.2 s"* ]] ||
    fail "waits: $stderr"
  [[ $stderr == *"gave up after 2 retries"* ]] || fail "no final line: $stderr"
}

@test "--retry, another sender while a lost session is held: refused (exit 3, busy), the file untouched by it" {
  keep_listen -k --resume
  send_bg file --retry 1 --retry-wait 30 --rate-limit "$RATE"
  wait_for_size "$T/file" 1000000 20
  reset_sender
  wait_for_line "$T/L.err" 'other senders refused for up to' "$L_PID" 20
  local before
  before=$(sha_of "$T/file")
  run --separate-stderr timeout -k 2 20 "$FASTCAT" --resume 127.0.0.1 "$L_PORT" <"$A"
  [[ $status == 3 ]] || fail "second sender exit $status, want 3: $stderr"
  [[ $stderr == *"holds a lost --retry session for its sender"* ]] || fail "message: $stderr"
  run --separate-stderr timeout -k 2 20 "$FASTCAT" --retry 1 --retry-wait 0.1 127.0.0.1 "$L_PORT" <"$A"
  [[ $status == 3 ]] || fail "a --retry stranger exit $status, want 3: $stderr"
  [[ $stderr == *"holds another sender's session"* ]] || fail "message: $stderr"
  assert_equal "$(sha_of "$T/file")" "$before"
}

# The buffer is the smallest, 1 MiB, so that it is the bound: the socket buffers of the two
# ends hold more than that (about 4 MiB here), and a sender that ignored the buffer would
# read that much past the file before its writes blocked.
@test "--replay-buffer bounds a pipe sender: receiver stopped, stdin not read past the file + the buffer, VmHWM under its own size + buffer + 8 MiB" {
  local cap=1048576 rchar size hwm base pid i prev=-1
  keep_listen -k --resume
  # this build's own size (a sanitizer build's is larger), before any buffer exists
  base=$(awk '/^VmHWM:/ { print $2 }' "/proc/$L_PID/status")
  # 400 MiB of zeros through a pipe: far more than the buffer and the socket buffers hold
  (
    rc=0
    head -c 400M /dev/zero | timeout -k 2 120 "$FASTCAT" --report=json --retry 2 \
      --replay-buffer 1M 127.0.0.1 "$L_PORT" >/dev/null 2>"$T/c.err" || rc=$?
    echo "$rc" >"$T/c.rc"
  ) 3>&- &
  C_PID=$!
  fc_track "$C_PID"
  wait_for_size "$T/file" 1000000 20
  kill -STOP "$L_PID"
  for ((i = 0; i < 100; i++)); do
    pid=$(for p in $(pgrep -P "$C_PID"); do pgrep -x -P "$p" fastcat; done | head -n 1) || true
    [[ -n $pid ]] && break
    sleep 0.05
  done
  [[ -n $pid ]] || { kill -CONT "$L_PID"; fail "no sender process"; }
  # until the sender stops reading: the same count of bytes read twice, 0.5 s apart
  for ((i = 0; i < 40; i++)); do
    rchar=$(sed -n 's/^rchar: //p' "/proc/$pid/io")
    [[ $rchar == "$prev" ]] && break
    prev=$rchar
    sleep 0.5
  done
  hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status")
  size=$(stat -c %s "$T/file")
  kill -CONT "$L_PID"
  [[ $rchar == "$prev" ]] || fail "the sender kept reading stdin: $rchar bytes"
  ((rchar <= size + cap + 262144)) ||
    fail "read $rchar bytes of stdin with $size in the file: more than the file and the buffer"
  [[ -n $hwm && -n $base ]] && ((hwm < base + (1 + 8) * 1024)) ||
    fail "VmHWM $hwm kB, over the idle listener's $base kB + 1 MiB + 8 MiB"
  sender_status
  [[ $status == 0 ]] || fail "sender exit $status: $(cat "$T/c.err")"
  assert_equal "$(stat -c %s "$T/file")" $((400 * 1048576))
  assert_equal "$(tr -d '\0' <"$T/file" | wc -c)" 0
}
