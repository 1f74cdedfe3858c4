#!/usr/bin/env bash
# Build llama.cpp's llama-server, llama-bench, llama-batched-bench and llama-quantize for this CPU,
# from the llama.cpp source that the llama-cpp-python source distribution on PyPI carries (pinned
# below), into a cache folder kept between runs; prints the folder holding the binaries.
#   scripts/llama_cpp.sh            build if missing, print the bin folder
# The first build took 5 minutes on two cores here; later calls return at once.
# Needs cmake, a C/C++ compiler and ninja or make (apt: cmake g++ ninja-build).
set -euo pipefail
VERSION=0.3.36     # llama-cpp-python 0.3.36 vendors llama.cpp at commit 0c1e5709
# built for this CPU (-march=native): the cache is per CPU model, so a copied home folder never runs
# another machine's binaries
CPU=$( (grep -m1 "model name" /proc/cpuinfo 2>/dev/null || uname -m) | cksum | cut -d" " -f1)
CACHE=${ADVISOR_LLAMA_CPP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/advisor/llama.cpp-$VERSION-$CPU}
BIN=$CACHE/build/bin
TARGETS=(llama-server llama-bench llama-batched-bench llama-quantize)

have_all() { for t in "${TARGETS[@]}"; do [ -x "$BIN/$t" ] || return 1; done; }
if have_all; then echo "$BIN"; exit 0; fi

if ! command -v cmake >/dev/null || ! command -v c++ >/dev/null; then
  if command -v apt-get >/dev/null; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    echo "llama_cpp.sh: installing cmake, g++ and ninja" >&2
    $SUDO apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends cmake g++ ninja-build >&2
  fi
fi
for tool in cmake c++; do
  command -v "$tool" >/dev/null || { echo "llama_cpp.sh: $tool is missing (apt-get install cmake g++ ninja-build)" >&2; exit 2; }
done
PY=${PYTHON:-$(dirname "$0")/../.venv/bin/python}
[ -x "$PY" ] || PY=python3
mkdir -p "$CACHE"
SRC=$CACHE/src
if [ ! -f "$SRC/CMakeLists.txt" ]; then
  tmp=$(mktemp -d)
  "$PY" -m pip download -q --no-deps --no-binary :all: -d "$tmp" "llama-cpp-python==$VERSION" >&2
  tar xzf "$tmp"/llama_cpp_python-"$VERSION".tar.gz -C "$tmp"
  rm -rf "$SRC"
  mv "$tmp/llama_cpp_python-$VERSION/vendor/llama.cpp" "$SRC"
  rm -rf "$tmp"
fi
GEN=(); command -v ninja >/dev/null && GEN=(-G Ninja)
cmake -S "$SRC" -B "$CACHE/build" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
  -DGGML_NATIVE=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON >&2
cmake --build "$CACHE/build" -j "$(nproc)" --target "${TARGETS[@]}" >&2
have_all || { echo "llama_cpp.sh: the build did not produce every tool" >&2; exit 1; }
echo "$BIN"
