#!/bin/bash
# 29-foreign-strings.t — a holder record's strings are another host's words,
# shown escaped everywhere (\NNN for controls, the space, the backslash, bad
# UTF-8, C1 controls, line separators and bidi overrides: lockfs(8)).  A lock
# whose holder's command line holds newlines, a tab, terminal escapes, CSI as
# U+009B, an RLO and a forged "\nother.lock state=held ..." line, taken by a
# mount whose host name holds a backslash, '=', ':' and non-ASCII: its
# .lockfs/status has exactly one line for it, .lockfs/PATH no forged
# "field: value" line, the xattrs give the recorded bytes as they are,
# lockfsctl status prints no control character and --json gives the bytes
# back, and lockfsctl unlock shows the command escaped.  A lock name with
# such bytes is listed escaped and broken by its escaped key through
# .lockfs/break; a malformed escape there is refused (EINVAL).
#
# On a shared backend the locks are taken through one mount (the odd host)
# and everything is read through a second one (hostB): the strings come
# from the backend's record, as from another host.  (The user name is the
# holder's passwd entry, which a test cannot make odd; it is escaped by the
# same code, covered by build/tests/unit/test_view_format.)
set -u
. "$(dirname "$0")/../lib/mount.sh"

lockfsctl_or_bail

# A host name config.c accepts (no space, no ASCII control, valid UTF-8):
# a backslash, '=', ':', ü, U+202E (RLO) and U+009B (CSI).
ODD_HOST=$'h\\ost=x:\xc3\xbc\xe2\x80\xae\xc2\x9b'
# -o takes libfuse's escapes (lockfs(8)): a backslash is written \\.
lockfs_start_or_bail -o "host=${ODD_HOST//\\/\\\\}"
A=$MNT
if [[ $LOCKFS_BACKEND == local ]]; then
    R=$A
    note "local backend: one mount, its own records"
else
    lockfs_start_or_bail -o host=hostB
    R=$MNT
    note "$LOCKFS_BACKEND: locks taken through the odd host, read through hostB"
fi

# The checks, by tests/lib/viewfmt.py (the rule written again).
cat >"$TESTDIR/check.py" <<'EOF'
import json, os, sys
sys.path.insert(0, os.environ['TESTLIB'])
from viewfmt import escape, unescape, clean

STATUS = [b'state', b'fence', b'host', b'pid', b'uid', b'user', b'age', b'heartbeat_age',
          b'command']
LOCK = [b'lock', b'state', b'fence', b'host', b'pid', b'uid', b'gid', b'user', b'command',
        b'acquired', b'heartbeat', b'age', b'heartbeat_age', b'lease_left_ms', b'backend',
        b'mine']

def fail(why):
    print(why)
    sys.exit(0)

mode = sys.argv[1]
a = [os.fsencode(x) for x in sys.argv[2:]]
data = open(a[0], 'rb').read()

if mode == 'status':  # FILE NLOCKS KEY HOST CMD|-
    n, key, host, cmd = int(a[1]), a[2], a[3], a[4]
    if not clean(data, b' \n'):
        fail('a control character, bad UTF-8 or the like in %r' % data)
    if not data.endswith(b'\n'):
        fail('no final newline: %r' % data)
    lines = data[:-1].split(b'\n')
    if len(lines) != n:
        fail('%d lines, not %d: %r' % (len(lines), n, data))
    mine = [l for l in lines if l.split(b' ')[0] == escape(key)]
    if len(mine) != 1:
        fail('%d lines for %r: %r' % (len(mine), escape(key), data))
    words = mine[0].split(b' ')
    names = [w.split(b'=', 1)[0] for w in words[1:]]
    if names != STATUS:
        fail('fields %r, not %r' % (names, STATUS))
    f = dict(w.split(b'=', 1) for w in words[1:])
    if unescape(words[0]) != key:
        fail('key %r unescapes to %r' % (words[0], unescape(words[0])))
    if f[b'host'] != escape(host) or unescape(f[b'host']) != host:
        fail('host=%r, not %r' % (f[b'host'], escape(host)))
    if cmd != b'-' and (f[b'command'] != escape(cmd) or unescape(f[b'command']) != cmd):
        fail('command=%r, not %r' % (f[b'command'], escape(cmd)))
    print('ok')

elif mode == 'lock':  # FILE KEY HOST CMD
    key, host, cmd = a[1], a[2], a[3]
    if not clean(data, b' \n'):
        fail('a control character, bad UTF-8 or the like in %r' % data)
    lines = data[:-1].split(b'\n')
    names = [l.split(b': ', 1)[0] for l in lines]
    if not all(b': ' in l for l in lines) or names != [x for x in LOCK if x in names]:
        fail('lines %r are not the fields %r, once each, in order' % (names, LOCK))
    if len(names) < len(LOCK) - 1:
        fail('fields missing: %r' % names)
    f = dict(l.split(b': ', 1) for l in lines)
    for name, want in ((b'lock', key), (b'host', host), (b'command', cmd)):
        if f[name] != escape(want) or unescape(f[name]) != want:
            fail('%s: %r, not %r' % (name.decode(), f[name], escape(want)))
    print('ok')

