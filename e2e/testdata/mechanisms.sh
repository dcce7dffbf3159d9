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

# variant NAME [FILE PERL]...: a copy of the checkout with each PERL
# applied to its FILE (which it must change), built into $work/NAME.
variant() {
  local name=$1; shift
  rm -rf "$src"; mkdir -p "$src"
  (cd "$repo" && git ls-files -z | xargs -0 tar -c) | tar -x -C "$src"
  while [ $# -ge 2 ]; do
    cp "$src/$1" "$work/before"
    perl -0pi -e "$2" "$src/$1"
    if cmp -s "$src/$1" "$work/before"; then
      echo "mechanisms.sh: the edit for $name no longer applies to $1" >&2; exit 1
    fi
    shift 2
  done
  (cd "$src" && go build -o "$work/$name/" ./cmd/...)
  variants+=("$name=$work/$name")
}

# same is this build again: its <name>-x-fsmcp spread is the noise floor.
variant same
# Each other variant takes one mechanism out where it is switched on.
variant noahead worker/paging/engine.go 's/defaultWorkers = 4/defaultWorkers = 1/'
variant nonext worker/paging/next_page.go 's/(func \(e \*Engine\) startNextPage\([^\n]*\{\n)/$1\tif true {\n\t\treturn\n\t}\n/; s/(func \(e \*Engine\) carryNextPage\([^\n]*\{\n)/$1\tif true {\n\t\treturn false\n\t}\n/'
variant noinv worker/walk/inventory.go 's/case w\.watch != nil:/case false:/; s/if c\.watchScope\(w\.t, sc\) &&/if false \&\& c.watchScope(w.t, sc) \&\&/'
variant nouring worker/confine/rings_linux.go 's/(func \(p \*ringPool\) get\(\) \*uring\.Ring \{\n\tp\.mu\.Lock\(\)\n\tdefer p\.mu\.Unlock\(\)\n\tif )p\.off/$1true/'
variant nonbio internal/nbio/nbio.go 's/(func Writer\(f \*os\.File\) io\.WriteCloser \{\n)/$1\tif true {\n\t\treturn f\n\t}\n/; s/(func Reader\(f \*os\.File\) io\.ReadCloser \{\n)/$1\tif true {\n\t\treturn f\n\t}\n/' \
  internal/nbio/nbio_linux.go 's/(func Pollable\(f \*os\.File, flag int\) \*os\.File \{\n)/$1\tif true {\n\t\treturn f\n\t}\n/' \
  internal/nbio/yield_linux.go 's/(func Yield\(\) \{\n)/$1\tif true {\n\t\treturn\n\t}\n/'
variant nodirect internal/profile/server.go 's/&directTransport\{inner: Transport\(t\), s: s\}/Transport(t)/; s/&directTransport\{inner: t, s: s\}/t/'
variant norelay supervisor/front/relay.go 's/(func splitCall\(params json\.RawMessage\) \(relayedCall, bool\) \{\n)/$1\tif true {\n\t\treturn relayedCall{}, false\n\t}\n/'
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
