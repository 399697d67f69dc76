# netlab.bash - a two-host network lab in network namespaces, for the fault tests
# (load it after helpers: `load helpers; load netlab`).
#
#   host A  netns $NL_A  veth0  192.0.2.1/24  2001:db8::1/64
#              |  one veth pair: tc qdiscs, nft rules and link state act here
#   host B  netns $NL_B  veth0  192.0.2.2/24  2001:db8::2/64
#
# Documentation addresses (RFC 5737, RFC 3849) and no default route: a packet
# for any other address fails at once with ENETUNREACH, so nothing a test does
# can leave the machine. Each namespace has its /etc/netns/NS/{hosts,
# resolv.conf,nsswitch.conf}, which `ip netns exec` bind-mounts over /etc:
# hosta/hostb/hosta6/hostb6 resolve, and any other name asks a DNS server at
# 127.0.0.1 that is not there, so it fails in milliseconds without a packet
# leaving the namespace.
#
# Life cycle: netlab_up in setup_file, netlab_clear in each test's teardown
# (faults off, sysctls back), netlab_down in teardown_file. Every fault rule
# lives in one nft table at host B, so clearing it is one command.
#
# Processes: a lab namespace only ever holds processes this file's tests
# started, so netlab_clear/netlab_down may kill whatever `ip netns pids`
# lists there; nothing outside the namespaces is touched.

NL_A_IP=192.0.2.1 NL_B_IP=192.0.2.2
NL_A_IP6=2001:db8::1 NL_B_IP6=2001:db8::2

# netlab_skip_reason: why the lab cannot run here (empty output: it can).
netlab_skip_reason() {
  local t
  [[ $(id -u) == 0 ]] || { echo "the network lab needs root"; return; }
  for t in ip tc nft ethtool; do
    command -v "$t" >/dev/null 2>&1 || { echo "the network lab needs '$t' (apt-get install iproute2 nftables ethtool)"; return; }
  done
}

# netlab_name TAG: a lab name unique to this bats run and file, e.g. fcn12345.
# BATS_ROOT_PID tells concurrent runs apart, TAG the files of one run.
netlab_name() { printf 'fc%s%s\n' "$1" "${BATS_ROOT_PID:-$$}"; }

netlab_a() { ip netns exec "$NL_A" "$@"; }
netlab_b() { ip netns exec "$NL_B" "$@"; }

