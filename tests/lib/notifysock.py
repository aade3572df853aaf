#!/usr/bin/python3
"""notifysock.py SOCKET MOUNTPOINT OUT [SECS]: a systemd notification socket
for a test.  Binds the datagram socket SOCKET (what $NOTIFY_SOCKET names, as
systemd does for a Type=notify unit) and appends one line to OUT for each
datagram received:
    pid=SENDER mounted=0|1 MESSAGE
MESSAGE's lines joined by '|'; SENDER from the kernel's credentials
(SO_PASSCRED); mounted: MOUNTPOINT was a mount point, per
/proc/self/mountinfo, the moment the datagram arrived.  Ends after a message
with STOPPING=1, or after SECS seconds (default 120).
"""
import os
import socket
import struct
import sys


def unescape(s):
    for code, ch in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        s = s.replace(code, ch)
    return s


def mounted(path):
    with open("/proc/self/mountinfo") as f:
        return any(unescape(line.split()[4]) == path for line in f)


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit("usage: notifysock.py SOCKET MOUNTPOINT OUT [SECS]")
    path, mnt, out = sys.argv[1], os.path.realpath(sys.argv[2]), sys.argv[3]
    secs = float(sys.argv[4]) if len(sys.argv) == 5 else 120.0
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    s.bind(path + ".tmp")
    # Ready once the name exists: bound first, then renamed into place.
    os.rename(path + ".tmp", path)
    s.settimeout(secs)
    creds_len = socket.CMSG_SPACE(struct.calcsize("3i"))
    with open(out, "a") as f:
        while True:
            try:
                data, anc, _, _ = s.recvmsg(4096, creds_len)
            except socket.timeout:
                f.write("timeout\n")
                return
            up = mounted(mnt)
            pid = 0
            for level, kind, value in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                    pid = struct.unpack("3i", value[:12])[0]
            msg = data.decode("utf-8", "replace")
            f.write(f"pid={pid} mounted={int(up)} {msg.replace(chr(10), '|')}\n")
            f.flush()
            if "STOPPING=1" in msg.split("\n"):
                return


if __name__ == "__main__":
    main()
