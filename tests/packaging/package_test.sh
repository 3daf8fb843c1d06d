#!/usr/bin/env bash
# The Debian package, built by scripts/package.sh and checked the way an operator's host would
# see it: its file list (dpkg-deb -c) and conffiles, lintian with no warning or error, the unit
# accepted by `systemd-analyze verify`, its `systemd-analyze security` exposure printed, and the
# package unpacked into a scratch root by dpkg itself (dpkg --root), where the installed binary
# checks the installed configuration. Exits 77 (ctest: skipped) naming what is missing on a
# machine without debhelper.
set -euo pipefail
cd "$(dirname "$0")/../.."

for tool in dpkg-buildpackage dh dh_installsystemd dpkg-deb; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "SKIP: $tool is absent (scripts/install-deps.sh installs debhelper)"
    exit 77
  fi
done

fail() { printf 'FAIL: %b\n' "$*" >&2; exit 1; }

# debian/rules installs the unit where systemd.pc says (systemd-dev on trixie, systemd before):
# asked of make with a systemd.pc that names another directory, the configure step passes it.
fake_pc=$(mktemp -d)
printf 'systemdsystemunitdir=/elsewhere/systemd/system\nName: systemd\nDescription: fake\nVersion: 999\n' \
  >"$fake_pc/systemd.pc"
configure=$(PKG_CONFIG_PATH=$fake_pc make -n -f packaging/debian/rules override_dh_auto_configure)
rm -rf "$fake_pc"
grep -q -- '-DHOTROW_SYSTEMD_UNIT_DIR=/elsewhere/systemd/system ' <<<"$configure" ||
  fail "debian/rules does not take the unit directory from pkg-config systemd:\n$configure"
unitdir=$(pkg-config --variable=systemdsystemunitdir systemd)
[[ -n $unitdir ]] || fail "pkg-config names no systemdsystemunitdir (systemd.pc is missing)"

# The Release build's flags (packaging/debian/rules): every object is then a ccache hit from the
# Release build CI has just made, and this test costs a link and dpkg's steps, not a compile.
# HOTROW_PACKAGE_FLAGS=debian checks the shipped flags instead (a cold compile with -g).
deb=$(HOTROW_PACKAGE_FLAGS=${HOTROW_PACKAGE_FLAGS:-release} bash scripts/package.sh --no-deps |
      tail -1)
[[ -f $deb ]] || fail "scripts/package.sh printed no .deb ($deb)"
echo "package: $deb ($(du -k "$deb" | cut -f1) KiB)"

# The file list.
list=$(dpkg-deb -c "$deb" | awk '{print $6}')
for path in ./usr/bin/hotrow ./etc/hotrow/hotrow.yaml ".$unitdir/hotrow.service" \
            ./usr/share/man/man1/hotrow.1.gz ./usr/share/doc/hotrow/copyright; do
  grep -qx "$path" <<<"$list" || fail "$path missing from the package:\n$list"
done
contents=$(dpkg-deb -c "$deb")
grep -q ' root/root .* ./usr/bin/hotrow$' <<<"$contents" || fail "/usr/bin/hotrow is not root's"
# The configuration is a conffile: an operator's edits survive upgrades.
dpkg-deb -f "$deb" Package >/dev/null
ctrl=$(mktemp -d)
trap 'rm -rf "$ctrl" "${root:-}"' EXIT
dpkg-deb -e "$deb" "$ctrl"
grep -qx /etc/hotrow/hotrow.yaml "$ctrl/conffiles" || fail "hotrow.yaml is not a conffile"
grep -q 'adduser --system' "$ctrl/postinst" || fail "postinst makes no hotrow user"
grep -q 'deb-systemd-helper' "$ctrl/postinst" || fail "postinst does not enable the unit"

# postinst configure, run with every command it calls replaced by a stub that logs its arguments
# (PATH holds only the stubs, so a command not stubbed fails the script instead of touching this
# host): the configuration, which may hold credentials, is made root:hotrow 0640 once the user
# exists, unless the administrator has a dpkg-statoverride for it.
stubs=$ctrl/stubs
mkdir "$stubs"
for cmd in getent adduser dpkg-statoverride chown chmod mkdir deb-systemd-helper \
           deb-systemd-invoke systemctl; do
  printf '#!/bin/sh\necho "%s $*" >>"$STUB_LOG"\n' "$cmd" >"$stubs/$cmd"
  chmod +x "$stubs/$cmd"
done
# getent and dpkg-statoverride answer as told: no user yet, no override.
printf '#!/bin/sh\necho "getent $*" >>"$STUB_LOG"\nexit "${GETENT_RC:-0}"\n' >"$stubs/getent"
printf '#!/bin/sh\necho "dpkg-statoverride $*" >>"$STUB_LOG"\nexit "${OVERRIDE_RC:-1}"\n' \
  >"$stubs/dpkg-statoverride"
