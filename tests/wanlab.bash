# wanlab.bash - a two-host WAN lab in network namespaces: a link with a one-way delay, a
# rate, a drop-tail queue, random loss and jitter, for the tests and benchmarks of long fat
# links (load it with `load wanlab` in bats, or source it from bash).
#
#   host A  netns $WL_A  wan0  198.51.100.1/24  2001:db8:1::1/64
#              |  the link: tc netem on a veth pair where the kernel has sch_netem,
#              |  else tests/lab/delayline between two tun devices
#   host B  netns $WL_B  wan0  198.51.100.2/24  2001:db8:1::2/64
#
#   wanlab_up NAME [--rate 1gbit] [--delay-ms 50] [--loss 0] [--jitter-ms 0] [--reorder]
#                  [--mtu 1500] [--queue BYTES] [--seed 1] [--cc cubic]
#   wanlab_a CMD...   wanlab_b CMD...   (run CMD on host A or B)
#   wanlab_down       (idempotent: namespaces, the delay line, state, all gone)
#
# --rate, --delay-ms (one way), --loss (a probability: 0.001 is 0.1 %) and --jitter-ms
# (uniform +-) act on each direction; --queue is the drop-tail limit in bytes (default one
# bandwidth-delay product, rate x 2 x delay, at least 1 MiB); --reorder lets jitter reorder
# packets (without it a packet never overtakes another). WANLAB_IMPL=delayline|netem forces
# the link; WANLAB_DELAYLINE is the delay line's path (default: tests/lab/delayline of the
# build tree next to $FASTCAT, else of this file's tree).
#
# Inside the lab, Debian's TCP defaults whatever the host has: tcp_rmem 4096 131072 6291456,
# tcp_wmem 4096 16384 4194304 and the congestion control --cc (cubic). A namespace can only
# make an algorithm its default when the host's net.ipv4.tcp_allowed_congestion_control
# lists it; if it does not, wanlab_up adds it for the moment of the sysctl and puts the
# host's list back at once (the namespace keeps its default), under a lock on $WL_RUN, so
# concurrent labs do not clash; wanlab_down restores it too if a run died in between. WL_CC says what
# the lab got.
#
# Documentation addresses (RFC 5737, RFC 3849; not netlab's 192.0.2.0/24 or 2001:db8::/64)
# and no default route: nothing a test does can leave the machine. Processes: wanlab_down
# stops the delay line by its PID (checked against /proc first), and whatever runs inside
# the lab's namespaces, which only the callers of wanlab_a/wanlab_b started.

WL_A_IP=198.51.100.1 WL_B_IP=198.51.100.2
WL_A_IP6=2001:db8:1::1 WL_B_IP6=2001:db8:1::2
WL_RUN=/run/fastcat-wanlab
WL_RMEM='4096 131072 6291456' WL_WMEM='4096 16384 4194304'
WL_TUN_RING=20000 # packets; see wanlab_up

# _wanlab_delayline_path: the delay line binary (may not exist).
_wanlab_delayline_path() {
  local here
  if [[ -n ${WANLAB_DELAYLINE:-} ]]; then echo "$WANLAB_DELAYLINE"; return; fi
  if [[ -n ${FASTCAT:-} && -x $(dirname "$FASTCAT")/../tests/lab/delayline ]]; then
    echo "$(cd "$(dirname "$FASTCAT")/.." && pwd)/tests/lab/delayline"
    return
  fi
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  echo "$here/lab/delayline"
}

# _wanlab_has_netem: the kernel has sch_netem (tried on lo in a throwaway namespace).
_wanlab_has_netem() {
  command -v tc >/dev/null 2>&1 && command -v unshare >/dev/null 2>&1 &&
    unshare -n tc qdisc add dev lo root netem delay 1ms >/dev/null 2>&1
}

# _wanlab_impl: netem or delayline (WANLAB_IMPL forces one).
_wanlab_impl() {
  if [[ -n ${WANLAB_IMPL:-} ]]; then echo "$WANLAB_IMPL"
  elif _wanlab_has_netem; then echo netem
  else echo delayline
  fi
}

