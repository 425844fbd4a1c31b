#!/usr/bin/env bash
# Builds NCCL's example tuner plugin (plugins/tuner/example in NCCL's
# source: libnccl-tuner-example.so, which reads the CSV collbench tune
# writes) and prints the path of the library it built.
#
#   scripts/tuner-plugin.sh NCCL_SOURCE [OUTDIR]   from an NCCL source tree (a clone of NVIDIA/nccl)
#   scripts/tuner-plugin.sh --debian [OUTDIR]      from Debian's source of NCCL (nvidia-nccl), fetched
#                                                  with a private apt configuration into a cache
#
# Then: collbench tune --plugin "$(scripts/tuner-plugin.sh ~/nccl)" -- allreduce …
# Beside the library it links the source's scripts/optimize_config.py.
#
# The plugin is plain C with headers of its own: gcc builds it without
# CUDA, as the plugin's Makefile does (minus NCCL's common flags). A plugin
# from a source older than NCCL 2.30 (no ncclTunerPlugin_v6) reads NCCL's
# cost table as an array of pointers and crashes under NCCL on its first
# matching row; the script refuses it unless --parser-only is given (the
# parser tests, tuner's TestAgainstThePlugin, call it as its own unit test
# does, and .ci/run builds Debian's 2.29.7 that way).
#
# Cache for --debian: $COLLBENCH_TUNER_PLUGIN_CACHE, default
# ~/.cache/collbench/tuner-plugin (/var/cache/collbench/tuner-plugin for
# root); about 1.3 MB of source.
set -euo pipefail

log() { printf 'tuner-plugin: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

parser_only=0
debian=0
args=()
for a in "$@"; do
  case "$a" in
    --parser-only) parser_only=1 ;;
    --debian) debian=1 ;;
    -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $a (see --help)" ;;
    *) args+=("$a") ;;
  esac
done

if [ "$(id -u)" -eq 0 ]; then
  W=${COLLBENCH_TUNER_PLUGIN_CACHE:-/var/cache/collbench/tuner-plugin}
else
  W=${COLLBENCH_TUNER_PLUGIN_CACHE:-$HOME/.cache/collbench/tuner-plugin}
fi
mkdir -p "$W"

if [ "$debian" = 1 ]; then
  out=${args[0]:-$W}
  mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
  src=$(ls -d "$W"/src/nccl-* 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -z "$src" ]; then
    mkdir -p "$W/apt/lists/partial" "$W/apt/cache/archives/partial" "$W/orig"
    printf 'deb-src %s trixie main contrib non-free\ndeb-src %s sid contrib non-free\n' "$mirror" "$mirror" >"$W/apt/sources.list"
    o=(-o "Dir::Etc::SourceList=$W/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
      -o "Dir::State::Lists=$W/apt/lists" -o "Dir::Cache=$W/apt/cache" -o APT::Sandbox::User="$(id -un)")
    apt-get "${o[@]}" update -qq
    # The newest source Debian has; only its upstream tarball is needed,
    # and apt fetches it before the package's own files.
    version=$(apt-cache "${o[@]}" showsrc nvidia-nccl | sed -n 's/^Version: //p' | sort -V | tail -n 1)
    [ -n "$version" ] || die "Debian's sources list no nvidia-nccl"
    log "fetching Debian's source of NCCL $version"
    (cd "$W/orig" && apt-get "${o[@]}" source --download-only -qq "nvidia-nccl=$version" >/dev/null 2>&1 || true)
    tarball=$(ls "$W"/orig/nvidia-nccl_*.orig.tar.* 2>/dev/null | sort -V | tail -n 1 || true)
    [ -n "$tarball" ] || die "no upstream tarball of nvidia-nccl $version arrived from $mirror"
    mkdir -p "$W/src"
    tar -xf "$tarball" -C "$W/src" --wildcards '*/plugins/tuner/example/*'
    src=$(ls -d "$W"/src/nccl-* | sort -V | tail -n 1)
  fi
else
  [ ${#args[@]} -ge 1 ] || die "usage: $0 NCCL_SOURCE [OUTDIR] | --debian [OUTDIR] (see --help)"
  src=${args[0]}
  out=${args[1]:-$W}
fi

ex="$src/plugins/tuner/example"
[ -f "$ex/plugin.c" ] || ex="$src/ext-tuner/example"
[ -f "$ex/plugin.c" ] || die "$src holds no plugins/tuner/example/plugin.c: is it NCCL's source (2.19 or later)?"
grep -q NCCL_TUNER_CONFIG_FILE "$ex/plugin.c" || die "$ex/plugin.c reads no CSV file (NCCL_TUNER_CONFIG_FILE): its example plugin is older than the CSV one (NCCL 2.27)"
mkdir -p "$out"
so="$(cd "$out" && pwd)/libnccl-tuner-example.so"
gcc -O2 -fPIC -shared -I"$ex/nccl" -o "$so" "$ex/plugin.c" -Wl,-soname,libnccl-tuner-example.so
if ! nm -D --defined-only "$so" | grep -q ' ncclTunerPlugin_v6$'; then
  if [ "$parser_only" = 1 ]; then
    log "built from a source older than NCCL 2.30: for the parser tests only (under NCCL it crashes on its first matching row)"
  else
    rm -f "$so"
    die "$ex/plugin.c is older than NCCL 2.30: it reads NCCL's cost table as an array of pointers and crashes under NCCL on its first matching row; build from NCCL 2.30 or later (--parser-only builds it for the parser tests)"
  fi
fi
# The script that turns measured rows into a file, beside the plugin:
# tuner's tests run it on the rows collbench tune writes.
[ -f "$ex/scripts/optimize_config.py" ] && ln -sf "$(cd "$ex/scripts" && pwd)/optimize_config.py" "$(dirname "$so")/optimize_config.py"
log "built $so from $ex"
printf '%s\n' "$so"
