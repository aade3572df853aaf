#!/bin/bash
# 33-bad-server.t — lockfs pointed at something that is not a working server
# never hangs and never grants (CONTRACT §3: EIO within the network timeout;
# lockfs(8) EXIT STATUS 3).  Three fake servers on loopback, each a small
# python listener: one that accepts and never answers, one that answers
# garbage, one that accepts and closes at once.
#
# tinystore (endpoint tcp://, and tls:// for the handshake): the mount comes
# up within about the network timeout (the server "may come later",
# src/backends/tinystore/tinystore.c) with a warning in its log, and every
# acquisition answers EIO within the network timeout; nothing is granted or
# listed, and the mount stops cleanly.
# etcd (etcd_endpoints=http://): the mount is refused within about the
# network timeout, exit status 3, with one line naming the endpoint (the
# constructor takes the mount's lease; the real cluster's failures are
# 37-etcd-leader-killed.t's, 38-etcd-cluster-restart.t's and
# 39-etcd-partition.t's).
# LDAP (uri ldap://, starttls = false): the mount is refused within about the
# network timeout, exit status 3, with one line naming the server
# (docs/backends.md: "fails the mount with one line saying what to check");
# and a mount made against the real slapd answers EIO within the network
# timeout once a silent listener has taken slapd's port, and shows its lock
# lost within ttl.
set -u
. "$(dirname "$0")/../lib/mount.sh"
[[ $LOCKFS_BACKEND != local ]] || skip_all "the local backend has no server to be bad"

NET_MS=1000
EIO_BOUND_MS=$((NET_MS + 1500))

cat >"$TESTDIR/fake.py" <<'EOF'
# fake.py MODE PORTFILE [PORT]: listen on 127.0.0.1 (PORT, or a free one
# written to PORTFILE) and be a bad server: "silent" reads and never
# answers, "garbage" answers every read (and the connection) with junk,
# "close" closes every connection at once.
import socket, sys, threading
mode, portfile = sys.argv[1], sys.argv[2]
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[3]) if len(sys.argv) > 3 else 0))
s.listen(64)
with open(portfile + ".tmp", "w") as f:
    f.write("%d\n" % s.getsockname()[1])
import os
os.rename(portfile + ".tmp", portfile)
JUNK = b"\xff\x00\x13garbage \x80\x81 not a protocol\r\n" * 8
keep = []
def serve(c):
    try:
        if mode == "garbage":
            c.sendall(JUNK)
        while True:
            d = c.recv(65536)
            if not d:
                break
            if mode == "garbage":
                c.sendall(JUNK)
    except OSError:
        pass
while True:
    c, _ = s.accept()
    if mode == "close":
        c.close()
        continue
    keep.append(c)
    threading.Thread(target=serve, args=(c,), daemon=True).start()
EOF

# fake_start MODE [PORT]: sets FAKE_PID and FAKE_PORT.
fake_start() {
    local pf=$TESTDIR/fake.$1.port
    rm -f "$pf"
    "$PYTHON" "$TESTDIR/fake.py" "$1" "$pf" ${2:+"$2"} </dev/null >/dev/null 2>"$TESTDIR/fake.$1.err" &
    FAKE_PID=$!
    at_exit "kill $FAKE_PID 2>/dev/null"
    if ! wait_until 10 test -s "$pf"; then
        BAIL_OUT "the fake $1 server did not start: $(head -n 3 "$TESTDIR/fake.$1.err")"
    fi
    FAKE_PORT=$(cat "$pf")
}
fake_stop() {
    kill "$FAKE_PID" 2>/dev/null
    wait "$FAKE_PID" 2>/dev/null
}


# ---------------------------------------------------------------- tinystore

