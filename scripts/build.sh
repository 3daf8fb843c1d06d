#!/usr/bin/env bash
# Installs what is missing and builds hotrow (Release) into build/. Extra arguments go to cmake's
# configure step, e.g. scripts/build.sh -DHOTROW_WERROR=ON.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
source scripts/compiler-cache.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j"${HOTROW_JOBS:-2}"
