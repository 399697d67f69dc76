#!/usr/bin/env bats
# checksum.bats - --checksum: the XXH64 digests in the reports of both ends agree with
# each other and with `xxhsum -H1` of the payload, whatever the chunk or datagram size.

load helpers

setup() {
  T=$BATS_TEST_TMPDIR
  command -v xxhsum >/dev/null || skip "xxhsum (package xxhash) not installed"
}

@test "--checksum over TCP: sent and received digests equal xxhsum -H1 of each payload, both ways" {
  mkpayload "$T/A" 3000001
  mkpayload "$T/B" 70000
  fc_listen L --in "$T/B" --checksum --report=json
  run -0 --separate-stderr fcx "$T/A" "$T/c.out" --checksum -B 7777 --report=json 127.0.0.1 "$L_PORT"
  printf '%s\n' "$stderr" >"$T/c.err"
  listener_ok 20
  both_reports
  jq_is "$CJSON" .sent.xxh64 "$(xxh64_of "$T/A")"
  jq_is "$LJSON" .received.xxh64 "$(xxh64_of "$T/A")"
  jq_is "$LJSON" .sent.xxh64 "$(xxh64_of "$T/B")"
  jq_is "$CJSON" .received.xxh64 "$(xxh64_of "$T/B")"
}

@test "--checksum: the digest of nothing is XXH64 of the empty input; the human report shows it" {
  fc_listen L --checksum --report
  run -0 --separate-stderr fcx /dev/null "$T/c.out" --checksum --report 127.0.0.1 "$L_PORT"
  [[ $stderr == *"; xxh64 ef46db3751d8e999"* ]] || fail "no empty-input digest in: $stderr"
}

@test "--checksum over unix-dgram with --dgram-size 1024 (the seed workload, 4 MiB): digests match" {
  mkpayload "$T/A" 4194304
  fc_ulisten L -- -Uu --checksum --report=json
  run -0 --separate-stderr fcx "$T/A" "$T/c.out" -Uu --dgram-size 1024 --checksum --report=json "$L_PATH"
  printf '%s\n' "$stderr" >"$T/c.err"
  listener_ok 20
  both_reports
  jq_is "$CJSON" .sent.datagrams 4096
  jq_is "$LJSON" .received.datagrams 4096
  jq_is "$CJSON" .sent.xxh64 "$(xxh64_of "$T/A")"
  jq_is "$LJSON" .received.xxh64 "$(xxh64_of "$T/A")"
}

@test "without --checksum the JSON report has no xxh64 key" {
  fc_listen L --report=json
  run -0 --separate-stderr fcx /dev/null "$T/c.out" --report=json 127.0.0.1 "$L_PORT"
  printf '%s\n' "$stderr" >"$T/c.err"
  jq_true "$(json_report "$T/c.err")" '(.sent | has("xxh64") | not) and (.received | has("xxh64") | not)'
}

@test "--dgram-size at both unix-dgram ends (batched receive): 4096 datagrams, digests match, nothing truncated" {
  mkpayload "$T/A" 4194304
  fc_ulisten L -- -Uu --dgram-size 1024 --checksum --report=json
  run -0 --separate-stderr fcx "$T/A" "$T/c.out" -Uu --dgram-size 1024 --checksum "$L_PATH"
  local rc l
  listener_ok 20
  assert_same_bytes "$T/A" "$T/L.out"
  l=$(json_report "$T/L.err")
  jq_is "$l" '[.received.datagrams, .received.truncated] | map(tostring) | join(" ")' "4096 0"
  jq_is "$l" .received.xxh64 "$(xxh64_of "$T/A")"
  # batched: far fewer receive calls than datagrams
  jq_true "$l" '.received.reads < 2048'
}

@test "a receiver's --dgram-size is a promise: a larger datagram is cut, counted and warned about" {
  mkpayload "$T/A" 20000
  fc_ulisten L -- -Uu --dgram-size 1000 --report=json
  run -0 --separate-stderr fcx "$T/A" "$T/c.out" -Uu --dgram-size 2000 "$L_PATH"
  local rc
  wait_exit rc "$L_PID" 20
  jq_is "$(json_report "$T/L.err")" .received.truncated 10
  grep -q '^fastcat: warning: 10 datagrams truncated' "$T/L.err" || fail "no truncation warning: $(cat "$T/L.err")"
}
