#!/usr/bin/env bash
# Installs what is missing and builds hotrow (Release) into build/. Extra arguments go to cmake's
# configure step, e.g. scripts/build.sh -DHOTROW_WERROR=ON. HOTROW_BUILD_TARGET=hotrow builds that
# one target (what scripts/demo.sh needs) instead of everything (what scripts/test.sh needs).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
source scripts/build-env.sh
hotrow_configure build -DCMAKE_BUILD_TYPE=Release "$@"
hotrow_compile build ${HOTROW_BUILD_TARGET:+"$HOTROW_BUILD_TARGET"}
