#!/usr/bin/env bash
# No C function of the project (src/, include/, tests/, bench/) is longer than 80
# lines, signature and braces included: a long function is split into named steps.
set -u
cd "$(dirname "$0")/../.."
echo "1..2"
# The checker itself must see a long function, or the second point proves nothing.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{
	echo "static int long_one(void)"
	echo "{"
	for i in $(seq 1 80); do echo "	x += $i;"; done
	echo "}"
} >"$tmp/long.c"
if scripts/check-function-length "$tmp/long.c" >/dev/null 2>&1; then
	echo "not ok 1 - scripts/check-function-length let an 83-line function pass"
else
	echo "ok 1 - scripts/check-function-length refuses an 83-line function"
fi
if out=$(scripts/check-function-length 2>&1); then
	echo "ok 2 - no C function is over 80 lines"
else
	echo "not ok 2 - C functions over 80 lines"
	printf '%s\n' "$out" | sed 's/^/# /'
fi
