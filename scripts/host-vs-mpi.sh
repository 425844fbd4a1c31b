#!/usr/bin/env bash
# Side-by-side bus bandwidth of an all-reduce on this machine: collbench's
# host backend (4 ranks in one process, and 4 processes started by
# collbench launch, TCP over loopback) against OpenMPI's MPI_Allreduce over
# its TCP transport (4 processes, --mca btl tcp,self). Prints the figures
# and the ratios to MPI. Needs openmpi-bin and libopenmpi-dev.
#
#   scripts/host-vs-mpi.sh [size] [ranks] [repeats]     (default 64M 4 3)
set -euo pipefail
cd "$(dirname "$0")/.."
size=${1:-64M}
ranks=${2:-4}
repeats=${3:-3}
command -v mpicc >/dev/null && command -v mpirun >/dev/null ||
  { echo "host-vs-mpi: needs mpicc and mpirun (apt-get install openmpi-bin libopenmpi-dev)" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/collbench" ./cmd/collbench
mpicc -O2 -o "$work/mpi_allreduce" scripts/mpi_allreduce.c
bytes=$("$work/collbench" allreduce -b "$size" -e "$size" -n 1 -w 0 -c 0 --format csv | awk -F, 'NR==2{print $2}')

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
printf '%-8s %12s %12s %12s %8s %8s\n' run inproc_GB/s procs_GB/s mpi_GB/s inproc/mpi procs/mpi
for i in $(seq "$repeats"); do
  cb=$("$work/collbench" allreduce -b "$size" -e "$size" -g "$ranks" -n 20 -c 0 --format csv |
    awk -F, '$7=="out_of_place"{print $10}')
  procs=$("$work/collbench" launch -n "$ranks" allreduce -b "$size" -e "$size" -n 20 -c 0 --format csv |
    awk -F, '$7=="out_of_place"{print $10}')
  mpi=$(mpirun -np "$ranks" --oversubscribe --bind-to none --mca btl tcp,self --mca btl_tcp_if_include lo \
    "$work/mpi_allreduce" "$bytes" 20)
  printf '%-8s %12.4f %12.4f %12.4f %8.2f %8.2f\n' "$i" "$cb" "$procs" "$mpi" \
    "$(echo "$cb / $mpi" | bc -l)" "$(echo "$procs / $mpi" | bc -l)"
done
