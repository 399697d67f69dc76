#!/usr/bin/env bats
# bench.bats - fastcat --bench, the built-in benchmark: a narrow run prints
# the table (rows = sizes, then latency; columns = links) and exits 0;
# --report=json holds every cell; a size a link cannot carry is n/a, not an
# error; a stop signal or a stuck child ends the run without leftovers;
# usage errors exit 2 with one line naming the option. No speed assertions
# beyond "> 0": the machine is shared.

load helpers

NARROW=(--bench --bench-time 2 --bench-transports tcp,unix,udp,pipe,memcpy --bench-sizes 1k,64k)

# Both narrow runs happen once, here; the tests read their files.
setup_file() {
  local d=$BATS_FILE_TMPDIR rc
  rc=0
  timeout -k 5 60 "$FASTCAT" "${NARROW[@]}" >"$d/table.out" 2>"$d/table.err" || rc=$?
  echo "$rc" >"$d/table.rc"
  rc=0
  timeout -k 5 60 "$FASTCAT" "${NARROW[@]}" --report=json >"$d/json.out" 2>"$d/json.err" || rc=$?
  echo "$rc" >"$d/json.rc"
}

# A table row without the "(N% lost)" notes, as words: row_words LABEL.
row_words() {
  grep -E "^ *$1 " "$BATS_FILE_TMPDIR/table.out" | sed -E 's/ \([^)]*\)//g'
}

@test "narrow run: exit 0, nothing on stderr (not a terminal: no progress line)" {
  assert_equal "$(cat "$BATS_FILE_TMPDIR/table.rc")" 0
  assert_equal "$(cat "$BATS_FILE_TMPDIR/table.err")" ""
}

@test "narrow run: header names the kernel, the CPUs and the cells" {
  local out=$BATS_FILE_TMPDIR/table.out
  head -n 1 "$out" | grep -Eq "^fastcat 0\.1\.0 --bench on .* $(uname -r), [0-9]+ CPUs: 13 cells, " ||
    fail "header: $(head -n 1 "$out")"
  grep -Fq 'MB/s = 10^6 bytes/s' "$out" || fail "no MB/s definition: $(cat "$out")"
}

@test "narrow run: columns in table order, a row per size, then latency" {
  local out=$BATS_FILE_TMPDIR/table.out w
  grep -Eq '^ *size +pipe +memcpy +tcp +udp +unix$' "$out" || fail "column line: $(cat "$out")"
  for label in '1 KiB' '64 KiB'; do
    read -ra w <<<"$(row_words "$label")"
    assert_equal "${#w[@]}" 7 # "1" "KiB" and five cells
  done
  read -ra w <<<"$(row_words '1 KiB')"
  for v in "${w[@]:2}"; do
    [[ $v =~ ^[0-9]+(\.[0-9]+)?$ ]] || fail "1 KiB cell '$v' is not a number: $(cat "$out")"
  done
  read -ra w <<<"$(row_words '64 KiB')"
  assert_equal "${w[5]}" "-" # udp cannot carry 64 KiB
  read -ra w <<<"$(row_words latency)"
  assert_equal "${#w[@]}" 6
  assert_equal "${w[2]}" "-" # memcpy has no round trip
  for v in "${w[1]}" "${w[3]}" "${w[4]}" "${w[5]}"; do
    [[ $v =~ ^[0-9]+(\.[0-9]+)?$ ]] || fail "latency '$v' is not a number: $(cat "$out")"
  done
  grep -Fxq -- '- udp 64 KiB: a UDP/IPv4 datagram holds at most 65507 bytes' "$out" ||
    fail "no udp footnote: $(cat "$out")"
  grep -Fxq -- '- memcpy latency: one process: no round trip' "$out" ||
    fail "no memcpy footnote: $(cat "$out")"
}

