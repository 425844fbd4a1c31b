#!/usr/bin/env bash
# Regenerates bench/gpu/testdata/nccl_tests_calls.txt: every NCCL and CUDA
# call nccl-tests issues for each collective, layout, type, size and
# placement, from nccl-tests' own startColl, setupArgs and per-collective
# functions, compiled on the host with recording stand-ins (shim.h,
# trace.cc) in place of NCCL and CUDA. Nothing of nccl-tests is kept: its
# functions are cut out of a checkout into a temporary folder.
#
# Usage: scripts/nccl-tests-calls/gen.sh NCCL_TESTS_CHECKOUT [OUTPUT]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=${1:?usage: gen.sh NCCL_TESTS_CHECKOUT [OUTPUT]}/src
out=${2:-$here/../../bench/gpu/testdata/nccl_tests_calls.txt}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# fn FILE NAME: the top-level definition of NAME in FILE, from its first
# line to the closing brace in column 0.
fn() { awk -v name="$2" '
  !on && $0 ~ "^[A-Za-z].*[ *]" name "\\(" && $0 !~ /;[ \t]*$/ { on = 1 }
  on { print }
  on && /^}/ { exit }' "$1"; }
# struct FILE NAME: a "struct testColl NAME = {...};" initialiser.
struct() { awk -v name="$2" '
  !on && $0 ~ "^struct testColl " name " = " { on = 1 }
  on { print }
  on && /^};/ { exit }' "$1"; }

{
  fn "$src/common.cu" setupArgs
  fn "$src/common.cu" startColl
  for pair in all_reduce:AllReduce:allReduceTest all_gather:AllGather:allGatherTest reduce_scatter:ReduceScatter:reduceScatterTest \
              alltoall:AlltoAll:alltoAllTest broadcast:Broadcast:broadcastTest reduce:Reduce:reduceTest \
              sendrecv:SendRecv:sendRecvTest gather:Gather:gatherTest scatter:Scatter:scatterTest \
              hypercube:HyperCube:hyperCubeTest; do
    IFS=: read -r file name var <<<"$pair"
    fn "$src/$file.cu" "${name}GetCollByteCount"
    fn "$src/$file.cu" "${name}RunColl"
    echo "struct testColl $var = {\"$name\", ${name}GetCollByteCount, nullptr, nullptr, ${name}RunColl};"
  done
  # alltoallv: its pattern state and helpers, then its two functions.
  awk '/^static int alltoallv_use_generated_pattern/ { on = 1 } /^testResult_t AlltoAllvInitData/ { exit } on { print }' "$src/alltoallv.cu" |
    awk '/^#define PRINT/ { next } { print }'
  fn "$src/alltoallv.cu" AlltoAllvRunColl
  echo 'struct testColl alltoAllvTest = {"AlltoAllv", AlltoAllvGetCollByteCount, nullptr, nullptr, AlltoAllvRunColl};'
} >"$work/extracted.inc"

: >"$out.tmp"
for code in 23007 22704; do
  g++ -std=c++17 -O0 -w -DTRACE_NCCL_CODE=$code -I"$here" -I"$work" -o "$work/trace" "$here/trace.cc"
  "$work/trace" >>"$out.tmp"
done
{
  echo "# Every NCCL and CUDA call nccl-tests $(cd "$src/.." && git describe --tags --always 2>/dev/null || echo '(unknown version)') issues per case,"
  echo "# from its own startColl and per-collective functions compiled on the host (scripts/nccl-tests-calls/gen.sh)."
  echo "# Pointers are named by the local GPU's buffer they point into: s1+0x40 is 0x40 bytes into GPU 1's send buffer."
  cat "$out.tmp"
} >"$out"
rm -f "$out.tmp"
wc -l "$out"
