#!/usr/bin/env bash
# The Debian package, built as a user builds it (cpack in the build dir), checked by Debian's own
# tools: its control fields, that every library the binary loads is a declared dependency, that apt
# can install it here with those dependencies, its file list, lintian without errors, and that the
# binary, manual page and bash completion work from a throwaway root it was unpacked into.
# Usage: deb_test.sh <build dir> <version>
set -euo pipefail
build=$1
version=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# No "producer | grep -q" under pipefail: grep -q exits at the first match, and a producer still
# writing then dies of SIGPIPE and fails the pipeline (this made the test flaky). grep reads all.
matches() { grep "$@" >/dev/null; }

(cd "$build" && cpack --config CPackConfig.cmake -G DEB -B "$work/out") >"$work/cpack.log" 2>&1 || { cat "$work/cpack.log"; fail "cpack"; }
deb="$work/out/etcdadm_${version}_amd64.deb"
[ -f "$deb" ] || { ls -l "$work/out"; fail "no $deb"; }
echo "built $(basename "$deb"): $(stat -c %s "$deb") bytes"

# Control fields.
field() { dpkg-deb -f "$deb" "$1"; }
[ "$(field Package)" = etcdadm ] || fail "Package: $(field Package)"
[ "$(field Version)" = "$version" ] || fail "Version: $(field Version)"
[ "$(field Architecture)" = amd64 ] || fail "Architecture: $(field Architecture)"
[ "$(field Section)" = admin ] || fail "Section: $(field Section)"
field Maintainer | matches '<.*@.*>' || fail "Maintainer: $(field Maintainer)"
field Description | matches 'etcd backups' || fail "Description: $(field Description)"
depends=$(field Depends)
echo "Depends: $depends"
depends_names=$(echo "$depends" | tr ',|' '\n\n' | awk '{print $1}')

# Every shared library the binary links directly (its NEEDED entries; the rest come with those)
# belongs to a package named in Depends.
mkdir "$work/root"
dpkg -x "$deb" "$work/root"
bin="$work/root/usr/bin/etcdadm"
while read -r lib; do
  pkg=$(dpkg -S "$(readlink -f "$lib")" 2>/dev/null | head -1 | cut -d: -f1) || true
  [ -n "$pkg" ] || pkg=$(dpkg -S "$lib" 2>/dev/null | head -1 | cut -d: -f1) || true
  [ -n "$pkg" ] || fail "no package owns $lib"
  # The package itself, or a virtual package it provides (libspdlog1.10 provides libspdlog1.10-fmt9,
  # the name its shlibs file gives dependents so that the fmt ABI is part of the dependency).
  names="$pkg $(dpkg-query -W -f='${Provides}' "$pkg" | sed 's/([^)]*)//g; s/,/ /g')"
  found=false
  for name in $names; do
    if grep -qxF "$name" <<<"$depends_names"; then found=true; fi
  done
  $found || fail "$lib comes from $pkg, which Depends lacks"
done < <(ldd "$bin" | awk -v needed="$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')" \
           'BEGIN { n = split(needed, list, " "); for (i = 1; i <= n; i++) want[list[i]] = 1 } /=> \// && ($1 in want) { print $3 }')

# apt resolves those dependencies from Debian's archive (a simulation: nothing is installed).
if command -v apt-get >/dev/null; then
  apt-get install --simulate --no-install-recommends "$deb" >"$work/apt.log" 2>&1 || { cat "$work/apt.log"; fail "apt-get install --simulate"; }
  grep -q '^Inst etcdadm ' "$work/apt.log" || { cat "$work/apt.log"; fail "apt would not install etcdadm"; }
fi

# Files: what an operator needs, nowhere else (no /etc or /usr/local: the package owns no configuration).
dpkg-deb -c "$deb" | awk '{print $6}' >"$work/files"
for f in ./usr/bin/etcdadm ./usr/share/man/man1/etcdadm.1.gz ./usr/share/bash-completion/completions/etcdadm \
         ./lib/systemd/system/etcdadm-backup-sidecar@.service ./lib/systemd/system/etcdadm-auto.service \
         ./usr/share/doc/etcdadm/self-management.md ./usr/share/doc/etcdadm/examples/auto.env.example \
         ./usr/share/doc/etcdadm/copyright \
         ./usr/share/doc/etcdadm/changelog.gz ./usr/share/doc/etcdadm/README.md ./usr/share/doc/etcdadm/operations.md \
         ./usr/share/doc/etcdadm/store-format.md ./usr/share/doc/etcdadm/examples/sidecar.env.example; do
  grep -qx "$f" "$work/files" || { cat "$work/files"; fail "missing $f"; }
done
if grep -Ev '^\./(usr/(bin|share)|lib/systemd)(/|$)|^\./$|^\./usr/$|^\./lib/$' "$work/files"; then fail "files outside /usr/bin, /usr/share, /lib/systemd"; fi
dpkg-deb -c "$deb" | awk '$2 != "root/root" {print; bad=1} END {exit bad}' || fail "files not owned by root"

# lintian: no errors (warnings are printed for the record).
if command -v lintian >/dev/null; then
  lintian --fail-on error --tag-display-limit 0 --info "$deb" | tee "$work/lintian.log" || fail "lintian reports errors"
else
  fail "lintian missing (scripts/install-deps.sh --with-test-servers installs it)"
fi

# From the unpacked root: the binary runs, the manual page renders cleanly, completion completes.
"$bin" version | matches -x "etcdadm $version" || fail "etcdadm version: $("$bin" version)"
if command -v groff >/dev/null; then
  zcat "$work/root/usr/share/man/man1/etcdadm.1.gz" | groff -man -Tutf8 -ww -z 2>"$work/groff.log"
  [ ! -s "$work/groff.log" ] || { cat "$work/groff.log"; fail "groff warnings in etcdadm.1"; }
fi
zcat "$work/root/usr/share/man/man1/etcdadm.1.gz" >"$work/etcdadm.1"  # not piped into grep -q: pipefail and SIGPIPE
for section in 'etcdadm backup save' 'etcdadm backup restore' 'etcdadm init' '.SH ENVIRONMENT' 'ETCDADM_PROGRESS'; do
  grep -qF "$section" "$work/etcdadm.1" || fail "etcdadm.1 lacks $section"
done
complete_words() {
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _etcdadm; echo "${COMPREPLY[*]}"' _ \
    "$work/root/usr/share/bash-completion/completions/etcdadm" "$@"
}
[ "$(complete_words etcdadm backup sa)" = save ] || fail "completion of 'backup sa': $(complete_words etcdadm backup sa)"
complete_words etcdadm backup save --sto | matches -w -- --store || fail "completion of 'backup save --sto'"
complete_words etcdadm --log-level warn backup restore --to-r | matches -w -- --to-revision || fail "completion after global options"
echo "package OK"
