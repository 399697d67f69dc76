#!/usr/bin/env bats
# report.bats - --report=json / --report / -v output, SIGUSR1 progress reports.

load helpers

setup() {
  T=$BATS_TEST_TMPDIR
}

@test "--report=json: one JSON line per end, byte counts match the payloads both ways" {
  mkpayload "$T/A" 1048577   # client -> listener
  mkpayload "$T/B" 300000    # listener -> client
  # read/write, so the read and write counts below mean read(2) and write(2) (splice: copy-splice.bats)
  fc_listen L --in "$T/B" --report=json --copy=rw
  run -0 --separate-stderr fcx "$T/A" "$T/c.out" --report=json --copy=rw 127.0.0.1 "$L_PORT"
  # without -v the client's stderr is exactly the one JSON line
  assert_equal "${#stderr_lines[@]}" 1
  [[ ${stderr_lines[0]} == '{"fastcat":'* ]] || fail "stderr is not the JSON line: $stderr"
  printf '%s\n' "$stderr" >"$T/c.err"
  listener_ok 20
  assert_same_bytes "$T/A" "$T/L.out"
  assert_same_bytes "$T/B" "$T/c.out"
  both_reports
  jq_is "$CJSON" .sent.bytes 1048577
  jq_is "$CJSON" .received.bytes 300000
  jq_is "$LJSON" .sent.bytes 300000
  jq_is "$LJSON" .received.bytes 1048577
  local j
  for j in "$CJSON" "$LJSON"; do
    jq_is "$j" .fastcat 0.1.0
    jq_is "$j" .final true
    jq_is "$j" .transport tcp
    jq_is "$j" .exit_status 0
    jq_is "$j" .error null
    jq_is "$j" '[.chunk_size, .read_size, .write_size] | map(tostring) | join(" ")' "98304 98304 98304"
    jq_true "$j" '(.sndbuf | type) == "number" and .sndbuf > 0 and (.rcvbuf | type) == "number" and .rcvbuf > 0'
    jq_true "$j" '[.sent, .received] | all(.syscalls == .reads + .writes)'
    jq_true "$j" '[.sent, .received] | all(.max_read <= 98304 and .max_write <= 98304)'
    jq_true "$j" '[.sent, .received] | all((.seconds | type) == "number" and .seconds >= 0 and (.bytes_per_second | type) == "number")'
    jq_true "$j" '.sent.reads >= 2 and .sent.writes >= 1 and .received.reads >= 1'
    jq_true "$j" '[.sent, .received] | all(.copy == "rw")'
  done
  jq_true "$CJSON" '.sent.max_read == 98304'
  # the two ends agree on who is who
  jq_is "$CJSON" .peer "127.0.0.1:$L_PORT"
  jq_is "$LJSON" .local "127.0.0.1:$L_PORT"
  jq_is "$LJSON" .peer "$(jq -r .local <<<"$CJSON")"
}

@test "--report=json over IPv6: addresses printed as [::1]:PORT" {
  skip_unless_ipv6
  printf 'x' >"$T/one"
  fc_listen L --addr ::1 --report=json
  run -0 --separate-stderr fcx "$T/one" "$T/c.out" --report=json ::1 "$L_PORT"
  printf '%s\n' "$stderr" >"$T/c.err"
  local c
  c=$(json_report "$T/c.err")
  jq_is "$c" .peer "[::1]:$L_PORT"
  jq_true "$c" '.local | test("^\\[::1\\]:[0-9]+$")'
}

@test "--report (human): sent/received lines and the tcp summary line" {
  mkpayload "$T/A" 1048577
  fc_listen L
  run -0 --separate-stderr fcx "$T/A" "$T/c.out" --report --copy=rw 127.0.0.1 "$L_PORT"
  printf '%s\n' "$stderr" >"$T/c.err"
  grep -Eq '^fastcat: sent 1048577 bytes \(1\.00 MiB\) in [0-9.]+ s: [0-9.]+ MiB/s, [0-9.]+ Gbit/s; [0-9]+ reads \(mean [0-9]+ B, max 98304 B\), [0-9]+ writes \(mean [0-9]+ B, max 98304 B\) by rw$' "$T/c.err" ||
    fail "no 'sent' report line in: $stderr"
  grep -Eq '^fastcat: received 0 bytes \(0 B\) in [0-9.]+ s: ' "$T/c.err" ||
    fail "no 'received' report line in: $stderr"
  grep -Eq "^fastcat: tcp 127\.0\.0\.1:[0-9]+ -> 127\.0\.0\.1:$L_PORT, chunk 96 KiB, SO_SNDBUF [0-9]+, SO_RCVBUF [0-9]+\$" "$T/c.err" ||
    fail "no 'tcp' summary line in: $stderr"
  ! grep -q '^{' "$T/c.err" || fail "human report contains JSON: $stderr"
}

