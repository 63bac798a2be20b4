#!/usr/bin/env bash
# A one-host Slurm cluster for weft's launcher tests, from Debian's packages (root only).
#   scripts/ci-slurm.sh start [DIR]   install (apt-get) what is missing, write DIR/slurm.conf,
#                                     start munged, slurmctld and slurmd, wait until the node
#                                     takes jobs; prints `export SLURM_CONF=DIR/slurm.conf`
#   scripts/ci-slurm.sh stop [DIR]    stop the daemons this script started (pid files in DIR)
#   scripts/ci-slurm.sh env [DIR]     print the export line only
#   scripts/ci-slurm.sh start2 [DIR]  a second cluster of two nodes, wsn1 and wsn2, each a
#                                     slurmd in its own network namespace (scripts/testhosts.sh,
#                                     10.213.9.0/24), UTS namespace (its own host name) and
#                                     private /tmp; slurmctld in the root namespace on
#                                     10.213.9.1; prints `export WEFT_TEST_SLURM2_CONF=...`
#   scripts/ci-slurm.sh stop2 [DIR]   stop it and remove the namespaces
# DIR defaults to /var/tmp/weft-slurm (/var/tmp/weft-slurm2 for the two-node cluster). Both commands are idempotent: start on a running
# cluster only checks it, stop on a stopped one does nothing. The cluster is one node (this
# host's short name, address 127.0.0.1) with this machine's CPUs, proctrack/linuxproc and
# task/none (no cgroups needed), select/cons_tres by CPU; jobs with more tasks than CPUs
# run with srun/sbatch --overcommit. Daemons run as root, munged as munge; the system's
# /etc/slurm is never touched (clients find the cluster through SLURM_CONF).
set -euo pipefail
cmd=${1:-start}
dir=${2:-/var/tmp/weft-slurm}
conf=$dir/slurm.conf

