#!/bin/bash
# Packs cleave, the shared libraries it needs beyond glibc, and the corpus skeletons into .device/
# for a lent machine (device tool, carry: [".device"]); see bench/device/README.md.
set -euo pipefail
# Usage: bench/device/pack.sh [CLEAVE (build/cleave)] [CORPUS_DIR (~/.cache/cleave/models)]
case ${1:-} in -h | --help) sed -n '2,5s/^# \{0,1\}//p' "$0" && exit 0 ;; esac
repo=$(cd "$(dirname "$0")/../.." && pwd)
cleave=${1:-$repo/build/cleave}
corpus=${2:-$HOME/.cache/cleave/models}
out=$repo/.device
[ -x "$cleave" ] || { echo "pack.sh: $cleave: not an executable cleave binary (build first)" >&2 && exit 2; }
[ -d "$corpus" ] || { echo "pack.sh: $corpus: no such folder of models" >&2 && exit 2; }
grep -qx '/.device/' "$repo/.git/info/exclude" 2>/dev/null || echo '/.device/' >>"$repo/.git/info/exclude"
rm -rf "$out" && mkdir -p "$out/stage/lib"
cp "$cleave" "$out/stage/cleave"
# glibc stays the lent machine's own: mixing two glibcs in one process does not load.
ldd "$cleave" | awk '$3 ~ /^\// {print $3}' |
  grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' |
  xargs -I{} cp -L {} "$out/stage/lib/"
tar -C "$out/stage" -cJf "$out/bundle.tar.xz" .
rm -rf "$out/stage"
/usr/bin/python3 "$repo/bench/device/strip_weights.py" "$corpus" "$out/skeletons"
du -sh "$out"/*
