#!/usr/bin/env bash
# A GPU check that fits a short slot: about 6 minutes on one H100 with 16
# cores, builds included. It builds nccl-tests against the installed NCCL
# and, when that NCCL predates 2.30, NCCL itself from a source snapshot
# (float-sum and copy kernels only), both at once; then
#   1. all-reduce and broadcast at 8 B-64 KiB, one rank, side by side with
#      nccl-tests on the same NCCL: three interleaved rounds, each tool's
#      median time per size, the difference and the ratio;
#   2. every collective with 2, 4 and 8 ranks on GPU 0 in one process
#      (NCCL_MULTI_RANK_GPU_ENABLE=1, NCCL >= 2.30), checked, each bounded;
#   3. if time is left, the stall watchdog on ranks whose CTAs cannot all
#      fit the GPU (exit 4 and its line, or the run completing).
# It writes summary.txt (PASS/FAIL/SKIP per run, the side-by-side table)
# and every log into the output folder, and packs the folder, less the
# builds, into gpu-check.tgz beside it.
#
# Usage: scripts/gpu-check.sh [--collbench BIN] [--nccl-tests SRC] [--nccl-src SRC]
#                             [--out DIR] [--deadline SECONDS] [--host]
#   --collbench  collbench binary (default bin/collbench, then PATH)
#   --nccl-tests nccl-tests source folder (default .dev/nccl-tests)
#   --nccl-src   NCCL source folder, built when the installed NCCL predates
#                2.30 (default .dev/nccl)
#   --out        output folder (default $OUT/gpu-check, else a temporary one)
#   --deadline   seconds after which no new step starts (default 330)
#   --host       the same steps on the host backend, without builds, and
#                collbench under nccl-tests' names in its place: a check of
#                the script itself where no GPU is
# Exit status: 0 when every run passed, 1 otherwise, 2 on bad usage.
set -uo pipefail

CB="" NTSRC=.dev/nccl-tests NCCLSRC=.dev/nccl OUTDIR="" DEADLINE=330 HOST=0
while [ $# -gt 0 ]; do
  case "$1" in
    --collbench) CB="$2"; shift 2 ;;
    --nccl-tests) NTSRC="$2"; shift 2 ;;
    --nccl-src) NCCLSRC="$2"; shift 2 ;;
    --out) OUTDIR="$2"; shift 2 ;;
    --deadline) DEADLINE="$2"; shift 2 ;;
    --host) HOST=1; shift ;;
    -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
    *) echo "gpu-check: unknown argument $1" >&2; exit 2 ;;
  esac
done
case "$DEADLINE" in ''|*[!0-9]*) echo "gpu-check: --deadline wants whole seconds (got $DEADLINE)" >&2; exit 2 ;; esac
if [ -z "$CB" ]; then
  if [ -x bin/collbench ]; then CB=bin/collbench; else CB=$(command -v collbench || true); fi
fi
[ -n "$CB" ] && [ -x "$CB" ] || { echo "gpu-check: no collbench binary; build it with: CGO_ENABLED=1 go build -o bin/collbench ./cmd/collbench" >&2; exit 2; }
CB=$(cd "$(dirname "$CB")" && pwd)/$(basename "$CB")
if [ -z "$OUTDIR" ]; then
  if [ -n "${OUT:-}" ]; then OUTDIR=$OUT/gpu-check; else OUTDIR=$(mktemp -d); fi
fi
mkdir -p "$OUTDIR" || exit 2
R=$(cd "$OUTDIR" && pwd)
SUM=$R/summary.txt
: >"$SUM"
failures=0

