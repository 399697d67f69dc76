#!/usr/bin/env bats
# sync.bats - --sync at the receiver (-l): stdout's file is made durable (fdatasync) before
# the end is confirmed: at the stream's end, before --verify's verdict, and with --retry
# before each confirmation (per --sync-every, capped at a quarter of the sender's replay
# buffer). Seen through strace: the fdatasync calls, and that they come before the verdict
# goes out. A sync that fails (strace injects EIO) is exit 7 at the receiver, which tells a
# --retry sender (exit 8, "could not sync"); a --verify sender gets no verdict and does not
# exit 0. A stdout that is no file gets a warning; a sender with --sync is a usage error.
# Loopback, listeners on port 0.

load helpers

setup() {
  T=$BATS_TEST_TMPDIR
  A=$T/source
  mkpayload "$A" $((20 * 1048576))
  : >"$T/file"
}

# traced_listen STRACE_ARGS [fastcat options...]: a -v -l --sync receiver under strace
# (-f, output in $T/st) appending to $T/file; L_PID is strace's.
traced_listen() {
  local sargs=$1
  shift
  # shellcheck disable=SC2086 # STRACE_ARGS is a word list
  _open=append bg_listen L /dev/null "$T/file" 'listening on .*:([0-9]+)$' \
    "${STRACE[@]}" -f -qq -o "$T/st" $sargs "$FASTCAT" -v -l --sync "$@" 127.0.0.1 0
}

# send [fastcat options...]: the source to the receiver, foreground; status, stderr $T/c.err.
send() {
  status=0
  timeout -k 2 60 "$FASTCAT" -v "$@" 127.0.0.1 "$L_PORT" <"$A" >/dev/null 2>"$T/c.err" ||
    status=$?
}

receiver_status() {
  local rc
  wait_exit rc "$L_PID" 15 || fail "the receiver still runs"
  assert_equal "receiver exit $rc" "receiver exit $1"
}

syncs() { grep -c 'fdatasync(1)' "$T/st" || true; }

@test "-l --sync: stdout synced at the end, byte-exact; the report counts it" {
  need strace
  traced_listen '-e trace=fdatasync'
  send
  assert_equal "sender exit $status" "sender exit 0"
  receiver_status 0
  cmp "$A" "$T/file"
  (($(syncs) >= 1)) || fail "no fdatasync(1): $(cat "$T/st")"
  grep -Eq -- '--sync: stdout synced to disk [0-9]+ times?, [0-9.]+ s' "$T/L.err" ||
    fail "no sync line in the report: $(cat "$T/L.err")"
}

@test "-l --sync --verify: the sync comes before the verdict goes out; exit 0 at both ends" {
  need strace
  traced_listen '-e trace=fdatasync,sendto,write' --verify
  send --verify
  assert_equal "sender exit $status" "sender exit 0"
  receiver_status 0
  cmp "$A" "$T/file"
  local first_sync last_send
  first_sync=$(grep -n 'fdatasync(1)' "$T/st" | head -n 1 | cut -d: -f1)
  # the verdict: the receiver's only bytes to the socket after its hello
  last_send=$(grep -nE '(sendto|write)\(([3-9]|[1-9][0-9]),' "$T/st" | tail -n 1 | cut -d: -f1)
  [[ -n $first_sync && -n $last_send ]] || fail "no sync or no send: $(cat "$T/st")"
  ((first_sync < last_send)) || fail "the verdict went out before the sync: $(cat "$T/st")"
}

@test "-l -k --resume --sync, --retry sender: a sync per --sync-every (16 MiB) and at the end; byte-exact" {
  need strace
  traced_listen '-e trace=fdatasync' -k --resume
  send --retry 3
  assert_equal "sender exit $status" "sender exit 0"
  cmp "$A" "$T/file"
  local n
  n=$(syncs)
  # 20 MiB: one at 16 MiB and one at the end (and per 1 s while the stream waits)
  ((n >= 2 && n <= 6)) || fail "$n syncs for 20 MiB per 16 MiB: $(cat "$T/st")"
}

@test "-l -k -P auto --resume --sync, -P 4 --retry sender: synced per --sync-every and at the end; byte-exact" {
  need strace
  traced_listen '-e trace=fdatasync' -k -P auto --resume
  send -P 4 --retry 3
  assert_equal "sender exit $status" "sender exit 0"
  cmp "$A" "$T/file"
  local n
  n=$(syncs)
  ((n >= 2 && n <= 6)) || fail "$n syncs for 20 MiB per 16 MiB: $(cat "$T/st")"
}

@test "a sync that fails (EIO injected): receiver exit 7 'sync stdout', a --retry sender exit 8 at once" {
  need strace
  traced_listen '-e trace=fdatasync -e inject=fdatasync:error=EIO' -k --resume
  send --retry 3
  assert_equal "sender exit $status" "sender exit 8"
  error_line_in "$T/c.err" 'the receiver could not sync its file to disk: Input/output error; the receiver confirmed [0-9]+ bytes$'
  if grep -E 'retry [0-9]+/' "$T/c.err"; then fail "the sender retried"; fi
  receiver_status 7
  error_line_in "$T/L.err" 'sync stdout: Input/output error'
}

@test "a sync that fails before the verdict (EIO injected): receiver exit 7, the --verify sender not 0" {
  need strace
  traced_listen '-e trace=fdatasync -e inject=fdatasync:error=EIO' --verify
  send --verify
  ((status != 0)) || fail "the sender exited 0 without a verdict"
  receiver_status 7
  error_line_in "$T/L.err" 'sync stdout: Input/output error'
}

@test "-l --sync into a pipe: a warning, nothing synced, the data whole" {
  bg_listen L /dev/null "$T/file" 'listening on .*:([0-9]+)$' \
    bash -c '"$@" | cat' _ "$FASTCAT" -v -l --sync 127.0.0.1 0
  send
  assert_equal "sender exit $status" "sender exit 0"
  receiver_status 0
  cmp "$A" "$T/file"
  grep -q 'warning: --sync: stdout is not a file or a disk: nothing to sync' "$T/L.err" ||
    fail "no warning: $(cat "$T/L.err")"
}
