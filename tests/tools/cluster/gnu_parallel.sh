#!/usr/bin/env bash
# The GNU parallel line of docs/tools/nonlocal-refine.md, as written but for its hosts and
# folder: `-S host1,...` becomes `-S :` (this machine, the way parallel runs a remote one:
# through a shell of its own) and `cd /shared/rgbd` the test's folder. Its 8 shards must
# refine every pair of the list exactly once, byte for byte as an unsharded run does.
# Exit status 0 when they do, 1 when not, 77 (skipped) without GNU parallel.
#
#   gnu_parallel.sh TOOL GUIDE DEPTH WORK DOCS [PAIRS]
set -uo pipefail
tool=$(realpath "$1") guide=$(realpath "$2") depth=$(realpath "$3") work=$4 docs=$5 pairs=${6:-40}
fail() { echo "FAILED: $*"; exit 1; }
command -v parallel > /dev/null || { echo "skipped: GNU parallel is not installed (Debian: parallel, which scripts/setup installs)"; exit 77; }

rm -rf "$work" && mkdir -p "$work/whole" "$work/runs"
work=$(cd "$work" && pwd)
for ((i = 0; i < pairs; ++i)); do
  echo "$guide $depth $work/whole/$i.npy" >> "$work/whole.txt"
  echo "$guide $depth runs/$i.npy" >> "$work/pairs.txt"
done
"$tool" --batch "$work/whole.txt" --jobs 2 --quiet || fail "the unsharded run failed"

# The docs' line: the indented block after "GNU parallel", joined where it ends in a backslash.
line=$(awk '/^GNU parallel/ {found = 1; next} found && /^    / {sub(/^    /, ""); print; started = 1; next}
            found && started {exit}' "$docs/tools/nonlocal-refine.md" | sed -e ':a' -e '/\\$/N; s/\\\n//; ta')
[[ $line == parallel* ]] || fail "no GNU parallel line found in $docs/tools/nonlocal-refine.md"
line=$(echo "$line" | sed -e 's/-S [^ ]*/-S :/' -e "s|cd /shared/rgbd|cd $work|")
echo "$line"
export PATH="$(dirname "$tool"):$PATH"
bash -c "$line" > "$work/parallel.log" 2>&1 || fail "the parallel line failed: $(tail -3 "$work/parallel.log")"
for ((i = 0; i < pairs; ++i)); do
  cmp -s "$work/runs/$i.npy" "$work/whole/$i.npy" || fail "runs/$i.npy differs from the unsharded run's (or is missing)"
done
left=$(ls "$work/runs" | grep -E '\.(partial|claim)$')
[[ -z $left ]] || fail "left behind: $left"
echo "$pairs outputs of 8 shards under GNU parallel equal the unsharded run's"
