#!/usr/bin/env bash
# Installs the Debian packages hotrow builds and tests with, only those that are missing.
# Safe to run again: when everything is there it prints one line and changes nothing.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  ninja-build ccache      # the build: Ninja schedules and times it, ccache reuses unchanged objects
  curl                    # the README tour and its test, the HTTPS test (curl --cacert)
  librdkafka-dev          # Kafka consumer/producer and the mock cluster (rdkafka_mock.h)
  librocksdb-dev          # the store
  libconcurrentqueue-dev  # bounded hand-over between ingest threads
  libspdlog-dev           # logging (brings fmt)
  libsimdjson-dev         # parsing event records
  nlohmann-json3-dev      # building JSON answers
  libboost1.81-dev        # the HTTP server: Boost.Beast and Asio (http/transport.cc)
  libcpp-httplib-dev      # HTTP clients: the CLI, the peers, the registry, the tests
  libssl-dev              # HTTPS (cpp-httplib's OpenSSL support; access/tls.cc)
  openssl                 # the HTTPS tests make their certificates with the openssl CLI
  libyaml-cpp-dev         # the config file
  libcli11-dev            # command-line parsing
  prometheus-cpp-dev      # /metrics text format
  libxxhash-dev           # stable 64-bit hashes for id hashing and salts
  libavro-dev             # ingest.format avro: Avro C (schemas, avro_value_read)
  libprotobuf-dev         # ingest.format protobuf: descriptors and DescriptorPool
  protobuf-compiler       # the format tests compile their .proto (protoc)
  python3-confluent-kafka python3-avro python3-protobuf python3-requests
                          # the format tests' independent encoders: Confluent's serializers
  libgtest-dev libgmock-dev
  libbenchmark-dev
  libsystemd-dev          # sd_notify: READY / WATCHDOG / RELOADING / STOPPING (service/notifier.cc)
  debhelper lintian       # scripts/package.sh: the .deb (dh_installsystemd) and its checks
  systemd                 # systemd-analyze verify of the unit (tests/packaging)
  wrk                     # the cluster load test's generator (and last_cache_bench's, cluster_bench's)
  iproute2                # ss: the HTTP test that reads the listen backlog
)
if [[ "${HOTROW_WITH_CLANG:-}" == 1 ]]; then   # the sanitizer builds and the fuzzers
  packages+=(clang libclang-rt-14-dev)           # and its sanitizer runtimes and libFuzzer
fi
if [[ "${HOTROW_WITH_BROWSER:-}" == 1 ]]; then   # scripts/test.sh: the status page in a real browser
  packages+=(chromium fonts-dejavu-core)          # headless, /usr/bin/chromium; a font to render text
  if ! command -v npm >/dev/null 2>&1; then       # playwright-core, installed by tests/browser/run.sh
    packages+=(nodejs npm)
  fi
  # (npm's eventsource, for the live streams' test, is installed the same way by
  # tests/live/eventsource/run.sh from its package-lock.json)
fi
if [[ "${HOTROW_WITH_BENCH:-}" == 1 ]]; then
  packages+=(redis-server libhiredis-dev  # the Redis peer benchmark
             libcurl4-openssl-dev         # range_http_bench's scan client
             gnuplot-nox                  # the plots in docs/BENCHMARKS.md and the soak run
             nginx-light)                 # http_core_bench: the HTTP core beside one nginx worker
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