tinystore_bad() { # MODE SCHEME
    local mode=$1 scheme=$2 what="tinystore, $2:// server that is $1" t0 mount_ms i line
    fake_start "$mode"
    local saved=$BACKEND_OPTS
    BACKEND_OPTS="backend=tinystore,tinystore_endpoint=$scheme://127.0.0.1:$FAKE_PORT,tinystore_token_file=$TOKEN"
    t0=$(date +%s%N)
    if ! lockfs_start --mounted-only -o ttl=3s -o network_timeout=1s; then
        BACKEND_OPTS=$saved
        fail "$what: lockfs mounts (and waits for the server)"
        fake_stop
        return
    fi
    BACKEND_OPTS=$saved
    mount_ms=$(ms_since "$t0")
    pass "$what: lockfs mounts (the server may come later)"
    cmp_ok "$mount_ms" -le $((NET_MS + 1500)) "$what: mounted after at most the network timeout (${mount_ms} ms)"
    ok "$what: its log says what is wrong with the server" log_has 'warning: tinystore: '
    for i in 1 2 3; do
        timed excl "$MNT/x.lock"
        is "$R" EIO "$what: O_EXCL create #$i answers EIO"
        cmp_ok "$MS" -le "$EIO_BOUND_MS" "$what: ... within the network timeout (${MS} ms)"
    done
    timed mkdir "$MNT/d.lock"
    is "$R" EIO "$what: mkdir of a lock answers EIO"
    cmp_ok "$MS" -le "$EIO_BOUND_MS" "$what: ... within the network timeout (${MS} ms)"
    : >"$MNT/tmp"
    timed link "$MNT/tmp" "$MNT/l.lock"
    is "$R" EIO "$what: link() onto a lock name answers EIO"
    cmp_ok "$MS" -le "$EIO_BOUND_MS" "$what: ... within the network timeout (${MS} ms)"
    isnt "$(fsop1 lstat "$MNT/x.lock")" OK "$what: no x.lock exists"
    run 20 cat "$MNT/.lockfs/status"
    is "$RC" 0 "$what: .lockfs/status can be read"
    unlike "$OUT" 'state=' "$what: .lockfs/status lists no lock"
    if lockfs_stop; then pass "$what: the mount stops cleanly"; else fail "$what: the mount stops cleanly"; fi
    fake_stop
}

if [[ $LOCKFS_BACKEND == tinystore ]]; then
    TOKEN=$TESTDIR/token
    (umask 077 && "$TINYSTORE_BIN" token new data >"$TOKEN") || BAIL_OUT "tinystore token new data failed"
    tinystore_bad silent tcp
    tinystore_bad garbage tcp
    tinystore_bad close tcp
    tinystore_bad silent tls
    tinystore_bad garbage tls
    done_testing
fi

# ---------------------------------------------------------------- etcd

# etcd_bad MODE: the one endpoint is the fake server.  The constructor takes
# the mount's lease (backends.md, "Configuration"): the mount is refused.
etcd_bad() {
    local mode=$1 what="etcd, endpoint that is $1" mnt o n
    fake_start "$mode"
    mnt=$TESTDIR/bad-$mode
    mkdir -p "$mnt" "$TESTDIR/state-bad-$mode"
    at_exit "is_mounted_any '$mnt' && _unmount_force '$mnt'"
    o="state_dir=$TESTDIR/state-bad-$mode,host=$LOCKFS_TEST_HOST,backend=etcd,etcd_endpoints=http://127.0.0.1:$FAKE_PORT,ttl=3s,network_timeout=1s"
    ((EUID != 0)) && o+=",allow_other"
    run 30 env --default-signal=INT,QUIT,TERM,HUP "$LOCKFS_BIN" "$mnt" -f -o "$o"
    is "$RC" 3 "$what: the mount is refused, exit status 3 (backend not reachable at start)"
    cmp_ok "$ELAPSED_MS" -le $((NET_MS + 2000)) "$what: ... within about the network timeout (${ELAPSED_MS} ms)"
    nok "$what: nothing is mounted" is_mounted_any "$mnt"
    n=$(grep -c . <<<"$ERR")
    is "$n" 1 "$what: one line on stderr"
    ((n == 1)) || diag "stderr: $ERR"
    like "$(tail -n 1 <<<"$ERR")" "127\\.0\\.0\\.1:$FAKE_PORT" "$what: the error names the endpoint"
    fake_stop
}

if [[ $LOCKFS_BACKEND == etcd ]]; then
    etcd_bad silent
    etcd_bad garbage
    etcd_bad close
    done_testing