log() { echo "[+${SECONDS}s] $*"; }
say() { echo "$*" | tee -a "$SUM"; }
left() { echo $((DEADLINE - SECONDS)); }
# verdict NAME RC SECONDS LOG: one summary line for a finished run.
verdict() {
  local name=$1 rc=$2 secs=$3 file=$4
  if [ "$rc" -eq 0 ]; then
    say "PASS  $name  (${secs} s)"
  else
    failures=$((failures + 1))
    local why
    why=$(grep -v '^#' "$file" | grep -v '^ *[0-9]' | grep -v '^rc ' | tail -n 1 | cut -c1-300)
    [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && why="killed at its outer time limit; $why"
    say "FAIL  $name  (exit $rc, ${secs} s: ${why:-see $(basename "$file")})"
  fi
}
# step NAME LIMIT CMD...: runs CMD into NAME.txt under timeout, unless the
# deadline is too near; returns the command's exit status.
step() {
  local name=$1 limit=$2; shift 2
  if [ "$(left)" -lt 10 ]; then say "SKIP  $name  (the deadline came first)"; return 125; fi
  [ "$limit" -gt "$(left)" ] && limit=$(left)
  local start=$SECONDS
  timeout -k 5 "$limit" "$@" >"$R/$name.txt" 2>&1
  local rc=$?
  echo "rc $rc" >>"$R/$name.txt"
  verdict "$name" "$rc" $((SECONDS - start)) "$R/$name.txt"
  return $rc
}
pack() {
  # The builds stay out of the pack: only logs and tables travel.
  tar -czf "$R.tgz" --exclude=ntb --exclude=ncclb --exclude=ncclhome \
    -C "$(dirname "$R")" "$(basename "$R")" 2>/dev/null && log "packed $R.tgz"
}

say "# gpu-check $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
if [ "$HOST" -eq 1 ]; then
  BACKEND=(--backend host)
  # collbench itself under nccl-tests' names stands in for nccl-tests, so
  # that the comparison runs too (both sides on the host backend).
  NTBIN=$R/ntb-host; mkdir -p "$NTBIN"
  ln -sf "$CB" "$NTBIN/all_reduce_perf"; ln -sf "$CB" "$NTBIN/broadcast_perf"
  say "# host mode: the host backend, no builds; collbench named as nccl-tests stands in for it"
else
  BACKEND=(--backend nccl)
  { nvidia-smi; nvidia-smi topo -m; nvcc --version; nproc; } >"$R/env.txt" 2>&1
  say "# $(nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader 2>/dev/null | head -1)"
fi
"$CB" doctor >"$R/doctor.txt" 2>&1
WHEEL=$(python3 -c "import nvidia.nccl, os; print(list(nvidia.nccl.__path__)[0])" 2>/dev/null || true)
if [ "$HOST" -eq 0 ] && ! grep -Eq '^NCCL: +[0-9]' "$R/doctor.txt" && [ -n "$WHEEL" ]; then
  export COLLBENCH_NCCL_LIB=$WHEEL/lib/libnccl.so.2
  "$CB" doctor >"$R/doctor.txt" 2>&1
fi
NCCLV=$(awk '/^NCCL: +[0-9]/ {print $2; exit}' "$R/doctor.txt")
# Both tools must load the same file: pin the one collbench found.
if [ "$HOST" -eq 0 ] && [ -n "$NCCLV" ] && [ -z "${COLLBENCH_NCCL_LIB:-}" ]; then
  found=$(awk '/^NCCL: +[0-9]/ {gsub(/[()]/, "", $3); print $3; exit}' "$R/doctor.txt")
  case "$found" in
    /*) export COLLBENCH_NCCL_LIB=$found ;;
    *) lib=$(ldconfig -p 2>/dev/null | awk '/libnccl\.so\.2 / {print $NF; exit}')
       [ -n "$lib" ] || lib=$WHEEL/lib/libnccl.so.2
       export COLLBENCH_NCCL_LIB=$lib ;;
  esac
fi
say "# NCCL for the side by side: ${NCCLV:-none}"
if [ "$HOST" -eq 0 ] && [ -z "$NCCLV" ]; then
  say "FAIL  doctor  (no NCCL: $(tail -n 1 "$R/doctor.txt"))"; pack; exit 1
fi

# Builds, both at once.
SHARED_LIB=""
if [ "$HOST" -eq 0 ]; then
  NTBIN=""
  export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
  [ -x "$CUDA_HOME/bin/nvcc" ] || CUDA_HOME=$(dirname "$(dirname "$(command -v nvcc)")")
  cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d .)
  GENCODE="-gencode=arch=compute_${cap:-90},code=sm_${cap:-90}"
  # nccl-tests wants NCCL_HOME/include and NCCL_HOME/lib/libnccl.so: the
  # loaded NCCL's folder, or the wheel's.
  NH=$R/ncclhome; mkdir -p "$NH/lib"
  libdir=$(dirname "$(readlink -f "$COLLBENCH_NCCL_LIB")")
  say "# NCCL file for both tools: $COLLBENCH_NCCL_LIB"
  inc=""
  for d in "$libdir/../include" "$WHEEL/include" /usr/include; do [ -f "$d/nccl.h" ] && { inc=$d; break; }; done
  if [ -d "$NTSRC/src" ] && [ -n "$inc" ]; then
    ln -sfn "$(cd "$inc" && pwd)" "$NH/include"
    ln -sf "$(readlink -f "$COLLBENCH_NCCL_LIB")" "$NH/lib/libnccl.so"
    ln -sf "$(readlink -f "$COLLBENCH_NCCL_LIB")" "$NH/lib/libnccl.so.2"
    ( cd "$NTSRC" && timeout 200 make -j16 BUILDDIR="$R/ntb" NCCL_HOME="$NH" CUDA_HOME="$CUDA_HOME" MPI=0 \
        NVCC_GENCODE="$GENCODE" >"$R/build-nccl-tests.txt" 2>&1; echo "rc $?" >>"$R/build-nccl-tests.txt" ) &
    NTBUILD=$!
  else
    say "SKIP  build-nccl-tests  (no nccl-tests sources at $NTSRC or no nccl.h)"
  fi
  major=${NCCLV%%.*}; rest=${NCCLV#*.}; minor=${rest%%.*}
  if [ "${major:-0}" -gt 2 ] || { [ "${major:-0}" -eq 2 ] && [ "${minor:-0}" -ge 30 ]; }; then
    SHARED_LIB=${COLLBENCH_NCCL_LIB:-}
    say "# NCCL for several ranks on one GPU: ${NCCLV} (installed)"
  elif [ -d "$NCCLSRC/src" ]; then
    ( cd "$NCCLSRC" && timeout 240 make -j16 src.build BUILDDIR="$R/ncclb" CUDA_HOME="$CUDA_HOME" NVCC_GENCODE="$GENCODE" \
        ONLY_FUNCS="AllReduce Sum f32 * *|Reduce Sum f32 * *|ReduceScatter Sum f32 * *|AllGather * *|Broadcast * *|SendRecv" \
        >"$R/build-nccl.txt" 2>&1; echo "rc $?" >>"$R/build-nccl.txt" ) &
    NCCLBUILD=$!
  else
    say "SKIP  build-nccl  (NCCL $NCCLV predates 2.30 and there are no NCCL sources at $NCCLSRC)"
  fi
  if [ -n "${NTBUILD:-}" ]; then
    wait "$NTBUILD"
    if [ -x "$R/ntb/all_reduce_perf" ]; then NTBIN=$R/ntb; say "PASS  build-nccl-tests  ($(tail -n 1 "$R/build-nccl-tests.txt"), +${SECONDS} s)"
    else failures=$((failures + 1)); say "FAIL  build-nccl-tests  ($(tail -n 3 "$R/build-nccl-tests.txt" | tr '\n' ' '))"; fi
  fi
  if [ -n "${NCCLBUILD:-}" ]; then
    wait "$NCCLBUILD"
    SHARED_LIB=$(ls "$R"/ncclb/lib/libnccl.so.2 2>/dev/null || true)
    if [ -n "$SHARED_LIB" ]; then say "PASS  build-nccl  (+${SECONDS} s: $(basename "$(readlink -f "$SHARED_LIB")"))"
    else failures=$((failures + 1)); say "FAIL  build-nccl  ($(tail -n 3 "$R/build-nccl.txt" | tr '\n' ' '))"; fi
  fi
fi

# 1. Small messages side by side: three interleaved rounds.
say "#"
say "# Side by side at 8 B-64 KiB, one rank, 3 interleaved rounds; out-of-place time (us), median over rounds"
ITERS=(-n 500 -w 50)
[ "$HOST" -eq 1 ] && ITERS=(-n 20 -w 2)
for round in 1 2 3; do
  for c in allreduce broadcast; do
    nt=all_reduce_perf; [ "$c" = broadcast ] && nt=broadcast_perf
    if [ -n "$NTBIN" ]; then
      LD_LIBRARY_PATH=$R/ncclhome/lib:${LD_LIBRARY_PATH:-} step "nt-$c-$round" 60 "$NTBIN/$nt" -g 1 -b 8 -e 64K -f 2 "${ITERS[@]}" -c 0
    fi
    step "cb-$c-$round" 60 "$CB" "$c" "${BACKEND[@]}" -g 1 -b 8 -e 64K -f 2 "${ITERS[@]}" -c 0
  done
done
# median over the rounds of the out-of-place time (column 6) per size
medians() { # PREFIX COLL
  for f in "$R/$1-$2-"[123].txt; do [ -f "$f" ] && awk '$1 ~ /^[0-9]+$/ && NF >= 13 {print $1, $6}' "$f"; done |
    sort -n -k1,1 -k2,2g | awk '{v[$1] = v[$1] " " $2; n[$1]++} END {for (s in v) {split(substr(v[s], 2), a, " "); print s, a[int((n[s] + 1) / 2)]}}' |
    sort -n
}
for c in allreduce broadcast; do
  medians cb "$c" >"$R/median-cb-$c.txt"
  medians nt "$c" >"$R/median-nt-$c.txt"
  say "#   $c        size  nccl-tests   collbench    delta   ratio  verdict (within 0.3 us or 5 %)"
  awk 'FILENAME == ARGV[1] {nt[$1] = $2; next} {print $1, $2, nt[$1]}' "$R/median-nt-$c.txt" "$R/median-cb-$c.txt" | awk -v c="$c" '{
      if (NF < 3) { printf "#   %-9s %8d  %10s  %10.2f  %7s  %6s  %s\n", c, $1, "-", $2, "-", "-", "n/a (no nccl-tests)"; next }
      d = $2 - $3; r = $3 > 0 ? $2 / $3 : 0; ok = (d <= 0.3 || r <= 1.05) ? "PASS" : "FAIL"
      printf "#   %-9s %8d  %10.2f  %10.2f  %+7.2f  %6.3f  %s\n", c, $1, $3, $2, d, r, ok }' | tee -a "$SUM"
done
if grep -q "^#   .*  FAIL$" "$SUM"; then failures=$((failures + 1)); fi

# 2. Several ranks on GPU 0 in one process, every collective, checked.
say "#"
if [ "$HOST" -eq 1 ] || [ -n "$SHARED_LIB" ]; then
  say "# Several ranks on one device in one process, every collective checked (float sum), each bounded by -T 20"
  SIZES=(-b 8 -e 16M -f 8 -n 5 -w 1)
  [ "$HOST" -eq 1 ] && SIZES=(-b 8 -e 64K -f 8 -n 2 -w 1)
  for g in 2 4 8; do
    DEVS=()
    if [ "$HOST" -eq 0 ]; then DEVS=(--devices "$(printf '0,%.0s' $(seq 1 "$g") | sed 's/,$//')"); fi
    for c in allreduce allgather reducescatter alltoall alltoallv broadcast reduce sendrecv gather scatter hypercube; do
      op=(); case "$c" in allreduce|reducescatter|reduce) op=(-o sum) ;; esac
      if [ "$HOST" -eq 1 ]; then
        step "shared-g$g-$c" 60 "$CB" "$c" "${BACKEND[@]}" -g "$g" "${SIZES[@]}" -d float "${op[@]}" -c 1 -T 20
      else
        COLLBENCH_NCCL_LIB=$SHARED_LIB NCCL_MULTI_RANK_GPU_ENABLE=1 \
          step "shared-g$g-$c" 60 "$CB" "$c" "${BACKEND[@]}" -g "$g" "${DEVS[@]}" "${SIZES[@]}" -d float "${op[@]}" -c 1 -T 20
      fi
    done
  done
  # The preamble says how the CTAs were shared out.
  grep -h "share GPU" "$R"/shared-g*-allreduce.txt 2>/dev/null | sed 's/^/#   /' | tee -a "$SUM"
else
  say "SKIP  shared  (no NCCL 2.30 or later for several ranks on one GPU)"
fi

# 3. The stall watchdog: four ranks on one GPU, each allowed all of
# NCCL's 64 CTAs, with no -T. A hang must end in exit 4 and one line.
if [ "$HOST" -eq 0 ] && [ -n "$SHARED_LIB" ] && [ "$(left)" -ge 90 ]; then
  start=$SECONDS
  COLLBENCH_NCCL_LIB=$SHARED_LIB NCCL_MULTI_RANK_GPU_ENABLE=1 timeout -k 5 85 "$CB" allreduce "${BACKEND[@]}" -g 4 --devices 0,0,0,0 \
    --nccl-max-ctas 64 -b 1M -e 16M -f 4 -d float -o sum -c 1 >"$R/watchdog.txt" 2>&1
  rc=$?
  case $rc in
    0) say "INFO  watchdog  (64 CTAs per rank did not hang here; nothing to catch, $((SECONDS - start)) s)" ;;
    4) say "PASS  watchdog  (exit 4 after $((SECONDS - start)) s: $(tail -n 1 "$R/watchdog.txt" | cut -c1-300))" ;;
    *) failures=$((failures + 1)); say "FAIL  watchdog  (exit $rc after $((SECONDS - start)) s: $(tail -n 1 "$R/watchdog.txt" | cut -c1-300))" ;;
  esac
fi

say "#"
say "# $(grep -c '^PASS' "$SUM") passed, $(grep -c '^FAIL' "$SUM") failed, $(grep -c '^SKIP' "$SUM") skipped in ${SECONDS} s"
pack
[ "$failures" -eq 0 ]
