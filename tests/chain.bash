# chain.bash - what the --chain tests share: N receivers on loopback, a sender from a file or a
# pipe, the exit and byte checks, a receiver killed midway (load it with `load chain` after
# `load helpers`). CHAIN_OPTS: more options for every sender (-P 4, say).

SIZE=6000000

setup() {
  T=$BATS_TEST_TMPDIR
  A=$T/source
  mkpayload "$A" "$SIZE"
}

# nodes N [K=OUT ...]: N --chain receivers, N1..NN, receiver K's stdout OUT (default
# $T/NK.out); LIST: their host:port list, FIRST: the first one's port.
nodes() {
  local n=$1 i out
  shift
  declare -A outs=()
  for a in "$@"; do outs[${a%%=*}]=${a#*=}; done
  LIST=
  for ((i = 1; i <= n; i++)); do
    out=${outs[$i]:-$T/N$i.out}
    fc_listen "N$i" --out "$out" -- --chain || return 1
    local var=N${i}_PORT
    LIST+="${LIST:+,}127.0.0.1:${!var}"
  done
  FIRST=$N1_PORT
}

# send FEED [options]: the sender from $A (FEED file) or through a pipe, -v; stderr $T/c.err,
# its exit status in $status.
send() {
  local feed=$1
  shift
  status=0
  if [[ $feed == pipe ]]; then
    cat "$A" | timeout -k 2 60 "$FASTCAT" -v ${CHAIN_OPTS:-} "$@" --chain "$LIST" "$FIRST" \
      >/dev/null 2>"$T/c.err" || status=$?
  else
    timeout -k 2 60 "$FASTCAT" -v ${CHAIN_OPTS:-} "$@" --chain "$LIST" "$FIRST" <"$A" >/dev/null \
      2>"$T/c.err" || status=$?
  fi
}

# node_exits K WANT: receiver K exits WANT within 20 s.
node_exits() {
  local rc pid=N$1_PID
  wait_exit rc "${!pid}" 20
  assert_equal "receiver $1 exit $rc" "receiver $1 exit $2"
}

# whole_chain N FEED: N receivers, the sender from FEED; everyone exits 0, byte-exact.
whole_chain() {
  local n=$1 i
  nodes "$n"
  send "$2"
  [[ $status == 0 ]] || fail "sender exit $status: $(cat "$T/c.err")"
  grep -q "^fastcat: --chain: all $n receivers wrote the $SIZE bytes sent" "$T/c.err" ||
    fail "no line for all $n: $(cat "$T/c.err")"
  for ((i = 1; i <= n; i++)); do
    node_exits "$i" 0
    assert_same_bytes "$A" "$T/N$i.out"
  done
}

# kill_midway N K [FEED]: N receivers, the sender at 4 MB/s from FEED (file), receiver K
# sent SIG (default KILL) once the last one wrote 1 MB; the sender's exit status in $status.
kill_midway() {
  local n=$1 k=$2 feed=${3:-file} spid pid=N$2_PID last
  nodes "$n"
  (send "$feed" --rate-limit 4M; exit "$status") &
  spid=$!
  last=$n
  ((k == n)) && last=$((n - 1))
  ((last >= 1)) || last=$n
  wait_for_size "$T/N$last.out" 1000000
  kill -"${SIG:-KILL}" "${!pid}"
  status=0
  wait "$spid" || status=$?
}
