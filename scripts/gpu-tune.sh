#!/usr/bin/env bash
# collbench tune on one GPU, in a short slot (a few minutes on one H100):
#   1. NCCL's example tuner plugin built from an NCCL source of 2.30 or
#      later (scripts/tuner-plugin.sh; gcc only, under a second);
#   2. tune over ring and tree × LL, LL128 and Simple on two ranks sharing
#      GPU 0 in one process (NCCL_MULTI_RANK_GPU_ENABLE=1, NCCL >= 2.30),
#      all-reduce 1 KiB-16 MiB, the file proven by the plugin;
#   3. NCCL's own log with the file loaded (NCCL_DEBUG_SUBSYS=TUNING): the
#      plugin's "Applied config" lines and NCCL's choice per size;
#   4. NCCL held to a worse setting (NCCL_PROTO=Simple in the environment):
#      NCCL marks the other protocols unusable for the plugin too, so rows
#      for them cannot take effect, and the proof must say so.
# It writes summary.txt and every log and record into the output folder
# and packs it into gpu-tune.tgz beside it.
#
# Usage: scripts/gpu-tune.sh --nccl-lib LIB --nccl-src SRC [--collbench BIN] [--out DIR] [--deadline S]
#        scripts/gpu-tune.sh --host [--collbench BIN] [--out DIR]
#   --nccl-lib   libnccl.so.2 of NCCL 2.30 or later (the one scripts/gpu-check.sh
#                builds, …/ncclb/lib/libnccl.so.2, will do)
#   --nccl-src   NCCL source folder for the example plugin (2.30 or later)
#   --host       the same steps on the host backend (its own model held to
#                the ring by COLLBENCH_HOST_DOUBLING_MAX=0, no plugin to build):
#                a check of the script where no GPU is
# Exit status: 0 when every step passed, 1 otherwise, 2 on bad usage.
set -uo pipefail

CB="" LIB="" SRC="" OUTDIR="" DEADLINE=480 HOST=0
while [ $# -gt 0 ]; do
  case "$1" in
    --collbench) CB="$2"; shift 2 ;;
    --nccl-lib) LIB="$2"; shift 2 ;;
    --nccl-src) SRC="$2"; shift 2 ;;
    --out) OUTDIR="$2"; shift 2 ;;
    --deadline) DEADLINE="$2"; shift 2 ;;
    --host) HOST=1; shift ;;
    -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
    *) echo "gpu-tune: unknown argument $1" >&2; exit 2 ;;
  esac
done
case "$DEADLINE" in ''|*[!0-9]*) echo "gpu-tune: --deadline wants whole seconds (got $DEADLINE)" >&2; exit 2 ;; esac
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "$CB" ]; then
  if [ -x bin/collbench ]; then CB=bin/collbench; else CB=$(command -v collbench || true); fi
fi
[ -n "$CB" ] && [ -x "$CB" ] || { echo "gpu-tune: no collbench binary; build it with: CGO_ENABLED=1 go build -o bin/collbench ./cmd/collbench" >&2; exit 2; }
CB=$(cd "$(dirname "$CB")" && pwd)/$(basename "$CB")
if [ "$HOST" -eq 0 ]; then
  [ -f "$LIB" ] || { echo "gpu-tune: --nccl-lib names no file (NCCL 2.30 or later)" >&2; exit 2; }
  [ -d "$SRC" ] || { echo "gpu-tune: --nccl-src names no folder (NCCL's source, 2.30 or later)" >&2; exit 2; }
fi
if [ -z "$OUTDIR" ]; then
  if [ -n "${OUT:-}" ]; then OUTDIR=$OUT/gpu-tune; else OUTDIR=$(mktemp -d); fi
fi
mkdir -p "$OUTDIR" || exit 2
R=$(cd "$OUTDIR" && pwd)
SUM=$R/summary.txt
: >"$SUM"
failures=0
say() { echo "$*" | tee -a "$SUM"; }
left() { echo $((DEADLINE - SECONDS)); }
# step NAME LIMIT CMD...: CMD into NAME.txt under timeout; one summary line.
step() {
  local name=$1 limit=$2; shift 2
  if [ "$(left)" -lt 20 ]; then say "SKIP  $name  (the deadline came first)"; return 125; fi
  [ "$limit" -gt "$(left)" ] && limit=$(left)
  local start=$SECONDS
  timeout -k 5 "$limit" "$@" >"$R/$name.txt" 2>"$R/$name.err"
  local rc=$?
  echo "rc $rc" >>"$R/$name.err"
  if [ "$rc" -eq 0 ]; then say "PASS  $name  ($((SECONDS - start)) s)"
  else
    failures=$((failures + 1))
    say "FAIL  $name  (exit $rc, $((SECONDS - start)) s: $(grep -v '^rc ' "$R/$name.err" | tail -n 1 | cut -c1-300))"
  fi
  return $rc
}

