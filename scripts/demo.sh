#!/usr/bin/env bash
# The README's first command: install what is missing, build, and run `hotrow demo`
# (a loopback Kafka broker, a synthetic IoT producer and the service, HTTP on 127.0.0.1:8080).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
exec build/hotrow demo "$@"
