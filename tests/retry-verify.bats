#!/usr/bin/env bats
# retry-verify.bats - --verify with --retry (doc/resume-protocol.md, "--retry with --verify"):
# after any number of reconnections, exit 0 at the sender means the receiver's whole file,
# from byte 0, has the XXH64 of the whole stream. The receiver sends its verdict after the
# end's confirmation; a pipe sender digests each byte once as it reads it (never what the
# replay buffer resends), a file sender digests the file's first bytes again at each
# opening, a receiver that held the session keeps its digest of what it wrote (one started
# again reads its file back). A byte changed in the file of a receiver started again, before
# the checked tail window, passes --resume's tail check, and --verify still catches it (exit
# 6). Both ends must run --verify: either refuses the other before a byte of data moves.
# Loopback, listeners on
# port 0; the senders are slowed with --rate-limit so that the resets land mid-transfer.

load helpers
load retry

setup() { retry_setup; }

# verified_whole: the sender exited 0 with the file byte-exact, its report says verified
# and confirmed the whole size, and its digest (the stream's, each byte once) is the one the
# receiver's last session wrote
# (the whole file's, from byte 0, as the receiver read back its first bytes).
verified_whole() {
  [[ $status == 0 ]] || fail "sender exit $status: $(cat "$T/c.err")"
  assert_same_bytes "$A" "$T/file"
  CJSON=$(json_report "$T/c.err")
  jq_is "$CJSON" .verified true
  jq_is "$CJSON" .confirmed "$SIZE"
  local digest
  digest=$(jq -r .sent.xxh64 <<<"$CJSON")
  grep -Eq "^fastcat: received .*; xxh64 $digest; one way, nothing sent$" "$T/L.err" ||
    fail "the receiver's last session did not write xxh64 $digest: $(cat "$T/L.err")"
}

# two_resets FEED [options...]: --verify --retry through two resets, each once the file grew.
two_resets() {
  local feed=$1
  shift
  keep_listen -k --resume --verify "$@"
  send_bg "$feed" --verify --retry 5 --rate-limit "$RATE" "$@"
  wait_for_size "$T/file" 2000000 20
  reset_sender
  wait_for_count "$T/L.err" 'resumed session' 1 "$L_PID" 20
  wait_for_size "$T/file" 6000000 20
  reset_sender
  wait_for_count "$T/L.err" 'resumed session' 2 "$L_PID" 20
  sender_status
  verified_whole
  jq_is "$CJSON" .retries 2
  # the receiver held the session: its digest of what it wrote, no read-back
  [[ $(grep -c "digest is the held session's" "$T/L.err") == 2 ]] ||
    fail "the receiver read its file back: $(cat "$T/L.err")"
}

@test "--verify --retry from a file: through two connection resets, byte-exact, verified, exit 0" {
  two_resets file
}

@test "--verify --retry from a pipe: through two resets, the digest of each byte once (not of what the replay buffer resent), verified, exit 0" {
  two_resets pipe
}

@test "--verify --retry, a receiver started again on its file with a byte changed before the checked tail: --resume's tail check passes, the verdict does not: exit 6, not retried" {
  local b port rc
  keep_listen -k --resume --verify
  port=$L_PORT
  send_bg pipe --verify --retry 5 --rate-limit "$RATE"
  wait_for_size "$T/file" 3000000 20
  kill -KILL "$L_PID"
  wait_exit rc "$L_PID" 10
  # byte 100, far before the last MiB the tail check reads, flipped while no receiver runs
  b=$(od -An -tu1 -j100 -N1 "$T/file" | tr -d ' ')
  printf "\\$(printf %03o $((b ^ 255)))" | dd of="$T/file" bs=1 seek=100 conv=notrunc status=none
  _open=append bg_listen L /dev/null "$T/file" 'listening on .*:([0-9]+)$' \
    "$FASTCAT" -v -l -k --resume --verify 127.0.0.1 "$port"
  sender_status
  [[ $status == 6 ]] || fail "sender exit $status, want 6: $(cat "$T/c.err")"
  grep -Eq "^fastcat: --verify: sent $SIZE bytes \(xxh64 [0-9a-f]{16}\) but the receiver wrote $SIZE \(xxh64 [0-9a-f]{16}\)$" \
    "$T/c.err" || fail "message: $(cat "$T/c.err")"
  CJSON=$(json_report "$T/c.err")
  jq_is "$CJSON" .verified false
  jq_is "$CJSON" .retries 1
  # the same bytes but byte 100: what was sent went on from the tail, as --resume does
  cmp -l "$A" "$T/file" | awk 'END { if (NR != 1 || $1 != 101) exit 1 }' ||
    fail "the file differs elsewhere: $(cmp -l "$A" "$T/file" | head -3)"
}