say "# gpu-tune $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
if [ "$HOST" -eq 1 ]; then
  export COLLBENCH_HOST_DOUBLING_MAX=0
  SWEEP=(allreduce -g 4 --transport tcp -b 1K -e 16K -f 16 -n 40 -w 5)
  SPACE=(--protocols 256K,64 --rounds 12)
  PLUGIN=()
  LOADED=(env "COLLBENCH_HOST_TUNER_FILE=$R/tuned.conf" "COLLBENCH_HOST_TUNING_LOG=$R/loaded.log")
  say "# host mode: the host backend, its own model held to the ring (COLLBENCH_HOST_DOUBLING_MAX=0)"
else
  { nvidia-smi; nproc; } >"$R/env.txt" 2>&1
  say "# $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
  export COLLBENCH_NCCL_LIB=$LIB NCCL_MULTI_RANK_GPU_ENABLE=1
  SWEEP=(allreduce --backend nccl -g 2 --devices 0,0 -b 1K -e 16M -f 16 -d float -o sum -n 50 -w 5)
  SPACE=(--algorithms ring,tree --protocols ll,ll128,simple)
  if step plugin 60 bash "$here/tuner-plugin.sh" "$SRC" "$R/plugin"; then
    PLUGIN=(--plugin "$(tail -n 1 "$R/plugin.txt")")
  else
    PLUGIN=()
  fi
  LOADED=(env "NCCL_TUNER_PLUGIN=${PLUGIN[1]:-}" "NCCL_TUNER_CONFIG_FILE=$R/tuned.conf" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING
    "NCCL_DEBUG_FILE=$R/loaded.log")
fi
"$CB" doctor >"$R/doctor.txt" 2>&1

# 2. The tuning, proof included.
step tune 300 "$CB" tune -q "${SPACE[@]}" "${PLUGIN[@]}" -o "$R/tuned.conf" -J "$R/tune.json" --measured "$R/measured.csv" -- "${SWEEP[@]}"
sed 's/^/#   /' "$R/tune.txt" | grep -E '^#   (# (band|proof|the file|note|error)|  +[0-9])' | tee -a "$SUM" >/dev/null

# 3. The sweep with the file loaded, the library's log kept: the choices
# it made per size (and, on NCCL, the plugin's lines).
if [ -s "$R/tuned.conf" ]; then
  step loaded 120 "${LOADED[@]}" "$CB" "${SWEEP[@]}"
  grep -h -E "Applied config|No matching config|Bytes -> Algo" "$R/loaded.log" 2>/dev/null | sed -E 's/^.*(TUNER|AllReduce)/\1/' |
    sort | uniq -c | sort -rn | head -n 20 | sed 's/^/#   log: /' | tee -a "$SUM" >/dev/null
fi

# 4. Held to a worse setting that also binds the plugin: every row the
# setting rules out must show as not taking effect, and be taken out.
if [ "$HOST" -eq 0 ]; then
  NCCL_PROTO=Simple step held-worse 300 "$CB" tune -q "${SPACE[@]}" "${PLUGIN[@]}" -o "$R/held.conf" -J "$R/held.json" -- "${SWEEP[@]}"
  grep -E '^# (not as the file says|band|note)' "$R/held-worse.txt" | sed 's/^/#   /' | tee -a "$SUM" >/dev/null
fi

say "#"
say "# $(grep -c '^PASS' "$SUM") passed, $(grep -c '^FAIL' "$SUM") failed, $(grep -c '^SKIP' "$SUM") skipped in ${SECONDS} s"
tar -czf "$R.tgz" --exclude=plugin -C "$(dirname "$R")" "$(basename "$R")" 2>/dev/null
[ "$failures" -eq 0 ]
