#!/bin/bash
# 12-content.t — legacy-clients.md §8.13 and §0.4: a lock's content is
# exactly the bytes its holder wrote, st_size matches, lockfs adds nothing
# (liblockfile and mailutils parse the pid back; procmail wants size 0 on a
# new file; mailutils -p deletes non-numeric locks as corrupt).
set -u
. "$(dirname "$0")/../lib/mount.sh"

lockfs_start_or_bail
L=$MNT

# A dead pid written by noclobber is stolen by dotlockfile -p.
dead=999999
while kill -0 "$dead" 2>/dev/null; do dead=$((dead - 1)); done
run 10 bash -c 'set -C; echo "$2" > "$1"' _ "$L/v.lock" "$dead"
is "$RC" 0 "bash set -C; echo $dead > v.lock: rc 0"
is "$(timeout 10 cat -- "$L/v.lock")" "$dead" "v.lock reads back $dead"
run 10 dotlockfile -l -p -r 0 "$L/v.lock"
is "$RC" 0 "dotlockfile -l -p -r 0 steals the lock of dead pid $dead"
like "$(timeout 10 cat -- "$L/v.lock")" '^[0-9]+$' "v.lock now holds the new holder's pid"
isnt "$(timeout 10 cat -- "$L/v.lock")" "$dead" "... which is not the dead pid"

# 12345\n: exactly 6 bytes.
run 10 bash -c 'set -C; echo 12345 > "$1"' _ "$L/w.lock"
is "$RC" 0 "w.lock taken with content 12345"
is "$(fsop readhex "$L/w.lock")" "OK 31323334350a" "w.lock reads exactly '12345\\n'"
is "$(st %s "$L/w.lock")" 6 "st_size of w.lock is 6"
is "$(timeout 10 head -c 16 -- "$L/w.lock" | wc -c)" 6 "a 16-byte read returns 6 bytes (liblockfile's read)"

# Empty lock stays empty: no synthesized holder text.
: >"$L/e.tmp"
is "$(fsop link "$L/e.tmp" "$L/e.lock")" OK "e.lock linked from an empty file"
is "$(st %s "$L/e.lock")" 0 "e.lock size 0"
is "$(fsop readhex "$L/e.lock")" "OK " "e.lock reads as empty"

# Binary bytes, written through the creating fd.
r=$(fsop excl "$L/b.lock" 0644 '\x00\x01\xff\n')
like "$r" '^OK .*written=4' "b.lock created with 4 binary bytes"
is "$(fsop readhex "$L/b.lock")" "OK 0001ff0a" "b.lock returns the binary bytes verbatim"

# Content written to the tmp before link is visible through the lock, and a
# later write through the lock is visible through the tmp (one inode).
printf 'before\n' >"$L/s.tmp"
is "$(fsop link "$L/s.tmp" "$L/s.lock")" OK "s.lock linked from s.tmp"
is "$(timeout 10 cat -- "$L/s.lock")" before "s.lock shows what was written to s.tmp"
is "$(fsop write "$L/s.lock" 'after\n' trunc)" "OK written=6" "rewrite through s.lock"
is "$(timeout 10 cat -- "$L/s.tmp")" after "s.tmp shows the write made through s.lock"
fsop unlink "$L/s.tmp" >/dev/null
is "$(timeout 10 cat -- "$L/s.lock")" after "s.lock keeps it after unlink(s.tmp)"

# A larger body (several pages) round-trips.
head -c 20000 /dev/urandom >"$TESTDIR/big"
cp -- "$TESTDIR/big" "$L/big.tmp"
is "$(fsop link "$L/big.tmp" "$L/big.lock")" OK "big.lock linked from a 20000-byte file"
ok "big.lock content is byte-identical" cmp -- "$TESTDIR/big" "$L/big.lock"
is "$(st %s "$L/big.lock")" 20000 "big.lock st_size 20000"

# Reading holder information elsewhere does not change the content.
timeout 10 cat -- "$L/.lockfs/status" >/dev/null 2>&1
timeout 10 cat -- "$L/.lockfs/w.lock" >/dev/null 2>&1
xattr "$L/w.lock" user.lockfs.fence >/dev/null
is "$(fsop readhex "$L/w.lock")" "OK 31323334350a" "w.lock unchanged after reading .lockfs and xattrs"

done_testing
