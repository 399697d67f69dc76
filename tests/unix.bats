#!/usr/bin/env bats
# unix.bats - Unix domain transports: stream (-U), seqpacket
# (-U --transport unix-seqpacket) and datagram (-Uu): byte-exact transfers,
# datagram boundaries (JSON report), abstract names (@name), and interop
# with nc.openbsd -U and socat UNIX-* peers. Sockets live in
# $BATS_TEST_TMPDIR; abstract names are unique per test.

load helpers

setup_file() {
  local s
  for s in 0 1048577 67108864; do
    mkpayload "$BATS_FILE_TMPDIR/a.$s" "$s"
    mkpayload "$BATS_FILE_TMPDIR/b.$s" "$s"
  done
}

setup() {
  T=$BATS_TEST_TMPDIR
  SEQ=(-U --transport unix-seqpacket)
}

# uxfer SIZE_A SIZE_B [--addr P] fastcat-options...: the client sends
# a.SIZE_A, the listener sends b.SIZE_B (0 = nothing) on the same
# connection/association, both fastcat ends get the same options.
uxfer() {
  local sa=$1 sb=$2 addr=() rc a b
  shift 2
  if [[ $1 == --addr ]]; then addr=(--addr "$2"); shift 2; fi
  a=$BATS_FILE_TMPDIR/a.$sa
  b=$BATS_FILE_TMPDIR/b.$sb
  fc_ulisten L --in "$b" "${addr[@]}" -- "$@"
  FC_TIMEOUT=90 run -0 fcx "$a" "$T/c.out" "$@" "$L_PATH"
  listener_ok 60
  assert_same_bytes "$a" "$T/L.out"   # client -> listener
  assert_same_bytes "$b" "$T/c.out"   # listener -> client
  rm -f "$T/L.out" "$T/c.out"
}

# ------------------------------------------------------------ unix stream

@test "unix stream 0 B, default chunk: both directions byte-exact, socket file removed at exit" {
  uxfer 0 0 -U
  [[ ! -e $L_PATH ]] || fail "$L_PATH still exists after the listener exited"
}
@test "unix stream 1 MiB+1, default chunk: both directions byte-exact" { uxfer 1048577 1048577 -U; }
@test "unix stream 1 MiB+1, -B 7: both directions byte-exact" { uxfer 1048577 1048577 -U -B 7; }
@test "unix stream 64 MiB, default chunk: both directions byte-exact" { uxfer 67108864 67108864 -U; }

@test "unix stream --report=json: transport unix, local/peer are the path and (unnamed), byte counts" {
  fc_ulisten L --in "$BATS_FILE_TMPDIR/b.1048577" -- -U --report=json
  run -0 --separate-stderr fcx "$BATS_FILE_TMPDIR/a.1048577" "$T/c.out" -U --report=json "$L_PATH"
  printf '%s\n' "$stderr" >"$T/c.err"
  listener_ok 30
  both_reports
  jq_is "$CJSON" .transport unix
  jq_is "$LJSON" .transport unix
  jq_is "$CJSON" .peer "$L_PATH"
  jq_is "$CJSON" .local "(unnamed)"
  jq_is "$LJSON" .local "$L_PATH"
  jq_is "$LJSON" .peer "(unnamed)"
  jq_is "$CJSON" .sent.bytes 1048577
  jq_is "$CJSON" .received.bytes 1048577
  jq_is "$LJSON" .received.bytes 1048577
  jq_is "$CJSON" .exit_status 0
}

# --------------------------------------------------------- unix seqpacket

@test "seqpacket 64 MiB one way, default chunk: byte-exact" { uxfer 67108864 0 "${SEQ[@]}"; }
@test "seqpacket 0 B: both ends exit 0 (EOF by shutdown), nothing received" { uxfer 0 0 "${SEQ[@]}"; }
@test "seqpacket 1 MiB+1 both ways: byte-exact" { uxfer 1048577 1048577 "${SEQ[@]}"; }

