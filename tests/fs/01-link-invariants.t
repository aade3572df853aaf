#!/bin/bash
# 01-link-invariants.t — legacy-clients.md §8.1 and §7.2: link(tmp, X.lock)
# is the acquisition every serious tool uses, and each tool verifies it
# through attributes *immediately* (liblockfile: same st_ino/st_rdev; mutt:
# stat(tmp).st_nlink == 2; mailutils: lstat(tmp) == fstat(open(lock)) with
# nlink 2).  New files: size 0, nlink 1, and writable through the creating fd
# whatever their mode (procmail 0444, mutt 0000).
set -u
. "$(dirname "$0")/../lib/mount.sh"

lockfs_start_or_bail
L=$MNT

# §8.1 with the shell tools.
echo x >"$L/t"
run 10 ln -- "$L/t" "$L/X.lock"
is "$RC" 0 "ln t X.lock succeeds"
is "$(st %h "$L/t")" 2 "nlink of t is 2 immediately"
is "$(st %h "$L/X.lock")" 2 "nlink of X.lock is 2 immediately"
is "$(st %i "$L/t")" "$(st %i "$L/X.lock")" "t and X.lock have the same inode number"
m_before=$(st %.9Y "$L/X.lock")
run 10 rm -- "$L/t"
is "$RC" 0 "rm t succeeds"
is "$(st %h "$L/X.lock")" 1 "X.lock has nlink 1 after rm t"
is "$(timeout 10 cat -- "$L/X.lock")" x "X.lock keeps the content x"
is "$(st %.9Y "$L/X.lock")" "$m_before" "X.lock keeps its mtime after rm t"

echo y >"$L/t2"
run 10 ln -- "$L/t2" "$L/X.lock"
is "$RC" 1 "a second ln onto the held X.lock exits 1"
like "$ERR" 'File exists' "a second ln reports 'File exists'"
# procmail's NFS check after a failed link (§7.2.3).
is "$(st %h "$L/t2")" 1 "after the failed link t2 still has nlink 1"
isnt "$(st %i "$L/t2")" "$(st %i "$L/X.lock")" "after the failed link t2 and X.lock differ in inode"
is "$(timeout 10 cat -- "$L/X.lock")" x "the failed link left X.lock's content alone"

# The same, checked inside one process right after link() returns.
printf '123\n' >"$L/t3"
r=$(fsop linkcheck "$L/t3" "$L/Y.lock")
like "$r" '^OK ' "link(t3, Y.lock) succeeds ($r)"
for f in tmp_nlink=2 lock_nlink=2 stat_nlink=2 fstat_nlink=2 same_ino=1 same_rdev=1 fstat_same=1; do
    like " $r " " $f " "right after link: $f"
done
run 10 rm -- "$L/t3"
is "$(st %h "$L/Y.lock")" 1 "Y.lock nlink 1 after unlink(t3)"
is "$(fsop readhex "$L/Y.lock")" "OK 3132330a" "Y.lock content shared through the link"

# lstat, stat and fstat agree on a lock (procmail, mutt and mailutils compare
# them field by field).
a=$(fsop lstat "$L/Y.lock"); b=$(fsop stat "$L/Y.lock")
is "$a" "$b" "stat and lstat of Y.lock agree"

# New files: size 0, nlink 1 at open; every mode accepted; the creator
# writes through its fd even with 0000 and 0444 (matters for non-root).
for mode in 0000 0444 0600 0644; do
    want=$(printf '%o' $((8#$mode)))   # stat -c %a prints 0000 as "0"
    r=$(fsop excl "$L/m$mode.tmp" "$mode" 'data')
    like "$r" '^OK size_at_open=0 nlink_at_open=1 written=4 ' "create mode $mode: size 0, nlink 1, creator writes through the fd ($r)"
    is "$(st %a "$L/m$mode.tmp")" "$want" "create mode $mode: mode as requested"
    is "$(st %s "$L/m$mode.tmp")" 4 "create mode $mode: size 4 after the write"
    is "$(st %u "$L/m$mode.tmp")" "$EUID" "create mode $mode: owned by the creator"
    r=$(fsop link "$L/m$mode.tmp" "$L/m$mode.lock")
    is "$r" OK "link of a mode $mode file onto a lock name (protected_hardlinks sees the caller's uid)"
    is "$(st %a "$L/m$mode.lock")" "$want" "lock from a mode $mode file keeps mode $mode"
    fsop unlink "$L/m$mode.tmp" >/dev/null
done

# Releasing the lock name while the tmp name still exists: the lock is
# released (only *.lock names are locks), the tmp keeps the content.
printf 'keep\n' >"$L/k.tmp"
is "$(fsop link "$L/k.tmp" "$L/K.lock")" OK "K.lock linked from k.tmp"
isnt "$(status_line K.lock)" "" "K.lock is held"
run 10 rm -- "$L/K.lock"
is "$RC" 0 "rm K.lock while k.tmp still exists"
is "$(status_line K.lock)" "" "K.lock released"
is "$(fsop1 lstat "$L/K.lock")" ENOENT "K.lock is gone"
is "$(timeout 10 cat -- "$L/k.tmp")" keep "k.tmp keeps the content"
is "$(st %h "$L/k.tmp")" 1 "k.tmp has nlink 1 again"
is "$(fsop link "$L/k.tmp" "$L/K.lock")" OK "K.lock can be taken again from the same file"
fsop unlink "$L/K.lock" >/dev/null
# ... and again and again while another process stats the lock: the kernel
# takes the unlinked name off the file's link count itself, and must not
# count it twice (then link(2) from k.tmp answers ENOENT).
# (statx with AT_STATX_FORCE_SYNC: a getattr sent every time.)
"$PYTHON" -c '
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(256)
path = os.fsencode(sys.argv[1])
end = time.monotonic() + 30
while time.monotonic() < end and not os.path.exists(sys.argv[2]):
    libc.statx(-100, path, 0x2000, 0xfff, buf)
' "$L/K.lock" "$TESTDIR/stop-stat" &
statter=$!
fails=$(for i in $(seq 300); do
    ln -T -- "$L/k.tmp" "$L/K.lock" 2>&1 || echo "round $i"
    rm -f -- "$L/K.lock"
done | sort | uniq -c | head -n 3)
: >"$TESTDIR/stop-stat"
wait "$statter"
is "$fails" "" "300 rounds of ln k.tmp K.lock; rm K.lock beside a stat loop: every ln succeeds"
fsop unlink "$L/k.tmp" >/dev/null

# A lock taken with O_CREAT|O_EXCL on the lock name itself: size 0, nlink 1.
r=$(fsop excl "$L/E.lock" 0644)
like "$r" '^OK size_at_open=0 nlink_at_open=1 ' "open(E.lock, O_CREAT|O_EXCL): size 0, nlink 1"
is "$(st %s:%h "$L/E.lock")" "0:1" "E.lock: size 0 and nlink 1 through stat"

# Locks are visible in readdir with the right type.
listing=$(timeout 10 ls -A -- "$L")
like "$listing" '(^|[[:space:]])X\.lock($|[[:space:]])' "X.lock is listed by readdir"
is "$(st %F "$L/X.lock")" "regular file" "X.lock is a regular file"

done_testing
