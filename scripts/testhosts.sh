#!/usr/bin/env bash
# Test hosts for weft's multi-host tests: network namespaces joined by veth pairs to bridges
# in the root namespace (one bridge and one subnet per rail), optionally shaped with tc.
#
#   testhosts.sh up   [--rails K] [--net A.B.C] [--shape "QDISC ARGS"] NAME...
#   testhosts.sh down [--rails K] NAME...
#
# Rail r (0 <= r < K) is the subnet A.B.(C+r).0/24: the root namespace is .1 (on bridge
# <first NAME>b<r>), the i-th host (from 0) is .(i+2) on its interface eth<r>; the root-side
# end of that veth pair is <NAME>r<r>. --shape installs "tc qdisc replace dev IF root QDISC
# ARGS" on both ends of every veth pair, e.g. --shape "tbf rate 1gbit burst 256kb latency
# 20ms" or --shape "netem delay 1ms". Start a command on a host with: ip netns exec NAME CMD.
# `up` first removes whatever `down` would, so running it twice gives the same hosts.
# Needs root and iproute2 (ip, tc); exits 77 with a message saying what is missing otherwise
# (77 is the usual "skipped" code of test harnesses).
set -euo pipefail

die() { echo "testhosts.sh: $*" >&2; exit 2; }
usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

action=${1:-}
[ -n "$action" ] || usage
shift
rails=1
net=10.213.1
shape=""
names=()
while (($#)); do
  case "$1" in
    --rails) rails=${2:-}; shift 2 || usage ;;
    --net) net=${2:-}; shift 2 || usage ;;
    --shape) shape=${2:-}; shift 2 || usage ;;
    -h|--help) usage ;;
    -*) die "unknown option $1" ;;
    *) names+=("$1"); shift ;;
  esac
done

[[ "$rails" =~ ^[1-4]$ ]] || die "--rails: $rails is not 1 to 4"
[[ "$net" =~ ^([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})$ ]] || die "--net: $net is not A.B.C"
netab="${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"
netc=${BASH_REMATCH[3]}
((netc + rails - 1 <= 255)) || die "--net: $net leaves no room for $rails rails"
((${#names[@]} >= 1)) || die "no host names given"
((${#names[@]} <= 250)) || die "at most 250 hosts"
for n in "${names[@]}"; do
  # Interface names (NAME + "r0") must fit the kernel's 15 characters.
  [[ "$n" =~ ^[A-Za-z0-9_-]{1,10}$ ]] || die "host name '$n': use 1-10 letters, digits, - or _"
done

if [ "$(id -u)" != 0 ]; then
  echo "testhosts.sh: skipped: network namespaces need root" >&2
  exit 77
fi
for tool in ip tc; do
  command -v "$tool" >/dev/null 2>&1 || { echo "testhosts.sh: skipped: '$tool' not found (install iproute2)" >&2; exit 77; }
done

bridge() { echo "${names[0]}b$1"; }

down() {
  local n r
  for n in "${names[@]}"; do
    ip netns del "$n" 2>/dev/null || true
    for ((r = 0; r < 4; r++)); do ip link del "${n}r$r" 2>/dev/null || true; done
  done
  for ((r = 0; r < 4; r++)); do ip link del "$(bridge "$r")" 2>/dev/null || true; done
}

up() {
  down
  local i n r br root_if
  for ((r = 0; r < rails; r++)); do
    br=$(bridge "$r")
    ip link add "$br" type bridge
    # Hosts talk across the bridge; a br_netfilter firewall must not see that traffic.
    ip link set "$br" type bridge nf_call_iptables 0 2>/dev/null || true
    ip addr add "$netab.$((netc + r)).1/24" dev "$br"
    ip link set "$br" up
  done
  i=0
  for n in "${names[@]}"; do
    ip netns add "$n"
    ip -n "$n" link set lo up
    for ((r = 0; r < rails; r++)); do
      root_if="${n}r$r"
      ip link add "$root_if" type veth peer name "eth$r" netns "$n"
      ip link set "$root_if" master "$(bridge "$r")" up
      ip -n "$n" addr add "$netab.$((netc + r)).$((i + 2))/24" dev "eth$r"
      ip -n "$n" link set "eth$r" up
      if [ -n "$shape" ]; then
        # shellcheck disable=SC2086 # the qdisc and its arguments are several words
        tc qdisc replace dev "$root_if" root $shape
        # shellcheck disable=SC2086
        tc -n "$n" qdisc replace dev "eth$r" root $shape
      fi
      echo "$n eth$r $netab.$((netc + r)).$((i + 2)) root $netab.$((netc + r)).1"
    done
    i=$((i + 1))
  done
  wait_ready
}

# The kernel reports a new link's carrier asynchronously (up to about a second later) and a
# bridge forwards nothing on a port until then: return only once every port forwards, so the
# first connection of a test is not lost.
wait_ready() {
  local n r f deadline=$((SECONDS + 5))
  for n in "${names[@]}"; do
    for ((r = 0; r < rails; r++)); do
      f=/sys/class/net/${n}r$r
      until [ "$(cat "$f/operstate" 2>/dev/null)" = up ] && [ "$(cat "$f/brport/state" 2>/dev/null)" = 3 ]; do
        ((SECONDS < deadline)) || die "link ${n}r$r did not come up"
        sleep 0.02
      done
    done
  done
}

case "$action" in
  up) up ;;
  down) down ;;
  *) die "unknown action '$action' (up or down)" ;;
esac