# wanlab_skip_reason: why the lab cannot run here (empty output: it can).
wanlab_skip_reason() {
  local t impl
  [[ $(id -u) == 0 ]] || { echo "the WAN lab needs root"; return; }
  for t in ip sysctl flock; do
    command -v "$t" >/dev/null 2>&1 || { echo "the WAN lab needs '$t' (apt-get install iproute2 procps util-linux)"; return; }
  done
  impl=$(_wanlab_impl)
  case $impl in
    netem) command -v tc >/dev/null 2>&1 || echo "the WAN lab needs 'tc' (apt-get install iproute2)" ;;
    delayline)
      [[ -c /dev/net/tun ]] || { echo "the WAN lab needs netem or /dev/net/tun (CONFIG_TUN)"; return; }
      [[ -x $(_wanlab_delayline_path) ]] ||
        echo "the WAN lab needs $(_wanlab_delayline_path) (make tests/lab/delayline)" ;;
    *) echo "WANLAB_IMPL=$impl: want netem or delayline" ;;
  esac
}

# wanlab_name TAG: a lab name unique to this bats run and TAG, e.g. fw312345.
wanlab_name() { printf 'fw%s%s\n' "$1" "${BATS_ROOT_PID:-$$}"; }

wanlab_a() { ip netns exec "$WL_A" "$@"; }
wanlab_b() { ip netns exec "$WL_B" "$@"; }

# _wanlab_cc NS ALGO: make ALGO the default congestion control of NS, allowing it on the
# host for the moment of the sysctl if it must (see the top). Prints what NS ended with.
_wanlab_cc() {
  local ns=$1 algo=$2 key=net.ipv4.tcp_allowed_congestion_control allowed
  if ! ip netns exec "$ns" sysctl -qw net.ipv4.tcp_congestion_control="$algo" 2>/dev/null; then
    (
      flock 9
      allowed=$(sysctl -n "$key")
      [[ -e $WL_RUN/cc-allowed.saved ]] || printf '%s\n' "$allowed" >"$WL_RUN/cc-allowed.saved"
      if sysctl -qw "$key=$allowed $algo" 2>/dev/null; then
        ip netns exec "$ns" sysctl -qw net.ipv4.tcp_congestion_control="$algo" 2>/dev/null || true
      fi
      sysctl -qw "$key=$(cat "$WL_RUN/cc-allowed.saved")" && rm -f "$WL_RUN/cc-allowed.saved"
    ) 9<"$WL_RUN" || true
  fi
  ip netns exec "$ns" sysctl -n net.ipv4.tcp_congestion_control
}

# _wanlab_cc_restore: a run killed between the two host sysctls left the saved list.
_wanlab_cc_restore() {
  [[ -d $WL_RUN ]] || return 0
  (
    flock 9
    if [[ -e $WL_RUN/cc-allowed.saved ]]; then
      sysctl -qw net.ipv4.tcp_allowed_congestion_control="$(cat "$WL_RUN/cc-allowed.saved")" &&
        rm -f "$WL_RUN/cc-allowed.saved"
    fi
  ) 9<"$WL_RUN" || true
}

# _wanlab_netem NS RATE DELAY JITTER LOSS QUEUE MTU REORDER: netem on NS's wan0 (a veth end).
# netem's limit is in packets: the queue's bytes over the MTU. Without reordering the jitter
# goes through a plain fifo (netem's own tfifo sorts by due time, so it reorders).
_wanlab_netem() {
  local ns=$1 rate=$2 delay=$3 jitter=$4 loss=$5 queue=$6 mtu=$7 reorder=$8 pkts pct
  pkts=$(awk -v q="$queue" -v m="$mtu" 'BEGIN { n = int(q / m); print (n < 16 ? 16 : n) }')
  pct=$(awk -v l="$loss" 'BEGIN { printf "%.6f%%", l * 100 }')
  if command -v ethtool >/dev/null 2>&1; then  # loss and pacing on real packets, not GSO lumps
    ip netns exec "$ns" ethtool -K wan0 tso off gso off gro off >/dev/null 2>&1
  fi
  tc -n "$ns" qdisc add dev wan0 root handle 1: netem limit "$pkts" \
    delay "${delay}ms" "${jitter}ms" rate "$rate" loss random "$pct" || return 1
  if [[ $reorder == 0 ]] && awk -v j="$jitter" 'BEGIN { exit !(j > 0) }'; then
    tc -n "$ns" qdisc add dev wan0 parent 1:1 pfifo limit "$pkts" || return 1
  fi
}

