#!/bin/sh
# librsm.so exports only rsm_* symbols (see ffi/c/build.rs), and every function of include/rsm.h.
set -eu
lib=$1
header=$(dirname "$0")/../../include/rsm.h
exported=$(nm -D --defined-only "$lib" | awk '{print $3}')
others=$(printf '%s\n' "$exported" | grep -v '^rsm_' || true)
if [ -n "$others" ]; then
  echo "librsm.so exports symbols other than rsm_*:" >&2
  printf '%s\n' "$others" | head -20 >&2
  exit 1
fi
declared=$(grep -Eo '\brsm_[a-z_]+\(' "$header" | tr -d '(' | sort -u)
for f in $declared; do
  printf '%s\n' "$exported" | grep -qx "$f" || { echo "rsm.h declares $f but librsm.so does not export it" >&2; exit 1; }
done
echo "librsm.so exports $(printf '%s\n' "$exported" | wc -l) symbols, all rsm_*, every function of rsm.h"
