#!/usr/bin/env bats
# copy-splice.bats - what --copy=splice says and obeys: -v names the method per
# direction, the --copy usage errors, and what -B means with splice and
# sendfile (JSON maxima, strace'd call lengths, F_SETPIPE_SZ).
#
# The payloads, pair and the splice probe are in copy.bash.

load helpers
load copy

setup_file() {
  copy_setup_file a.1048577 "a.$SZ" b.1048577 "b.$SZ"
}

setup() {
  T=$BATS_TEST_TMPDIR
}

# -------------------------------------------------------- what -v says

@test "-v names the method per direction; the human report ends with 'by sendfile' / 'by splice'" {
  need_splice
  local rc
  fc_listen L --in "$BATS_FILE_TMPDIR/b.1048577"
  cat "$BATS_FILE_TMPDIR/a.1048577" >"$T/a"
  run -0 run_client file file "$T/a" -v 127.0.0.1 "$L_PORT"
  wait_exit rc "$L_PID" 30
  assert_equal "listener exit $rc" "listener exit 0"
  assert_same_bytes "$T/a" "$T/L.out"
  assert_same_bytes "$BATS_FILE_TMPDIR/b.1048577" "$T/c.out"
  run -0 cat "$T/c.err"
  assert_line 'fastcat: stdin -> socket: sendfile'
  assert_line 'fastcat: socket -> stdout: splice'
  assert_line --regexp '^fastcat: sent 1048577 bytes .* writes \(mean [0-9]+ B, max [0-9]+ B\) by sendfile$'
  assert_line --regexp '^fastcat: received 1048577 bytes .* writes \(mean [0-9]+ B, max [0-9]+ B\) by splice$'
  # the listener's stdin is a regular file too; its stdout a file
  run -0 cat "$T/L.err"
  assert_line 'fastcat: stdin -> socket: sendfile'
  assert_line 'fastcat: socket -> stdout: splice'
  assert_line --regexp '^fastcat: received 1048577 bytes .* by splice$'

  # a pipe on stdin into tcp: auto copies (measured faster), --copy=splice
  # splices; --copy=rw: read/write (rw) in the report
  fc_listen L2
  run -0 run_client pipe file "$T/a" -v 127.0.0.1 "$L2_PORT"
  wait_exit rc "$L2_PID" 30
  assert_same_bytes "$T/a" "$T/L2.out"
  run -0 cat "$T/c.err"
  assert_line --regexp '^fastcat: stdin -> socket: read/write \(.*pipe.*tcp.*\)$'
  assert_line --regexp '^fastcat: sent 1048577 bytes .* by rw$'
  fc_listen L4
  run -0 run_client pipe file "$T/a" -v --copy=splice 127.0.0.1 "$L4_PORT"
  wait_exit rc "$L4_PID" 30
  assert_same_bytes "$T/a" "$T/L4.out"
  run -0 cat "$T/c.err"
  assert_line 'fastcat: stdin -> socket: splice'
  assert_line --regexp '^fastcat: sent 1048577 bytes .* by splice$'
  fc_listen L3 --copy=rw
  run -0 run_client pipe file "$T/a" -v --copy=rw 127.0.0.1 "$L3_PORT"
  run -0 cat "$T/c.err"
  assert_line --regexp '^fastcat: sent 1048577 bytes .* by rw$'
  assert_line --regexp '^fastcat: received 0 bytes .* by rw$'
  refute_line --partial 'splice'
  wait_exit rc "$L3_PID" 30
  run -0 cat "$T/L3.err"
  assert_line --regexp '^fastcat: received 1048577 bytes .* by rw$'
}

# ------------------------------------------------------------ usage errors

@test "--copy=splice -u: usage error (exit 2), one line naming --copy=splice" {
  usage_one_line --copy=splice -u 127.0.0.1 9
  [[ ${stderr_lines[0]} == "fastcat: --copy=splice"* ]] || fail "got: ${stderr_lines[0]}"
  assert_equal "${stderr_lines[0]}" \
    'fastcat: --copy=splice: needs a stream transport (tcp, unix); datagrams are copied whole'
}

@test "--copy=splice with unix-dgram (-Uu, --transport unix-dgram) and unix-seqpacket: usage errors" {
  local args
  for args in "-Uu $T/x.sock" "--transport unix-dgram -U $T/x.sock" "-U --transport unix-seqpacket $T/x.sock"; do
    # shellcheck disable=SC2086
    usage_one_line --copy=splice $args
    [[ ${stderr_lines[0]} == "fastcat: --copy=splice"* ]] || fail "$args: got: ${stderr_lines[0]}"
  done
  [[ ! -e $T/x.sock ]] || fail "a socket file was created"
}