# _wanlab_bdp RATE DELAY_MS: one bandwidth-delay product in bytes (rate x 2 x delay), >= 1 MiB.
_wanlab_bdp() {
  awk -v r="$1" -v d="$2" 'BEGIN {
    m = 1; u = tolower(r); sub(/bit$/, "", u)
    if (u ~ /k$/) m = 1e3; else if (u ~ /m$/) m = 1e6; else if (u ~ /g$/) m = 1e9
    sub(/[kmg]$/, "", u); b = u * m / 8 * 2 * d / 1000
    printf "%d\n", (b < 1048576 ? 1048576 : b) }'
}

# _wanlab_wait_ready LOG PID: the delay line printed "ready" (5 s deadline).
_wanlab_wait_ready() {
  local n=0
  until grep -qx ready "$1" 2>/dev/null; do
    kill -0 "$2" 2>/dev/null || { echo "wanlab: the delay line exited: $(cat "${1%.out}.err")" >&2; return 1; }
    ((n++ < 250)) || { echo "wanlab: the delay line is not ready after 5 s" >&2; return 1; }
    sleep 0.02
  done
}

# wanlab_up NAME [options]: create the lab (see the top); exports WL_NAME, WL_A, WL_B, WL_IMPL,
# WL_CC, WL_MTU and, with the delay line, WL_DELAYLINE_PID and WL_DELAYLINE_LOG.
wanlab_up() {
  local name=$1 rate=1gbit delay=50 loss=0 jitter=0 reorder=0 mtu=1500 queue='' seed=1 cc=cubic
  local ns ip ip6 h dir dl extra=()
  shift
  while (($#)); do
    case $1 in
      --rate) rate=$2; shift 2 ;;
      --delay-ms) delay=$2; shift 2 ;;
      --loss) loss=$2; shift 2 ;;
      --jitter-ms) jitter=$2; shift 2 ;;
      --reorder) reorder=1; shift ;;
      --mtu) mtu=$2; shift 2 ;;
      --queue) queue=$2; shift 2 ;;
      --seed) seed=$2; shift 2 ;;
      --cc) cc=$2; shift 2 ;;
      *) echo "wanlab_up: unknown option '$1'" >&2; return 2 ;;
    esac
  done
  [[ -n $queue ]] || queue=$(_wanlab_bdp "$rate" "$delay")
  export WL_NAME=$name WL_A=${name}a WL_B=${name}b WL_MTU=$mtu
  wanlab_down  # a leftover of a killed run with the same name
  WL_IMPL=$(_wanlab_impl)
  export WL_IMPL
  dir=$WL_RUN/$name
  mkdir -p "$dir" || return 1
  ip netns add "$WL_A" && ip netns add "$WL_B" || return 1
  for ns in "$WL_A" "$WL_B"; do
    ip -n "$ns" link set lo up &&
      ip netns exec "$ns" sysctl -qw net.ipv4.tcp_rmem="$WL_RMEM" net.ipv4.tcp_wmem="$WL_WMEM" || return 1
    WL_CC=$(_wanlab_cc "$ns" "$cc")
  done
  export WL_CC
  if [[ $WL_IMPL == netem ]]; then
    ip link add wan0 netns "$WL_A" type veth peer name wan0 netns "$WL_B" || return 1
    for ns in "$WL_A" "$WL_B"; do
      _wanlab_netem "$ns" "$rate" "$delay" "$jitter" "$loss" "$queue" "$mtu" "$reorder" || return 1
    done
  else
    dl=$(_wanlab_delayline_path)
    ((reorder)) && extra=(--reorder)
    export WL_DELAYLINE_LOG=$dir/delayline.err
    "$dl" --rate "$rate" --delay-ms "$delay" --loss "$loss" --jitter-ms "$jitter" \
      --queue "$queue" --seed "$seed" "${extra[@]}" "$WL_A" "$WL_B" \
      </dev/null >"$dir/delayline.out" 2>"$WL_DELAYLINE_LOG" 3>&- &
    export WL_DELAYLINE_PID=$!
    echo "$WL_DELAYLINE_PID" >"$dir/delayline.pid"
    _wanlab_wait_ready "$dir/delayline.out" "$WL_DELAYLINE_PID" || return 1
  fi
  # The tun device's ring (txqueuelen packets) lies before the delay line's own queue, the
  # lab's bottleneck: when the delay line is off the CPU for a few ms, a full ring drops what a
  # real host's NIC would have queued (1000 packets are 12 ms at 1 Gbit/s, MTU 1500; 16
  # connections' bursts overflowed it and looked like a congested path). A ring deeper than
  # the bursts keeps drops where the path puts them; wanlab_stats counts any left.
  for h in A B; do
    if [[ $h == A ]]; then ns=$WL_A ip=$WL_A_IP ip6=$WL_A_IP6; else ns=$WL_B ip=$WL_B_IP ip6=$WL_B_IP6; fi
    ip -n "$ns" link set wan0 mtu "$mtu" txqueuelen "$WL_TUN_RING" &&
      ip -n "$ns" addr add "$ip/24" dev wan0 &&
      ip -n "$ns" addr add "$ip6/64" dev wan0 nodad &&  # nodad: usable at once
      ip -n "$ns" link set wan0 up || return 1
  done
}

