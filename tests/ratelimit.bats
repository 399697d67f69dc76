#!/usr/bin/env bats
# ratelimit.bats - --rate-limit RATE: each direction moves at most RATE bytes
# a second. Timing on a shared machine only ever runs slow, so the lower
# bound is strict (never faster than the limit allows: size/rate less the one
# chunk the bucket starts with) and the upper one loose (+30 %). No burst:
# under strace, no call on the socket moves more than one chunk and the first
# second after connect() carries at most rate + one chunk, with sendfile (a
# file on stdin), write (--copy=rw) and splice (--copy=splice). The limited
# sender sleeps in poll (its CPU time stays low); the receiving direction and
# UDP datagrams are limited too; output is byte-exact; usage errors.

load helpers

MIB=1048576
CHUNK=98304          # the default -B
RATE=$((2 * MIB))    # --rate-limit 2M

setup_file() {
  mkpayload "$BATS_FILE_TMPDIR/6m" $((6 * MIB))
  mkpayload "$BATS_FILE_TMPDIR/3m" $((3 * MIB))
  mkpayload "$BATS_FILE_TMPDIR/1m" "$MIB"
}

setup() {
  T=$BATS_TEST_TMPDIR
}

# assert_elapsed MS BYTES RATE CHUNK: BYTES at RATE took at least
# (BYTES - CHUNK) / RATE (the bucket starts with one chunk) and at most 30 %
# more than BYTES / RATE, plus 0.3 s to start up.
assert_elapsed() {
  local ms=$1 bytes=$2 rate=$3 chunk=$4 lo hi
  lo=$(( (bytes - chunk) * 1000 / rate ))
  hi=$(( bytes * 1300 / rate + 300 ))
  echo "# elapsed ${ms} ms, allowed ${lo}..${hi} ms" >&3
  (( ms >= lo )) || fail "faster than the limit: $ms ms < $lo ms for $bytes bytes at $rate B/s"
  (( ms <= hi )) || fail "too slow: $ms ms > $hi ms for $bytes bytes at $rate B/s"
}

@test "tcp, a file on stdin (sendfile), --rate-limit 2M: 6 MiB take 3 s, byte-exact, and the sender sleeps" {
  local rc start ms cpu
  fc_listen L
  start=$(now_us)
  # the subshell's `times` line 2: the CPU time of its child, the sender
  run -0 bash -c '"${@:2}" <"$1" >/dev/null; rc=$?; times; exit $rc' _ "$BATS_FILE_TMPDIR/6m" \
    timeout -k 5 60 "$FASTCAT" --rate-limit 2M 127.0.0.1 "$L_PORT"
  ms=$(elapsed_ms "$start")
  wait_exit rc "$L_PID" 30
  assert_equal "listener exit $rc" "listener exit 0"
  assert_same_bytes "$BATS_FILE_TMPDIR/6m" "$T/L.out"
  assert_elapsed "$ms" $((6 * MIB)) "$RATE" "$CHUNK"
  # "0m0.004s 0m0.039s": user and system seconds of the sender; a sender
  # that spun instead of sleeping in poll would use about the 3 s
  cpu=$(awk 'NR == 2 { gsub(/[ms]/, " "); print int(($2 + $4) * 1000) }' <<<"$output")
  echo "# sender CPU ${cpu} ms" >&3
  [[ $cpu =~ ^[0-9]+$ ]] || fail "no CPU time read from: $output"
  (( cpu <= 300 )) || fail "the limited sender used $cpu ms of CPU in 3 s: it does not sleep"
}

