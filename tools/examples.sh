#!/usr/bin/env bash
# Runs every crec command the README shows for the examples (the
# "$ build/tools/crec ..." lines of its console blocks) and prints each with its
# output as a Markdown text block, e.g. for the README's GPU outputs:
#   tools/examples.sh > gpu-examples.md
# Needs the build in build/ (it runs the commands as the README writes them),
# and writes what they write (jacobi.html) into a temporary directory.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
if [ ! -x build/tools/crec ]; then
  echo "examples: build/tools/crec is not built: run tools/setup.sh first" >&2
  exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/build/tools"
ln -s "$root/build/examples" "$work/examples"
ln -s "$root/build/examples" "$work/build/examples"
ln -s "$root/build/tools/crec" "$work/build/tools/crec"
cd "$work"
grep -E '^\$ build/tools/crec ' "$root/README.md" | sed 's/^\$ //' | while IFS= read -r cmd; do
  echo '```text'
  echo "\$ $cmd"
  # the README's commands are plain words (and at most a 2>/dev/null)
  bash -c "$cmd" 2>&1
  echo '```'
  echo
done
