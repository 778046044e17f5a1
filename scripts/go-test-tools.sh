#!/usr/bin/env bash
# Builds the Go programs the tests use as outside oracles (etcd itself: scripts/etcd-versions.sh)
# into a cache directory keyed by version, and reuses them when present: third-party programs from
# pinned wrapper modules, our own test tools from their source in this repository. Test tools
# only: the product never builds or ships Go.
#
# Usage: scripts/go-test-tools.sh [NAME ...]          build what is missing (default: every tool)
#        scripts/go-test-tools.sh --update NAME ...   re-pin the wrapper's go.mod/go.sum to the
#                                                     version in the pin file (a source tool:
#                                                     `go mod tidy` in its module), then build
#        scripts/go-test-tools.sh --where NAME [BIN]  print the path of that tool's binary BIN
#                                                     (default NAME), built or not
#
# Pins: test/go-tools/tools (NAME MODULE VERSION MAIN_PACKAGES); the module is test/go-tools/NAME/:
# a wrapper module requiring MODULE at VERSION or, when VERSION is "source", the tool's own source
# (module MODULE, MAIN_PACKAGES relative to it), whose version is src-<SHA-256 prefix of its go.mod,
# go.sum and *.go files> so that any edit builds it anew. MAIN_PACKAGES is one package (built as
# NAME) or BIN=PACKAGE[,BIN=PACKAGE...] (several programs of one module, the first one checked).
# A wrapper of a module that keeps its dependencies in its own tree (k8s.io/kubernetes's staging
# modules, `replace k8s.io/X => ./staging/...`) gets each such replace pointed at the published
# module of the same minor (v1.M.P -> v0.M.P), as that project's own consumers do; a wrapper's
# optional `ldflags` file (written by --update for k8s.io/kubernetes: its version variables) is
# passed to `go build -ldflags`.
# Cache: $ETCDADM_GO_TOOLS (default ${XDG_CACHE_HOME:-$HOME/.cache}/etcdadm/go-tools)/NAME-VERSION/BIN.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
pins="$root/test/go-tools/tools"
cache="${ETCDADM_GO_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/etcdadm/go-tools}"

die() { echo "go-test-tools.sh: $*" >&2; exit 1; }
# shellcheck source=lib/go-wrappers.sh
. "$root/scripts/lib/go-wrappers.sh"

# Sets pin_module, pin_version, pin_package, pin_source (true for a source tool), pin_dir and
# pin_builds (the build_wrapper specs, BIN=PACKAGE) for NAME.
pin() {
  local fields
  fields="$(pin_fields "$pins" "$1")" || exit 1
  read -r pin_module pin_version pin_package <<<"$fields"
  if [[ "$pin_package" == *=* ]]; then
    IFS=, read -r -a pin_builds <<<"$pin_package"
  else
    pin_builds=("$1=$pin_package")
  fi
  pin_source=false
  if [ "$pin_version" = source ]; then
    pin_source=true
    pin_version="src-$(source_hash "$root/test/go-tools/$1")" || exit 1
  fi
  pin_dir="$cache/$1-$pin_version"
}

# source_hash DIR: 16 hex digits of a SHA-256 over the names and contents of DIR's go.mod, go.sum
# and *.go files (subdirectories included), the cache key of a source tool.
source_hash() {
  [ -f "$1/go.mod" ] || die "$1/go.mod is missing (a source tool's module, pinned in $pins)"
  (cd "$1" && find . -type f \( -name go.mod -o -name go.sum -o -name '*.go' \) -print0 |
    LC_ALL=C sort -z | xargs -0 -r sha256sum) | sha256sum | cut -c1-16
}

# A tool is usable when its binary is there and runs (`-help` may exit non-zero: only "it starts").
runs() { [ -x "$1/$checked_name" ] && { "$1/$checked_name" -help >/dev/null 2>&1 || [ $? -le 2 ]; }; }