@test "--verify --retry into a --resume receiver without --verify: exit 6 at both ends before any data, each naming what to give" {
  fc_listen L --out "$T/file" --append -- --resume
  send_bg file --verify --retry 3
  sender_status
  [[ $status == 6 ]] || fail "sender exit $status, want 6: $(cat "$T/c.err")"
  grep -q 'fastcat: --verify: 127.0.0.1:[0-9]* runs without --verify (give it -l -k --resume --verify)' \
    "$T/c.err" || fail "sender message: $(cat "$T/c.err")"
  jq_is "$(json_report "$T/c.err")" .retries 0
  receiver_status 6
  grep -q 'asks for --verify; give --verify at this end too' "$T/L.err" ||
    fail "receiver message: $(cat "$T/L.err")"
  [[ ! -s $T/file ]] || fail "the file got $(stat -c %s "$T/file") bytes"
}

@test "--retry without --verify into a --verify receiver: exit 6 at both ends before any data" {
  fc_listen L --out "$T/file" --append -- --resume --verify
  send_bg file --retry 3
  sender_status
  [[ $status == 6 ]] || fail "sender exit $status, want 6: $(cat "$T/c.err")"
  grep -q 'fastcat: --retry: 127.0.0.1:[0-9]* runs --verify; give --verify at this end too' \
    "$T/c.err" || fail "sender message: $(cat "$T/c.err")"
  receiver_status 6
  grep -q 'runs --retry without --verify; give --verify at both ends' "$T/L.err" ||
    fail "receiver message: $(cat "$T/L.err")"
  [[ ! -s $T/file ]] || fail "the file got $(stat -c %s "$T/file") bytes"
}

@test "-P 4 --verify --retry from a pipe through one lost connection: the whole session again, verified, exit 0" {
  local sport
  keep_listen -k -P auto --resume --verify
  send_bg pipe -P 4 --verify --retry 3 --rate-limit "$RATE"
  wait_for_size "$T/file" 3000000 20
  sport=$(ss -Htn state established "( dport = :$L_PORT )" | awk 'NR == 2 { n = split($3, a, ":"); print a[n] }')
  [[ -n $sport ]] || fail "no second connection in ss"
  ss -K state established "( sport = :$sport )" >/dev/null 2>&1 || true
  sender_status
  verified_whole
  jq_is "$CJSON" .retries 1
}

@test "--verify --retry from a pipe, the receiver killed and started again on the same file: it reads the file back, the sender goes on from its replay buffer, verified" {
  local port rc
  keep_listen -k --resume --verify
  port=$L_PORT
  send_bg pipe --verify --retry 5 --rate-limit "$RATE"
  wait_for_size "$T/file" 4000000 20
  kill -KILL "$L_PID"
  wait_exit rc "$L_PID" 10
  _open=append bg_listen L /dev/null "$T/file" 'listening on .*:([0-9]+)$' \
    "$FASTCAT" -v -l -k --resume --verify 127.0.0.1 "$port"
  sender_status
  verified_whole
  grep -q 'no longer holds this session' "$T/c.err" ||
    fail "the sender did not say the receiver forgot: $(cat "$T/c.err")"
}
