#!/usr/bin/env bash
# Measures what each speed mechanism of fsmcp earns on the whole jobs of
# BenchmarkWholeJobs: builds this checkout's binaries once as they are and
# once per mechanism with that mechanism taken out (a small source edit in
# a scratch copy, never committed), runs the jobs through all of them in
# the same turns, and prints each job's ratio to its reference and each
# variant's time over this build's (median, min-max over the counts).
#
#   e2e/testdata/mechanisms.sh [COUNT] [BENCHTIME]   (defaults 6 and 2x)
#
# A variant whose <name>-x-fsmcp stays under 1.10 on every job marks a
# mechanism that does not earn its keep (docs/performance.md).
set -euo pipefail
count=${1:-6}
benchtime=${2:-2x}
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /tmp/fsmcp-mechanisms-XXXXXX)
trap 'rm -rf "$work"' EXIT
src=$work/src
variants=()

# variant NAME FILE PERL: a copy of the checkout with PERL applied to FILE
# (which must change it), built into $work/NAME.
variant() {
  local name=$1 file=$2 edit=$3
  rm -rf "$src"; mkdir -p "$src"
  (cd "$repo" && git ls-files -z | xargs -0 tar -c) | tar -x -C "$src"
  cp "$src/$file" "$work/before"
  perl -0pi -e "$edit" "$src/$file"
  if cmp -s "$src/$file" "$work/before"; then
    echo "mechanisms.sh: the edit for $name no longer applies to $file" >&2; exit 1
  fi
  (cd "$src" && go build -o "$work/$name/" ./cmd/...)
  variants+=("$name=$work/$name")
}

# Each variant takes one mechanism out where it is switched on.
variant noahead worker/scan_ahead.go 's/var aheadMaxWorkers = 4/var aheadMaxWorkers = 1/'
variant nonext worker/next_page.go 's/(func \(r \*Root\) startNextPage\([^\n]*\{\n)/$1\tif true {\n\t\treturn\n\t}\n/; s/(func \(r \*Root\) carryNextPage\([^\n]*\{\n)/$1\tif true {\n\t\treturn false\n\t}\n/'
variant noinv worker/inventory.go 's/case s\.w\.watch != nil:/case false:/; s/if c\.watchScope\(r, s\) \{/if false \&\& c.watchScope(r, s) {/'
rm -rf "$src"

list=$(IFS=,; echo "${variants[*]}")
cd "$repo/e2e"
FSMCP_BENCH_VARIANTS=$list go test -run '^$' -bench 'WholeJobs' -benchtime "$benchtime" -count "$count" -timeout 120m . | tee "$work/out.txt"
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
awk '
/^BenchmarkWholeJobs\// {
  job = $1; sub(/^BenchmarkWholeJobs\//, "", job); sub(/-[0-9]+$/, "", job)
  for (i = 3; i < NF; i += 2) {
    unit = $(i + 1)
    if (unit ~ /^x-/ || unit ~ /-x-fsmcp$/ || unit ~ /-x-(rg|worker|one-term|case-sensitive)$/) {
      key = job SUBSEP unit
      if (!(key in n)) { order[++keys] = key }
      v[key, ++n[key]] = $i
    }
  }
}
END {
  printf "%-16s %-28s %8s %17s %s\n", "job", "metric", "median", "min-max", "counts"
  for (k = 1; k <= keys; k++) {
    key = order[k]; m = n[key]
    for (i = 1; i <= m; i++) a[i] = v[key, i]
    for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    med = (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
    split(key, p, SUBSEP)
    printf "%-16s %-28s %8.3f %8.3f-%-8.3f %d\n", p[1], p[2], med, a[1], a[m], m
  }
}' "$work/out.txt"