@test "seqpacket keeps boundaries: 1 MiB+1 from a file = 17 datagrams of <= 64 KiB (JSON, both ends)" {
  local a=$BATS_FILE_TMPDIR/a.1048577 rc c l
  fc_ulisten L -- "${SEQ[@]}" --report=json
  run -0 --separate-stderr fcx "$a" "$T/c.out" "${SEQ[@]}" --report=json "$L_PATH"
  printf '%s\n' "$stderr" >"$T/c.err"
  listener_ok 30
  assert_same_bytes "$a" "$T/L.out"
  both_reports
  jq_is "$CJSON" .transport unix-seqpacket
  jq_is "$CJSON" .chunk_size 65536
  # a regular file gives full 64 KiB reads: 16 x 65536 + 1 byte
  jq_is "$CJSON" .sent.datagrams 17
  jq_is "$CJSON" .sent.max_write 65536
  jq_is "$LJSON" .received.datagrams 17
  jq_is "$LJSON" .received.truncated 0
  jq_is "$LJSON" .received.max_read 65536
  jq_is "$LJSON" .received.bytes 1048577
}

# -------------------------------------------------------- unix datagram

@test "unix-dgram 64 MiB one way, default chunk: byte-exact (the client's autobind address gets the EOF back)" {
  uxfer 67108864 0 -U -u
}
@test "unix-dgram 0 B: only EOF datagrams, both ends exit 0" { uxfer 0 0 -Uu; }
@test "unix-dgram 1 MiB+1 both ways: byte-exact (replies reach the client)" { uxfer 1048577 1048577 -U -u; }

@test "unix-dgram --report=json: transport unix-dgram, 17 datagrams of 64 KiB for 1 MiB+1, none truncated" {
  local a=$BATS_FILE_TMPDIR/a.1048577 rc c l
  fc_ulisten L -- -Uu --report=json
  run -0 --separate-stderr fcx "$a" "$T/c.out" -Uu --report=json "$L_PATH"
  printf '%s\n' "$stderr" >"$T/c.err"
  listener_ok 30
  assert_same_bytes "$a" "$T/L.out"
  both_reports
  jq_is "$CJSON" .transport unix-dgram
  jq_is "$LJSON" .transport unix-dgram
  jq_is "$CJSON" .chunk_size 65536
  jq_is "$CJSON" .peer "$L_PATH"
  jq_is "$LJSON" .local "$L_PATH"
  jq_is "$CJSON" .sent.datagrams 17
  jq_is "$CJSON" .sent.max_write 65536
  jq_is "$LJSON" .received.max_read 65536
  jq_is "$LJSON" .received.truncated 0
  jq_true "$LJSON" '.received.datagrams == 17 or .received.datagrams == 18'  # (+ the EOF datagram?)
}

@test "unix-dgram: a datagram larger than SO_SNDBUF (-O 64K, -B 200K) is 'too large', exit 1" {
  mkpayload "$T/p" 204800
  fc_ulisten L -- -Uu
  run -1 --separate-stderr fcx "$T/p" "$T/c.out" -Uu -O 64K -B 200K "$L_PATH"
  grep -Eq "^fastcat: send to $L_PATH: a datagram of 204800 bytes is too large for [a-z-]+ \\(Message too long\\); lower -B or --dgram-size\$" <<<"$stderr" ||
    fail "stderr: $stderr"
}

# ------------------------------------------------------------- abstract names

@test "abstract @name, unix stream: listening line, no file created, bound in /proc/net/unix, both ways byte-exact" {
  local n
  n=$(unique_abstract)
  cd "$T"
  fc_ulisten L --in "$BATS_FILE_TMPDIR/b.1048577" --addr "@$n" -- -U --report=json
  abstract_bound "$n" || fail "@$n is not in /proc/net/unix"
  [[ ! -e $T/@$n && ! -e $T/$n ]] || fail "a file was created for the abstract name"
  run -0 --separate-stderr fcx "$BATS_FILE_TMPDIR/a.1048577" "$T/c.out" -U --report=json "@$n"
  printf '%s\n' "$stderr" >"$T/c.err"
  listener_ok 30
  assert_same_bytes "$BATS_FILE_TMPDIR/a.1048577" "$T/L.out"
  assert_same_bytes "$BATS_FILE_TMPDIR/b.1048577" "$T/c.out"
  jq_is "$(json_report "$T/L.err")" .local "@$n"
  jq_is "$(json_report "$T/c.err")" .peer "@$n"
  ! abstract_bound "$n" || fail "@$n still bound after the listener exited"
}

@test "abstract @name, unix-dgram: both ways byte-exact" {
  local n
  n=$(unique_abstract)
  uxfer 1048577 1048577 --addr "@$n" -Uu
}

