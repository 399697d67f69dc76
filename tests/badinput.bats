#!/usr/bin/env bats
# badinput.bats - bad input, from tables: every option of --help-all that takes a
# value (0, negative, overflow, unknown suffixes, empty, not numeric, spaces),
# ports, hosts, Unix paths and the combinations options.c refuses. Each row
# must exit with its status (2 for usage; 1 or 3 for run-time failures), print
# nothing on stdout and exactly one stderr line "fastcat: ..." that contains
# the row's word (the option or operand as typed), and never crash (no signal,
# no sanitizer report). A table test checks all of its rows and lists every
# one that fails; one test per group of options. The bad values that every
# size and time option refuses are listed once (BAD_SIZES, BAD_TIMES) and
# stand in a table as {size} or {time}. Host names are only ever resolved
# inside `unshare -n`.

load helpers

setup() {
  T=$BATS_TEST_TMPDIR
  # Unix paths of exactly 108 and 109 bytes: one and two over the 107 that fit sun_path
  P108=$(path_of_len 108 "$T")
  P109=$(path_of_len 109 "$T")
  A108=@$(head -c 107 /dev/zero | tr '\0' a)
  H300=$(head -c 300 /dev/zero | tr '\0' h)
  L33=$(seq -f 'h%g' -s , 33)
  RUN=()
  D=
  PERM_DIR=
}

teardown() {
  [[ -z $PERM_DIR ]] || rm -rf "$PERM_DIR"
  dump_logs
  fc_cleanup
}

