#!/usr/bin/env bash
# Runs every C unit test binary built from tests/unit/*.c (they live in
# $ZARIS_BUILD/unit/, so sanitizer builds keep their own) and reports each
# as one TAP line, with the failing binary's own TAP output as diagnostics.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${ZARIS_BUILD:-$here/../../build}
srcs=("$here"/*.c)
echo "1..${#srcs[@]}"
n=0
for src in "${srcs[@]}"; do
  n=$((n + 1))
  name=$(basename "$src" .c)
  bin=$build/unit/$name.t
  if [ ! -x "$bin" ]; then
    echo "not ok $n - unit/$name (binary $bin not built)"
    continue
  fi
  out=$(timeout 600 "$bin" 2>&1)
  rc=$?
  plan=$(printf '%s\n' "$out" | grep -m1 -E '^1\.\.[0-9]+' | cut -c4-)
  count=$(printf '%s\n' "$out" | grep -cE '^(not )?ok ')
  failed=$(printf '%s\n' "$out" | grep -cE '^not ok ')
  if [ $rc -eq 0 ] && [ "$failed" -eq 0 ] && { [ "$plan" = "$count" ] || printf '%s\n' "$out" | grep -q '^1\.\.0 # SKIP'; }; then
    echo "ok $n - unit/$name ($count assertions)"
  else
    echo "not ok $n - unit/$name (exit $rc, $failed failed, planned ${plan:-?}, ran $count)"
    printf '%s\n' "$out" | grep -vE '^ok ' | tail -40 | sed 's/^/# /' >&2
  fi
done
