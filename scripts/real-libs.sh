#!/usr/bin/env bash
# Checks the NVIDIA bindings (nccl/, cuda/, machine/) against the real
# libraries from Debian's archive, on a machine without a GPU:
#   - each real nccl.h (2.22.3 and 2.29.7): ncclConfig_t's size and offsets
#     against nccl/'s layout tables, the enum values, and every hand-written
#     entry point's parameters against the real declaration;
#   - each real libnccl.so.2: every entry point exported (or gated above its
#     release), loading, version detection, gating, a unique id, and the
#     one-line error of a communicator without a GPU;
#   - the real libcuda.so.1 (driver 550): its exports, and cuInit failing in
#     one named line while the driver stays loaded;
#   - collbench itself with those libraries: doctor, --backend nccl and the
#     automatic fallback to the host backend.
#
# The debs are fetched with a private apt configuration (its own sources
# list, lists and cache) into a cache folder, reused when present, and
# unpacked with dpkg -x; nothing is installed. The probes run as an
# unprivileged user when this runs as root: the real driver creates
# /dev/nvidiactl when it runs as root, even without a GPU.
#
# Usage: scripts/real-libs.sh    (cache: $COLLBENCH_REAL_LIBS, default
# ~/.cache/collbench/real-libs, or /var/cache/collbench/real-libs for root;
# about 430 MB of debs, under a minute cold)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
export PATH=$PATH:/usr/local/go/bin

# The cache must be readable by the unprivileged user the probes run as:
# root's home is not, so root keeps it under /var/cache.
if [ "$(id -u)" -eq 0 ]; then
  W=${COLLBENCH_REAL_LIBS:-/var/cache/collbench/real-libs}
else
  W=${COLLBENCH_REAL_LIBS:-$HOME/.cache/collbench/real-libs}
fi
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
# Pinned versions. trixie's stay in the archive. sid's libnccl2 moves on:
# when an exact-version download of NCCL_NEW fails, set it to the version
# `apt-cache madison libnccl2` shows for sid (the checks take any release),
# or keep a cache folder that holds the old debs.
NCCL_OLD=${NCCL_OLD:-2.22.3-1-1}    # trixie/contrib
NCCL_NEW=${NCCL_NEW:-2.29.7-1-1}    # sid/contrib
DRIVER=${DRIVER:-550.163.01-2}      # trixie/non-free: libcuda1, libnvidia-ml1
LIBC=${LIBC:-2.41-12+deb13u5}       # trixie/main: Debian's libnccl2 needs glibc 2.38
# With FULL=1 (or when they are already in the cache): the CUDA 12.4
# headers (cuda.h, cublas_api.h: a 934 MB deb) and cuBLAS, for the driver's
# and cuBLAS's prototypes, names and constants.
CUDA_DEV=${CUDA_DEV:-12.4.127~12.4.1-2}  # trixie/non-free: nvidia-cuda-dev
CUBLAS=${CUBLAS:-12.4.5.8~12.4.1-2}      # trixie/non-free: libcublas12, libcublaslt12
full_debs=(nvidia-cuda-dev_${CUDA_DEV} libcublas12_${CUBLAS} libcublaslt12_${CUBLAS})

log() { printf 'real-libs: %s\n' "$*" >&2; }
fail() { log "FAILED: $*"; exit 1; }

