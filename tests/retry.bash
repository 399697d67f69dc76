# retry.bash - what retry.bats and retry-verify.bats share: a receiver appending to $T/file,
# a sender in the background from $A (a file or a pipe), a reset of its connection, and the
# exit statuses. Loaded after helpers.bash; the senders are slowed to RATE so that a reset
# lands mid-transfer.

SIZE=12000000 # 3 s at 4 MB/s
RATE=4M

# retry_setup: $A, SIZE random bytes, and an empty $T/file for the receiver.
retry_setup() {
  T=$BATS_TEST_TMPDIR
  A=$T/source
  mkpayload "$A" "$SIZE"
  : >"$T/file"
}

# keep_listen [fastcat options...]: a -v receiver (-l and the options) appending to $T/file;
# stderr $T/L.err. Sets L_PID and L_PORT.
keep_listen() { fc_listen L --out "$T/file" --append -- "$@"; }

# send_bg FEED [fastcat options...]: the sender in the background, from the source file
# (FEED file) or through a pipe (FEED pipe); JSON report and -v in $T/c.err, status in
# $T/c.rc. Sets C_PID (the subshell's).
send_bg() {
  local feed=$1
  shift
  (
    rc=0
    if [[ $feed == pipe ]]; then
      cat "$A" | timeout -k 2 60 "$FASTCAT" -v --report=json "$@" 127.0.0.1 "$L_PORT" \
        >/dev/null 2>"$T/c.err" || rc=$?
    else
      timeout -k 2 60 "$FASTCAT" -v --report=json "$@" 127.0.0.1 "$L_PORT" <"$A" \
        >/dev/null 2>"$T/c.err" || rc=$?
    fi
    echo "$rc" >"$T/c.rc"
  ) 3>&- &
  C_PID=$!
  fc_track "$C_PID"
}

# reset_sender: ss -K on the sender's connection (the one to the listener's port).
reset_sender() {
  ss -K dst 127.0.0.1 dport = :"$L_PORT" >/dev/null 2>&1 || true
}

# sender_status: wait for the background sender; its exit status in $status.
sender_status() {
  local rc
  wait_exit rc "$C_PID" 60
  [[ -s $T/c.rc ]] || fail "the sender did not finish: $(cat "$T/c.err")"
  status=$(cat "$T/c.rc")
}

# receiver_status WANT: the receiver exits WANT within 10 s.
receiver_status() {
  local rc
  wait_exit rc "$L_PID" 10
  assert_equal "receiver exit $rc" "receiver exit $1"
}
