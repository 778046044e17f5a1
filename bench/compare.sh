#!/usr/bin/env bash
# Every side-by-side benchmark of bench/ in one run, and one table of what they measured (issue 40):
# figure, etcdadm, anchor, ratio, target, met.
#
#   save, restore, verify   save_restore_bench.sh  (against etcdctl/etcdutl of the server, 3.4.23 on
#                                                    PATH, and of 3.6 as the second anchor)
#   inspect                 inspect_bench.sh       (against `snapshot status`)
#   drill                   drill_bench.sh         (against the same proof by hand)
#   copy                    copy_bench.sh          (against `aws s3 cp`, S3 -> S3)
#   PITR replay             changelog_bench.sh     (a change log of --log-mb on a db of --db-mb, replayed: against
#                                                    the writes it replays; and per GiB)
#   DR                      dr_bench.sh, one step  (three members restored at once: quorum back)
#
# Each bench starts its own throw-away etcd, runs its tools alternately (BENCH_RUNS times,
# medians) and adds its rows through lib.sh's `figure`; a bench that fails is a row saying so, and
# the others still run. The data each loads is written once and copied for the next bench that
# asks for the same (lib.sh's load cache, in the output directory: at 8 GiB a load takes ten
# minutes). Every bench's own report and log are kept in the output directory; the table is printed
# at the end and written to table.md there.
#
# Usage: bench/compare.sh [--db-mb N] [--log-mb N] [--only NAME,...] [--out DIR]
#   --db-mb   the database size of every bench (default 400)
#   --log-mb  the change log written for the replay (default 1024: the issue's "1 GiB of change log")
#   --only    a subset: save_restore, inspect, drill, copy, changelog, dr
#   --out     where the reports go (default: a new directory under ${BENCH_TMPDIR:-/tmp})
# Environment: BENCH_RUNS (default 3), BENCH_LOAD_CACHE (default <out>/loads; removed at the end
# unless given), and what each bench reads (ETCDADM, ETCD, ETCDCTL, ...).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
source "$here/lib.sh"

DB_MB=400 LOG_MB=1024 ONLY="" OUT=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --db-mb) DB_MB="$2"; shift 2 ;;
    --log-mb) LOG_MB="$2"; shift 2 ;;
    --only) ONLY="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    *) die "usage: bench/compare.sh [--db-mb N] [--log-mb N] [--only NAME,...] [--out DIR]" ;;
  esac
done
[[ "$DB_MB" =~ ^[1-9][0-9]*$ && "$LOG_MB" =~ ^[1-9][0-9]*$ ]] || die "--db-mb and --log-mb take a positive number of MiB"
ALL=(save_restore inspect drill copy changelog dr)
if [[ -n "$ONLY" ]]; then
  IFS=, read -r -a PICKED <<<"$ONLY"
  for b in "${PICKED[@]}"; do [[ " ${ALL[*]} " == *" $b "* ]] || die "--only: no bench named $b (${ALL[*]})"; done
else
  PICKED=("${ALL[@]}")
fi
[[ -n "$OUT" ]] || OUT="$(mktemp -d "${BENCH_TMPDIR:-${TMPDIR:-/tmp}}/etcdadm-compare.XXXXXX")"
mkdir -p "$OUT"
FIGURES="$OUT/figures.tsv"
: >"$FIGURES"
started=$SECONDS

run_bench() {  # NAME ENV... -- SCRIPT
  local name=$1; shift
  local env=()
  while [[ $1 != -- ]]; do env+=("$1"); shift; done
  shift
  local t0=$SECONDS
  log "compare: $name ($*), report in $OUT/$name.md"
  if env "${env[@]}" BENCH_DB_MB="$DB_MB" BENCH_FIGURES="$FIGURES" BENCH_RESULTS="$OUT/$name.md" \
    BENCH_LOAD_CACHE="${BENCH_LOAD_CACHE:-$OUT/loads}" \
    bash "$here/$1" >"$OUT/$name.log" 2>&1; then
    log "compare: $name done in $((SECONDS - t0)) s"
  else
    log "compare: $name FAILED after $((SECONDS - t0)) s (log: $OUT/$name.log)"
    printf '%s\t%s\t%s\t%s\n' "$name: the bench failed, see $OUT/$name.log" "" "" "failed" >>"$FIGURES"
  fi
}

for b in "${PICKED[@]}"; do
  case "$b" in
    save_restore) run_bench save_restore -- save_restore_bench.sh ;;
    inspect) run_bench inspect -- inspect_bench.sh ;;
    drill) run_bench drill -- drill_bench.sh ;;
    copy) run_bench copy -- copy_bench.sh ;;
    changelog) run_bench changelog BENCH_BASE_MB="$DB_MB" BENCH_LOG_MB="$LOG_MB" -- changelog_bench.sh ;;
    dr) run_bench dr BENCH_ONE_STEP=1 -- dr_bench.sh ;;
  esac
done

{
  echo "### bench/compare.sh --db-mb $DB_MB --log-mb $LOG_MB"
  echo
  echo "- $(machine); ${BENCH_RUNS:-3} runs of each side-by-side measurement (medians); $((SECONDS - started)) s in all"
  echo "- each bench's report: $OUT/<bench>.md"
  echo
  python3 - "$FIGURES" <<'EOF'
import re, sys

def num(text):
    try:
        return float(text)
    except ValueError:
        return None

def shown(v):
    return "-" if v is None else ("%.3f" % v).rstrip("0").rstrip(".")

print("| figure | etcdadm | anchor | ratio | target | met |")
print("|---|---:|---:|---:|---|:---:|")
for line in open(sys.argv[1]):
    name, adm, anchor, target = (line.rstrip("\n").split("\t") + ["", "", "", ""])[:4]
    if target == "failed":
        print("| %s | | | | | **failed** |" % name)
        continue
    a, b = num(adm), num(anchor)
    ratio = a / b if a is not None and b not in (None, 0.0) else None
    met = ""
    m = re.fullmatch(r"(<=|>=)\s*([0-9.]+)(x?)", target.strip())
    if m:
        value = ratio if m.group(3) else a
        if value is not None:
            ok = value <= float(m.group(2)) if m.group(1) == "<=" else value >= float(m.group(2))
            met = "yes" if ok else "**no**"
    print("| %s | %s | %s | %s | %s | %s |" % (name, shown(a), shown(b), "-" if ratio is None else "%.2fx" % ratio,
                                                target or "(info)", met))
EOF
} | tee "$OUT/table.md"
[[ -n "${BENCH_LOAD_CACHE:-}" ]] || rm -rf "$OUT/loads"
