#!/usr/bin/env bash
# Checks `collbench profile --power-window` on a GPU in about two minutes:
# a profile of the four collectives AIConfigurator reads over 2 ranks,
# 1 MiB to 256 MiB, each size run on for a 1 s power window, while
# nvidia-smi samples GPU 0's draw every 100 ms beside it as an
# independent witness. Then, per size:
#   - the sample's power: readings (about 11 per GPU), calls, window;
#   - the mean reading (AIConfigurator's figure) against the energy
#     counters' mean over the same window (PASS within 5 %);
#   - every reading within what nvidia-smi saw during the run (+5 %);
# and the AIConfigurator table exported from the profile carries power
# and power_limit on every row. It writes summary.txt and every log into
# the output folder and packs it into gpu-power.tgz beside it.
#
# Usage: scripts/gpu-power.sh [--collbench BIN] [--out DIR] [--host] [-- ARGS...]
#   --collbench  collbench binary (default bin/collbench, then PATH)
#   --out        output folder (default $OUT/gpu-power, else a temporary one)
#   --host       check only what the host backend does: it refuses the
#                window, and a profile without power exports no power
#   ARGS         more profile arguments: how the 2 ranks run, e.g.
#                --nccl-lib DIR (NCCL >= 2.30 shares one GPU between the
#                ranks of a process with NCCL_MULTI_RANK_GPU_ENABLE=1)
# Exit status: 0 when every check passed, 1 otherwise, 2 on bad usage.
set -uo pipefail

CB="" OUTDIR="" HOST=0
while [ $# -gt 0 ]; do
  case "$1" in
    --collbench) CB="$2"; shift 2 ;;
    --out) OUTDIR="$2"; shift 2 ;;
    --host) HOST=1; shift ;;
    --) shift; break ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    *) echo "gpu-power: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ -z "$CB" ]; then
  if [ -x bin/collbench ]; then CB=bin/collbench; else CB=$(command -v collbench || true); fi
fi
[ -n "$CB" ] && [ -x "$CB" ] || { echo "gpu-power: no collbench binary; build it with: CGO_ENABLED=1 go build -o bin/collbench ./cmd/collbench" >&2; exit 2; }
if [ -z "$OUTDIR" ]; then
  if [ -n "${OUT:-}" ]; then OUTDIR=$OUT/gpu-power; else OUTDIR=$(mktemp -d); fi
fi
mkdir -p "$OUTDIR" || exit 2
R=$(cd "$OUTDIR" && pwd)
SUM=$R/summary.txt
: >"$SUM"
failures=0
say() { echo "$*" | tee -a "$SUM"; }
verdict() { # verdict NAME STATUS DETAIL
  [ "$2" = PASS ] || failures=$((failures + 1))
  say "$2  $1  ($3)"
}
pack() {
  tar -C "$(dirname "$R")" -czf "$R.tgz" "$(basename "$R")"
  [ "$failures" -eq 0 ]
  exit $?
}

PROFILE=(profile -g 2 -d float --colls allreduce,allgather,reducescatter,alltoall --group-sizes 2 --layouts consecutive -b 1M -e 256M
  -n 20 -w 5 --no-overlap -q)

if [ "$HOST" = 1 ]; then
  timeout 60 "$CB" "${PROFILE[@]}" --backend host -b 4K -e 64K --power-window 1 -o "$R/refused.json" "$@" \
    >"$R/refused.log" 2>&1
  rc=$?
  if [ "$rc" = 2 ] && grep -q "power-window reads the GPUs' power draw from NVML; the host backend drives no GPU" "$R/refused.log"; then
    verdict host-refuses-window PASS "exit 2, one line"
  else
    verdict host-refuses-window FAIL "exit $rc: $(head -c 300 "$R/refused.log")"
  fi
  timeout 120 "$CB" "${PROFILE[@]}" --backend host -b 4K -e 64K -o "$R/profile.json" \
    --export aiconfigurator --export-dir "$R/aic" "$@" >"$R/profile.log" 2>&1
  rc=$?
  if [ "$rc" = 0 ] && head -1 "$R/aic/nccl_perf.txt" | grep -qv power; then
    verdict host-no-power-column PASS "$(head -1 "$R/aic/nccl_perf.txt")"
  else
    verdict host-no-power-column FAIL "exit $rc: $(tail -c 300 "$R/profile.log")"
  fi
  pack