@test "abstract @name, seqpacket: one way byte-exact" {
  local n
  n=$(unique_abstract)
  uxfer 1048577 0 --addr "@$n" "${SEQ[@]}"
}

# ------------------------------------------------------------------ interop

# interop payloads: fastcat sends A, the peer sends B
ipay() {
  A=$BATS_FILE_TMPDIR/a.1048577
  B=$BATS_FILE_TMPDIR/b.1048577
}

@test "nc.openbsd -N -lU PATH listens, fastcat -U connects: both directions byte-exact" {
  need nc.openbsd
  ipay
  local p=$T/n.sock
  bg_start N "$B" "$T/N.out" nc.openbsd -N -lU "$p"
  wait_for_socket "$p" "$N_PID"
  # nc.openbsd -lU stops sending as soon as its peer half-closes (a python
  # client that sends everything and shuts down at once gets only ~80 KB
  # too), so fastcat's data (and its shutdown) follow nc's whole payload
  mkfifo "$T/ain"
  feed_fifo FEED "$T/ain" "$A" "$T/fc.out" "$(stat -c %s "$B")" after
  run -0 fcx "$T/ain" "$T/fc.out" -U "$p"
  check_both "$N_PID" "$T/N.out" "$T/fc.out"
}

@test "fastcat -lU listens, nc.openbsd -NU PATH connects: both directions byte-exact" {
  need nc.openbsd
  ipay
  fc_ulisten L --in "$A" -- -U
  run -0 io "$B" "$T/nc.out" nc.openbsd -NU "$L_PATH"
  check_both "$L_PID" "$T/nc.out" "$T/L.out"
}

@test "socat UNIX-LISTEN:PATH listens, fastcat -U connects: both directions byte-exact" {
  need socat
  ipay
  local p=$T/s.sock
  bg_start S "$B" "$T/S.out" socat -t 30 "UNIX-LISTEN:$p" STDIO
  wait_for_socket "$p" "$S_PID"
  run -0 fcx "$A" "$T/fc.out" -U "$p"
  check_both "$S_PID" "$T/S.out" "$T/fc.out"
}

@test "fastcat -lU listens, socat UNIX-CONNECT:PATH connects: both directions byte-exact" {
  need socat
  ipay
  fc_ulisten L --in "$A" -- -U
  run -0 io "$B" "$T/so.out" socat -t 30 STDIO "UNIX-CONNECT:$L_PATH"
  check_both "$L_PID" "$T/so.out" "$T/L.out"
}

@test "socat ABSTRACT-LISTEN, fastcat -U @name connects: both directions byte-exact" {
  need socat
  ipay
  local n
  n=$(unique_abstract)
  bg_start S "$B" "$T/S.out" socat -t 30 "ABSTRACT-LISTEN:$n" STDIO
  wait_for_socket "@$n" "$S_PID"
  run -0 fcx "$A" "$T/fc.out" -U "@$n"
  check_both "$S_PID" "$T/S.out" "$T/fc.out"
}

@test "socat UNIX-SENDTO (shut-null, null-eof) to fastcat -lUu: both directions byte-exact, EOF datagrams both ways" {
  need socat
  ipay
  fc_ulisten L --in "$A" -- -Uu
  # socat needs its own bound address to get replies; -b 65536: one datagram per stdin read
  run -0 io "$B" "$T/so.out" socat -b 65536 -t 30 STDIO \
    "UNIX-SENDTO:$L_PATH,bind=$T/so.sock,shut-null,null-eof"
  check_both "$L_PID" "$T/so.out" "$T/L.out"
}

@test "fastcat -Uu -q 0 to socat UNIX-RECV (null-eof): byte-exact, socat ends on fastcat's EOF datagram" {
  need socat
  ipay
  local p=$T/s.sock rc
  bg_start S /dev/null "$T/S.out" socat -b 262144 -u "UNIX-RECV:$p,null-eof" STDOUT
  wait_for_socket "$p" "$S_PID"
  # socat UNIX-RECV cannot answer: -q 0 exits once the EOF datagram is sent
  run -0 fcx "$A" "$T/fc.out" -Uu -q 0 "$p"
  wait_exit rc "$S_PID" 30
  assert_equal "socat exit $rc" "socat exit 0"
  assert_same_bytes "$A" "$T/S.out"
}