build_tool() {
  local name="$1" wrapper="$root/test/go-tools/$1"  # a wrapper module, or a source tool's own module
  pin "$name"
  checked_name="${pin_builds[0]%%=*}"
  if runs "$pin_dir"; then
    echo "$name $pin_version: $pin_dir/$checked_name (cached)"
    return
  fi
  require_go "$name $pin_version"
  if $pin_source; then
    grep -Eq "^module[[:space:]]+${pin_module//./\\.}[[:space:]]*\$" "$wrapper/go.mod" ||
      die "$wrapper/go.mod is not module $pin_module (pinned in $pins)"
  else
    grep -Eq "^[[:space:]]*(require[[:space:]]+)?${pin_module//./\\.} ${pin_version}( |\$)" "$wrapper/go.mod" ||
      die "$wrapper/go.mod does not require $pin_module $pin_version (pinned in $pins): run scripts/go-test-tools.sh --update $name"
  fi
  local start
  start=$(date +%s)
  build_wrapper "$wrapper" "$pin_dir" runs "${pin_builds[@]}"
  echo "$name $pin_version: $pin_dir/$checked_name (built in $(( $(date +%s) - start )) s)"
}

update_wrapper() {
  local name="$1" wrapper="$root/test/go-tools/$1"
  pin "$name"
  if $pin_source; then  # our own source: only re-pin its go.sum (and go.mod's requirements)
    require_go "$name"
    (cd "$wrapper" && go mod tidy) || die "go mod tidy failed in $wrapper"
    return
  fi
  mkdir -p "$wrapper"
  local spec tools="" replaces
  for spec in "${pin_builds[@]}"; do tools+="tool ${spec#*=}"$'\n'; done
  replaces="$(staging_replaces)"
  cat >"$wrapper/go.mod" <<EOF
// Wrapper module that builds $name ($pin_module $pin_version), a test oracle (never shipped);
// generated by scripts/go-test-tools.sh --update $name.
module etcdadm.test/$name

go 1.25

$tools$replaces
EOF
  rm -f "$wrapper/ldflags"
  if [ "$pin_module" = k8s.io/kubernetes ]; then kubernetes_ldflags >"$wrapper/ldflags"; fi
  retidy_wrapper "$wrapper" "$pin_module@$pin_version"
}

# The replace block of the pinned module's go.mod, each replace into its own tree
# (`k8s.io/X => ./staging/src/k8s.io/X`) pointed at that module's published release of the same
# minor (v1.37.2 -> v0.37.2) when the pinned module requires it; nothing for a module without one.
staging_replaces() {
  local mod
  mod="$(cd "$(mktemp -d)" && go mod download -json "$pin_module@$pin_version" |
    sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')"
  [ -f "$mod" ] || die "cannot download the go.mod of $pin_module@$pin_version"
  awk -v v="v0.${pin_version#v*.}" '
    /^require \(/ { req = 1; next }
    /^replace \(/ { rep = 1; next }
    /^\)/ { req = rep = 0; next }
    req && NF >= 2 { required[$1] = 1 }
    rep && $2 == "=>" && $3 ~ /^\.\// { inside[++n] = $1 }
    END {
      for (i = 1; i <= n; i++) if (inside[i] in required) out = out "\t" inside[i] " => " inside[i] " " v "\n"
      if (out != "") printf "replace (\n%s)\n", out
    }' "$mod"
}

# k8s.io/kubernetes's version variables as its release build sets them (hack/lib/version.sh), so
# that /version and `kubectl version` name the pinned release (else v0.0.0-master).
kubernetes_ldflags() {
  local minor="${pin_version#v1.}" pkg flags=""
  minor="${minor%%.*}"
  for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
    flags+=" -X $pkg.gitVersion=$pin_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  echo "-s -w$flags"
}

case "${1:-}" in
  --where)
    [ $# -eq 2 ] || [ $# -eq 3 ] || die "usage: --where NAME [BIN]"
    pin "$2"
    echo "$pin_dir/${3:-$2}"
    ;;
  --update)
    shift
    [ $# -ge 1 ] || die "usage: --update NAME ..."
    for t in "$@"; do update_wrapper "$t"; build_tool "$t"; done
    ;;
  -h|--help)
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
    ;;
  *)
    tools=("$@")
    [ ${#tools[@]} -gt 0 ] || mapfile -t tools < <(pinned_keys "$pins")
    for t in "${tools[@]}"; do build_tool "$t"; done
    ;;
esac
