#!/usr/bin/env bats
# retry-stop.bats - the receiver's last word (doc/resume-protocol.md): a -l -k --resume
# receiver whose stdout fails (a file-size limit: ulimit -f, EFBIG; a full 1 MiB tmpfs:
# ENOSPC) tells its --retry sender why before it closes. The sender stops at once, with no
# retry, exits 8 naming the reason and what the receiver confirmed; the receiver exits 7
# and, -k or not, listens no more (its stdout takes nothing). From a pipe and a file, on one
# connection and with -P. Loopback, listeners on port 0.

load helpers

LIMIT=$((8 * 1048576)) # the receiver's file-size limit (ulimit -f counts KiB)

setup() {
  T=$BATS_TEST_TMPDIR
  MNT=
  A=$T/source
  mkpayload "$A" $((24 * 1048576))
  : >"$T/file"
}

teardown() {
  dump_logs
  fc_cleanup
  if [[ -n $MNT ]] && mountpoint -q "$MNT"; then umount "$MNT" || umount -l "$MNT"; fi
}

# limited_listen [fastcat options...]: a -v -l -k --resume receiver appending to $T/file
# under a file-size limit of LIMIT bytes; stderr $T/L.err, L_PID, L_PORT.
limited_listen() {
  _open=append bg_listen L /dev/null "$T/file" 'listening on .*:([0-9]+)$' \
    bash -c 'ulimit -f $1 && shift && exec "$@"' _ $((LIMIT / 1024)) \
    "$FASTCAT" -v -l -k --resume "$@" 127.0.0.1 0
}

# send FEED [fastcat options...]: a --retry 5 sender from the source (FEED file or pipe) in
# the foreground, -v; its status in $status, stderr in $T/c.err.
send() {
  local feed=$1
  shift
  status=0
  if [[ $feed == pipe ]]; then
    cat "$A" | timeout -k 2 60 "$FASTCAT" -v --retry 5 "$@" 127.0.0.1 "$L_PORT" \
      >/dev/null 2>"$T/c.err" || status=$?
  else
    timeout -k 2 60 "$FASTCAT" -v --retry 5 "$@" 127.0.0.1 "$L_PORT" <"$A" \
      >/dev/null 2>"$T/c.err" || status=$?
  fi
}

# stopped_at REASON BYTES: the sender exited 8 at once, saying REASON and that the receiver
# confirmed BYTES, without a retry; the receiver exited 7 (not listening on), having told it.
stopped_at() {
  local rc
  assert_equal "sender exit $status" "sender exit 8"
  error_line_in "$T/c.err" "the receiver could not write: $1; the receiver confirmed $2 bytes$"
  if grep -E 'retry [0-9]+/' "$T/c.err"; then fail "the sender retried"; fi
  wait_exit rc "$L_PID" 10 || fail "the receiver still runs (-k after its stdout failed)"
  assert_equal "receiver exit $rc" "receiver exit 7"
  error_line_in "$T/L.err" "write stdout: $1"
  grep -q -- "--retry: told .* that stdout failed at byte $2" "$T/L.err" ||
    fail "the receiver did not say it told the sender: $(cat "$T/L.err")"
}

@test "--retry from a pipe, the receiver's file-size limit (EFBIG): sender exit 8 at once, no retry; receiver exit 7" {
  limited_listen
  send pipe
  stopped_at 'File too large' "$LIMIT"
  assert_equal "$(stat -c %s "$T/file")" "$LIMIT"
  cmp -n "$LIMIT" "$A" "$T/file" || fail "the file is not the source's first $LIMIT bytes"
}

@test "--retry from a file with -P 4 (-l -P auto at the receiver), EFBIG: sender exit 8, receiver exit 7" {
  limited_listen -P auto
  send file -P 4
  stopped_at 'File too large' "$LIMIT"
  cmp -n "$LIMIT" "$A" "$T/file" || fail "the file is not the source's first $LIMIT bytes"
}

@test "--retry from a file into a full 1 MiB tmpfs, -l --sync (ENOSPC): sender exit 8 'No space left on device'" {
  [[ $(id -u) == 0 ]] || skip "mounting a tmpfs needs root"
  local held
  MNT=$T/mnt
  mkdir "$MNT"
  mount -t tmpfs -o size=1m fastcat-test "$MNT"
  : >"$MNT/file"
  _open=append bg_listen L /dev/null "$MNT/file" 'listening on .*:([0-9]+)$' \
    "$FASTCAT" -v -l -k --resume --sync 127.0.0.1 0
  send file
  held=$(stat -c %s "$MNT/file")
  ((held > 0 && held <= 1048576)) || fail "the file holds $held bytes"
  stopped_at 'No space left on device' "$held"
  cmp -n "$held" "$A" "$MNT/file" || fail "the file is not the source's first $held bytes"
}

@test "a plain receiver (no --retry at the sender) whose stdout fails sends no last word: the sender's stdout gets nothing, exit 5" {
  limited_listen
  run --separate-stderr timeout -k 2 30 "$FASTCAT" --resume 127.0.0.1 "$L_PORT" <"$A"
  assert_equal "sender exit $status" "sender exit 5"
  assert_equal "sender stdout: '$output'" "sender stdout: ''"
  local rc
  wait_exit rc "$L_PID" 10 || fail "the receiver still runs (-k after its stdout failed)"
  assert_equal "receiver exit $rc" "receiver exit 7"
  if grep -q -- '--retry: told' "$T/L.err"; then fail "a last word to a sender without --retry"; fi
}
