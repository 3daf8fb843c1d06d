#!/usr/bin/env bash
# Builds the Debian package of hotrow with Debian's own tools (dpkg-buildpackage, debhelper,
# dh_installsystemd) into build/package/, and prints the path of the .deb on its last line.
# Install it with: sudo apt install ./build/package/hotrow_*.deb (README "Install").
#
# Why a staging tree: dpkg-buildpackage wants debian/ at the top of the tree it builds and writes
# its results (.deb, .buildinfo, .changes) into that tree's parent. The Debian files are data kept
# in packaging/debian/ (STYLE.md "Packaging files are data"), and the repository's parent is not
# ours to write to, so the package is built from build/package/hotrow/: links to the checkout's
# files, and a copy of packaging/debian/ as debian/ (debhelper takes no source directory outside
# the tree it builds). Results land in build/package/. The CMake build (build/package/hotrow/debbuild)
# uses ccache like scripts/build.sh, so a second run compiles nothing that has not changed.
#
# Options: --no-deps skips scripts/install-deps.sh (CI has run it).
# HOTROW_PACKAGE_FLAGS=release (tests/packaging/package_test.sh) compiles with scripts/build.sh's
# Release flags instead of dpkg-buildflags' hardening, so that ccache serves every object from the
# Release build (packaging/debian/rules).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

if [[ ${1:-} != --no-deps ]]; then bash scripts/install-deps.sh; fi
for tool in dpkg-buildpackage dh dh_installsystemd; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "package.sh: $tool is missing (apt-get install debhelper dpkg-dev)" >&2
    exit 3
  fi
done
source scripts/build-env.sh

out=$root/build/package
stage=$out/hotrow
rm -f "$out"/hotrow_*.deb "$out"/hotrow_*.buildinfo "$out"/hotrow_*.changes \
  "$out"/hotrow-dbgsym_*.deb
# The staging tree: a link to each top-level entry of the checkout but build/, and a copy of
# packaging/debian/ as debian/. Its CMake build directory (debbuild/) is kept between runs.
mkdir -p "$stage"
find "$stage" -mindepth 1 -maxdepth 1 ! -name 'debbuild*' -exec rm -rf {} +
for entry in "$root"/* "$root"/.clang-format; do
  name=$(basename "$entry")
  # debbuild is the build directory's name: a checkout entry by that name would be built into.
  [[ -e $entry && $name != build && $name != debian && $name != debbuild* ]] || continue
  ln -s "$entry" "$stage/$name"
done
cp -r packaging/debian "$stage/debian"

# -b: binary only (the source is this repository); -us -uc: not signed;
# --no-check-builddeps would hide a missing library until the compiler fails: keep the check.
(cd "$stage" && dpkg-buildpackage -b -us -uc -j"${HOTROW_JOBS:-2}") >"$out/build.log" 2>&1 || {
  tail -40 "$out/build.log" >&2
  echo "package.sh: dpkg-buildpackage failed; the whole log is $out/build.log" >&2
  exit 1
}
deb=$(ls "$out"/hotrow_*.deb)
echo "$deb"
