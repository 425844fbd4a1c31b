#!/usr/bin/env bash
# collbench across hosts started by OpenMPI's mpirun: one rank per GPU.
#
#   scripts/mpirun.sh HOSTFILE RANKS_PER_NODE [collective] [collbench flags]
#   scripts/mpirun.sh hosts.txt 8 allreduce -b 8 -e 8G -f 2
#
# collbench reads OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK; no MPI library is
# linked. Rank 0 hosts the rendezvous on the first host of the hostfile
# (MASTER_ADDR below); the OpenMPI job id is the token. Extra mpirun
# options go in MPIRUN_ARGS (for example "--mca btl_tcp_if_include eth0").
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 HOSTFILE RANKS_PER_NODE [collective] [flags]" >&2; exit 2; }
hostfile=$1 ppn=$2
shift 2
collective=${1:-allreduce}
shift || true
[ $# -gt 0 ] || set -- -b 8 -e 8G -f 2
first=$(awk 'NF && $1 !~ /^#/ {print $1; exit}' "$hostfile")
nodes=$(awk 'NF && $1 !~ /^#/' "$hostfile" | wc -l)
# Pass on only the variables that are set: mpirun warns of each -x it
# cannot find.
pass=()
for v in PATH LD_LIBRARY_PATH NCCL_DEBUG NCCL_SOCKET_IFNAME NCCL_IB_HCA; do
  [ -n "${!v+set}" ] && pass+=(-x "$v")
done
# shellcheck disable=SC2086
exec mpirun --hostfile "$hostfile" -np $((nodes * ppn)) --map-by "ppr:${ppn}:node" --bind-to none \
  -x MASTER_ADDR="$first" -x MASTER_PORT="${MASTER_PORT:-29511}" "${pass[@]}" \
  ${MPIRUN_ARGS:-} "${COLLBENCH:-collbench}" "$collective" -g 1 "$@"
