# chainlab.bash - a lab of hosts on one switch, for --chain (tests/chain-lab.bats and
# contrib/bench/chain.sh; load it after helpers in bats, or source it from a script).
#
#   host 0 (the sender) ... host N    netns ${CL_NAME}h$i, eth0 198.18.0.(i+1)/24
#        \        |        /          one veth pair each to the switch
#   switch                            netns ${CL_NAME}sw, bridge br0
#
# Each host's link is shaped to RATE both ways with tbf: its uplink on its eth0, its
# downlink on its port of the switch, as a host on a switch's port sees it. Benchmark
# addresses (RFC 2544) and no default route: nothing leaves the lab. Names are never
# resolved: the hosts are their addresses (chainlab_ip).
#
# Processes: a lab namespace only ever holds processes its user started, so chainlab_down
# may kill whatever `ip netns pids` lists there; nothing outside the namespaces is touched.

CL_NET=198.18.0

# chainlab_skip_reason: why the lab cannot run here (empty output: it can).
chainlab_skip_reason() {
  local t
  [[ $(id -u) == 0 ]] || { echo "the chain lab needs root"; return; }
  for t in ip tc; do
    command -v "$t" >/dev/null 2>&1 || { echo "the chain lab needs '$t' (apt-get install iproute2)"; return; }
  done
  modprobe -q sch_tbf 2>/dev/null || true
  modprobe -q bridge 2>/dev/null || true
}

chainlab_ip() { printf '%s.%s\n' "$CL_NET" "$(($1 + 1))"; }
chainlab_host() { local i=$1; shift; ip netns exec "${CL_NAME}h$i" "$@"; }

# chainlab_up NAME N [RATE]: host 0 and hosts 1..N on the switch, each link RATE (default
# 200mbit); exports CL_NAME and CL_HOSTS (N).
chainlab_up() {
  local name=$1 n=$2 rate=${3:-200mbit} i ns
  export CL_NAME=$name CL_HOSTS=$n
  chainlab_down
  ip netns add "${name}sw" || return 1
  ip -n "${name}sw" link add br0 type bridge || return 1
  ip -n "${name}sw" link set br0 up || return 1
  for ((i = 0; i <= n; i++)); do
    ns=${name}h$i
    ip netns add "$ns" || return 1
    ip link add eth0 netns "$ns" type veth peer name "p$i" netns "${name}sw" || return 1
    ip -n "$ns" link set lo up &&
      ip -n "$ns" addr add "$(chainlab_ip "$i")/24" dev eth0 &&
      ip -n "$ns" link set eth0 up &&
      ip -n "${name}sw" link set "p$i" master br0 &&
      ip -n "${name}sw" link set "p$i" up || return 1
    # tbf at the link's rate, a queue of ~20 ms: the host's uplink, then its downlink
    ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "$rate" burst 256kb latency 20ms &&
      ip netns exec "${name}sw" tc qdisc add dev "p$i" root tbf rate "$rate" burst 256kb \
        latency 20ms || return 1
  done
}

# chainlab_down [NAME]: kill what runs in the lab, delete its namespaces.
chainlab_down() {
  local name=${1:-${CL_NAME:-}} ns pids
  [[ -n $name ]] || return 0
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${name}(sw|h[0-9]+)$"); do
    pids=$(ip netns pids "$ns" 2>/dev/null)
    [[ -z $pids ]] || kill -KILL $pids 2>/dev/null
    ip netns del "$ns" 2>/dev/null
  done
  return 0
}
