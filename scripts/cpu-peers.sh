#!/usr/bin/env bash
# Side-by-side bus bandwidth of collbench's host backend (N processes
# started by collbench launch, over shared memory, and over TCP on
# loopback as cb-tcp) against the CPU
# collective libraries on this machine, for all-reduce, all-gather,
# reduce-scatter and all-to-all: OpenMPI over TCP (--mca btl tcp,self) and
# over shared memory (--mca btl vader,self), MPICH (mpiexec.mpich, its
# default transport: shared memory on one host) and PyTorch's gloo
# (torch.distributed on CPU tensors, started by torchrun). Every side times
# the same sizes with the same calls (a warm-up, a barrier, back-to-back
# calls, mean over ranks; nccl-tests' size and bus bandwidth) and prints
# busbw in GB/s and collbench's ratio to each. Peers that are not installed
# are left out (Debian: openmpi-bin libopenmpi-dev, mpich libmpich-dev, python3-torch).
#
#   scripts/cpu-peers.sh [ranks] [min] [max] [collectives]
#                        (default 4 1K 256M allreduce,allgather,reducescatter,alltoall)
set -euo pipefail
cd "$(dirname "$0")/.."
ranks=${1:-4}
min=${2:-1K}
max=${3:-256M}
colls=${4:-allreduce,allgather,reducescatter,alltoall}

bytes() { # 1K → 1024
  local v=$1
  case $v in
    *K) echo $((${v%K} << 10)) ;;
    *M) echo $((${v%M} << 20)) ;;
    *G) echo $((${v%G} << 30)) ;;
    *) echo "$v" ;;
  esac
}
iters() { # fewer calls for the large sizes, the same on every side
  if [ "$1" -le $((1 << 20)) ]; then echo 20
  elif [ "$1" -le $((16 << 20)) ]; then echo 10
  elif [ "$1" -le $((64 << 20)) ]; then echo 5
  else echo 3; fi
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/collbench" ./cmd/collbench
peers=(cb-tcp)
if command -v mpicc.openmpi >/dev/null && command -v mpirun.openmpi >/dev/null; then
  mpicc.openmpi -O2 -o "$work/ompi" scripts/mpi_colls.c && peers+=(ompi-tcp ompi-shm)
fi
if command -v mpicc.mpich >/dev/null && command -v mpiexec.mpich >/dev/null; then
  mpicc.mpich -O2 -o "$work/mpich" scripts/mpi_colls.c && peers+=(mpich)
fi
command -v torchrun >/dev/null && peers+=(gloo)
echo "# cpu-peers: $ranks ranks on $(nproc) CPU(s), $(uname -r); peers: ${peers[*]:-none}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none

sizes=()
for ((s = $(bytes "$min"); s <= $(bytes "$max"); s *= 4)); do sizes+=("$s"); done

cb() { # coll size [flags] → collbench's busbw
  "$work/collbench" launch -n "$ranks" "$1" --backend host -b "$2" -e "$2" -n "$(iters "$2")" -w 1 -c 0 --format csv "${@:3}" |
    awk -F, '$7=="out_of_place"{printf "%.4f\n", $10}'
}

peer() { # peer coll size → busbw
  local it
  it=$(iters "$3")
  case $1 in
    cb-tcp) cb "$2" "$3" --transport tcp ;;
    ompi-tcp) mpirun.openmpi -np "$ranks" --oversubscribe --bind-to none --mca btl tcp,self --mca btl_tcp_if_include lo "$work/ompi" "$2" "$3" "$it" ;;
    ompi-shm) mpirun.openmpi -np "$ranks" --oversubscribe --bind-to none --mca btl vader,self "$work/ompi" "$2" "$3" "$it" ;;
    mpich) mpiexec.mpich -n "$ranks" "$work/mpich" "$2" "$3" "$it" ;;
  esac
}

for coll in ${colls//,/ }; do
  declare -A gloo=()
  if [[ " ${peers[*]} " == *" gloo "* ]]; then
    points=()
    for s in "${sizes[@]}"; do points+=("$s:$(iters "$s")"); done
    while read -r s bw; do gloo[$s]=$bw; done < <(torchrun --nproc_per_node "$ranks" --redirects 2 --tee 2 --log_dir "$work/gloo-$coll" \
      scripts/gloo_colls.py "$coll" "${points[@]}" 2>/dev/null)
  fi
  echo
  header=$(printf '%-10s %10s' "$coll" collbench)
  for p in "${peers[@]}"; do header+=$(printf ' %10s' "$p"); done
  for p in "${peers[@]}"; do header+=$(printf ' %12s' "cb/$p"); done
  echo "$header"
  for s in "${sizes[@]}"; do
    cb=$(cb "$coll" "$s")
    line=$(printf '%-10s %10.4f' "$s" "$cb")
    ratios=""
    for p in "${peers[@]}"; do
      if [ "$p" = gloo ]; then bw=${gloo[$s]:-n/a}; else bw=$(peer "$p" "$coll" "$s"); fi
      line+=$(printf ' %10s' "$bw")
      if [[ $bw =~ ^[0-9.]+$ ]] && [ "$(echo "$bw > 0" | bc -l)" = 1 ]; then
        ratios+=$(printf ' %12.2f' "$(echo "$cb / $bw" | bc -l)")
      else
        ratios+=$(printf ' %12s' n/a)
      fi
    done
    echo "$line$ratios"
  done
  unset gloo
done