@test "--copy=splice --checksum: usage error (exit 2), one line naming --copy=splice" {
  usage_one_line --copy=splice --checksum 127.0.0.1 9
  [[ ${stderr_lines[0]} == "fastcat: --copy=splice"* ]] || fail "got: ${stderr_lines[0]}"
  assert_regex "${stderr_lines[0]}" 'checksum'
  # and in the other order
  usage_one_line --checksum --copy=splice 127.0.0.1 9
  [[ ${stderr_lines[0]} == "fastcat: --copy=splice"* ]] || fail "got: ${stderr_lines[0]}"
}

@test "--copy=bogus, --copy= and --copy without a value: usage errors naming the value" {
  usage_one_line --copy=bogus 127.0.0.1 9
  assert_equal "${stderr_lines[0]}" 'fastcat: --copy=bogus: must be auto, rw or splice'
  usage_one_line --copy=SPLICE 127.0.0.1 9
  assert_regex "${stderr_lines[0]}" '^fastcat: --copy=SPLICE: '
  usage_one_line --copy= 127.0.0.1 9
  assert_regex "${stderr_lines[0]}" '^fastcat: --copy=: '
  usage_one_line --copy
  assert_regex "${stderr_lines[0]}" '^fastcat: --copy'
}

@test "a build without splice: --copy=splice is a usage error saying so" {
  [[ -n ${FC_NO_SPLICE:-} ]] || skip "this build has splice"
  usage_one_line --copy=splice 127.0.0.1 9
  assert_regex "${stderr_lines[0]}" '^fastcat: --copy=splice: .*this build has no splice'
}

# ------------------------------------------------- -B with splice/sendfile

# chunk16k TRANSPORT CIN: -B 16k --copy=splice at both ends, 8 MiB each
# way; every splice/sendfile moved at most 16384 bytes (JSON maxima).
chunk16k() {
  pair "$1" splice "$2" file pipe pipe "$SZ" "$SZ" -B 16k
  local j
  for j in "$CJSON" "$LJSON"; do
    jq_true "$j" '.chunk_size == 16384 and
      .received.max_read > 0 and .received.max_read <= 16384 and
      .received.max_write > 0 and .received.max_write <= 16384 and
      .sent.max_read <= 16384 and .sent.max_write > 0 and .sent.max_write <= 16384'
  done
  # sendfile (client) reads nothing itself; splice from a pipe (listener) does
  jq_true "$CJSON" '.sent.copy == "sendfile" and .sent.reads == 0'
  jq_true "$LJSON" '.sent.copy == "splice" and .sent.max_read > 0 and .sent.reads > 0'
}

@test "tcp --copy=splice -B 16k: max_read and max_write <= 16384 in both JSON reports, both directions" { need_splice; chunk16k tcp file; }
@test "unix --copy=splice -B 16k: max_read and max_write <= 16384 in both JSON reports, both directions" { need_splice; chunk16k unix file; }

# check_lengths FILE SYSCALL LIMIT: every SYSCALL line in the strace FILE
# asked for at most LIMIT bytes and got at most LIMIT; prints the count.
check_lengths() {
  perl -e '
    my ($sc, $lim) = @ARGV; my ($n, $bad, $moved) = (0, 0, 0);
    while (<STDIN>) {
      s/^\d+\s+//;
      next unless /^\Q$sc\E\(/;
      my ($len, $ret);
      if ($sc eq "splice" && /^splice\(-?\d+, [^,]+, -?\d+, [^,]+, (\d+), [^)]*\)\s+=\s+(-?\d+)/) { ($len, $ret) = ($1, $2) }
      elsif ($sc eq "sendfile" && /^sendfile\(\d+, \d+, [^,]+, (\d+)\)\s+=\s+(-?\d+)/) { ($len, $ret) = ($1, $2) }
      else { next if /resumed|unfinished/; print "UNPARSED: $_"; $bad++; next }
      $n++;
      $moved++ if $ret > 0;
      if ($len > $lim || $ret > $lim) { print "TOO BIG (limit $lim): $_"; $bad++ }
    }
    print "$sc: $n calls, $moved moved bytes\n";
    exit($bad || !$moved ? 1 : 0);' "$2" "$3" <"$1"
}

