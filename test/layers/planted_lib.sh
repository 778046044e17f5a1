# Shared by the planted-case tests of the repository's own checks (planted_violation_test.sh for
# scripts/check-layers.sh, planted_format_test.sh for scripts/check-format.sh): each plants a case
# in a fresh copy of the product's sources and expects the check to fail on it, naming it.
# Sourced; the caller sets `src` (the source dir) and `check` (the check's path in the copy,
# relative to the tree), and lists in `copied` the files besides the rooms the copy needs. A caller
# whose check looks at each file alone may set `rooms` to the folders its cases plant in: the copy
# then holds only those (the check on the whole tree is its own test), which keeps a check that
# costs seconds per folder from running on every folder once per case.

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

copy() {  # a fresh copy of the rules, $copied and every room of the layers block (or $rooms) in $work/tree
  rm -rf "$work/tree"
  mkdir -p "$work/tree/docs"
  cp "$src/docs/architecture.md" "$work/tree/docs/"
  local f d
  for f in "${copied[@]}"; do
    mkdir -p "$work/tree/$(dirname "$f")"
    cp "$src/$f" "$work/tree/$f"
  done
  local all
  all=$(awk '/^```layers$/ {i=1; next} i && /^```/ {exit} i && NF && !/^unchecked:/ {sub(/[:\/].*/, ""); print}' \
          "$src/docs/architecture.md" | sort -u)
  for d in ${rooms[@]+"${rooms[@]}"}; do
    grep -qx -- "$d" <<<"$all" || { echo "planted_lib: $d is not a room of the layers block" >&2; exit 2; }
  done
  for d in ${rooms[@]:-$all}; do
    cp -r "$src/$d" "$work/tree/$d"
  done
}

expect() {  # WANT_EXIT PATTERN: runs the check on the copy
  local want="$1" pattern="$2" out rc=0
  out=$(bash "$work/tree/$check" "$work/tree" 2>&1) || rc=$?
  if [ "$rc" -ne "$want" ] || ! grep -qE -- "$pattern" <<<"$out"; then
    echo "FAILED: wanted exit $want and /$pattern/, got exit $rc:" >&2
    echo "$out" | head -20 >&2
    failures=$((failures + 1))
  else
    echo "ok: exit $rc, $(grep -E -- "$pattern" <<<"$out" | head -1)"
  fi
}