# _wanlab_stop_delayline DIR: TERM (then KILL) the delay line whose PID DIR records, if that
# PID still is a delay line of this lab.
_wanlab_stop_delayline() {
  local pid n=0
  pid=$(cat "$1/delayline.pid" 2>/dev/null) || return 0
  [[ $pid =~ ^[0-9]+$ ]] || return 0
  { tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null | grep -q "delayline .* ${WL_A} ${WL_B} $" || return 0
  kill -TERM "$pid" 2>/dev/null || true
  while _wanlab_alive "$pid" && ((n++ < 100)); do sleep 0.02; done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true  # reaped here when this shell started it
  return 0
}

# _wanlab_alive PID: PID exists and is not a zombie.
_wanlab_alive() {
  local s
  s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  s=${s##*) }
  [[ ${s%% *} != Z ]]
}

# _wanlab_kill NS: TERM, then KILL, whatever runs in the namespace (the lab's users' only).
_wanlab_kill() {
  local p pids n=0
  mapfile -t pids < <(ip netns pids "$1" 2>/dev/null)
  ((${#pids[@]})) || return 0
  kill -TERM "${pids[@]}" 2>/dev/null || true
  while [[ -n $(ip netns pids "$1" 2>/dev/null) ]] && ((n++ < 40)); do sleep 0.05; done
  for p in $(ip netns pids "$1" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
  return 0
}

# wanlab_down: idempotent. The delay line goes first (its devices go with it), then each
# namespace's processes, then the namespaces (veths, qdiscs and sysctls go with them).
wanlab_down() {
  local name=${WL_NAME:-} ns
  [[ -n $name ]] || return 0
  WL_A=${name}a WL_B=${name}b
  _wanlab_stop_delayline "$WL_RUN/$name"
  for ns in "$WL_A" "$WL_B"; do
    if [[ -e /run/netns/$ns ]]; then
      _wanlab_kill "$ns"
      ip netns del "$ns" 2>/dev/null || true
    fi
  done
  rm -rf "${WL_RUN:?}/$name"
  _wanlab_cc_restore
  rmdir "$WL_RUN" 2>/dev/null || true  # only when no other lab is left
  return 0
}

# wanlab_stats: the delay line's counts, one line per direction ("A->B: N packets in, N out
# (N bytes), N lost, N queue drops, ..."), asked for with SIGUSR1.
wanlab_stats() {
  local n=0 before
  [[ -n ${WL_DELAYLINE_PID:-} ]] || return 1
  before=$(grep -c '' "$WL_DELAYLINE_LOG" || true)
  kill -USR1 "$WL_DELAYLINE_PID" || return 1
  while (($(grep -c '' "$WL_DELAYLINE_LOG") < before + 2)); do
    ((n++ < 100)) || return 1
    sleep 0.02
  done
  tail -n 2 "$WL_DELAYLINE_LOG" | sed 's/^delayline: //'
  printf 'tun ring drops (before the delay line): A %s, B %s\n' "$(_wanlab_tx_dropped "$WL_A")" \
    "$(_wanlab_tx_dropped "$WL_B")"
}

# _wanlab_tx_dropped NS: packets NS's wan0 dropped on the way out (its tun ring was full).
_wanlab_tx_dropped() {
  ip netns exec "$1" cat /sys/class/net/wan0/statistics/tx_dropped 2>/dev/null || echo '?'
}

# For a bats file of lab tests (after `load helpers; load wanlab`): setup() skips where the
# lab cannot run and names this test's lab (LAB; T is its directory), teardown() takes it down.
wanlab_test_setup() {
  WL_SKIP=$(wanlab_skip_reason)
  [[ -z $WL_SKIP ]] || skip "$WL_SKIP"
  T=$BATS_TEST_TMPDIR
  LAB=$(wanlab_name "$BATS_TEST_NUMBER")
}

wanlab_test_teardown() {
  dump_logs
  fc_cleanup
  wanlab_down
}
