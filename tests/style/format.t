#!/usr/bin/env bash
# Every C file of the project is as clang-format (.clang-format, Debian 12's
# clang-format 14) would write it: one test point a file, failing with the diff.
# Fix: clang-format -i FILE.
set -u
cd "$(dirname "$0")/../.."
if ! command -v clang-format >/dev/null; then
	echo "1..0 # SKIP clang-format is not installed (scripts/setup-debian installs it)"
	exit 0
fi
mapfile -t files < <(git ls-files '*.c' '*.h' 2>/dev/null || find src include tests bench -name '*.[ch]' | sort)
echo "1..${#files[@]}"
n=0
for f in "${files[@]}"; do
	n=$((n + 1))
	if out=$(clang-format --style=file "$f" | diff -u "$f" - 2>&1); then
		echo "ok $n - $f is formatted"
	else
		echo "not ok $n - $f is not as clang-format writes it (clang-format -i $f)"
		printf '%s\n' "$out" | head -20 | sed 's/^/# /'
	fi
done
