#!/usr/bin/env bats
# rcvlowat.bats - a TCP receiver that data queues up for asks the kernel to
# wake it per --rcvlowat bytes (SO_RCVLOWAT, default 256 KiB; at most a quarter
# of the receive buffer) rather than per packet, and never holds data back: a
# mark that waits longer than a moment comes off again, so a sender that
# pauses after a burst still has its last bytes delivered at once, not at its
# EOF. Scenario: the receiver's stdout is a pipe whose reader starts a second
# late, so the socket (-I 1M) fills and the receiver's reads come back whole
# (that is what turns the mark on); the sender's stdin stays open after the
# burst until the receiver's output holds all of it. Checked: the mark goes on
# and off (strace), the burst and a later small write arrive while the sender
# still holds its stdin open, byte-exact with every copy method and with
# --verify; --rcvlowat 0 and other sizes. Other transports refuse it
# (badinput.bats); the mark's bounds are unit-tested (test-lowat.c).

load helpers

MIB=1048576

setup_file() {
  mkpayload "$BATS_FILE_TMPDIR/8m" $((8 * MIB))
}

setup() {
  T=$BATS_TEST_TMPDIR
}

# burst_then_pause OUTNAME [fastcat listener options...]: a listener whose
# stdout goes through a FIFO to a reader that starts 1 s late, into
# $T/OUTNAME; a sender whose stdin is a FIFO fed with the 8 MiB payload,
# then held open until $T/OUTNAME has it all (30 s at most), then "tail\n",
# then held open until that arrived too. Sets BURST_MS and TAIL_MS: how
# long after the writer finished each part the reader had it all (or
# "timeout"). The sender runs with $SENDER_OPTS.
burst_then_pause() {
  local out=$T/$1 rc
  shift
  mkfifo "$T/recv.fifo" "$T/send.fifo"
  bg_start R "$T/recv.fifo" "$out" bash -c 'sleep 1; exec cat'
  # a fixed receive buffer (2 MiB granted), so the mark's size does not hang
  # on how far autotuning got in a short transfer
  fc_listen L --out "$T/recv.fifo" -I 1M "$@"
  bg_start W /dev/null "$T/send.fifo" bash -c '
    waitfor() {   # FILE BYTES: ms until FILE holds BYTES, or "timeout" after 30 s
      local start=${EPOCHREALTIME/[.,]/} now
      while [ "$(stat -c %s "$1" 2>/dev/null || echo 0)" -lt "$2" ]; do
        now=${EPOCHREALTIME/[.,]/}
        if (( (now - start) / 1000 > 30000 )); then echo timeout; return; fi
        sleep 0.02
      done
      now=${EPOCHREALTIME/[.,]/}
      echo $(( (now - start) / 1000 ))
    }
    cat "$1"
    waitfor "$2" "$3" >"$2.burst"
    printf "tail\n"
    waitfor "$2" $(( $3 + 5 )) >"$2.tail"' _ "$BATS_FILE_TMPDIR/8m" "$out" $((8 * MIB))
  bg_start S "$T/send.fifo" /dev/null "$FASTCAT" -v ${SENDER_OPTS:-} 127.0.0.1 "$L_PORT"
  wait_for_line "$T/L.err" 'connection from' "$L_PID"
  grep -q 'SO_RCVBUF 2097152' "$T/L.err" ||
    skip "the kernel does not grant a 2 MiB SO_RCVBUF (net.core.rmem_max): $(cat "$T/L.err")"
  wait_exit rc "$W_PID" 80
  wait_exit rc "$S_PID" 20
  assert_equal "sender exit $rc" "sender exit 0"
  wait_exit rc "$L_PID" 20
  assert_equal "listener exit $rc" "listener exit 0"
  wait_exit rc "$R_PID" 20
  BURST_MS=$(cat "$out.burst") TAIL_MS=$(cat "$out.tail")
  echo "# burst complete ${BURST_MS} ms after the writer's last byte, tail ${TAIL_MS} ms after it was written" >&3
}