# netlab_up NAME: create the lab; exports NL_A/NL_B for the tests.
netlab_up() {
  local name=$1 h ns ip ip6
  export NL_A=${name}a NL_B=${name}b
  NL_NAME=$name netlab_down  # a leftover of a killed run with the same pid
  ip netns add "$NL_A" && ip netns add "$NL_B" || return 1
  # created straight into the namespaces: the same name in both, no clash
  # with anything in the root namespace
  ip link add veth0 netns "$NL_A" type veth peer name veth0 netns "$NL_B" || return 1
  for h in A B; do
    if [[ $h == A ]]; then ns=$NL_A ip=$NL_A_IP ip6=$NL_A_IP6; else ns=$NL_B ip=$NL_B_IP ip6=$NL_B_IP6; fi
    ip -n "$ns" link set lo up &&
    # keep the IPv6 addresses over a link down/up (netlab_link): by default
    # the kernel flushes them when the link goes down
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.veth0.keep_addr_on_down=1 &&
    ip -n "$ns" addr add "$ip/24" dev veth0 &&
    # nodad: usable at once (a tentative address makes bind() fail for ~1 s)
    ip -n "$ns" addr add "$ip6/64" dev veth0 nodad &&
    ip -n "$ns" link set veth0 up || return 1
    mkdir -p "/etc/netns/$ns" || return 1
    printf '127.0.0.1 localhost\n::1 localhost\n%s hosta\n%s hostb\n%s hosta6\n%s hostb6\n' \
      "$NL_A_IP" "$NL_B_IP" "$NL_A_IP6" "$NL_B_IP6" >"/etc/netns/$ns/hosts"
    printf 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n' >"/etc/netns/$ns/resolv.conf"
    # no NSS module that would hand the lookup to a daemon outside the namespace
    printf 'hosts: files dns\n' >"/etc/netns/$ns/nsswitch.conf"
  done
  # the fresh veth's offload settings, for netlab_clear to put back
  NL_OFFLOADS=$(ip netns exec "$NL_A" ethtool -k veth0 | awk '
    /^tcp-segmentation-offload:/ { printf "tso %s ", $2 }
    /^generic-segmentation-offload:/ { printf "gso %s ", $2 }
    /^generic-receive-offload:/ { printf "gro %s ", $2 }')
  export NL_OFFLOADS
  ip netns exec "$NL_B" nft -f - <<'EOF' || return 1
table inet fault {
  chain input  { type filter hook input priority 0; policy accept; }
  chain output { type filter hook output priority 0; policy accept; }
}
EOF
}

# _netlab_kill NS: TERM, then KILL, whatever runs in the namespace (ours only).
_netlab_kill() {
  local p pids n=0
  mapfile -t pids < <(ip netns pids "$1" 2>/dev/null)
  ((${#pids[@]})) || return 0
  kill -TERM "${pids[@]}" 2>/dev/null
  while [[ -n $(ip netns pids "$1" 2>/dev/null) ]] && ((n++ < 40)); do sleep 0.05; done
  for p in $(ip netns pids "$1" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
  return 0
}

# netlab_down: idempotent. Deleting a namespace deletes its veth end (so the
# pair), qdiscs, nft table and sysctls with it; its processes must go first,
# or the namespace outlives `ip netns del`.
netlab_down() {
  local name=${NL_NAME:-${NL_A:-}} ns
  name=${name%a}
  [[ -n $name ]] || return 0
  for ns in "${name}a" "${name}b"; do
    if [[ -e /run/netns/$ns ]]; then
      _netlab_kill "$ns"
      ip netns del "$ns" 2>/dev/null
    fi
    rm -rf "/etc/netns/$ns"
  done
  rmdir /etc/netns 2>/dev/null  # only if no other lab uses it
  return 0
}

# netlab_clear: after each test: processes in the lab gone, no faults left.
netlab_clear() {
  local ns
  [[ -n ${NL_A:-} ]] || return 0
  _netlab_kill "$NL_A"
  _netlab_kill "$NL_B"
  netlab_b nft flush table inet fault 2>/dev/null
  netlab_b nft delete counter inet fault lost 2>/dev/null
  for ns in "$NL_A" "$NL_B"; do
    ip -n "$ns" link set veth0 up 2>/dev/null
    tc -n "$ns" qdisc del dev veth0 root 2>/dev/null
    # shellcheck disable=SC2086 # "tso on gso on gro off": words on purpose
    ip netns exec "$ns" ethtool -K veth0 $NL_OFFLOADS >/dev/null 2>&1
    # the kernel's defaults, as a fresh namespace has them
    ip netns exec "$ns" sysctl -qw net.ipv4.tcp_retries2=15 net.ipv4.tcp_syn_retries=6
  done
  return 0
}

# ------------------------------------------------------------------ faults

# netlab_rate RATE: a token-bucket link in both directions (e.g. 1gbit). The
# burst is big enough for gigabit rates at the kernel's timer resolution.
netlab_rate() {
  local ns
  for ns in "$NL_A" "$NL_B"; do
    tc -n "$ns" qdisc replace dev veth0 root tbf rate "$1" burst 256kb latency 50ms || return 1
  done
}

# netlab_offloads_off: segmentation/receive offloads off at both ends, so
# that loss acts on real MTU-sized packets: with GSO/GRO the veth carries
# 64 KiB lumps and "2 % loss" hits a handful of them.
netlab_offloads_off() {
  local ns
  for ns in "$NL_A" "$NL_B"; do
    ip netns exec "$ns" ethtool -K veth0 tso off gso off gro off >/dev/null || return 1
  done
}

# netlab_loss PCT [nft match...]: drop PCT % (random) of the packets arriving
# at B from A that match (default: all TCP and UDP; ARP and neighbour
# discovery must get through). The drops are counted in the named counter
# "lost": see netlab_lost.
netlab_loss() {
  local pct=$1
  shift
  (($#)) || set -- meta l4proto '{ tcp, udp }'
  netlab_b nft add counter inet fault lost &&
  netlab_b nft add rule inet fault input iifname veth0 "$@" \
    numgen random mod 100 '<' "$pct" counter name lost drop
}

# netlab_lost: packets netlab_loss has dropped so far.
netlab_lost() {
  netlab_b nft list counter inet fault lost | sed -nE 's/.*packets ([0-9]+) .*/\1/p'
}

# netlab_reset PORT: B answers every segment for its TCP PORT with a RST
# (made by nft, not by B's socket: A gets ECONNRESET, B's socket stays open).
netlab_reset() { netlab_b nft add rule inet fault input tcp dport "$1" reject with tcp reset; }

# netlab_blackhole PORT: B's TCP PORT drops everything, both ways (a peer that
# vanished without a word: A retransmits, connect() never completes).
netlab_blackhole() {
  netlab_b nft add rule inet fault input tcp dport "$1" drop &&
  netlab_b nft add rule inet fault output tcp sport "$1" drop
}

# netlab_unreach PORT: B answers SYNs (and segments) for PORT with ICMP host
# unreachable; connect() fails at once with EHOSTUNREACH.
netlab_unreach() {
  netlab_b nft add rule inet fault input tcp dport "$1" reject with icmpx type host-unreachable
}

# netlab_link up|down: A's end of the pair; down takes both ends' carrier and
# A's routes to B away.
netlab_link() { ip -n "$NL_A" link set veth0 "$1"; }

# netlab_fast_timeouts: both hosts give up on an unanswered connection in
# about 3 s instead of ~15 min (tcp_retries2=3: 0.2 s RTO doubling 4 times)
# and on an unanswered SYN in ~3 s (tcp_syn_retries=1). Per namespace;
# netlab_clear puts the defaults back.
netlab_fast_timeouts() {
  local ns
  for ns in "$NL_A" "$NL_B"; do
    ip netns exec "$ns" sysctl -qw net.ipv4.tcp_retries2=3 net.ipv4.tcp_syn_retries=1 || return 1
  done
}

# netlab_udp_rcvbuf_errors NS: UDP datagrams the kernel dropped in NS because
# a socket's receive buffer was full (/proc/net/snmp).
netlab_udp_rcvbuf_errors() {
  ip netns exec "$1" awk '/^Udp: / { if (!h) { for (i = 1; i <= NF; i++) c[$i] = i; h = 1 }
                                    else print $c["RcvbufErrors"] }' /proc/net/snmp
}

# netlab_qdisc_drops NS: packets the root qdisc of NS's veth0 dropped (a full
# tbf queue; for UDP the sender is not told).
netlab_qdisc_drops() {
  tc -s -n "$1" qdisc show dev veth0 | sed -nE 's/.*\(dropped ([0-9]+),.*/\1/p' | head -n 1
}