@test "--report=json: one line, every cell, mbps > 0, loss in [0,1], latency > 0" {
  local out=$BATS_FILE_TMPDIR/json.out j t s
  assert_equal "$(cat "$BATS_FILE_TMPDIR/json.rc")" 0
  assert_equal "$(wc -l <"$out")" 1
  j=$(json_report "$out")
  jq_is "$j" '.exit_status' 0
  jq_is "$j" '.bench.kernel' "$(uname -r)"
  jq_true "$j" '.bench.seconds == 2 and .bench.seconds_per_cell > 0'
  jq_is "$j" '.bench.cells | length' 10
  for t in pipe memcpy tcp unix udp; do
    for s in 1024 65536; do
      jq_is "$j" "[.bench.cells[] | select(.transport == \"$t\" and .size == $s)] | length" 1
    done
  done
  jq_true "$j" '[.bench.cells[] | select(.transport != "udp") | .mbps > 0 and .loss == 0
                 and .trials >= 3 and .bytes > 0] | all'
  jq_true "$j" '.bench.cells[] | select(.transport == "udp" and .size == 1024) |
                .mbps > 0 and .loss >= 0 and .loss <= 1 and .received <= .sent'
  jq_true "$j" '.bench.cells[] | select(.transport == "udp" and .size == 65536) |
                .mbps == null and (.reason | test("65507"))'
  jq_is "$j" '[.bench.latency[].transport] | join(",")' 'pipe,memcpy,tcp,udp,unix'
  jq_true "$j" '[.bench.latency[] | select(.transport != "memcpy") | .usec > 0] | all'
  jq_true "$j" '.bench.latency[] | select(.transport == "memcpy") | .usec == null'
}

@test "udp 1 MiB is n/a, not an error; its latency is still measured" {
  run -0 --separate-stderr timeout 30 "$FASTCAT" --bench --bench-time 1 --bench-transports udp \
    --bench-sizes 1M --report=json
  jq_true "$output" '.bench.cells == [{"transport":"udp","size":1048576,"mbps":null,
    "reason":"a UDP/IPv4 datagram holds at most 65507 bytes"}]'
  jq_true "$output" '.bench.latency[0].usec > 0'
}

@test "unix datagrams: sizes the kernel takes are measured, the datagram size is checked" {
  run -0 --separate-stderr timeout 30 "$FASTCAT" --bench --bench-time 1 \
    --bench-transports unix-dgram,unix-seqpacket --bench-sizes 1,4k --report=json
  jq_true "$output" '[.bench.cells[] | .mbps > 0 and .loss == 0 and .sent == .received] | all'
  jq_is "$output" '.bench.cells | length' 4
}

@test "SIGINT: exit 1, 'interrupted by SIGINT', the children killed" {
  local d kids rc k
  d=$(tdir)
  bg_start BENCH /dev/null "$d/out" "$FASTCAT" --bench --bench-time 60 --bench-transports tcp \
    --bench-sizes 1k
  for _ in $(seq 100); do
    kids=$(ps -o pid= --ppid "$BENCH_PID" | xargs)
    [[ -n $kids ]] && break
    sleep 0.05
  done
  [[ -n $kids ]] || fail "no child process appeared"
  kill -INT "$BENCH_PID"
  wait_exit rc "$BENCH_PID" 10
  assert_equal "$rc" 1
  assert_equal "$(cat "$d/BENCH.err")" "fastcat: interrupted by SIGINT"
  for k in $kids; do
    ! is_alive "$k" || fail "child $k still running"
  done
}

