# Building Go programs that the tests use (never the product) from wrapper modules: a directory
# whose go.mod `require`s the upstream module at a pinned version and names its main packages in
# `tool` lines (so `go mod tidy` keeps them), with a committed go.sum pinning every module.
# build_wrapper also builds our own test tools from their source module in the repository (the
# "source" pins of scripts/go-test-tools.sh), which have a committed go.sum too.
# Sourced by scripts/etcd-versions.sh and scripts/go-test-tools.sh; they define die().

# Go from go.dev's tarball lives in /usr/local/go, which a non-login shell may not have on PATH.
# GOTOOLCHAIN=local: never fetch another Go toolchain.
command -v go >/dev/null 2>&1 || [ ! -x /usr/local/go/bin/go ] || PATH="/usr/local/go/bin:$PATH"
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false

require_go() {
  command -v go >/dev/null ||
    die "$1 needs Go 1.26 or newer to build (Debian 12's golang is 1.19: use go.dev's tarball in /usr/local/go)"
}

# build_wrapper WRAPPER_DIR OUT_DIR CHECK_FN NAME=PACKAGE ...
# Builds each PACKAGE of the wrapper (or source) module as NAME (static, -trimpath, as release builds
# are; with -ldflags from the wrapper's `ldflags` file when it has one)
# into a temporary directory beside OUT_DIR, runs `CHECK_FN TMPDIR` on the result, and only then
# renames it to OUT_DIR: an interrupted or failed build never leaves a directory that looks done.
build_wrapper() {
  local wrapper="$1" out="$2" check="$3" tmp spec ldflags=""
  shift 3
  if [ -f "$wrapper/ldflags" ]; then ldflags="$(cat "$wrapper/ldflags")"; fi
  mkdir -p "$(dirname "$out")"
  tmp="$(mktemp -d "$(dirname "$out")/.build-$(basename "$out")-XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT
  for spec in "$@"; do
    (cd "$wrapper" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$tmp/${spec%%=*}" "${spec#*=}") ||
      die "building ${spec#*=} failed (wrapper $wrapper)"
  done
  "$check" "$tmp" || die "what was just built from $wrapper fails its check"
  chmod 0755 "$tmp"
  rm -rf "$out"
  mv "$tmp" "$out"
  trap - EXIT
}

# Pin files: one line per program, "KEY FIELD...", # comments. pin_fields PINS KEY prints the
# fields after KEY, or dies naming what is pinned; pinned_keys PINS lists the keys in file order.
pinned_keys() { awk '!/^#/ && NF { print $1 }' "$1"; }
pin_fields() {
  local line
  line="$(awk -v k="$2" '$1 == k { $1 = ""; sub(/^ /, ""); print }' "$1")"
  [ -n "$line" ] || die "nothing pinned as $2 in $1 (pinned: $(pinned_keys "$1" | tr '\n' ' '))"
  echo "$line"
}

# retidy_wrapper WRAPPER_DIR MODULE@VERSION ...: re-pins the wrapper's go.sum after its go.mod changed.
retidy_wrapper() {
  local wrapper="$1"
  shift
  rm -f "$wrapper/go.sum"
  (cd "$wrapper" && go get "$@" && go mod tidy)
}