# trim VAR TEXT: VAR = TEXT without leading and trailing blanks.
trim() {
  local s=$2
  s=${s#"${s%%[![:space:]]*}"}
  printf -v "$1" '%s' "${s%"${s##*[![:space:]]}"}"
}

# check_case STATUS WORD ARGS...: run ${RUN[@]} fastcat ARGS (stdin /dev/null);
# prints what is wrong with the outcome, if anything, as one line.
check_case() {
  local want=$1 word=$2 rc=0 out errf=$T/case.stderr why=() lines=() all shown IFS=$'\n'
  shift 2
  out=$(timeout -k 2 10 "${RUN[@]}" "$FASTCAT" "$@" </dev/null 2>"$errf") || rc=$?
  mapfile -t lines <"$errf"
  all="${lines[*]}"
  if ((rc > 128 || rc == 124)); then why+=("crashed or hung (status $rc)"); fi
  case $all in
  *'runtime error'* | *AddressSanitizer* | *LeakSanitizer* | *UndefinedBehaviorSanitizer*)
    why+=("sanitizer report") ;;
  esac
  if ((rc != want)); then why+=("status $rc, expected $want"); fi
  if [[ -n $out ]]; then why+=("output on stdout"); fi
  if ((${#lines[@]} != 1)); then why+=("${#lines[@]} lines on stderr"); fi
  if [[ ${lines[0]:-} != "fastcat: "* ]]; then why+=("does not start with 'fastcat: '"); fi
  if [[ $all != *"$word"* ]]; then why+=("does not say '$word'"); fi
  if ((${#why[@]} > 0)); then
    IFS=' '
    shown="${*@Q}"
    IFS=';'
    all=${all:0:300}
    printf '  fastcat %s: %s\n      stderr: %s\n' "$shown" "${why[*]}" "${all@Q}"
  fi
}

# The bad values every size or time option must refuse, as table words with
# the message each gets ("=": out of the option's range, the row says what).
BAD_SIZES=("0|=" "-1|invalid size" "18446744073709551616|size too large" "9223372036854775808|="
  "99999999999999999999k|size too large" "5q|invalid size" "5kk|invalid size" "1e3|invalid size"
  "0x10|invalid size" "''|invalid size" "abc|invalid size" "' 5'|invalid size" "'5 '|invalid size")
BAD_TIMES=("0|=" "-1|invalid time" "18446744073709551616|time too large" "9223372036854775808|time too large"
  "99999999999999999999k|invalid time" "5q|invalid time" "1e3|invalid time" "0x10|invalid time"
  "''|invalid time" "' 5'|invalid time" "'5 '|invalid time")

# table_rows < TABLE: check_case for each row "ARGS | STATUS | WORD" ('#'
# comments and blank lines skipped; ARGS are shell words and WORD a
# double-quoted string, both expanded: $T, $P108, ...). A row whose ARGS
# have the word {size} or {time} stands for one row per value of BAD_SIZES
# or BAD_TIMES in its place, each with the WORD "OPT VALUE: MESSAGE" (OPT the
# word before it); its own WORD is the message of the "=" values (out of
# range), or "-" for an option that has none (they are not checked then).
# Prints the failures, then "rows N".
table_rows() {
  local line args want word argv rows=0 re f v msg forms pre opt post plain
  re='^(.*[[:space:]])?([^[:space:]]+)[[:space:]]+[{](size|time)[}](.*)$'
  while IFS= read -r line; do
    [[ $line =~ ^[[:space:]]*(#|$) ]] && continue
    IFS='|' read -r args want word <<<"$line"
    trim word "$word"
    trim want "$want"
    if [[ $args =~ $re ]]; then
      pre=${BASH_REMATCH[1]} opt=${BASH_REMATCH[2]} post=${BASH_REMATCH[4]}
      if [[ ${BASH_REMATCH[3]} == size ]]; then forms=("${BAD_SIZES[@]}"); else forms=("${BAD_TIMES[@]}"); fi
      for f in "${forms[@]}"; do
        v=${f%%|*} msg=${f#*|}
        if [[ $msg == = ]]; then
          [[ $word != - ]] || continue
          msg=$word
        fi
        eval "plain=$v"
        eval "argv=($pre$opt $v$post)"
        check_case "$want" "$opt $plain: $msg" "${argv[@]}"
        rows=$((rows + 1))
      done
      continue
    fi
    eval "argv=($args)"
    eval "word=\"$word\""
    check_case "$want" "$word" "${argv[@]}"
    rows=$((rows + 1))
  done
  echo "rows $rows"
}

# check_table < TABLE: the rows run in a plain bash (bats traces every
# command of a test, which makes a loop of hundreds of rows slow); fails
# listing every row that failed.
check_table() {
  local report rows
  report=$(bash -c "$(declare -p T P108 P109 A108 H300 L33 D RUN FASTCAT BAD_SIZES BAD_TIMES)
    $(declare -f trim check_case table_rows)
    table_rows")
  rows=${report##*rows }
  report=${report%rows *}
  if [[ ! $rows =~ ^[1-9][0-9]*$ ]]; then fail "the table did not run: $report"; fi
  if [[ -n $report ]]; then
    fail "$(grep -c '^  fastcat' <<<"$report") of $rows rows failed:
$report"
  fi
}

@test "usage errors, sizes: -B/--chunk-size, --read-size, --write-size (1 byte to 64 MiB): exit 2 with one line naming it" {
  check_table <<'EOF'
-B {size} 127.0.0.1 1                    | 2 | chunk size must be
-B 99999999999999999999x 127.0.0.1 1     | 2 | -B 99999999999999999999x: invalid size
--chunk-size 0 127.0.0.1 1               | 2 | --chunk-size 0: chunk size must be
--chunk-size=5q 127.0.0.1 1              | 2 | --chunk-size 5q: invalid size
--chunk-size '' 127.0.0.1 1              | 2 | --chunk-size : invalid size
--chunk-size 2G 127.0.0.1 1              | 2 | --chunk-size 2G: chunk size must be
--read-size {size} 127.0.0.1 1           | 2 | chunk size must be
--write-size {size} 127.0.0.1 1          | 2 | chunk size must be
EOF
}

@test "usage errors, socket buffers: -O/--sndbuf, -I/--rcvbuf (1 byte to 1 GiB): exit 2 with one line naming it" {
  check_table <<'EOF'
-O {size} 127.0.0.1 1                    | 2 | socket buffer size must be
-O 2G 127.0.0.1 1                        | 2 | -O 2G: socket buffer size must be
--sndbuf 0 127.0.0.1 1                   | 2 | --sndbuf 0: socket buffer size must be
--sndbuf=5q 127.0.0.1 1                  | 2 | --sndbuf 5q: invalid size
--sndbuf '' 127.0.0.1 1                  | 2 | --sndbuf : invalid size
-I {size} 127.0.0.1 1                    | 2 | socket buffer size must be
--rcvbuf 0 127.0.0.1 1                   | 2 | --rcvbuf 0: socket buffer size must be
--rcvbuf=5q 127.0.0.1 1                  | 2 | --rcvbuf 5q: invalid size
--rcvbuf '' 127.0.0.1 1                  | 2 | --rcvbuf : invalid size
EOF
}

@test "usage errors, --rcvlowat (0 = off, to 1 GiB; tcp only): exit 2 with one line naming it" {
  check_table <<'EOF'
--rcvlowat -1 127.0.0.1 1                | 2 | --rcvlowat -1: invalid size
--rcvlowat 18446744073709551616 127.0.0.1 1 | 2 | --rcvlowat 18446744073709551616: size too large
--rcvlowat 2G 127.0.0.1 1                | 2 | --rcvlowat 2G: low-water mark must be 0 (off) to 1 GiB
--rcvlowat 5q 127.0.0.1 1                | 2 | --rcvlowat 5q: invalid size
--rcvlowat '' 127.0.0.1 1                | 2 | --rcvlowat : invalid size
--rcvlowat=abc 127.0.0.1 1               | 2 | --rcvlowat abc: invalid size
-u --rcvlowat 1M 127.0.0.1 1             | 2 | --rcvlowat: only for tcp (a udp receiver
-U --rcvlowat 64k /tmp/x                 | 2 | --rcvlowat: only for tcp (a unix receiver
--transport unix-seqpacket --rcvlowat 1 /tmp/x | 2 | --rcvlowat: only for tcp
--bench --rcvlowat 1M                    | 2 | --rcvlowat
EOF
}

@test "usage errors, --congestion (tcp only; an algorithm the kernel has): exit 2 with one line naming it" {
  [[ -r /proc/sys/net/ipv4/tcp_available_congestion_control ]] || skip "no tcp_available_congestion_control"
  check_table <<'EOF'
--congestion nosuchalgo 127.0.0.1 1      | 2 | --congestion nosuchalgo: unknown algorithm (available:
-l --congestion nosuchalgo 0             | 2 | --congestion nosuchalgo: unknown algorithm (available:
--congestion '' 127.0.0.1 1              | 2 | --congestion : unknown algorithm
--congestion=reno0123456789ab 127.0.0.1 1 | 2 | --congestion reno0123456789ab: unknown algorithm
--congestion 'cu bic' 127.0.0.1 1        | 2 | --congestion cu bic: unknown algorithm
--congestion                             | 2 | --congestion: option requires an argument
-u --congestion reno 127.0.0.1 1         | 2 | --congestion: only for tcp (udp has no congestion control)
-U --congestion reno /tmp/x              | 2 | --congestion: only for tcp (unix has no congestion control)
-U --congestion nosuchalgo /tmp/x        | 2 | --congestion: only for tcp
--transport unix-seqpacket --congestion reno /tmp/x | 2 | --congestion: only for tcp
--bench --congestion reno                | 2 | --congestion
EOF
}

@test "usage errors, --dgram-size (1 byte to 64 MiB, then what one datagram holds): exit 2 with one line naming it" {
  check_table <<'EOF'
-u --dgram-size {size} 127.0.0.1 1       | 2 | datagram size must be
-u --dgram-size 65528 127.0.0.1 1        | 2 | --dgram-size 65528: a UDP datagram holds at most
-u --seq --dgram-size 65520 127.0.0.1 1  | 2 | --dgram-size 65520: a UDP datagram holds at most
-u -B 1M 127.0.0.1 1                     | 2 | -B 1M: a UDP datagram holds at most
-u --seq -B 65527 127.0.0.1 1            | 2 | -B 65527: a UDP datagram holds at most
-u --read-size 70000 127.0.0.1 1         | 2 | --read-size 70000: a UDP datagram holds at most
EOF
}

@test "usage errors, times: -w/--timeout (> 0), -q (0 is fine); at most INT_MAX ms: exit 2 with one line naming it" {
  check_table <<'EOF'
-w {time} 127.0.0.1 1                    | 2 | timeout must be greater than 0
-w 0ms 127.0.0.1 1                       | 2 | -w 0ms: timeout must be greater than 0
-w 99999999999999999999s 127.0.0.1 1     | 2 | -w 99999999999999999999s: time too large
-w 5kk 127.0.0.1 1                       | 2 | -w 5kk: invalid time
-w abc 127.0.0.1 1                       | 2 | -w abc: invalid time
-w 1.5ms 127.0.0.1 1                     | 2 | -w 1.5ms: invalid time
-w 2147483.648 127.0.0.1 1               | 2 | -w 2147483.648: time too large
-w 2147483648ms 127.0.0.1 1              | 2 | -w 2147483648ms: time too large
--timeout 0 127.0.0.1 1                  | 2 | --timeout 0: timeout must be greater than 0
--timeout=5q 127.0.0.1 1                 | 2 | --timeout 5q: invalid time
--timeout '' 127.0.0.1 1                 | 2 | --timeout : invalid time
-q {time} 127.0.0.1 1                    | 2 | -
-q 5kk 127.0.0.1 1                       | 2 | -q 5kk: invalid time
-q abc 127.0.0.1 1                       | 2 | -q abc: invalid time
-q 2147483.999 127.0.0.1 1               | 2 | -q 2147483.999: time too large
EOF
}

@test "usage errors, --interval (> 0), --size (at least 1 byte; needs --progress or --interval): exit 2 with one line naming it" {
  check_table <<'EOF'
--interval 0 127.0.0.1 1                 | 2 | --interval 0: must be greater than 0
--interval -1 127.0.0.1 1                | 2 | --interval -1: invalid time
--interval 5q 127.0.0.1 1                | 2 | --interval 5q: invalid time
--interval '' 127.0.0.1 1                | 2 | --interval : invalid time
--interval 18446744073709551616 127.0.0.1 1 | 2 | --interval 18446744073709551616: time too large
--progress --size 0 127.0.0.1 1          | 2 | --size 0: size must be at least 1 byte
--progress --size -1 127.0.0.1 1         | 2 | --size -1: invalid size
--progress --size 5kk 127.0.0.1 1        | 2 | --size 5kk: invalid size
--progress --size '' 127.0.0.1 1         | 2 | --size : invalid size
--progress --size 18446744073709551616 127.0.0.1 1 | 2 | --size 18446744073709551616: size too large
--size 1M 127.0.0.1 1                    | 2 | --size: needs --progress or --interval
EOF
}

@test "usage errors, names and modes: --transport, --copy, --report: exit 2 with one line naming it" {
  check_table <<'EOF'
--transport '' 127.0.0.1 1               | 2 | --transport : unknown transport
--transport foo 127.0.0.1 1              | 2 | --transport foo: unknown transport
--transport TCP 127.0.0.1 1              | 2 | --transport TCP: unknown transport
--transport 'tcp ' 127.0.0.1 1           | 2 | --transport tcp : unknown transport
--transport ' udp' 127.0.0.1 1           | 2 | --transport  udp: unknown transport
--transport 5 127.0.0.1 1                | 2 | --transport 5: unknown transport
--copy '' 127.0.0.1 1                    | 2 | --copy=: must be auto, rw or splice
--copy foo 127.0.0.1 1                   | 2 | --copy=foo: must be auto, rw or splice
--copy=RW 127.0.0.1 1                    | 2 | --copy=RW: must be auto, rw or splice
--copy='rw ' 127.0.0.1 1                 | 2 | --copy=rw : must be auto, rw or splice
--report=xml 127.0.0.1 1                 | 2 | --report=xml: must be human or json
--report= 127.0.0.1 1                    | 2 | --report=: must be human or json
--report=JSON 127.0.0.1 1                | 2 | --report=JSON: must be human or json
EOF
}

# The --bench-* values without --bench: an accepted value would only say
# "needs --bench", not the word.
@test "usage errors, --bench-time (1 to 3600 s), --bench-transports, --bench-sizes: exit 2 with one line naming it" {
  check_table <<'EOF'
--bench-time {time}                      | 2 | must be 1 to 3600 seconds
--bench-time 0.5                         | 2 | --bench-time 0.5: must be 1 to 3600 seconds
--bench-time 3601                        | 2 | --bench-time 3601: must be 1 to 3600 seconds
--bench-transports ''                    | 2 | --bench-transports : unknown transport ''
--bench-transports foo                   | 2 | --bench-transports foo: unknown transport 'foo'
--bench-transports TCP                   | 2 | --bench-transports TCP: unknown transport 'TCP'
--bench-transports tcp,                  | 2 | --bench-transports tcp,: unknown transport ''
--bench-transports ,tcp                  | 2 | --bench-transports ,tcp: unknown transport ''
--bench-transports 'tcp, udp'            | 2 | --bench-transports tcp, udp: unknown transport ' udp'
--bench-sizes 0                          | 2 | --bench-sizes 0: size must be 1 byte to 64 MiB
--bench-sizes -1                         | 2 | --bench-sizes -1: invalid size
--bench-sizes 65M                        | 2 | --bench-sizes 65M: size must be 1 byte to 64 MiB
--bench-sizes 18446744073709551616       | 2 | --bench-sizes 18446744073709551616: size too large
--bench-sizes 99999999999999999999k      | 2 | --bench-sizes 99999999999999999999k: size too large
--bench-sizes 5q                         | 2 | --bench-sizes 5q: invalid size
--bench-sizes 1k,5kk                     | 2 | --bench-sizes 5kk: invalid size
--bench-sizes ''                         | 2 | --bench-sizes : an empty entry
--bench-sizes ,                          | 2 | --bench-sizes ,: an empty entry
--bench-sizes 1k,,4k                     | 2 | --bench-sizes 1k,,4k: an empty entry
--bench-sizes ' 5'                       | 2 | --bench-sizes  5: invalid size
--bench-sizes 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17 | 2 | --bench-sizes 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17: at most 16 sizes
EOF
}

@test "usage errors, options: unknown, missing argument, an argument to a flag: exit 2 with one line naming it" {
  check_table <<'EOF'
--frobnicate 127.0.0.1 1                 | 2 | --frobnicate: unknown option
-Z 127.0.0.1 1                           | 2 | -Z: unknown option
-B                                       | 2 | -B: option requires an argument
127.0.0.1 1 -w                           | 2 | -w: option requires an argument
127.0.0.1 1 --read-size                  | 2 | --read-size: option requires an argument
127.0.0.1 1 --chunk-size                 | 2 | --chunk-size: option requires an argument
127.0.0.1 1 --timeout                    | 2 | --timeout: option requires an argument
127.0.0.1 1 --transport                  | 2 | --transport: option requires an argument
127.0.0.1 1 --bench-sizes                | 2 | --bench-sizes: option requires an argument
--listen=5 0                             | 2 | --listen
--seq=1 127.0.0.1 1                      | 2 | --seq
--checksum=x 127.0.0.1 1                 | 2 | --checksum
EOF
}

@test "usage errors, ports: connect 1..65535, listen 0..65535: exit 2 with one line naming it" {
  check_table <<'EOF'
127.0.0.1 0                              | 2 | port 0: must be 1 to 65535
127.0.0.1 65536                          | 2 | port 65536: must be 1 to 65535
127.0.0.1 99999                          | 2 | port 99999: must be 1 to 65535
127.0.0.1 18446744073709551616           | 2 | port 18446744073709551616: must be 1 to 65535
-- 127.0.0.1 -1                          | 2 | port -1: not a number
127.0.0.1 http                           | 2 | port http: not a number
127.0.0.1 ''                             | 2 | port : not a number
127.0.0.1 ' 80'                          | 2 | port  80: not a number
127.0.0.1 '80 '                          | 2 | port 80 : not a number
127.0.0.1 0x50                           | 2 | port 0x50: not a number
127.0.0.1 99999999999999999999x          | 2 | port 99999999999999999999x: not a number
-u 127.0.0.1 0                           | 2 | port 0: must be 1 to 65535
-l 65536                                 | 2 | port 65536: must be 0 to 65535
-l 127.0.0.1 99999                       | 2 | port 99999: must be 0 to 65535
-l -- -1                                 | 2 | port -1: not a number
-l http                                  | 2 | port http: not a number
-l ''                                    | 2 | port : not a number
EOF
}

@test "usage errors, operands: hosts, missing and extra ones: exit 2 with one line naming it" {
  check_table <<'EOF'
'' 1                                     | 2 | empty host name
-l '' 0                                  | 2 | empty host name
127.0.0.1                                | 2 | missing port
-l                                       | 2 | -l: missing port
127.0.0.1 1 x                            | 2 | unexpected argument 'x'
EOF
}

@test "usage errors, Unix paths: empty, 108 and 109 bytes (107 fit), abstract @ + 107: exit 2 with one line naming it" {
  check_table <<'EOF'
-U ''                                    | 2 | empty Unix socket path
-U @                                     | 2 | empty Unix socket path
-U                                       | 2 | missing socket path
-U "$P108"                               | 2 | $P108: Unix socket path too long (108 bytes, at most 107)
-U "$P109"                               | 2 | $P109: Unix socket path too long (109 bytes, at most 107)
-lU "$P108"                              | 2 | $P108: Unix socket path too long (108 bytes
-Uu "$P109"                              | 2 | $P109: Unix socket path too long (109 bytes
--transport unix-seqpacket "$P108"       | 2 | $P108: Unix socket path too long (108 bytes
-U "$A108"                               | 2 | $A108: Unix socket path too long (108 bytes
-U "$T/a.sock" x                         | 2 | unexpected argument 'x'
EOF
}

@test "usage errors, combinations (check_bench, choose_transport, check_combinations): exit 2 with one line naming it" {
  check_table <<'EOF'
-k 127.0.0.1 1                           | 2 | -k: needs -l
-4 -6 127.0.0.1 1                        | 2 | -4 and -6: pick one
-d --send-only 127.0.0.1 1               | 2 | -d
--recv-only --send-only 127.0.0.1 1      | 2 | (--recv-only) and --send-only
--seq 127.0.0.1 1                        | 2 | --seq: needs a datagram transport
-U --seq "$T/a.sock"                     | 2 | --seq: needs a datagram transport
--dgram-size 1k 127.0.0.1 1              | 2 | --dgram-size: needs a datagram transport
--copy=splice -u 127.0.0.1 1             | 2 | --copy=splice: needs a stream transport
--copy=splice --checksum 127.0.0.1 1     | 2 | --copy=splice and --checksum
--transport unix -u "$T/a.sock"          | 2 | -u and --transport unix: pick one
-u --transport tcp 127.0.0.1 1           | 2 | -u and --transport tcp: pick one
-U --transport udp 127.0.0.1 1           | 2 | -U and --transport udp: pick one
-U --transport tcp 127.0.0.1 1           | 2 | -U and --transport tcp: pick one
--bench 127.0.0.1 1                      | 2 | --bench: unexpected argument '127.0.0.1'
--bench -l                               | 2 | --bench and -l: cannot be combined
--bench -B 1k                            | 2 | --bench and -B: cannot be combined
--bench --transport udp                  | 2 | --bench and --transport: cannot be combined
--bench-time 5 127.0.0.1 1               | 2 | --bench-time: needs --bench
--bench-sizes 1k 127.0.0.1 1             | 2 | --bench-sizes: needs --bench
--bench-transports tcp 127.0.0.1 1       | 2 | --bench-transports: needs --bench
EOF
}

@test "usage errors, --resume (a byte stream, one way; -P over tcp; -l: stdout a regular file): exit 2 with one line naming it" {
  check_table <<'EOF'
-l --resume -P 2 0                       | 2 | --resume needs stdout to be a regular file (use >> FILE)
-l --resume -P auto 0                    | 2 | --resume needs stdout to be a regular file (use >> FILE)
-U --resume -P 2 "$T/a.sock"             | 2 | -P needs --transport tcp
--resume -P 2 -d 127.0.0.1 1             | 2 | -P and -d: a striped session is one way
-u --resume 127.0.0.1 1                  | 2 | --resume: needs a byte stream (tcp, unix), not udp
-Uu --resume "$T/a.sock"                 | 2 | --resume: needs a byte stream (tcp, unix), not unix-dgram
--transport unix-seqpacket --resume "$T/a.sock" | 2 | --resume: needs a byte stream (tcp, unix), not unix-seqpacket
--resume -d 127.0.0.1 1                  | 2 | --resume and -d: the sender (without -l) reads stdin
-l --resume --send-only 0                | 2 | --resume and --send-only: the receiver (-l) writes the file
-l --resume 0                            | 2 | --resume needs stdout to be a regular file (use >> FILE)
-lU --resume "$T/a.sock"                 | 2 | --resume needs stdout to be a regular file (use >> FILE)
--resume=1 127.0.0.1 1                   | 2 | --resume
--bench --resume                         | 2 | --bench and --resume: cannot be combined
EOF
}

@test "usage errors, --retry (the sender's; implies --resume): exit 2 with one line naming it" {
  check_table <<'EOF'
--retry 1001 127.0.0.1 1                 | 2 | --retry 1001: retries must be 0 to 1000
--retry x 127.0.0.1 1                    | 2 | --retry x:
-l -k --retry 3 0                        | 2 | --retry: for the sender; the receiver takes -l -k --resume
--retry 3 -P 2 -U "$T/a.sock"            | 2 | -P needs --transport tcp
--retry 3 -d 127.0.0.1 1                 | 2 | --resume and -d: the sender (without -l) reads stdin
-u --retry 3 127.0.0.1 1                 | 2 | --resume: needs a byte stream (tcp, unix), not udp
--retry-wait 1 127.0.0.1 1               | 2 | --retry-wait: needs --retry N
--replay-buffer 8M 127.0.0.1 1           | 2 | --replay-buffer: needs --retry N
--retry 3 --retry-wait 0 127.0.0.1 1     | 2 | --retry-wait 0: must be more than 0 and at most 3600 seconds
--retry 3 --replay-buffer 512K 127.0.0.1 1 | 2 | --replay-buffer 512K: replay buffer must be 1 MiB to 4 GiB
--retry 3 --replay-buffer 5G 127.0.0.1 1 | 2 | --replay-buffer 5G: replay buffer must be 1 MiB to 4 GiB
--bench --retry 3                        | 2 | --bench and --retry: cannot be combined
--sync 127.0.0.1 1                       | 2 | --sync: the receiver's (-l), which writes the file
--sync-every 32M 127.0.0.1 1             | 2 | --sync: the receiver's (-l), which writes the file
-l --sync --send-only 0                  | 2 | --sync and --send-only: stdout gets nothing
-l --sync-every 512K 0                   | 2 | --sync-every 512K: must be 1 MiB to 4 GiB
-l --sync-every 5G 0                     | 2 | --sync-every 5G: must be 1 MiB to 4 GiB
-l --sync-every x 0                      | 2 | --sync-every x:
--bench --sync                           | 2 | --bench and --sync: cannot be combined
EOF
}

@test "usage errors, --sparse (the sender's, with -P) and --image (tcp; -l: stdout a regular file): exit 2 with one line naming it" {
  check_table <<'EOF'
--sparse 127.0.0.1 1                     | 2 | --sparse needs -P N or -P auto
-l -P auto --sparse 0                    | 2 | --sparse: the sender's
--image -u 127.0.0.1 1                   | 2 | --image: a tcp transfer between two fastcats, not udp
-l --image -U "$T/a.sock"                | 2 | --image: a tcp transfer between two fastcats, not unix
-l --image 0                             | 2 | --image needs stdout to be a regular file (use >> FILE)
--image --retry 1001 127.0.0.1 1         | 2 | --retry 1001: retries must be 0 to 1000
--image -d 127.0.0.1 1                   | 2 | -P and -d: a striped session is one way
--bench --image                          | 2 | --bench and --image: cannot be combined
EOF
}

@test "usage errors, --chain (the list: empty, a bad port, a node twice, more than 32; tcp; what it does not take): exit 2 with one line naming it" {
  check_table <<'EOF'
--chain '' 9000                          | 2 | --chain: the list of receivers is empty
--chain h1,,h2 9000                      | 2 | --chain: an empty name in the list of receivers
--chain h1, 9000                         | 2 | --chain: an empty name in the list of receivers
--chain :9001 9000                       | 2 | --chain: a receiver without a host in the list
--chain h1:0 9000                        | 2 | --chain: 'h1:0': the port must be 1-65535
--chain h1:x 9000                        | 2 | --chain: 'h1:x': the port must be 1-65535
--chain h1:70000 9000                    | 2 | --chain: 'h1:70000': the port must be 1-65535
--chain '[::1' 9000                      | 2 | --chain: '[::1': a ']' must end the address
--chain h1,h2,H1 9000                    | 2 | --chain: H1 is named twice (receivers 1 and 3)
--chain h1:9000,h1 9000                  | 2 | --chain: h1 is named twice (receivers 1 and 2)
--chain "$L33" 9000                      | 2 | --chain: at most 32 receivers in the list
--chain "$H300" 9000                     | 2 | --chain: a host name longer than 255 characters
--chain=h1 9000                          | 2 | --chain: takes no value
--chain -u h1 9000                       | 2 | --chain: tcp only (each node connects to the next by host and port), not udp
-l --chain -U "$T/a.sock"                | 2 | --chain: tcp only
--chain --verify h1 9000                 | 2 | --chain checks each receiver's count and XXH64 itself: leave --verify out
--chain -P 9 h1 9000                     | 2 | --chain: -P 9: at most 8 connections a hop
-l --chain -P 2 0                        | 2 | --chain: a receiver takes the sender's -P: leave -P out here
--chain --retry 3 h1 9000                | 2 | --chain and --retry: cannot be combined
-l --chain --resume 0                    | 2 | --chain and --resume: cannot be combined
-l -k --chain 0                          | 2 | --chain and -k: cannot be combined
--chain -d h1 9000                       | 2 | --chain and -d: cannot be combined
--chain --image h1 9000                  | 2 | --chain and --image: cannot be combined
--bench --chain                          | 2 | --bench and --chain: cannot be combined
EOF
}

@test "usage errors, --reliable (udp only; what it does not take): exit 2 with one line naming it" {
  check_table <<'EOF'
--reliable 127.0.0.1 9000                | 2 | --reliable: udp only (-u), not tcp
-U --reliable "$T/a.sock"                | 2 | --reliable: udp only (-u), not unix
-Uu --reliable "$T/a.sock"               | 2 | --reliable: udp only (-u); unix-dgram loses nothing (its sender waits for room): --verify confirms count and XXH64 there
--transport unix-seqpacket --reliable "$T/a.sock" | 2 | --reliable: udp only (-u); unix-seqpacket loses nothing (its sender waits for room): --verify confirms count and XXH64 there
-u --reliable=x 127.0.0.1 9000           | 2 | --reliable: takes no value
-u --reliable --verify 127.0.0.1 9000    | 2 | --reliable checks the receiver's count and XXH64 itself: leave --verify out
-u --reliable -P 2 127.0.0.1 9000        | 2 | --reliable and -P: cannot be combined
-u --reliable --retry 2 127.0.0.1 9000   | 2 | --reliable and --retry: cannot be combined
-lu --reliable --resume 0                | 2 | --reliable and --resume: cannot be combined
-u --reliable --seq 127.0.0.1 9000       | 2 | --reliable and --seq: cannot be combined
-u --reliable -d 127.0.0.1 9000          | 2 | --reliable and -d: cannot be combined
-lu --reliable --send-only 0             | 2 | --reliable and --send-only: cannot be combined
--bench --reliable                       | 2 | --bench and --reliable: cannot be combined
-u --receivers 3 239.1.2.3 9000          | 2 | --receivers: the --reliable sender's to a multicast group (-u --reliable GROUP PORT)
-lu --reliable --receivers 3 0           | 2 | --receivers: the --reliable sender's to a multicast group (-u --reliable GROUP PORT)
-u --reliable --receivers 0 239.1.2.3 9000 | 2 | --receivers 0: receivers must be 1 to 64
-u --reliable --receivers 65 239.1.2.3 9000 | 2 | --receivers 65: receivers must be 1 to 64
-u --reliable --receivers 2 127.0.0.1 9000 | 2 | --receivers: 127.0.0.1:9000 is no multicast group
-u --min-rate 8M 239.1.2.3 9000          | 2 | --min-rate: the --reliable sender's to a multicast group (-u --reliable GROUP PORT)
-lu --reliable --min-rate 8M 0           | 2 | --min-rate: the --reliable sender's to a multicast group (-u --reliable GROUP PORT)
-u --reliable --min-rate 0 239.1.2.3 9000 | 2 | --min-rate 0: rate must be 1 byte/s to 1024G (1 TiB/s)
-u --reliable --min-rate 8M 127.0.0.1 9000 | 2 | --min-rate: 127.0.0.1:9000 is no multicast group
-u --ttl 0 239.1.2.3 9000                | 2 | --ttl 0: ttl must be 1 to 255
--ttl 2 127.0.0.1 9000                   | 2 | --ttl: udp only (-u), not tcp
-lu --ttl 2 0                            | 2 | --ttl: the sender's, not -l's
--mcast-if lo 127.0.0.1 9000             | 2 | --mcast-if: udp only (-u), not tcp
EOF
}

@test "hosts that reach the resolver (inside unshare -n, lo up): exit 3, one line naming the host" {
  skip_unless_unshare
  RUN=(unshare -n sh -c 'ip link set lo up && exec "$@"' sh)
  check_table <<'EOF'
"$H300" 1                                | 3 | resolve $H300:
-n "$H300" 1                             | 3 | resolve $H300: not a numeric address (-n)
-n '[::1]' 1                             | 3 | resolve [::1]: not a numeric address (-n)
'[127.0.0.1]' 1                          | 3 | resolve [127.0.0.1]:
' 127.0.0.1' 1                           | 3 | resolve  127.0.0.1:
'127.0.0.1 ' 1                           | 3 | resolve 127.0.0.1 :
-4 ::1 1                                 | 3 | resolve ::1: no IPv4 address
no-such-host.invalid 1                   | 3 | resolve no-such-host.invalid:
-u no-such-host.invalid 9                | 3 | resolve no-such-host.invalid:
EOF
}

@test "Unix path in a directory that does not exist: connect exit 3, listen exit 1" {
  check_table <<'EOF'
-U "$T/nodir/x.sock"                     | 3 | connect $T/nodir/x.sock: No such file or directory
-Uu "$T/nodir/x.sock"                    | 3 | connect $T/nodir/x.sock: No such file or directory
--transport unix-seqpacket "$T/nodir/x.sock" | 3 | connect $T/nodir/x.sock: No such file or directory
-lU "$T/nodir/x.sock"                    | 1 | bind $T/nodir/x.sock: No such file or directory
-lUu "$T/nodir/x.sock"                   | 1 | bind $T/nodir/x.sock: No such file or directory
EOF
}

@test "Unix path that is a regular file, not a socket: connect exit 3 (refused), listen exit 1, file kept" {
  printf 'keep me\n' >"$T/file"
  check_table <<'EOF'
-U "$T/file"                             | 3 | connect $T/file: Connection refused
-Uu "$T/file"                            | 3 | connect $T/file: Connection refused
-lU "$T/file"                            | 1 | $T/file: exists and is not a socket
-lUu "$T/file"                           | 1 | $T/file: exists and is not a socket
EOF
  assert_equal "$(cat "$T/file")" "keep me"
}

@test "no permission (as nobody): connect exit 3 'Permission denied', listen exit 1" {
  ((EUID == 0)) || skip "needs root to run as nobody"
  command -v setpriv >/dev/null || skip "setpriv not installed"
  command -v python3 >/dev/null || skip "python3 not installed (makes the socket files)"
  # A directory nobody may enter (locked/), one nobody may not write (rodir/),
  # socket files bound by root and left behind (nobody may not write ro.sock).
  # Outside $T, whose parents nobody may not enter at all.
  PERM_DIR=$(mktemp -d "${TMPDIR:-/tmp}/fastcat-badinput.XXXXXX")
  D=$PERM_DIR
  chmod 755 "$D"
  mkdir -m 700 "$D/locked"
  mkdir -m 755 "$D/rodir"
  python3 -c 'import socket, sys
for p in sys.argv[1:]:
    socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).bind(p)' "$D/locked/s.sock" "$D/ro.sock"
  chmod 644 "$D/ro.sock"
  install -m 755 "$FASTCAT" "$D/fastcat"
  FASTCAT=$D/fastcat
  RUN=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
  check_table <<'EOF'
-U "$D/locked/s.sock"                    | 3 | connect $D/locked/s.sock: Permission denied
-U "$D/ro.sock"                          | 3 | connect $D/ro.sock: Permission denied
-Uu "$D/ro.sock"                         | 3 | connect $D/ro.sock: Permission denied
-lU "$D/locked/new.sock"                 | 1 | bind $D/locked/new.sock: Permission denied
-lU "$D/rodir/new.sock"                  | 1 | bind $D/rodir/new.sock: Permission denied
-lUu "$D/rodir/new.sock"                 | 1 | bind $D/rodir/new.sock: Permission denied
-lU "$D/ro.sock"                         | 1 | $D/ro.sock
EOF
  [[ -S $D/ro.sock ]] || fail "nobody's listener removed root's $D/ro.sock"
}