@test "a stuck child is killed after the deadline: the cell fails, exit 1, the run goes on" {
  local d k rc stopped=() start
  d=$(tdir)
  # Once, in a sanitizer build in CI, the bench was still running 30 s after
  # the failure (not reproduced in 7 runs since). Leak checking is off here to
  # rule out LeakSanitizer's stop-the-world tracer task meeting the SIGSTOPs
  # below; that it was the cause is not confirmed.
  bg_start BENCH /dev/null "$d/out" env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
    "$FASTCAT" --bench --bench-time 4 --bench-transports tcp --bench-sizes 1k
  # SIGSTOP every live child until a cell gives up on one (a stop that lands
  # just after a child reported does not hang the trial; the next one will).
  start=$(now_us)
  until grep -q '^fastcat: bench tcp' "$d/BENCH.err"; do
    (( $(now_us) - start < 30000000 )) || fail "no cell failed in 30 s: $(cat "$d/BENCH.err")"
    if ! is_alive "$BENCH_PID"; then # it may have failed and finished since the grep
      grep -q '^fastcat: bench tcp' "$d/BENCH.err" && break
      fail "bench ended without a failure: $(cat "$d/out")"
    fi
    for k in $(ps -o pid= --ppid "$BENCH_PID"); do
      [[ " ${stopped[*]} " == *" $k "* ]] && continue
      is_alive "$k" && kill -STOP "$k" 2>/dev/null && stopped+=("$k")
    done
    sleep 0.05
  done
  wait_exit rc "$BENCH_PID" 30
  assert_equal "$rc" 1
  grep -Eq '^fastcat: bench tcp (1 KiB|latency): no result within [0-9.]+ s of the end' \
    "$d/BENCH.err" || fail "stderr: $(cat "$d/BENCH.err")"
  grep -Eq '^ *size +tcp$' "$d/out" || fail "no table after the failure: $(cat "$d/out")"
  for k in "${stopped[@]}"; do
    ! is_alive "$k" || fail "stopped child $k still there"
  done
}

@test "--help-all: the --bench options, every line within 80 columns" {
  run -0 "$FASTCAT" --help-all
  for o in --bench --bench-time --bench-transports --bench-sizes; do
    grep -Eq -- "^ +$o( |$)" <<<"$output" || fail "--help-all lacks $o"
  done
  run awk 'length($0) > 80' <<<"$output"
  assert_output ''
}

@test "usage: unknown transport, names it and the known ones" {
  usage_exact "fastcat: --bench-transports tcp,foo: unknown transport 'foo' (pipe, memcpy, tcp, udp, unix, unix-dgram, unix-seqpacket)" \
    --bench --bench-transports tcp,foo
  usage_exact "fastcat: --bench-transports tcp,: unknown transport '' (pipe, memcpy, tcp, udp, unix, unix-dgram, unix-seqpacket)" \
    --bench --bench-transports tcp,
}

@test "usage: bad sizes name the entry: 4x, 0, 65M" {
  usage_exact "fastcat: --bench-sizes 4x: invalid size (digits with an optional k/K/KiB, m/M/MiB or g/G/GiB suffix)" \
    --bench --bench-sizes 1k,4x
  usage_exact "fastcat: --bench-sizes 0: size must be 1 byte to 64 MiB" --bench --bench-sizes 0
  usage_exact "fastcat: --bench-sizes 65M: size must be 1 byte to 64 MiB" --bench --bench-sizes 1,65M
}

@test "usage: --bench-time 0, 3601, 0.5 and abc" {
  local v
  for v in 0 3601 0.5; do
    usage_exact "fastcat: --bench-time $v: must be 1 to 3600 seconds" --bench --bench-time "$v"
  done
  usage_exact "fastcat: --bench-time abc: invalid time (seconds, e.g. 5, 0.5 or 500ms)" \
    --bench --bench-time abc
}

@test "usage: --bench takes no host, port or -l; --bench-* need --bench" {
  usage_exact "fastcat: --bench: unexpected argument '127.0.0.1' (it takes no host, port or path)" \
    --bench 127.0.0.1 9000
  usage_exact "fastcat: --bench and -l: cannot be combined" --bench -l 0
  usage_exact "fastcat: --bench and -u: cannot be combined" -u --bench
  usage_exact "fastcat: --bench-time: needs --bench" --bench-time 5 127.0.0.1 9000
  usage_exact "fastcat: --bench-sizes: needs --bench" --bench-sizes 1k 127.0.0.1 9000
}