@test "strace, stdin a file: sendfile calls ask for <= 16384 bytes with -B 16k (and the receiver splices <= 16384)" {
  need_splice
  "${STRACE[@]}" -o /dev/null true 2>/dev/null || skip "strace cannot trace here (ptrace not permitted)"
  local rc
  fc_listen L --in "$BATS_FILE_TMPDIR/b.$SZ" -B 16k --copy=splice --report=json
  run -0 bash -c 'in=$1 out=$2; shift 2; timeout -k 5 60 "$@" <"$in" >"$out"' _ \
    "$BATS_FILE_TMPDIR/a.$SZ" "$T/c.out" \
    "${STRACE[@]}" -f -e trace=splice,sendfile -o "$T/st" "$FASTCAT" -B 16k --copy=splice 127.0.0.1 "$L_PORT"
  wait_exit rc "$L_PID" 30
  assert_equal "listener exit $rc" "listener exit 0"
  assert_same_bytes "$BATS_FILE_TMPDIR/a.$SZ" "$T/L.out"
  assert_same_bytes "$BATS_FILE_TMPDIR/b.$SZ" "$T/c.out"
  run -0 check_lengths "$T/st" sendfile 16384   # stdin -> socket
  run -0 check_lengths "$T/st" splice 16384     # socket -> pipe -> stdout
  LJSON=$(json_report "$T/L.err")
  jq_true "$LJSON" '.received.max_read <= 16384 and .received.max_write <= 16384'
}

@test "strace, stdin a pipe: splice calls ask for <= 16384 bytes with -B 16k at both ends" {
  need_splice
  "${STRACE[@]}" -o /dev/null true 2>/dev/null || skip "strace cannot trace here (ptrace not permitted)"
  local rc
  fc_listen L -B 16k --copy=splice
  run -0 bash -c 'cat "$1" | timeout -k 5 60 "${@:2}"' _ "$BATS_FILE_TMPDIR/a.$SZ" \
    "${STRACE[@]}" -f -e trace=splice,sendfile -o "$T/st" \
    "$FASTCAT" -B 16k --copy=splice 127.0.0.1 "$L_PORT"
  wait_exit rc "$L_PID" 30
  assert_equal "listener exit $rc" "listener exit 0"
  assert_same_bytes "$BATS_FILE_TMPDIR/a.$SZ" "$T/L.out"
  run -0 check_lengths "$T/st" splice 16384
  refute_output --partial 'TOO BIG'
  run grep -c '^[0-9]* *sendfile(' "$T/st"
  assert_output 0
}

@test "a pipe on stdin/stdout is enlarged with F_SETPIPE_SZ to one chunk, at most 1 MiB" {
  need_splice
  "${STRACE[@]}" -o /dev/null true 2>/dev/null || skip "strace cannot trace here (ptrace not permitted)"
  local rc
  fc_listen L --in "$BATS_FILE_TMPDIR/b.1048577" -B 4M
  run -0 bash -c 'cat "$1" | timeout -k 5 60 "${@:3}" | cat >"$2"' _ \
    "$BATS_FILE_TMPDIR/a.1048577" "$T/c.out" \
    "${STRACE[@]}" -f -e trace=fcntl -o "$T/st4m" "$FASTCAT" -B 4M 127.0.0.1 "$L_PORT"
  wait_exit rc "$L_PID" 30
  assert_equal "listener exit $rc" "listener exit 0"
  assert_same_bytes "$BATS_FILE_TMPDIR/a.1048577" "$T/L.out"
  assert_same_bytes "$BATS_FILE_TMPDIR/b.1048577" "$T/c.out"
  run -0 grep -E '^[0-9]+ +fcntl\(0, F_SETPIPE_SZ, 1048576\)' "$T/st4m"
  run -0 grep -E '^[0-9]+ +fcntl\(1, F_SETPIPE_SZ, 1048576\)' "$T/st4m"
  # never more than 1 MiB on stdin or stdout (the private pipes may ask more)
  run -0 perl -ne '$bad++ if /fcntl\([01], F_SETPIPE_SZ, (\d+)/ && $1 > 1048576; END { exit($bad ? 1 : 0) }' "$T/st4m"

  fc_listen L2 --in "$BATS_FILE_TMPDIR/b.1048577" -B 256k
  run -0 bash -c 'cat "$1" | timeout -k 5 60 "${@:3}" | cat >"$2"' _ \
    "$BATS_FILE_TMPDIR/a.1048577" "$T/c2.out" \
    "${STRACE[@]}" -f -e trace=fcntl -o "$T/st256k" "$FASTCAT" -B 256k 127.0.0.1 "$L2_PORT"
  assert_same_bytes "$BATS_FILE_TMPDIR/b.1048577" "$T/c2.out"
  run -0 grep -E '^[0-9]+ +fcntl\(0, F_SETPIPE_SZ, 262144\)' "$T/st256k"
  run -0 grep -E '^[0-9]+ +fcntl\(1, F_SETPIPE_SZ, 262144\)' "$T/st256k"
}