elif mode == 'xattr':  # PATH HOST CMD (the path is a[0]; data unused)
    host, cmd = a[1], a[2]
    got = os.getxattr(a[0], 'user.lockfs.command')
    if got != cmd:
        fail('user.lockfs.command %r, not %r' % (got, cmd))
    got = os.getxattr(a[0], 'user.lockfs.host')
    if got != host:
        fail('user.lockfs.host %r, not %r' % (got, host))
    print('ok')

elif mode == 'ctl-status':  # OUT PATH HOST PID CMD
    path, host, pid, cmd = a[1], a[2], a[3], a[4]
    if not clean(data, b' \n'):
        fail('lockfsctl printed a control character or the like: %r' % data)
    rows = [l for l in data.split(b'\n') if l.startswith(escape(path) + b' ')]
    if len(rows) != 1:
        fail('%d rows for %r in %r' % (len(rows), escape(path), data))
    if (b' ' + escape(host) + b':' + pid + b' ') not in rows[0]:
        fail('no holder %r in %r' % (escape(host) + b':' + pid, rows[0]))
    if cmd != b'-' and not rows[0].endswith(b' ' + escape(cmd, keep_space=True)):
        fail('the row %r does not end with the command %r' % (rows[0], escape(cmd, True)))
    print('ok')

elif mode == 'ctl-json':  # OUT KEY HOST PID CMD
    key, host, pid, cmd = a[1], a[2], a[3], a[4]
    if not clean(data, b' \n'):
        fail('lockfsctl --json printed a control character or the like: %r' % data)
    d = json.loads(data)
    got = [l for l in d['locks'] if os.fsencode(l['key']) == key]
    if len(got) != 1:
        fail('%d locks with key %r in %r' % (len(got), key, data))
    l = got[0]
    for name, want in (('host', host), ('command', cmd), ('pid', int(pid))):
        g = l[name] if name == 'pid' else l[name].encode('utf-8')
        if g != want:
            fail('%s: %r, not %r' % (name, g, want))
    print('ok')

elif mode == 'ctl-unlock':  # OUT HOST PID CMD
    host, pid, cmd = a[1], a[2], a[3]
    if not clean(data, b' \n'):
        fail('lockfsctl unlock printed a control character or the like: %r' % data)
    lines = data.split(b'\n')
    want = b'command:    ' + escape(cmd, keep_space=True)
    if want not in lines:
        fail('no line %r in %r' % (want, data))
    if not any(l.startswith(b'holder:     ' + escape(host) + b':' + pid + b' ')
               for l in lines):
        fail('no holder line for %r in %r' % (escape(host) + b':' + pid, data))
    print('ok')
EOF
export TESTLIB
check() { "$PYTHON" "$TESTDIR/check.py" "$@" 2>&1; }

# write_break MNT TEXT: TEXT (exact bytes) written to MNT/.lockfs/break;
# prints OK or the errno name.
write_break() {
    "$PYTHON" - "$1/.lockfs/break" "$2" <<'EOF'
import errno, os, sys
try:
    fd = os.open(sys.argv[1], os.O_WRONLY)
    try:
        os.write(fd, os.fsencode(sys.argv[2]))
    finally:
        os.close(fd)
    print('OK')
except OSError as e:
    print(errno.errorcode.get(e.errno, str(e.errno)))
EOF
}

# The holder's command: bash with an argument made to forge lines, fields
# and terminal output.
EVIL=$'sh\n\tx\e]0;owned\a\e[2J\e[1;1H\xc2\x9b31m\xe2\x80\xae\\012 \nother.lock state=held fence=1 host=forged\nfence: 1\r'
SCRIPT='set -C; : > "$1" && echo $$'
run 10 bash -c "$SCRIPT" "$EVIL" "$A/x.lock"
is "$RC" 0 "a holder with a hostile command line takes x.lock"
P=$OUT
CMD="bash -c $SCRIPT $EVIL $A/x.lock"

# A lock name with such bytes too (a plain holder).
KEY=$'k \t\e[2J\xe2\x80\xae\n\\9.lock'
run 10 bash -c 'set -C; : > "$1" && echo $$' _ "$A/$KEY"
is "$RC" 0 "a lock whose name holds a space, tab, ESC, RLO, newline and '\\9' is taken"
P2=$OUT

# Through R: wait for both records (tinystore writes them 50 ms after the
# grant), then look.
seen() {
    timeout 10 cat -- "$R/.lockfs/status" >"$TESTDIR/status" 2>/dev/null &&
        [[ $(check status "$TESTDIR/status" 2 x.lock "$ODD_HOST" "$CMD") == ok ]] &&
        [[ $(check status "$TESTDIR/status" 2 "$KEY" "$ODD_HOST" -) == ok ]]
}
wait_until 10 seen
timeout 10 cat -- "$R/.lockfs/status" >"$TESTDIR/status"
is "$(check status "$TESTDIR/status" 2 x.lock "$ODD_HOST" "$CMD")" ok \
    ".lockfs/status: two lines for two locks; x.lock's host and command escaped and exact"