run_postinst() {  # env assignments..., then: prints the commands postinst ran
  : >"$ctrl/stub.log"
  env -i PATH="$stubs" STUB_LOG="$ctrl/stub.log" "$@" /bin/sh -e "$ctrl/postinst" configure ||
    fail "postinst configure failed:\n$(cat "$ctrl/stub.log")"
  cat "$ctrl/stub.log"
}
ran=$(run_postinst GETENT_RC=2)
grep -qx 'chown root:hotrow /etc/hotrow/hotrow.yaml' <<<"$ran" ||
  fail "postinst does not give the configuration to group hotrow:\n$ran"
grep -qx 'chmod 0640 /etc/hotrow/hotrow.yaml' <<<"$ran" ||
  fail "postinst does not make the configuration 0640:\n$ran"
[[ $(grep -n '^adduser ' <<<"$ran" | cut -d: -f1) -lt \
   $(grep -n '^chown root:hotrow' <<<"$ran" | cut -d: -f1) ]] ||
  fail "postinst sets the configuration's group before it makes the user:\n$ran"
ran=$(run_postinst GETENT_RC=0 OVERRIDE_RC=0)
if grep -q 'hotrow.yaml' <<<"$(grep -v '^dpkg-statoverride' <<<"$ran")"; then
  fail "postinst overrides the administrator's dpkg-statoverride:\n$ran"
fi
echo "postinst: configuration root:hotrow 0640 after adduser; a dpkg-statoverride is kept"

# lintian: no error and no warning (overrides, each with its reason, in packaging/debian/).
if command -v lintian >/dev/null 2>&1; then
  lintian --fail-on error,warning "$deb" || fail "lintian"
  echo "lintian: clean"
else
  echo "lintian: absent, not run"
fi

# Unpacked by dpkg into a scratch root (no maintainer script runs at --unpack: the user and
# the unit's enabling are the host's business, and this test must not touch the host).
root=$(mktemp -d)
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
touch "$root/var/lib/dpkg/status"
dpkg --root="$root" --force-not-root --force-depends --force-script-chrootless \
  --log=/dev/null --unpack "$deb" >/dev/null
[[ -x $root/usr/bin/hotrow ]] || fail "dpkg --root did not unpack /usr/bin/hotrow"
# The license, as DEP-5 states it (an SPDX identifier) and as the repository's LICENSE holds it.
grep -qx 'License: Apache-2.0' "$root/usr/share/doc/hotrow/copyright" ||
  fail "debian/copyright does not state the Apache-2.0 license"
grep -q 'Apache License' LICENSE && grep -q 'Version 2.0, January 2004' LICENSE ||
  fail "LICENSE is not the Apache License 2.0"
# A conffile stays <name>.dpkg-new until --configure, which would run postinst (adduser) on the
# host: not done here.
config=$root/etc/hotrow/hotrow.yaml.dpkg-new
grep -q '^  path: /var/lib/hotrow$' "$config" ||
  fail "the installed configuration's store.path is not /var/lib/hotrow"
# store.path moved into the scratch root: check-config asks whether the user running it may write
# it, and /var/lib/hotrow on this host is not the test's.
"$root/usr/bin/hotrow" check-config --config "$config" --set "store.path=$root/var/lib/hotrow" \
  >/dev/null || fail "the installed binary refuses the installed configuration"
"$root/usr/bin/hotrow" --help | grep -q check-config || fail "--help does not list check-config"

# The unit.
if command -v systemd-analyze >/dev/null 2>&1; then
  unit=$root$unitdir/hotrow.service
  grep -qx 'Type=notify' "$unit" || fail "the unit is not Type=notify"
  grep -qx 'ExecStart=/usr/bin/hotrow serve --config /etc/hotrow/hotrow.yaml' "$unit" ||
    fail "the unit's ExecStart is not the installed binary and configuration"
  # verify runs the Exec*= binaries' checks and `man` for Documentation=: the unit as installed,
  # with the paths of /usr/bin/hotrow and /etc/hotrow moved into the scratch root, and its manual
  # page found there (--root would also move systemd's own targets and /bin/kill out of reach).
  mkdir "$root/verify"
  sed -e "s|/usr/bin/hotrow|$root/usr/bin/hotrow|g" -e "s|/etc/hotrow/|$root/etc/hotrow/|g" \
    "$unit" >"$root/verify/hotrow.service"
  out=$(MANPATH=$root/usr/share/man systemd-analyze verify "$root/verify/hotrow.service" 2>&1) ||
    fail "systemd-analyze verify:\n$out"
  [[ -z $out ]] || fail "systemd-analyze verify is not clean:\n$out"
  echo "systemd-analyze verify: clean"
  systemd-analyze security --offline=true "$unit" 2>/dev/null | tail -1 || true
else
  echo "systemd-analyze: absent, the unit not verified"
fi
echo "PASS"