fetch() {
  mkdir -p "$W/apt/lists/partial" "$W/apt/cache/archives/partial" "$W/debs"
  local want=(libnccl2_${NCCL_OLD} libnccl-dev_${NCCL_OLD} libnccl2_${NCCL_NEW} libnccl-dev_${NCCL_NEW}
    libcuda1_${DRIVER} libnvidia-ml1_${DRIVER} libc6_${LIBC})
  [ "${FULL:-0}" = 1 ] && want+=("${full_debs[@]}")
  local missing=()
  for d in "${want[@]}"; do
    [ -f "$W/debs/${d}_amd64.deb" ] || missing+=("${d/_/=}")
  done
  [ ${#missing[@]} -eq 0 ] && return
  printf 'deb %s trixie main contrib non-free\ndeb %s sid contrib non-free\n' "$mirror" "$mirror" >"$W/apt/sources.list"
  local o=(-o "Dir::Etc::SourceList=$W/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
    -o "Dir::State::Lists=$W/apt/lists" -o "Dir::Cache=$W/apt/cache" -o "Dir::Cache::archives=$W/apt/cache/archives"
    -o APT::Sandbox::User="$(id -un)")
  log "fetching ${missing[*]}"
  apt-get "${o[@]}" update -qq
  (cd "$W/debs" && apt-get "${o[@]}" download -qq "${missing[@]}")
}

unpack() {
  local v
  for v in "$NCCL_OLD" "$NCCL_NEW"; do
    local dst="$W/nccl-${v%%-*}"
    [ -f "$dst/.done" ] && continue
    rm -rf "$dst" && mkdir -p "$dst"
    dpkg -x "$W"/debs/libnccl2_"$v"_amd64.deb "$dst"
    dpkg-deb --fsys-tarfile "$W"/debs/libnccl-dev_"$v"_amd64.deb | tar -x -C "$dst" ./usr/include
    touch "$dst/.done"
  done
  if [ ! -f "$W/drv/.done" ]; then
    rm -rf "$W/drv"
    dpkg -x "$W"/debs/libcuda1_*"$DRIVER"*_amd64.deb "$W/drv"
    dpkg -x "$W"/debs/libnvidia-ml1_*"$DRIVER"*_amd64.deb "$W/drv"
    touch "$W/drv/.done"
  fi
  if have_full && [ ! -f "$W/cuda/.done" ]; then
    rm -rf "$W/cuda" && mkdir -p "$W/cuda"
    dpkg-deb --fsys-tarfile "$W/debs/nvidia-cuda-dev_${CUDA_DEV}_amd64.deb" | tar -x -C "$W/cuda" ./usr/include
    dpkg -x "$W/debs/libcublas12_${CUBLAS}_amd64.deb" "$W/cuda"
    dpkg -x "$W/debs/libcublaslt12_${CUBLAS}_amd64.deb" "$W/cuda"
    touch "$W/cuda/.done"
  fi
  if [ ! -f "$W/sysroot/.done" ]; then
    rm -rf "$W/sysroot"
    dpkg -x "$W"/debs/libc6_*_amd64.deb "$W/sysroot"
    touch "$W/sysroot/.done"
  fi
}

# have_full says whether the CUDA headers' and cuBLAS's debs are cached.
have_full() {
  local d
  for d in "${full_debs[@]}"; do [ -f "$W/debs/${d}_amd64.deb" ] || return 1; done
}

# as runs a probe as an unprivileged user when this script is root.
as() {
  if [ "$(id -u)" -eq 0 ]; then
    setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/tmp "$@"
  else
    env "$@"
  fi
}

fetch
unpack
old=$W/nccl-${NCCL_OLD%%-*} new=$W/nccl-${NCCL_NEW%%-*}
lib=usr/lib/x86_64-linux-gnu
drv=$W/drv/$lib/nvidia/current
sys=$W/sysroot/$lib
export COLLBENCH_NCCL_INCLUDE=$old/usr/include:$new/usr/include
export COLLBENCH_NCCL_LIBS=$old/$lib/libnccl.so.2:$new/$lib/libnccl.so.2
export COLLBENCH_CUDA_DRIVER=$drv/libcuda.so.1
cudaenv=()
if have_full; then
  cudaenv=(COLLBENCH_CUDA_INCLUDE="$W/cuda/usr/include" COLLBENCH_CUBLAS="$W/cuda/$lib/libcublas.so.12")
else
  log "the CUDA headers and cuBLAS are not cached: their checks are skipped (FULL=1 fetches them)"
fi

# Binaries that load Debian's libnccl2 run on trixie's glibc, through its
# own loader: this machine's may be older than the 2.38 it needs.
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
chmod 755 "$bin"
ldflags="-Wl,--dynamic-linker=$sys/ld-linux-x86-64.so.2 -Wl,-rpath,$sys"
CGO_LDFLAGS="$ldflags" go test -c -o "$bin/nccl.test" ./nccl
go test -c -o "$bin/cuda.test" ./cuda
go test -c -o "$bin/machine.test" ./machine
CGO_LDFLAGS="$ldflags" go build -o "$bin/collbench" ./cmd/collbench
chmod -R a+rX "$W" "$bin"

log "nccl.h, libnccl.so.2 (${NCCL_OLD%%-*}, ${NCCL_NEW%%-*}) and libcuda.so.1 ($DRIVER), as $(as id -un)"
(cd nccl && as COLLBENCH_NCCL_INCLUDE="$COLLBENCH_NCCL_INCLUDE" COLLBENCH_NCCL_LIBS="$COLLBENCH_NCCL_LIBS" \
  "$bin/nccl.test" -test.run 'TestReal|TestFakeLibrary|TestLoadFailures' -test.v) | grep -E '^(--- |    real_test|ok|PASS|FAIL)' || fail nccl
(cd cuda && as COLLBENCH_CUDA_DRIVER="$COLLBENCH_CUDA_DRIVER" "${cudaenv[@]}" LD_LIBRARY_PATH="$drv" "$bin/cuda.test" -test.v) |
  grep -E '^(--- |    real|PASS|FAIL)' || fail cuda
(cd machine && as LD_LIBRARY_PATH="$drv" COLLBENCH_REAL_NVML=1 "$bin/machine.test" -test.v) | grep -E '^(--- |PASS|FAIL)' || fail machine

# collbench with the real libraries and no GPU: one line and exit 1 where
# the nccl backend is required, the host backend with the reason otherwise.
export LD_LIBRARY_PATH=$drv:$new/$lib
check() { # check NAME WANT_EXIT PATTERN -- ARGS: one stderr line matching PATTERN
  local name=$1 want=$2 pat=$3 code=0
  shift 4
  as LD_LIBRARY_PATH="$LD_LIBRARY_PATH" "$bin/collbench" "$@" >"$bin/out" 2>"$bin/err" || code=$?
  if [ "$code" -ne "$want" ] || ! grep -qE "$pat" "$bin/err" "$bin/out" || [ "$(wc -l <"$bin/err")" -gt 1 ]; then
    log "$name: exit $code (want $want); stderr:"; cat "$bin/err" >&2; fail "$name"
  fi
  log "ok: $name: $(head -c 200 "$bin/err" | tr -d '\n')"
}
check "doctor" 1 'CUDA_ERROR_NO_DEVICE' -- doctor
check "doctor names NCCL" 1 'NCCL 2\.29\.7|2\.29\.7' -- doctor
check "doctor --nccl-lib missing" 1 'given by the caller' -- doctor --nccl-lib /nonexistent/libnccl.so.2
check "--backend nccl" 1 'nccl backend is not available.*CUDA_ERROR_NO_DEVICE' -- allreduce -b 8 -e 8 --backend nccl
check "auto falls back" 0 'Backend: host \(auto: ' -- allreduce -b 8 -e 8 -g 2
# ab with Debian's two NCCLs as its arms: both load and are named by
# version, and both fail in their first round, one line each (no GPU).
code=0
as LD_LIBRARY_PATH="$LD_LIBRARY_PATH" "$bin/collbench" ab --rounds 5 --arm "lib=$old/$lib/libnccl.so.2" --arm "lib=$new/$lib/libnccl.so.2" \
  -- allreduce -b 8 -e 8 --backend nccl >"$bin/out" 2>"$bin/err" || code=$?
if [ "$code" -ne 1 ] || ! grep -q "^# arm A: .*; NCCL ${NCCL_OLD%%-*} (" "$bin/out" || ! grep -q "^# arm B: .*; NCCL ${NCCL_NEW%%-*} (" "$bin/out" ||
  [ "$(wc -l <"$bin/err")" -ne 2 ] || [ "$(grep -c 'failed in round 1 (exit 1): collbench allreduce: the nccl backend is not available.*CUDA_ERROR_NO_DEVICE' "$bin/err")" -ne 2 ]; then
  log "ab with both NCCLs: exit $code (want 1); stdout:"; cat "$bin/out" >&2; log "stderr:"; cat "$bin/err" >&2; fail "ab"
fi
log "ok: ab: $(grep -h '^# arm' "$bin/out" | tr '\n' ' ' | head -c 300)"
# The same library named by its link and by its folder is one file: ab
# refuses the two arms before the first round, naming the file loaded.
check "ab, one library twice" 2 "load $new/$lib/libnccl\\.so\\.2\\.[0-9.]+ with the same settings" -- \
  ab --arm "lib=$new/$lib/libnccl.so.2" --arm "lib=$new/$lib" -- allreduce -b 8 -e 8 --backend nccl
log "all checks passed"