is "$(check status "$TESTDIR/status" 2 "$KEY" "$ODD_HOST" -)" ok \
    ".lockfs/status: the odd lock name is one word, escaped"
is "$(grep -c '^other\.lock' "$TESTDIR/status")" 0 ".lockfs/status: no forged other.lock line"

timeout 10 cat -- "$R/.lockfs/x.lock" >"$TESTDIR/x.txt"
is "$(check lock "$TESTDIR/x.txt" x.lock "$ODD_HOST" "$CMD")" ok \
    ".lockfs/x.lock: one line per field, no forged field, host and command escaped and exact"
is "$(grep -c '^state: ' "$TESTDIR/x.txt")" 1 ".lockfs/x.lock: one state line (the forged 'state:' is not one)"
timeout 10 cat -- "$R/.lockfs/$KEY" >"$TESTDIR/k.txt"
ok ".lockfs/KEY of the odd name: its lock line is the escaped key" \
    grep -qxF "lock: $(status_escape "$KEY")" "$TESTDIR/k.txt"

is "$(check xattr "$R/x.lock" "$ODD_HOST" "$CMD")" ok \
    "user.lockfs.command and .host are the recorded bytes, unescaped (one value each)"

# lockfsctl status: a table with nothing raw in it; --json gives the bytes back.
timeout 20 "$CTL" status "$R" >"$TESTDIR/ctl.out" 2>"$TESTDIR/ctl.err"
is "$?" 0 "lockfsctl status exits 0"
is "$(check ctl-status "$TESTDIR/ctl.out" "$R/x.lock" "$ODD_HOST" "$P" "$CMD")" ok \
    "lockfsctl status: x.lock's row shows host and command escaped, nothing raw"
is "$(grep -c . "$TESTDIR/ctl.out")" 3 "lockfsctl status: a header and one row per lock"
is "$(check ctl-status "$TESTDIR/ctl.out" "$R/$KEY" "$ODD_HOST" "$P2" -)" ok \
    "lockfsctl status: one row for the odd lock name, its path escaped"
timeout 20 "$CTL" status --json "$R" >"$TESTDIR/ctl.json" 2>"$TESTDIR/ctl.err"
is "$?" 0 "lockfsctl status --json exits 0"
is "$(check ctl-json "$TESTDIR/ctl.json" x.lock "$ODD_HOST" "$P" "$CMD")" ok \
    "lockfsctl status --json: host and command parsed back to the recorded bytes"

# .lockfs/break: malformed escapes are refused, not taken literally; the
# escaped key breaks the odd lock.
is "$(write_break "$R" $'x\\089.lock\n')" EINVAL ".lockfs/break: '\\089' (not octal) is EINVAL"
is "$(write_break "$R" $'x\\400.lock\n')" EINVAL ".lockfs/break: '\\400' (not a byte) is EINVAL"
is "$(write_break "$R" $'x\\\n')" EINVAL ".lockfs/break: a lone backslash is EINVAL"
is "$(write_break "$R" $'a b c\n')" EINVAL ".lockfs/break: three words are EINVAL"
is "$(fsop1 lstat "$R/x.lock")" OK "... and x.lock is still held"
is "$(write_break "$R" "$(status_escape "$KEY")"$'\n')" OK ".lockfs/break: the escaped key of the odd lock breaks it"
gone() { [[ $(fsop1 lstat "$1") == ENOENT ]]; }
ok "the odd lock is gone" wait_until 5 gone "$R/$KEY"

# lockfsctl unlock shows the holder escaped, then breaks it.
timeout 20 "$CTL" unlock --yes "$R/x.lock" >"$TESTDIR/unlock.out" 2>&1 </dev/null
is "$?" 0 "lockfsctl unlock --yes breaks x.lock"
is "$(check ctl-unlock "$TESTDIR/unlock.out" "$ODD_HOST" "$P" "$CMD")" ok \
    "lockfsctl unlock: holder and command lines escaped, nothing raw"
ok "x.lock is gone" wait_until 5 gone "$R/x.lock"
# (The holder's mount learns of the breaks at its next renewal:
# 34-break-other-host.t.)
[[ $R != "$A" ]] && rm -f "$A/x.lock" "$A/$KEY" 2>/dev/null

# The daemons' logs name the locks and holders too: one line per message.
for log in "$TESTDIR"/lockfs*.log; do
    is "$(LC_ALL=C grep -c $'[\x01-\x09\x0b-\x1f\x7f]' "$log")" 0 \
        "$(basename "$log"): no control character (ESC, CR, ...) in the log"
done
ok "the break of the odd lock is logged on one line, the key escaped" \
    grep -qF "lock broken: $("$PYTHON" "$TESTLIB/viewfmt.py" escape-text "$KEY"): held by $(status_escape "$ODD_HOST"):$P2 " \
    "$TESTDIR"/lockfs*.log

done_testing
