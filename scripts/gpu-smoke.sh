#!/usr/bin/env bash
# GPU smoke test: every collective with data checks on the GPUs of this
# host, several ranks on one GPU when only one is present (functional only:
# ranks time-slice the GPU), and, given an nccl-tests build, the same sweeps
# side by side with per-size ratios.
#
# Usage: scripts/gpu-smoke.sh [--collbench BIN] [--nccl-tests DIR] [--out DIR] [--parts LIST]
#   --collbench   collbench binary (default: bin/collbench, then PATH)
#   --nccl-tests  folder with nccl-tests' *_perf binaries (or NCCL_TESTS_DIR)
#   --out         folder for logs and JSON results (default: $OUT or a temp dir)
#   --parts       comma-separated parts to run (default: all of collectives,
#                 modes,shared,overlap,profile,health,report,compare)
# Exit status: 0 when every run passed its checks, 1 otherwise.
set -uo pipefail

CB=""
NT="${NCCL_TESTS_DIR:-}"
OUTDIR="${OUT:-}"
PARTS=collectives,modes,shared,overlap,profile,health,report,compare
while [ $# -gt 0 ]; do
  case "$1" in
    --collbench) CB="$2"; shift 2 ;;
    --nccl-tests) NT="$2"; shift 2 ;;
    --out) OUTDIR="$2"; shift 2 ;;
    --parts) PARTS="$2"; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "gpu-smoke: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ -z "$CB" ]; then
  if [ -x bin/collbench ]; then CB=bin/collbench; else CB=$(command -v collbench || true); fi
fi
[ -x "$CB" ] || { echo "gpu-smoke: no collbench binary; build it with: CGO_ENABLED=1 go build -o bin/collbench ./cmd/collbench" >&2; exit 2; }
[ -n "$OUTDIR" ] || OUTDIR=$(mktemp -d)
mkdir -p "$OUTDIR"

COLLS="allreduce allgather reducescatter alltoall alltoallv broadcast reduce sendrecv gather scatter hypercube"
failures=0
summary=()

# part NAME: the runs that follow belong to part NAME; wanted: whether
# --parts asked for the current one.
PART=collectives
part() { PART="$1"; }
wanted() { [[ ",$PARTS," == *",$PART,"* ]]; }

# run NAME ARGS...: runs collbench, keeps its output, records PASS/FAIL.
run() {
  wanted || return 0
  local name="$1"; shift
  local log="$OUTDIR/$name.txt"
  local start=$SECONDS
  "$CB" "$@" >"$log" 2>&1
  local rc=$?
  local avg
  avg=$(awk '/Avg bus bandwidth/ {print $6}' "$log")
  if [ $rc -eq 0 ]; then
    summary+=("PASS  $name  (${avg:-?} GB/s avg busbw, $((SECONDS - start)) s)")
  else
    summary+=("FAIL  $name  (exit $rc; see $log)")
    failures=$((failures + 1))
    tail -n 3 "$log" | sed 's/^/      /'
  fi
}

echo "== collbench doctor"
if ! "$CB" doctor | tee "$OUTDIR/doctor.txt"; then
  echo "gpu-smoke: doctor found no usable GPU stack" >&2
  exit 1
fi
NGPU=$(grep -c '^  GPU ' "$OUTDIR/doctor.txt")
NCCLV=$(awk '/^NCCL:/ {print $2}' "$OUTDIR/doctor.txt")
echo "== $NGPU GPU(s), NCCL $NCCLV; results in $OUTDIR"

# 1. Every collective, every type and operator the GPUs support, checked.
# Up to 2 MiB: the checks fill and compare on the host, so every type and
# operator up to 64 MiB takes minutes per collective; the float runs
# below go to 64 MiB.
pow2=$(( (NGPU & (NGPU - 1)) == 0 ))
for c in $COLLS; do
  [ "$c" = hypercube ] && [ "$pow2" -eq 0 ] && continue # power-of-two rank counts only
  run "$c-g$NGPU" "$c" --backend nccl -g "$NGPU" -b 8 -e 2M -f 8 -d all -o all -r -1 -c 1 -J "$OUTDIR/$c-g$NGPU.json"