fi

# ---------------------------------------------------------------- LDAP

# ldap_conf URI: a configuration for URI with slapd's user, no StartTLS.
ldap_conf() {
    local f=$TESTDIR/bad-ldap.conf
    printf '[ldap]\nuri = %s\nbind_dn = %s\npassword_file = %s\nbase = ou=locks,%s\nstarttls = false\n' \
        "$1" "$SLAPD_USERDN" "$SLAPD_USERPW_FILE" "$SLAPD_SUFFIX" >"$f"
    printf '%s' "$f"
}

ldap_bad() { # MODE
    local mode=$1 what="ldap, server that is $1" conf mnt o n
    fake_start "$mode"
    conf=$(ldap_conf "ldap://127.0.0.1:$FAKE_PORT")
    mnt=$TESTDIR/bad-$mode
    mkdir -p "$mnt" "$TESTDIR/state-bad-$mode"
    at_exit "is_mounted_any '$mnt' && _unmount_force '$mnt'"
    o="state_dir=$TESTDIR/state-bad-$mode,host=$LOCKFS_TEST_HOST,backend=ldap,ttl=3s,network_timeout=1s"
    ((EUID != 0)) && o+=",allow_other"
    run 30 env --default-signal=INT,QUIT,TERM,HUP "$LOCKFS_BIN" "$mnt" -f -o "$o" --config "$conf"
    is "$RC" 3 "$what: the mount is refused, exit status 3 (backend not reachable at start)"
    cmp_ok "$ELAPSED_MS" -le $((NET_MS + 2000)) "$what: ... within about the network timeout (${ELAPSED_MS} ms)"
    nok "$what: nothing is mounted" is_mounted_any "$mnt"
    n=$(grep -c . <<<"$ERR")
    is "$n" 1 "$what: one line on stderr"
    ((n == 1)) || diag "stderr: $ERR"
    like "$(tail -n 1 <<<"$ERR")" "ldap://127\\.0\\.0\\.1:$FAKE_PORT" "$what: the error names the server"
    fake_stop
}

ldap_bad silent
ldap_bad garbage
ldap_bad close

# A mount that came up against the real slapd, which a silent listener then
# replaces on the same port: EIO within the network timeout, no grant, and
# the held lock is lost within ttl.
lockfs_start_or_bail -o ttl=3s -o network_timeout=1s
is "$(fsop1 excl "$MNT/h.lock")" OK "ldap, real slapd: h.lock taken"
# Kept open: lost, the name leaves the mount; the descriptor shows the loss.
exec {hfd}<"$MNT/h.lock"
HPATH=/proc/$$/fd/$hfd
bash "$TESTLIB/slapd.sh" stop "$SLAPD_TOP/slapd"
t_down=$(date +%s%N)
fake_start silent "$SLAPD_PORT"
for i in 1 2 3; do
    timed excl "$MNT/y$i.lock"
    is "$R" EIO "ldap, slapd's port now silent: O_EXCL create #$i answers EIO"
    cmp_ok "$MS" -le "$EIO_BOUND_MS" "ldap, slapd's port now silent: ... within the network timeout (${MS} ms)"
done
h_lost() { [[ $(timeout 10 getfattr --only-values -n user.lockfs.state -- "$HPATH" 2>/dev/null) == lost ]]; }
ok "ldap, slapd's port now silent: h.lock is lost" wait_until 10 h_lost
lost_ms=$(ms_since "$t_down")
cmp_ok "$lost_ms" -le 3500 "ldap, slapd's port now silent: lost within ttl of the last possible renewal (${lost_ms} ms)"
is "$(fsop1 utime "$HPATH")" ESTALE "ldap, slapd's port now silent: touch of the lost h.lock: ESTALE"
exec {hfd}<&-
isnt "$(fsop1 lstat "$MNT/y1.lock")" OK "ldap, slapd's port now silent: nothing was granted"
if lockfs_stop; then pass "ldap, slapd's port now silent: the mount stops cleanly"; else fail "ldap, slapd's port now silent: the mount stops cleanly"; fi
fake_stop

done_testing
