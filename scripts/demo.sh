#!/usr/bin/env bash
# The README's first command: install what is missing, build the `hotrow` binary (and only it: no
# tests, benchmarks or fuzz targets), and run `hotrow demo` (a loopback Kafka broker, a synthetic
# IoT producer and the service; HTTP and the status page on 127.0.0.1:8080).
set -euo pipefail
cd "$(dirname "$0")/.."
HOTROW_BUILD_TARGET=hotrow bash scripts/build.sh
exec build/hotrow demo "$@"