@test "-v: connected to / connection from lines, human report at exit" {
  printf 'hi\n' >"$T/hi"
  fc_listen L --in "$T/hi"
  run -0 --separate-stderr fcx "$T/hi" "$T/c.out" -v 127.0.0.1 "$L_PORT"
  printf '%s\n' "$stderr" >"$T/c.err"
  grep -Eq "^fastcat: connected to 127\.0\.0\.1:$L_PORT(\$|[^0-9])" "$T/c.err" || fail "no 'connected to' line in: $stderr"
  grep -Eq '^fastcat: sent 3 bytes ' "$T/c.err" || fail "-v did not print the report: $stderr"
  listener_ok 20
  grep -Eq '^fastcat: connection from 127\.0\.0\.1:[0-9]+($|[^0-9])' "$T/L.err" || fail "no 'connection from' line"
  grep -Eq '^fastcat: received 3 bytes ' "$T/L.err" || fail "listener -v did not print the report"
}

@test "without -v or --report a successful transfer prints nothing on stderr" {
  mkpayload "$T/A" 100000
  fc_listen L --in "$T/A"
  run -0 --separate-stderr fcx "$T/A" "$T/c.out" 127.0.0.1 "$L_PORT"
  assert_equal "stderr: '$stderr'" "stderr: ''"
  assert_same_bytes "$T/A" "$T/c.out"
}

@test "SIGUSR1 mid-transfer prints a \"final\":false report; the transfer completes byte-exact" {
  command -v pv >/dev/null || skip "pv not installed"
  local total=$((4 * 1048576)) rc
  mkpayload "$T/A" "$total"
  mkfifo "$T/slow"
  fc_listen L
  bg_start PV "$T/A" "$T/slow" pv -q -L 2m
  bg_start C "$T/slow" "$T/c.out" "$FASTCAT" --report=json 127.0.0.1 "$L_PORT"
  wait_for_size "$T/L.out" 1
  kill -USR1 "$C_PID"
  wait_for_line "$T/C.err" '"final":false' "$C_PID"
  wait_exit rc "$C_PID" 60
  assert_equal "client exit $rc" "client exit 0"
  listener_ok 20
  assert_same_bytes "$T/A" "$T/L.out"
  local mid fin
  mid=$(grep '"final":false' "$T/C.err" | head -n 1)
  jq_is "$mid" .final false
  jq_true "$mid" ".sent.bytes > 0 and .sent.bytes < $total"
  fin=$(json_report "$T/C.err")
  jq_is "$fin" .final true
  jq_is "$fin" .sent.bytes "$total"
  assert_equal "JSON lines: $(grep -c '^{"fastcat":' "$T/C.err")" "JSON lines: 2"
}

@test "SIGTERM: 'interrupted by SIGTERM', exit 1, final report with exit_status 1" {
  mkfifo "$T/in"
  hold_open HOLD "$T/in" 30
  fc_listen L
  bg_start C "$T/in" "$T/c.out" "$FASTCAT" -v --report=json 127.0.0.1 "$L_PORT"
  wait_for_line "$T/C.err" 'connected to' "$C_PID"
  kill -TERM "$C_PID"
  local rc
  wait_exit rc "$C_PID" 10
  assert_equal "client exit $rc" "client exit 1"
  grep -qx 'fastcat: interrupted by SIGTERM' "$T/C.err" || fail "no 'interrupted by SIGTERM' line"
  local j
  j=$(json_report "$T/C.err")
  jq_is "$j" .final true
  jq_is "$j" .exit_status 1
  jq_true "$j" '.error != null'
}