# assert_delivered OUT: the burst and the tail arrived while the sender's stdin was open, in order.
assert_delivered() {
  { cat "$BATS_FILE_TMPDIR/8m"; printf 'tail\n'; } >"$T/expected"
  assert_same_bytes "$T/expected" "$1"
  [[ $BURST_MS =~ ^[0-9]+$ ]] || fail "the burst's last bytes waited for the sender's EOF ($BURST_MS)"
  [[ $TAIL_MS =~ ^[0-9]+$ ]] || fail "the tail waited for the sender's EOF ($TAIL_MS)"
  # generous bounds for a loaded machine; a held-back mark would wait 30 s
  (( BURST_MS < 5000 )) || fail "the burst's last bytes took $BURST_MS ms"
  (( TAIL_MS < 2000 )) || fail "5 bytes after a pause took $TAIL_MS ms"
}

@test "tcp: a receiver that fell behind sets a mark (-v says so); a paused sender's last bytes and a later write still arrive at once" {
  burst_then_pause out
  assert_delivered "$T/out"
  grep -Eq 'SO_RCVLOWAT [0-9]+ while it does' "$T/L.err" ||
    fail "the mark never went on: $(cat "$T/L.err")"
}

# marks_set FILE: the SO_RCVLOWAT values strace saw set, other than 1, one per line
marks_set() { grep -Eo 'SO_RCVLOWAT, \[[0-9]+\]' "$1" | tr -dc '0-9\n' | grep -vx 1 || true; }

@test "strace: SO_RCVLOWAT goes to a mark of 128 to 256 KiB after whole reads, back to 1 when the sender pauses" {
  command -v strace >/dev/null || skip "strace is not installed"
  local m
  FC_PREFIX=("${STRACE[@]}" -f -qq -e trace=setsockopt,getsockopt -o "$BATS_TEST_TMPDIR/strace")
  burst_then_pause out
  assert_delivered "$T/out"
  [[ -n $(marks_set "$T/strace") ]] || fail "no mark set: $(cat "$T/strace")"
  for m in $(marks_set "$T/strace"); do
    ((m >= 131072 && m <= 262144)) || fail "a mark of $m: $(cat "$T/strace")"
  done
  grep -q 'SO_RCVLOWAT, \[1\]' "$T/strace" || fail "the mark never came off: $(cat "$T/strace")"
}

@test "strace: --rcvlowat 160k sets no mark above it; --rcvlowat 0 never touches SO_RCVLOWAT" {
  command -v strace >/dev/null || skip "strace is not installed"
  FC_PREFIX=("${STRACE[@]}" -f -qq -e trace=setsockopt -o "$BATS_TEST_TMPDIR/strace")
  local m
  burst_then_pause out --rcvlowat 160k
  assert_delivered "$T/out"
  [[ -n $(marks_set "$T/strace") ]] || fail "no mark set: $(cat "$T/strace")"
  for m in $(marks_set "$T/strace"); do
    ((m >= 131072 && m <= 163840)) || fail "--rcvlowat 160k set a mark of $m: $(cat "$T/strace")"
  done
  fc_cleanup
  FC_PIDS=()
  rm -f "$T/recv.fifo" "$T/send.fifo" "$T/strace"
  burst_then_pause out0 --rcvlowat 0
  assert_delivered "$T/out0"
  ! grep -q SO_RCVLOWAT "$T/strace" || fail "--rcvlowat 0 set a mark: $(cat "$T/strace")"
}

@test "byte-exact with the mark on: --copy=rw, --copy=splice, and --verify at both ends" {
  local mode
  for mode in "--copy=rw" "--copy=splice" "--verify"; do
    rm -f "$T/recv.fifo" "$T/send.fifo"
    # a build without splice refuses --copy=splice (copy-splice.bats covers that)
    if [[ $mode == --copy=splice ]] &&
      [[ $(timeout 10 "$FASTCAT" --copy=splice -U /nonexistent/fastcat-probe.sock </dev/null 2>&1) == *"no splice"* ]]; then
      continue
    fi
    SENDER_OPTS=
    [[ $mode != --verify ]] || SENDER_OPTS=--verify
    burst_then_pause "out$mode" "$mode"
    assert_delivered "$T/out$mode"
    grep -Eq 'SO_RCVLOWAT [0-9]+ while' "$T/L.err" || fail "$mode: the mark never went on"
    fc_cleanup
    FC_PIDS=()
  done
}
