#!/usr/bin/env bash
# The layering check: every #include "..." of the product's sources must point into the file's own
# room or into a room that docs/architecture.md allows it to use. The rules are the ```layers block
# of that document, one room per line:
#     room: rooms it may include
# A room is a folder or a file stem (store/store_url covers store/store_url.{h,cc}); a file belongs
# to the longest room that is a prefix of its path, and so does an included path. A room may always
# include itself. The line "unchecked: FOLDERS" names the top-level folders outside the check (the
# tests, the benchmarks); every other top-level folder with C++ sources (build dirs aside) is the
# product's, and a file of it in no room, or an include into no room, is a violation too: a new
# folder cannot slip past the check.
# Usage: scripts/check-layers.sh [SOURCE_DIR]   (exit 0: clean; 1: violations, each printed; 2: the
#                                                rules block is missing or malformed)
set -euo pipefail
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
rules_file="$root/docs/architecture.md"
[ -f "$rules_file" ] || { echo "check-layers: no $rules_file" >&2; exit 2; }

# The block between "```layers" and the next "```".
rules=$(awk '/^```layers$/ {inside=1; next} inside && /^```/ {exit} inside && NF {print}' "$rules_file")
[ -n "$rules" ] || { echo "check-layers: no \`\`\`layers block in $rules_file" >&2; exit 2; }

declare -A allowed=() unchecked=()
rooms=()
while IFS= read -r line; do
  case "$line" in
    *:*) ;;
    *) echo "check-layers: malformed rule (want \"room: rooms...\"): $line" >&2; exit 2 ;;
  esac
  room="${line%%:*}"
  room="${room//[[:space:]]/}"
  [ -n "$room" ] || { echo "check-layers: a rule without a room: $line" >&2; exit 2; }
  if [ "$room" = unchecked ]; then
    for folder in ${line#*:}; do unchecked["$folder"]=1; done
    continue
  fi
  rooms+=("$room")
  allowed["$room"]=" ${line#*:} "
done <<<"$rules"

# The product's top-level folders: those with C++ sources, but for the unchecked ones and build
# dirs (a CMakeCache.txt; their generated code is not ours to judge).
cd "$root"
declare -A top=()
for dir in */; do
  dir="${dir%/}"
  [ -z "${unchecked[$dir]:-}" ] && [ ! -f "$dir/CMakeCache.txt" ] || continue
  [ -n "$(find "$dir" -type f \( -name '*.h' -o -name '*.cc' \) -print -quit)" ] && top["$dir"]=1
done

# PATH -> $room_found: the longest room that is a prefix of it (as a folder or a file stem), or "".
# A variable, not an echo: called per include, a $(...) subshell each time made the check slow
# enough to time out on a busy machine.
room_of() {
  local path="$1" room
  room_found=""
  for room in "${rooms[@]}"; do
    if [[ "$path" == "$room"/* || "$path" == "$room".* ]] && [ "${#room}" -gt "${#room_found}" ]; then
      room_found="$room"
    fi
  done
}

violations=0
while IFS= read -r file; do
  room_of "$file"
  own="$room_found"
  if [ -z "$own" ]; then
    echo "$file: in no room of docs/architecture.md's layers block"
    violations=$((violations + 1))
    continue
  fi
  while IFS= read -r hit; do
    lineno="${hit%%:*}"
    target="${hit#*\"}"
    target="${target%%\"*}"
    # A path into none of this tree's folders is a system or third-party header.
    [[ "$target" == */* && -d "${target%%/*}" ]] || continue
    room_of "$target"
    to="$room_found"
    if [ -z "$to" ]; then
      echo "$file:$lineno: includes $target, which is in no room"
      violations=$((violations + 1))
    elif [ "$to" != "$own" ] && [[ "${allowed[$own]}" != *" $to "* ]]; then
      echo "$file:$lineno: $own may not include $to ($target)"
      violations=$((violations + 1))
    fi
  done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$file" || true)
done < <(for t in "${!top[@]}"; do find "$t" -type f \( -name '*.h' -o -name '*.cc' \); done | sort)

if [ "$violations" -gt 0 ]; then
  echo "check-layers: $violations include(s) against the layers of docs/architecture.md" >&2
  exit 1
fi
echo "check-layers: every include of ${#rooms[@]} rooms follows docs/architecture.md"
