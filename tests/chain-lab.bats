#!/usr/bin/env bats
# chain-lab.bats - --chain over the chain lab (tests/chainlab.bash): hosts in network namespaces
# on one bridge, each link shaped to 200 Mbit/s with tbf, so every hop is a real link of its
# own. Behaviour, not speed: speed is contrib/bench/chain.sh's.

load helpers
load chainlab

SIZE=$((24 * 1024 * 1024 + 5))

setup() {
  local reason
  reason=$(chainlab_skip_reason)
  [[ -z $reason ]] || skip "$reason"
  T=$BATS_TEST_TMPDIR
  A=$T/source
  mkpayload "$A" "$SIZE"
}

teardown() {
  dump_logs
  fc_cleanup
  chainlab_down
}

# lab_nodes N: a lab of N receivers and the sender (host 0), a --chain receiver on each host
# i (N$i, its file $T/N$i.out); LIST: their address:port list.
lab_nodes() {
  local n=$1 i port
  chainlab_up "fcl$$t$BATS_TEST_NUMBER" "$n" 200mbit || fail "the lab did not come up"
  LIST=
  for ((i = 1; i <= n; i++)); do
    FC_PREFIX=(ip netns exec "${CL_NAME}h$i")
    fc_listen "N$i" --addr "$(chainlab_ip "$i")" -- --chain || return 1
    port=N${i}_PORT
    LIST+="${LIST:+,}$(chainlab_ip "$i"):${!port}"
  done
  FC_PREFIX=()
}

# lab_send [options]: the sender on host 0, from $A; its exit status in $status.
lab_send() {
  status=0
  timeout -k 2 120 ip netns exec "${CL_NAME}h0" "$FASTCAT" -v "$@" --chain "$LIST" 9 \
    <"$A" >/dev/null 2>"$T/c.err" || status=$?
}

@test "a chain of 8 hosts, each on its own 200 Mbit/s link: all 8 byte-exact, every one exits 0" {
  local i rc
  lab_nodes 8
  lab_send
  [[ $status == 0 ]] || fail "sender exit $status: $(cat "$T/c.err")"
  grep -q "^fastcat: --chain: all 8 receivers wrote the $SIZE bytes sent" "$T/c.err"
  for ((i = 1; i <= 8; i++)); do
    local pid=N${i}_PID
    wait_exit rc "${!pid}" 20
    assert_equal "receiver $i exit $rc" "receiver $i exit 0"
    assert_same_bytes "$A" "$T/N$i.out"
  done
}

@test "host 2 of 4 killed mid-stream: host 1 bypasses it to host 3; hosts 1, 3 and 4 byte-exact" {
  local i rc spid
  lab_nodes 4
  (lab_send; exit "$status") &
  spid=$!
  wait_for_size "$T/N4.out" $((SIZE / 3))
  kill -KILL "$N2_PID"
  status=0
  wait "$spid" || status=$?
  assert_equal "sender exit $status" "sender exit 5"
  grep -q "receiver 2 of 4, $(chainlab_ip 2):$N2_PORT: lost after" "$T/c.err"
  grep -q "^fastcat: --chain: 3 of 4 receivers have the whole stream" "$T/c.err"
  grep -q "receiver 2 bypassed: receiver 3, $(chainlab_ip 3):$N3_PORT, goes on from byte" \
    "$T/N1.err"
  for i in 1 3 4; do
    local pid=N${i}_PID
    wait_exit rc "${!pid}" 20
    assert_equal "receiver $i exit $rc" "receiver $i exit 0"
    assert_same_bytes "$A" "$T/N$i.out"
  done
}