done
run "allreduce-float-g$NGPU" allreduce --backend nccl -g "$NGPU" -b 8 -e 64M -f 4 -c 1 -J "$OUTDIR/allreduce-float-g$NGPU.json"
# 2. The timing modes on all-reduce.
part modes
run "allreduce-graph" allreduce --backend nccl -g "$NGPU" -b 8 -e 64M -f 4 -G 4 -c 1
run "allreduce-blocking" allreduce --backend nccl -g "$NGPU" -b 8 -e 64M -f 4 -z 1 -c 1
run "allreduce-agg" allreduce --backend nccl -g "$NGPU" -b 8 -e 64M -f 4 -m 4 -c 1
run "allreduce-iter" allreduce --backend nccl -g "$NGPU" -b 8 -e 64M -f 4 -I 1 --format json -c 1
run "allreduce-register" allreduce --backend nccl -g "$NGPU" -b 8 -e 64M -f 4 -R 1 -c 1
# nccl-tests' remaining flags: unaligned buffers, the NULL stream, the
# memory footer, a CTA policy, timestamps.
run "allgather-flags" allgather --backend nccl -g "$NGPU" -b 8 -e 64M -f 4 -u 3 -y 1 -M 1 -S 1 -c 1 -d all
run "allreduce-cta-policy" allreduce --backend nccl -g "$NGPU" -b 8 -e 64M -f 4 -x 1 -c 1
# Uneven all-to-all: a skewed matrix, and a mixture-of-experts layer.
printf '0 4096 65536 16\n1048576 0 16 32\n16 16 0 4096\n2048 1024 512 0\n' >"$OUTDIR/traffic4.txt"
if [ "$NGPU" -ge 4 ]; then
  run "alltoallv-matrix" alltoallv --backend nccl -g 4 --matrix "$OUTDIR/traffic4.txt" -b 2M -e 2M -c 1 -d all --rank-summary
fi
run "alltoallv-moe" alltoallv --backend nccl -g "$NGPU" --moe $((NGPU * 8)),2 --tokens 4096 --hidden 4096 -d bfloat16 --routing zipf:1.2 -c 1 \
  -J "$OUTDIR/moe-g$NGPU.json"

