#!/usr/bin/env bash
# The daemon's filesystem files call one way: no include of a file above or beside
# (scripts/check-layers; the order is docs/design.md's).
set -u
cd "$(dirname "$0")/../.."
echo "1..2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The checker itself must see a call that runs up, or the second point proves nothing.
cp src/daemon/fs_*.c "$tmp/"
sed -i '0,/^#include "fs_nodes.h"/s//#include "fs_nodes.h"\n#include "fs_ops.h"/' "$tmp/fs_nodes.c"
if scripts/check-layers "$tmp" >/dev/null; then
	echo "not ok 1 - scripts/check-layers let fs_nodes.c include fs_ops.h"
else
	echo "ok 1 - scripts/check-layers refuses fs_nodes.c including fs_ops.h"
fi
if out=$(scripts/check-layers 2>&1); then
	echo "ok 2 - every include of the filesystem's files runs down"
else
	echo "not ok 2 - includes that run up"
	printf '%s\n' "$out" | sed 's/^/# /'
fi