fi

command -v nvidia-smi >/dev/null || { verdict nvidia-smi FAIL "not found"; pack; }
nvidia-smi --query-gpu=timestamp,power.draw,power.limit --format=csv,noheader,nounits -i 0 -lms 100 >"$R/smi.csv" 2>&1 &
SMI=$!
sleep 1
NCCL_MULTI_RANK_GPU_ENABLE=${NCCL_MULTI_RANK_GPU_ENABLE:-1} timeout 300 "$CB" "${PROFILE[@]}" --power-window 1 \
  -o "$R/profile.json" --export aiconfigurator --export-dir "$R/aic" "$@" >"$R/profile.log" 2>&1
rc=$?
sleep 1
kill "$SMI" 2>/dev/null
wait "$SMI" 2>/dev/null
if [ "$rc" != 0 ]; then
  verdict profile FAIL "exit $rc: $(tail -c 400 "$R/profile.log")"
  pack
fi
verdict profile PASS "exit 0"

python3 - "$R/profile.json" "$R/smi.csv" "$R/aic/nccl_perf.txt" >>"$SUM" <<'PY'
import csv, json, sys
prof = json.load(open(sys.argv[1]))
smi = []
for line in open(sys.argv[2]):
    parts = [p.strip() for p in line.split(",")]
    try:
        smi.append(float(parts[1]))
    except (IndexError, ValueError):
        pass
hi = max(smi) if smi else float("nan")
print(f"#   nvidia-smi: {len(smi)} readings, {min(smi) if smi else float('nan'):.1f} to {hi:.1f} W")
print("#   bytes        time_us   calls  window_s  readings    w_mean  w_counter  ratio")
bad = 0
for c in prof["curves"]:
    for s in c["samples"]:
        p = s.get("power")
        if not p:
            print(f"FAIL  sample-{s['bytes']}  (no power)")
            bad += 1
            continue
        ratio = p.get("counter_w", 0) / p["w"] if p["w"] > 0 else float("nan")
        print(f"#   {s['bytes']:<11d} {s['time_us']:9.1f} {p['calls']:7d} {p['window_s']:9.3f} {p['samples']:9d} {p['w']:9.1f} {p.get('counter_w', 0):10.1f} {ratio:6.3f}")
        ok = p["w"] > 0 and p["samples"] >= 5 and p["window_s"] >= 0.9
        if not ok:
            print(f"FAIL  sample-{s['bytes']}  (readings {p['samples']}, window {p['window_s']} s, {p['w']} W)")
            bad += 1
        if p.get("counter_w", 0) > 0 and abs(ratio - 1) > 0.05:
            print(f"FAIL  counter-{s['bytes']}  (mean reading {p['w']:.1f} W, counters {p['counter_w']:.1f} W)")
            bad += 1
        if smi and p["w"] > 1.05 * hi:
            print(f"FAIL  witness-{s['bytes']}  ({p['w']:.1f} W above nvidia-smi's {hi:.1f} W)")
            bad += 1
rows = list(csv.DictReader(open(sys.argv[3])))
if not rows or any(r.get("power") in (None, "") or float(r["power"]) <= 0 for r in rows):
    print("FAIL  aiconfigurator-power  (a row without power)")
    bad += 1
else:
    print(f"PASS  aiconfigurator-power  ({len(rows)} rows, {min(float(r['power']) for r in rows):.1f} to {max(float(r['power']) for r in rows):.1f} W)")
print("PASS  samples  (every size read)" if bad == 0 else f"FAIL  samples  ({bad} failed)")
sys.exit(1 if bad else 0)
PY
[ $? = 0 ] || failures=$((failures + 1))
pack