# check_calls FILE CHUNK RATE BYTES: in the strace -tt FILE of one sender,
# every write/sendfile/splice into the socket (the fd of its connect()) asks
# for and moves at most CHUNK bytes; those in the first second after the
# connect() move at most RATE + CHUNK; all of them move BYTES.
check_calls() {
  perl -e '
    my ($chunk, $rate, $total) = @ARGV;
    my ($sock, $t0, $first, $all, $calls, $bad) = (-1, undef, 0, 0, 0, 0);
    sub secs { my ($h, $m, $s) = split /:/, $_[0]; return $h * 3600 + $m * 60 + $s }
    while (<STDIN>) {
      next unless /^(\d+:\d+:\d+\.\d+) (\w+)\((.*)\)\s+=\s+(-?\d+)/;
      my ($t, $sc, $args, $ret) = (secs($1), $2, $3, $4);
      if ($sc eq "connect" && $args =~ /^(\d+), \{sa_family=AF_INET/) { ($sock, $t0) = ($1, $t); next }
      my @a = split /, /, $args;
      my ($fd, $len);
      if ($sc eq "write") { ($fd, $len) = ($a[0], $a[-1]) }
      elsif ($sc eq "sendfile") { ($fd, $len) = ($a[0], $a[3]) }
      elsif ($sc eq "splice") { ($fd, $len) = ($a[2], $a[4]) }
      else { next }
      next unless defined $t0 && $fd == $sock && $ret > 0;
      $calls++;
      $all += $ret;
      $first += $ret if $t < $t0 + 1;
      if ($len > $chunk || $ret > $chunk) { print "MORE THAN A CHUNK: $_"; $bad++ }
    }
    print "$calls calls moved $all bytes; $first in the first second (limit ",
      $rate + $chunk, ")\n";
    $bad++ if $first > $rate + $chunk || $all != $total || $sock < 0;
    exit($bad ? 1 : 0);' "$2" "$3" "$4" <"$1"
}

# traced_sender HOW: 3 MiB at 2M through a traced sender; HOW is "file"
# (stdin a file: sendfile), "rw" or "splice" (stdin a pipe, --copy=HOW).
traced_sender() {
  local how=$1 rc opts=()
  "${STRACE[@]}" -o /dev/null true 2>/dev/null || skip "strace cannot trace here (ptrace not permitted)"
  [[ $how == file ]] || opts=(--copy="$how")
  fc_listen L
  run -0 bash -c 'if [[ $1 == file ]]; then "${@:3}" <"$2"; else cat "$2" | "${@:3}"; fi' _ \
    "$how" "$BATS_FILE_TMPDIR/3m" timeout -k 5 60 "${STRACE[@]}" -tt -T -s 0 \
    -e trace=connect,write,sendfile,splice -o "$T/st" \
    "$FASTCAT" --rate-limit 2M "${opts[@]}" 127.0.0.1 "$L_PORT"
  wait_exit rc "$L_PID" 30
  assert_equal "listener exit $rc" "listener exit 0"
  assert_same_bytes "$BATS_FILE_TMPDIR/3m" "$T/L.out"
  run -0 check_calls "$T/st" "$CHUNK" "$RATE" $((3 * MIB))
  echo "# $output" >&3
}

@test "strace, sendfile: no call moves more than one chunk; the first second carries <= rate + one chunk" {
  local err
  traced_sender file
  # a build without splice reads the file with read/write (checked the same way)
  err=$(timeout 10 "$FASTCAT" --copy=splice -U /nonexistent/fastcat-probe.sock </dev/null 2>&1 >/dev/null) || true
  [[ $err == *"this build has no splice"* ]] || run -0 grep -c ' sendfile(' "$T/st"
}

@test "strace, --copy=rw from a pipe: no write moves more than one chunk; first second <= rate + one chunk" {
  traced_sender rw
}

@test "strace, --copy=splice from a pipe: no splice moves more than one chunk; first second <= rate + one chunk" {
  local err
  err=$(timeout 10 "$FASTCAT" --copy=splice -U /nonexistent/fastcat-probe.sock </dev/null 2>&1 >/dev/null) || true
  [[ $err != *"this build has no splice"* ]] || skip "this build has no splice"
  traced_sender splice
}

@test "the receiving direction is limited: a listener with --rate-limit 2M takes 3 MiB in 1.5 s" {
  local rc start ms
  fc_listen L --rate-limit 2M
  start=$(now_us)
  run -0 fcx "$BATS_FILE_TMPDIR/3m" /dev/null 127.0.0.1 "$L_PORT"
  wait_exit rc "$L_PID" 30
  ms=$(elapsed_ms "$start")
  assert_equal "listener exit $rc" "listener exit 0"
  assert_same_bytes "$BATS_FILE_TMPDIR/3m" "$T/L.out"
  assert_elapsed "$ms" $((3 * MIB)) "$RATE" "$CHUNK"
}

@test "udp --dgram-size 1000 --rate-limit 1M: whole datagrams, 1 MiB in 1 s, byte-exact" {
  local rc start ms
  fc_listen L -u --dgram-size 1000
  start=$(now_us)
  run -0 fcx "$BATS_FILE_TMPDIR/1m" /dev/null -u --dgram-size 1000 --rate-limit 1M --report=json \
    127.0.0.1 "$L_PORT"
  ms=$(elapsed_ms "$start")
  wait_exit rc "$L_PID" 30
  assert_equal "listener exit $rc" "listener exit 0"
  assert_same_bytes "$BATS_FILE_TMPDIR/1m" "$T/L.out"
  assert_elapsed "$ms" "$MIB" "$MIB" 1000
}

@test "--rate-limit usage errors: 0, negative, overflow, bad suffix, missing, with --bench" {
  local bad='invalid rate (bytes per second: digits with an optional k/K/KiB, m/M/MiB or g/G/GiB suffix)'
  usage_err 'fastcat: --rate-limit 0: rate must be 1 byte/s to 1024G (1 TiB/s)' --rate-limit 0 127.0.0.1 1
  usage_err "fastcat: --rate-limit -1: $bad" --rate-limit -1 127.0.0.1 1
  usage_err "fastcat: --rate-limit 10X: $bad" --rate-limit 10X 127.0.0.1 1
  usage_err "fastcat: --rate-limit 1.5M: $bad" --rate-limit 1.5M 127.0.0.1 1
  usage_err 'fastcat: --rate-limit 99999999999999999999: rate too large' \
    --rate-limit 99999999999999999999 127.0.0.1 1
  usage_err 'fastcat: --rate-limit 17179869184G: rate too large' --rate-limit 17179869184G 127.0.0.1 1
  usage_err 'fastcat: --rate-limit 2000G: rate must be 1 byte/s to 1024G (1 TiB/s)' \
    --rate-limit 2000G 127.0.0.1 1
  usage_err 'fastcat: --rate-limit: option requires an argument' --rate-limit
  usage_err 'fastcat: --bench and --rate-limit: cannot be combined' --bench --rate-limit 1M
}
