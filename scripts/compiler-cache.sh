# Sourced by the build scripts: when ccache is installed, compile through it. Paths under the
# checkout are hashed relative to it, so a second clone (CI's, a worktree) reuses the objects.
# Without ccache nothing changes.
if command -v ccache >/dev/null 2>&1; then
  export CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_C_COMPILER_LAUNCHER=ccache
  export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=true
fi