need_packages() {
  local need=()
  command -v slurmctld >/dev/null 2>&1 || need+=(slurmctld)
  command -v slurmd >/dev/null 2>&1 || need+=(slurmd)
  command -v srun >/dev/null 2>&1 || need+=(slurm-client)
  [ -f /usr/lib/x86_64-linux-gnu/slurm-wlm/mpi_pmix.so ] || need+=(slurm-wlm-basic-plugins)
  command -v munged >/dev/null 2>&1 || need+=(munge)
  if ((${#need[@]})); then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq "${need[@]}" >/dev/null
  fi
}

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

start_munge() {
  if [ ! -s /etc/munge/munge.key ]; then
    mkdir -p /etc/munge
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
  fi
  chown munge:munge /etc/munge/munge.key
  chmod 0400 /etc/munge/munge.key
  mkdir -p /run/munge /var/lib/munge /var/log/munge
  chown munge:munge /run/munge /var/lib/munge /var/log/munge
  if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    return 0
  fi
  runuser -u munge -- /usr/sbin/munged --pid-file=/run/munge/weft-ci-munged.pid
  for _ in $(seq 50); do
    munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "ci-slurm: munged did not start" >&2
  exit 1
}

write_conf() {
  local host cpus
  host=$(hostname -s)
  cpus=$(nproc)
  mkdir -p "$dir/state" "$dir/spool"
  cat >"$conf.tmp" <<EOF
# Written by scripts/ci-slurm.sh: a one-host cluster for weft's launcher tests.
ClusterName=weftci
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmctldTimeout=30
SlurmdTimeout=30
KillWait=2
InactiveLimit=0
MinJobAge=10
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=ci Nodes=$host Default=YES MaxTime=INFINITE OverSubscribe=FORCE:64 State=UP
EOF
  mv "$conf.tmp" "$conf"
}

wait_idle() {
  for _ in $(seq 600); do
    if SLURM_CONF=$conf sinfo -h -o %t 2>/dev/null | grep -qE '^(idle|mix|alloc)'; then
      return 0
    fi
    sleep 0.2
  done
  echo "ci-slurm: the node did not become idle; sinfo says:" >&2
  SLURM_CONF=$conf sinfo -N -l >&2 || true
  tail -n 20 "$dir/slurmctld.log" "$dir/slurmd.log" >&2 || true
  exit 1
}

# The two-node cluster (start2/stop2) has its own directory.
if [ "$cmd" = start2 ] || [ "$cmd" = stop2 ]; then
  dir=${2:-/var/tmp/weft-slurm2}
  conf=$dir/slurm.conf
fi
here=$(cd "$(dirname "$0")" && pwd)
nodes2=(wsn1 wsn2)

write_conf2() {
  mkdir -p "$dir/state"
  cat >"$conf.tmp" <<EOF
# Written by scripts/ci-slurm.sh start2: two nodes in network namespaces.
ClusterName=weftci2
SlurmctldHost=$(hostname -s)(10.213.9.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
SlurmctldPort=6827
SlurmdPort=6828
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool-%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd-%n.log
KillWait=2
InactiveLimit=0
MinJobAge=10
NodeName=wsn1 NodeAddr=10.213.9.2 CPUs=$(nproc) State=UNKNOWN
NodeName=wsn2 NodeAddr=10.213.9.3 CPUs=$(nproc) State=UNKNOWN
PartitionName=ci Nodes=wsn[1-2] Default=YES MaxTime=INFINITE OverSubscribe=FORCE:64 State=UP
EOF
  mv "$conf.tmp" "$conf"
}

wait_idle2() {
  for _ in $(seq 600); do
    states=$(SLURM_CONF=$conf sinfo -h -N -o %t 2>/dev/null || true)
    if [ "$(echo "$states" | grep -cE '^(idle|mix|alloc)')" = 2 ]; then
      return 0
    fi
    sleep 0.2
  done
  echo "ci-slurm: the namespace nodes did not become idle; sinfo says:" >&2
  SLURM_CONF=$conf sinfo -N -l >&2 || true
  exit 1
}

case "$cmd" in
  start2)
    [ "$(id -u)" = 0 ] || { echo "ci-slurm: must run as root" >&2; exit 1; }
    need_packages
    start_munge
    if alive "$dir/slurmctld.pid" && alive "$dir/slurmd-wsn1.pid" && alive "$dir/slurmd-wsn2.pid"; then
      wait_idle2
    else
      bash "$here/testhosts.sh" up --net 10.213.9 "${nodes2[@]}" >&2
      write_conf2
      alive "$dir/slurmctld.pid" || slurmctld -f "$conf"
      for n in "${nodes2[@]}"; do
        alive "$dir/slurmd-$n.pid" && continue
        mkdir -p "$dir/tmp-$n" "$dir/repo-$n" && chmod 1777 "$dir/tmp-$n"
        # nsenter keeps the root namespace's /sys (and its cgroup mounts); the node gets its
        # own host name and /tmp (Slurm's PMIx plugin keeps per-step directories there). A
        # checkout under /tmp (a CI clone) stays visible: it is bound aside before /tmp is
        # replaced and bound back at its own path inside the node's /tmp.
        repo=$(cd "$here/.." && pwd)
        keep=
        case "$repo" in /tmp/*) keep=$repo ;; esac
        nsenter --net="/var/run/netns/$n" unshare --uts --mount --propagation private \
          sh -c "hostname $n && { [ -z '$keep' ] || mount --bind '$keep' '$dir/repo-$n'; } &&
            mount --bind $dir/tmp-$n /tmp &&
            { [ -z '$keep' ] || { mkdir -p '$keep' && mount --bind '$dir/repo-$n' '$keep'; }; } &&
            exec slurmd -f $conf -N $n"
      done
      SLURM_CONF=$conf scontrol update NodeName='wsn[1-2]' State=RESUME >/dev/null 2>&1 || true
      wait_idle2
    fi
    echo "export WEFT_TEST_SLURM2_CONF=$conf"
    ;;
  stop2)
    for p in "$dir"/slurmd-*.pid "$dir/slurmctld.pid"; do
      [ -f "$p" ] || continue
      if alive "$p"; then
        pid=$(cat "$p")
        kill "$pid"
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
      fi
      rm -f "$p"
    done
    bash "$here/testhosts.sh" down --net 10.213.9 "${nodes2[@]}" >&2 || true
    ;;
  start)
    [ "$(id -u)" = 0 ] || { echo "ci-slurm: must run as root" >&2; exit 1; }
    need_packages
    start_munge
    if alive "$dir/slurmctld.pid" && alive "$dir/slurmd.pid"; then
      wait_idle
    else
      write_conf
      alive "$dir/slurmctld.pid" || slurmctld -f "$conf"
      alive "$dir/slurmd.pid" || slurmd -f "$conf"
      # A node that was down in an earlier run's state comes back.
      SLURM_CONF=$conf scontrol update NodeName="$(hostname -s)" State=RESUME >/dev/null 2>&1 || true
      wait_idle
    fi
    echo "export SLURM_CONF=$conf"
    ;;
  stop)
    for d in slurmd slurmctld; do
      if alive "$dir/$d.pid"; then
        pid=$(cat "$dir/$d.pid")
        kill "$pid"
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
      fi
      rm -f "$dir/$d.pid"
    done
    if alive /run/munge/weft-ci-munged.pid; then
      kill "$(cat /run/munge/weft-ci-munged.pid)"
      rm -f /run/munge/weft-ci-munged.pid
    fi
    ;;
  env)
    echo "export SLURM_CONF=$conf"
    ;;
  *)
    echo "usage: $0 start|stop|env|start2|stop2 [DIR]" >&2
    exit 2
    ;;
esac
