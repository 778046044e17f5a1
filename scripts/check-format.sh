#!/usr/bin/env bash
# The format check: every C++ file of the product (.h, .cc in the top-level folders the layering
# rules of docs/architecture.md name, as scripts/check-layers.sh finds them) is as clang-format
# leaves it under the repository's .clang-format (Google style, 120 columns). Test and bench code
# are not checked. Prints each file that differs with clang-format's first complaints.
# Usage: scripts/check-format.sh [SOURCE_DIR]    (exit 0: formatted; 1: files to format, each named,
#                                                 with the command that formats them; 2: no clang-format)
# To format: clang-format -i FILE... (Debian 12's clang-format 14, what CI installs).
set -euo pipefail
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
command -v clang-format >/dev/null || { echo "check-format: clang-format is not installed (apt-get install clang-format)" >&2; exit 2; }
[ -f "$root/.clang-format" ] || { echo "check-format: no $root/.clang-format" >&2; exit 2; }
rules="$root/docs/architecture.md"
[ -f "$rules" ] || { echo "check-format: no $rules (its layers block names the product's folders)" >&2; exit 2; }
# The product's top-level folders: the first path part of every room in the layers block.
folders=$(awk '/^```layers$/ {i=1; next} i && /^```/ {exit} i && NF && !/^unchecked:/ {sub(/[:\/].*/, ""); print}' "$rules" | sort -u)
[ -n "$folders" ] || { echo "check-format: no rooms in the layers block of $rules" >&2; exit 2; }

cd "$root"
unformatted=()
while IFS= read -r -d '' file; do
  if ! out=$(clang-format --dry-run -Werror --style=file "$file" 2>&1); then
    unformatted+=("$file")
    echo "$file: not formatted:"
    awk '/error:/ && n++ < 3 {print "  " $0}' <<<"$out"
  fi
done < <(for d in $folders; do [ -d "$d" ] && find "$d" -type f \( -name '*.h' -o -name '*.cc' \) -print0; done)
if [ "${#unformatted[@]}" -gt 0 ]; then
  echo "check-format: ${#unformatted[@]} file(s) differ from .clang-format; format them with: clang-format -i ${unformatted[*]}"
  exit 1
fi
echo "check-format: every product C++ file follows .clang-format"