# 3. Several ranks on one GPU (functional only). NCCL 2.30 allows it
# with NCCL_MULTI_RANK_GPU_ENABLE=1; before, separate processes must each
# look like a host of their own (launch --distinct-hosts) and talk over
# sockets on the loopback.
major=${NCCLV%%.*}; rest=${NCCLV#*.}; minor=${rest%%.*}
multirank=0
if [ "${major:-0}" -gt 2 ] || { [ "${major:-0}" -eq 2 ] && [ "${minor:-0}" -ge 30 ]; }; then multirank=1; fi
if [ "$multirank" -eq 1 ]; then
  SHARE=""
  shared() { NCCL_MULTI_RANK_GPU_ENABLE=1 "$@"; }
else
  SHARE="--distinct-hosts"
  shared() { NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo "$@"; }
fi
part shared
if [ "$NGPU" -eq 1 ]; then
  if [ "$multirank" -eq 1 ]; then
    echo "== 2 and 4 ranks on GPU 0 in one process (NCCL_MULTI_RANK_GPU_ENABLE=1; functional only, not speed)"
    for c in $COLLS; do
      NCCL_MULTI_RANK_GPU_ENABLE=1 run "$c-2ranks-1gpu" "$c" --backend nccl -g 2 --devices 0,0 -b 8 -e 16M -f 8 -d all -o all -r -1 -c 1
    done
    NCCL_MULTI_RANK_GPU_ENABLE=1 run "allreduce-4ranks-1gpu" allreduce --backend nccl -g 4 --devices 0,0,0,0 -b 8 -e 16M -f 8 -c 1
    NCCL_MULTI_RANK_GPU_ENABLE=1 run "alltoallv-matrix-4ranks-1gpu" alltoallv --backend nccl -g 4 --devices 0,0,0,0 \
      --matrix "$OUTDIR/traffic4.txt" -b 2M -e 2M -c 1 -d all --rank-summary
    NCCL_MULTI_RANK_GPU_ENABLE=1 run "alltoallv-moe-4ranks-1gpu" alltoallv --backend nccl -g 4 --devices 0,0,0,0 \
      --moe 16,2 --tokens 1024 --hidden 1024 -d bfloat16 --routing zipf:1.2 -c 1
    NCCL_MULTI_RANK_GPU_ENABLE=1 run "hypercube-4ranks-1gpu" hypercube --backend nccl -g 4 --devices 0,0,0,0 -b 8 -e 16M -f 8 -d all -c 1
    NCCL_MULTI_RANK_GPU_ENABLE=1 run "allreduce-threads-parallel-init" allreduce --backend nccl -t 2 -g 1 --devices 0,0 -p 1 -b 8 -e 16M -f 8 -c 1
  else
    echo "== NCCL $NCCLV predates NCCL_MULTI_RANK_GPU_ENABLE: several ranks on one GPU need separate processes with NCCL_HOSTID"
  fi
  echo "== ranks on GPU 0 in separate processes through collbench launch $SHARE (functional only)"
  for c in $COLLS; do
    shared run "$c-2procs-1gpu" launch -n 2 $SHARE -- "$c" --backend nccl --devices 0 -b 8 -e 16M -f 8 -c 1 -r -1
  done
  shared run "allreduce-4procs-groups" launch -n 4 $SHARE -- allreduce --backend nccl --devices 0 -b 8 -e 16M -f 8 -c 1 --group-size 2 --layout strided
  shared run "allreduce-4procs-isolated" launch -n 4 $SHARE -- allreduce --backend nccl --devices 0 -b 8 -e 16M -f 8 -c 1 --group-size 2 --isolated
fi

# Overlap: a bf16 4096³ GEMM through cuBLAS, and a 1 GiB device copy,
# against all-reduces from 1 MiB to 1 GiB (with one GPU and several ranks the
# figure mixes in time-slicing; here it is one rank per GPU).
part overlap
echo "== overlap: bf16 4096x4096x4096 GEMM and a 1 GiB copy against all-reduce 1 MiB..1 GiB on $NGPU GPU(s)"
run "overlap-gemm-bf16" overlap --backend nccl -g "$NGPU" -b 1M -e 1G -f 8 --gemm 4096,4096,4096 -d bfloat16 \
  --copy 1G --target 0.5 -J "$OUTDIR/overlap.json" --galvatron "$OUTDIR/overlap_coefficient.json"
run "overlap-galvatron-preset" overlap --backend nccl -g "$NGPU" --preset galvatron
run "overlap-comm-high" overlap --backend nccl -g "$NGPU" -b 64M -e 64M --gemm 4096,4096,4096 --comm-priority high --nccl-max-ctas 8

# Calibration profile: the whole default suite (1 MiB..1 GiB, every group
# size and layout, overlap probes) on the GPUs of this host, exported to
# every target and read back by predict. With one GPU, four processes share
# it (functional only: the figures mix in time-slicing).
part profile
echo "== profile on $NGPU GPU(s), exports and predictions"
if [ "$NGPU" -ge 2 ]; then
  run "profile" profile --backend nccl -g "$NGPU" -o "$OUTDIR/profile.json" --export all --export-dir "$OUTDIR/exports"
else
  # 1 MiB to 128 MiB: the 8 whole-MiB sizes Galvatron's loader needs,
  # with few iterations, so the budget need not drop any (four processes
  # over sockets on one GPU take about 0.1 s per 64 MiB call).
  shared run "profile-4procs-1gpu" launch -n 4 $SHARE -- profile --backend nccl --devices 0 -b 1M -e 128M -n 5 -w 1 \
    --budget 150s -o "$OUTDIR/profile.json" --export all --export-dir "$OUTDIR/exports"
fi
run "predict-llama2-7b" predict --profile "$OUTDIR/profile.json" --model llama2-7b --seq 4096
run "predict-rank" predict --profile "$OUTDIR/profile.json" --model llama2-7b --seq 4096 --rank-strategies

# Health: the GPU-pair matrix and the node's all-reduce (docs/health.md
# records these). Exit 1 is a figure flagged, which is the check's job
# and worth reading, not a failure to run; several ranks on one GPU
# time-slice it, so there the figures prove the path, not the GPU.
part health
echo "== health on $NGPU GPU(s)"
health() {
  wanted || return 0
  local name="$1"; shift
  "$CB" "$@" >"$OUTDIR/$name.txt" 2>&1
  local rc=$?
  if [ $rc -le 1 ] || [ $rc -eq 4 ]; then # 4: the budget cut it short
    summary+=("PASS  $name  (exit $rc: $(tail -n 1 "$OUTDIR/$name.txt"))")
  else
    summary+=("FAIL  $name  (exit $rc; see $OUTDIR/$name.txt)")
    failures=$((failures + 1))
    tail -n 3 "$OUTDIR/$name.txt" | sed 's/^/      /'
  fi
}
if [ "$NGPU" -ge 2 ]; then
  health "health" health --backend nccl -g "$NGPU" -J "$OUTDIR/health.json" --heatmap "$OUTDIR/health.png"
else
  shared health "health-4procs-1gpu" launch -n 4 $SHARE -- health --backend nccl --devices 0 --budget 60s \
    -J "$OUTDIR/health.json" --heatmap "$OUTDIR/health.png"
fi

# Charts and a one-page report of what ran.
part report
records=()
for f in "allreduce-g$NGPU.json" "allreduce-float-g$NGPU.json" profile.json health.json; do
  [ -f "$OUTDIR/$f" ] && records+=("$OUTDIR/$f")
done
[ -f "$OUTDIR/allreduce-g$NGPU.json" ] &&
  run "plot-allreduce" plot "$OUTDIR/allreduce-g$NGPU.json" --only "float sum|bfloat16 sum|half sum" -o "$OUTDIR/allreduce-g$NGPU.svg"
[ -f "$OUTDIR/profile.json" ] && run "plot-profile" plot "$OUTDIR/profile.json" --only "allreduce|allgather" -o "$OUTDIR/profile.png"
[ "${#records[@]}" -gt 0 ] && run "report" report "${records[@]}" -o "$OUTDIR/report.html"

# 4. Side by side with nccl-tests: same flags, per-size ratios.
# table FILE: "size time algbw" of the out-of-place columns. The ratio is
# of algbw, which equals the busbw ratio (both tools apply one bus factor)
# and still means something on one GPU, where busbw is 0.
# (hypercube leaves the redop column empty, one field fewer.)
table() { awk '!/^#/ && NF >= 9 && $1 ~ /^[0-9]+$/ { if (NF == 12) print $1, $5, $6; else print $1, $6, $7 }' "$1"; }
compare() {
  local coll="$1" bin="$2"; shift 2
  local flags=("$@")
  "$NT/$bin" "${flags[@]}" >"$OUTDIR/$coll-nccl-tests.txt" 2>&1 || { echo "   $bin failed; see $OUTDIR/$coll-nccl-tests.txt"; return; }
  "$CB" "$coll" --backend nccl "${flags[@]}" >"$OUTDIR/$coll-collbench.txt" 2>&1 || { echo "   collbench $coll failed"; failures=$((failures + 1)); return; }
  echo "-- $coll ${flags[*]}"
  printf '   %12s %12s %12s %9s %11s\n' "size(B)" "nccl-tests" "collbench" "Δtime(us)" "algbw ratio"
  join <(table "$OUTDIR/$coll-nccl-tests.txt" | sort -k1,1) <(table "$OUTDIR/$coll-collbench.txt" | sort -k1,1) | sort -n |
    awk '{ r = ($3 > 0) ? $5 / $3 : 0; printf "   %12d %10.2fus %10.2fus %+9.2f %11.3f\n", $1, $2, $4, $4 - $2, r }'
}
part compare
if [ -n "$NT" ] && wanted; then
  echo "== side by side with nccl-tests in $NT (-g $NGPU)"
  base=(-g "$NGPU" -b 8 -e 1G -f 2 -n 50 -w 5 -c 0)
  compare allreduce all_reduce_perf "${base[@]}"
  compare allgather all_gather_perf "${base[@]}"
  compare reducescatter reduce_scatter_perf "${base[@]}"
  compare alltoall alltoall_perf "${base[@]}"
  compare broadcast broadcast_perf "${base[@]}"
  compare alltoallv alltoallv_perf "${base[@]}"
  [ "$pow2" -eq 1 ] && compare hypercube hypercube_perf "${base[@]}"
  NCCL_TESTS_ALLTOALLV_SPREAD=0.5 compare alltoallv alltoallv_perf -g "$NGPU" -b 1M -e 256M -f 4 -n 50 -w 5 -c 0
  compare allreduce all_reduce_perf -g "$NGPU" -b 8 -e 8K -f 2 -n 200 -w 20 -c 0 -G 10
fi

echo "== summary"
printf '%s\n' "${summary[@]}"
[ "$failures" -eq 0 ] || { echo "gpu-smoke: $failures run(s) failed"; exit 1; }
echo "gpu-smoke: all runs passed"
