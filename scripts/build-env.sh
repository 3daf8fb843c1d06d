# Sourced by the build scripts (build.sh, test-sanitizers.sh, fuzz.sh, test.sh): how every build
# directory is configured and compiled.
#
# - Ninja when it is installed (scripts/install-deps.sh installs it): it schedules both cores from
#   the first file, and its log (.ninja_log) times every object, which test.sh reports.
# - ccache when it is installed (install-deps.sh installs it). Paths under the checkout are hashed
#   relative to it, so a second clone (CI's, a worktree) reuses the objects of the first.
# Without either, the builds are the same, only slower.

if command -v ccache >/dev/null 2>&1; then
  export CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_C_COMPILER_LAUNCHER=ccache
  export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=true
  export CCACHE_SLOPPINESS=time_macros,include_file_mtime,include_file_ctime
  # Depend mode: a miss compiles once, without the extra preprocessor pass that ccache otherwise
  # runs to hash a file it has not seen (0.2 CPU-seconds a file here); the compiler's .d file
  # (Ninja and CMake ask for one) lists the headers to hash instead.
  export CCACHE_DEPEND=true
  export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-12G}  # Release, ASan, TSan and fuzz objects together
fi
if command -v ninja >/dev/null 2>&1; then
  export CMAKE_GENERATOR=Ninja
fi

# hotrow_configure DIR [cmake args...]: configures DIR from this checkout. A directory made by
# another generator (an older checkout's Makefiles) or compiler (CXX: a sanitizer build of an older
# checkout, made with GCC) is reset first: cmake refuses to switch either.
hotrow_configure() {
  local dir=$1
  shift
  local cache=$dir/CMakeCache.txt
  if [[ -f $cache && -n ${CMAKE_GENERATOR:-} ]] &&
     ! grep -q "^CMAKE_GENERATOR:INTERNAL=${CMAKE_GENERATOR}$" "$cache"; then
    rm -rf "$cache" "$dir/CMakeFiles"
  fi
  if [[ -f $cache ]] &&
     ! grep -q "^CMAKE_CXX_COMPILER:[A-Z]*=$(command -v "${CXX:-c++}")$" "$cache"; then
    rm -rf "$cache" "$dir/CMakeFiles"
  fi
  cmake -S . -B "$dir" "$@" >/dev/null
}

# hotrow_compile DIR [targets...]: builds DIR with HOTROW_JOBS jobs (default 2) and, with ccache,
# prints this build's hits and misses.
hotrow_compile() {
  local dir=$1
  shift
  local targets=()
  if (($# > 0)); then targets=(--target "$@"); fi
  if command -v ccache >/dev/null 2>&1; then ccache --zero-stats >/dev/null; fi
  cmake --build "$dir" -j"${HOTROW_JOBS:-2}" "${targets[@]}"
  if command -v ccache >/dev/null 2>&1; then
    ccache --print-stats 2>/dev/null | awk -F'\t' -v dir="$dir" '
      $1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" { hits += $2 }
      $1 == "cache_miss" { misses += $2 }
      END { total = hits + misses
            printf "ccache (%s): %d hits, %d misses, %.0f%% hit rate\n", dir, hits, misses,
                   total ? 100 * hits / total : 0 }'
  fi
}
