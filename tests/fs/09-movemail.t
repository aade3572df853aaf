#!/bin/bash
# 09-movemail.t — legacy-clients.md §8.9 (movemail part) on a passthrough
# mount: lockfs mounted over a spool directory that holds `inbox`.
# movemail.mailutils locks inbox.lock (and the output's lock), rewrites the
# mailboxes through mu* temp files (rename, ftruncate), and unlocks.  The
# messages must arrive in `out`, inbox must be emptied, no *.lock or temp
# file may remain — through the mount and in the backing directory after
# unmount.  With inbox.lock held movemail gives up after ~10 s with rc 1.
set -u
. "$(dirname "$0")/../lib/mount.sh"

spool=$TESTDIR/spool
mkdir "$spool"
cat >"$spool/inbox" <<'MBOX'
From alice@example.org Mon Jan  1 00:00:00 2024
From: alice@example.org
To: tester@example.org
Subject: first message

hello one

From bob@example.org Mon Jan  1 00:01:00 2024
From: bob@example.org
To: tester@example.org
Subject: second message

hello two

MBOX
cp "$spool/inbox" "$TESTDIR/inbox.orig"

lockfs_start_or_bail --mnt "$spool"
L=$MNT
ok "the existing inbox is readable through the mount" cmp -- "$TESTDIR/inbox.orig" "$L/inbox"

run 30 movemail.mailutils --no-config "$L/inbox" "$L/out"
is "$RC" 0 "movemail inbox out: rc 0 ($ERR)"
is "$(grep -c '^From ' "$L/out" 2>/dev/null)" 2 "out holds two messages"
like "$(cat -- "$L/out" 2>/dev/null)" 'Subject: first message' "out holds the first message"
like "$(cat -- "$L/out" 2>/dev/null)" 'Subject: second message' "out holds the second message"
is "$(st %s "$L/inbox" 2>/dev/null || echo gone)" 0 "inbox is truncated to 0 bytes"
is "$(cd "$L" && ls -A -- *.lock 2>/dev/null)" "" "no *.lock left in the mount"
is "$(timeout 10 cat -- "$L/.lockfs/status")" "" "no lock held according to .lockfs/status"
is "$(tmp_leaks "$L")" "" "no mu* or lock temp file left"

# Held inbox.lock: movemail retries 10 x 1 s, then rc 1.
printf 'From carol@example.org Mon Jan  1 00:02:00 2024\nSubject: third message\n\nhello three\n\n' >>"$L/inbox"
: >"$L/holder.tmp"
run 10 ln -- "$L/holder.tmp" "$L/inbox.lock"
is "$RC" 0 "took inbox.lock by ln"
fsop unlink "$L/holder.tmp" >/dev/null
run 40 movemail.mailutils --no-config "$L/inbox" "$L/out"
is "$RC" 1 "movemail with inbox.lock held: rc 1 ($ERR)"
cmp_ok "$ELAPSED_MS" -ge 8000 "... after retrying for ~10 s (${ELAPSED_MS} ms)"
like "$ERR" '[Cc]onflict|locked|lock' "... and says the lock is taken"
like "$(cat -- "$L/inbox")" 'third message' "inbox untouched while locked"
is "$(grep -c '^From ' "$L/out")" 2 "out untouched while locked"
is "$(fsop1 lstat "$L/inbox.lock")" OK "the holder's inbox.lock is still there"
run 10 rm -f "$L/inbox.lock"
is "$RC" 0 "released inbox.lock"
is "$(tmp_leaks "$L")" "" "no temp file left by the refused movemail"

if lockfs_stop; then pass "lockfs stopped cleanly"; else fail "lockfs stopped cleanly"; fi
is "$LOCKFS_RC" 0 "lockfs exit status 0"
# The backing directory holds the result.
is "$(grep -c '^From ' "$spool/out" 2>/dev/null)" 2 "backing dir: out holds the two moved messages"
like "$(cat -- "$spool/inbox" 2>/dev/null)" 'third message' "backing dir: inbox holds the later message"
is "$(grep -c '^From ' "$spool/inbox" 2>/dev/null)" 1 "backing dir: inbox holds only the later message"
is "$(cd "$spool" && ls -A -- *.lock 2>/dev/null)" "" "backing dir: no *.lock file"
is "$(tmp_leaks "$spool")" "" "backing dir: no temp files"
is "$(cd "$spool" && ls -A | sort | tr '\n' ' ')" "inbox out " "backing dir holds exactly inbox and out"

done_testing
