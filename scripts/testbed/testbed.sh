#!/usr/bin/env bash
# A cluster of K "nodes" on this machine behind a capped link, for one job, then gone.
#
#   scripts/testbed/testbed.sh [--nodes K] [--rate RATE] [--burst SIZE] -- COMMAND [ARGS...]
#
# Each node is a network namespace of its own (and, for every process started in it, an
# IPC and UTS namespace shared by that node's processes: UCX takes ranks in one IPC
# namespace for the same machine). The nodes hang off a bridge in a namespace of its own
# through veth pairs whose both ends are capped with tc tbf at RATE (tbf shapes egress only).
# Addresses are 10.254.0.N/24, inside these namespaces only. COMMAND runs here with, in its
# environment:
#   TESTBED_NODES   the nodes' namespaces, node 0 first
#   TESTBED_ADDRS   their addresses, in the same order
#   TESTBED_EXEC    a command that runs what follows it on a node: $TESTBED_EXEC 1 prog args
#   TESTBED_SSH     a stand-in for ssh that Hydra's mpiexec can use (-launcher-exec)
#   TESTBED_IFACE   the nodes' interface name
# Everything made here (namespaces, links, the processes in them) is removed on exit,
# failure or Ctrl-C. Needs root; says so otherwise.
set -euo pipefail

nodes=2
rate=1gbit
burst=1mb
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) nodes=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --burst) burst=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "testbed: unknown option $1" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "usage: testbed.sh [--nodes K] [--rate RATE] -- COMMAND" >&2; exit 2; }
if [ "$(id -u)" -ne 0 ] || ! ip netns add "zccl-tb-probe-$$" 2>/dev/null; then
  echo "testbed: cannot make network namespaces here (needs root)" >&2
  exit 77
fi
ip netns del "zccl-tb-probe-$$"

here=$(cd "$(dirname "$0")" && pwd)
tag="zccl-tb-$$"
switch="$tag-sw"
created=()
cleanup() {
  set +e
  for ns in "${created[@]}"; do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
  done
  for ns in "${created[@]}"; do ip netns del "$ns" 2>/dev/null; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ip netns add "$switch"
created+=("$switch")
ip -n "$switch" link add br0 type bridge
ip -n "$switch" link set br0 up
names=() addrs=()
for ((i = 0; i < nodes; i++)); do
  ns="$tag-n$i"
  ip netns add "$ns"
  created+=("$ns")
  ip link add "tbn$$x$i" netns "$ns" type veth peer name "tbs$$x$i" netns "$switch"
  ip -n "$ns" link set "tbn$$x$i" name eth0
  ip -n "$switch" link set "tbs$$x$i" master br0
  # Large frames, so that headers are a small part of what the link counts.
  ip -n "$ns" link set eth0 mtu 65000
  ip -n "$switch" link set "tbs$$x$i" mtu 65000
  ip -n "$ns" addr add "10.254.0.$((i + 1))/24" dev eth0
  ip -n "$ns" link set lo up
  ip -n "$ns" link set eth0 up
  ip -n "$switch" link set "tbs$$x$i" up
  tc -n "$ns" qdisc add dev eth0 root tbf rate "$rate" burst "$burst" latency 50ms
  tc -n "$switch" qdisc add dev "tbs$$x$i" root tbf rate "$rate" burst "$burst" latency 50ms
  names+=("$ns")
  addrs+=("10.254.0.$((i + 1))")
done

export TESTBED_NODES="${names[*]}"
export TESTBED_ADDRS="${addrs[*]}"
export TESTBED_EXEC="$here/node-exec"
export TESTBED_SSH="$here/node-ssh"
export TESTBED_IFACE=eth0
"$@"
