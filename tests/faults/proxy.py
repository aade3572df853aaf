#!/usr/bin/python3
"""proxy.py — the fault suite's TCP proxy: one port on 127.0.0.1 forwarding to
one upstream, whose link a test breaks and mends at run time.

  proxy.py serve --upstream HOST:PORT --control SOCK [--listen HOST:PORT]
                 [--port-file FILE] [--log FILE] [--watch PID] [--deadline SECS]
  proxy.py ctl SOCK[,SOCK...] COMMAND [ARG...]
                                          (prints each reply; exit 0 when all
                                          are "ok ..."; several proxies get the
                                          command at once)

serve listens on --listen (default 127.0.0.1:0, a free port), writes the port
it got to --port-file (atomically, once listening) and takes commands, one a
line, on the Unix socket --control.  Only loopback addresses are accepted for
both ends.  Commands (each answered by one line, "ok ..." or "error ..."):

  forward        pass bytes both ways, accept and connect new clients (the
                 default); bytes held back by a drop are delivered now, in
                 order, as TCP would after a partition heals
  drop [both]    silent partition: connections stay open, nothing is
                 forwarded either way (the proxy stops reading, so the
                 kernel's buffers fill and writers block, as they would
                 behind a dead link); new clients are accepted but not
                 connected upstream until the link is mended
  drop c2s       only client -> server stops (requests vanish, answers flow)
  drop s2c       only server -> client stops (requests arrive, answers vanish)
  reset          every connection is closed with RST (SO_LINGER 0), both
                 sides, and the port stops listening, so new connections are
                 refused; "forward" listens again on the same port
  delay MS       every chunk is forwarded MS milliseconds after it arrived
                 (both ways; "delay 0" ends it); combines with a one-way drop
  drop-s2c-after OP:N
                 LDAP only: forward until the Nth request of operation OP
                 (bind, search, modify, add, delete, moddn, compare) goes to
                 the server, then drop s2c, so that its answer and every later
                 one vanish: a request the server carries out and whose
                 answer is lost, at a chosen point of a conversation
  status         the mode, connection and byte counts
  quit           exit

Every wait is bounded: the proxy exits when its parent (or --watch PID) dies,
when --deadline seconds have passed, on SIGTERM/SIGINT, or on "quit".  A
client whose upstream refuses is closed with RST at once.  Stdlib only.
"""

import argparse
import asyncio
import os
import signal
import socket
import struct
import sys
import time

CHUNK = 65536
CTL_TIMEOUT = 5.0


def now_ns():
    return time.time_ns()


def parse_addr(s, what):
    host, _, port = s.rpartition(":")
    if not host or not port.isdigit():
        raise SystemExit(f"proxy.py: {what} must be HOST:PORT, not {s!r}")
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise SystemExit(f"proxy.py: {what} must be on loopback (127.0.0.1), not {host}")
    return host, int(port)


def rst(writer):
    """Close a stream with RST: SO_LINGER 0, then abort."""
    try:
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    try:
        writer.transport.abort()
    except Exception:
        pass


# The protocolOp tags of LDAP requests (RFC 4511, [APPLICATION n]).
LDAP_OPS = {"bind": 0x60, "search": 0x63, "modify": 0x66, "add": 0x68,
            "delete": 0x4a, "moddn": 0x6c, "compare": 0x6e}


def ldap_ops(data):
    """The protocolOp tags of the LDAP messages that begin in DATA, in order.
    A client writes each request whole, so a chunk read on loopback holds
    whole requests; parsing stops at anything else."""
    tags, i = [], 0
    while i + 2 <= len(data) and data[i] == 0x30:
        n, j = data[i + 1], i + 2
        if n & 0x80:
            k = n & 0x7f
            if k == 0 or k > 4 or j + k > len(data):
                break
            n, j = int.from_bytes(data[j:j + k], "big"), j + k
        if j + 2 > len(data) or data[j] != 0x02:  # messageID INTEGER
            break
        t = j + 2 + data[j + 1]
        if t >= len(data):
            break
        tags.append(data[t])
        i = j + n
    return tags


class Gate:
    """An open/closed flag that can be awaited."""

    def __init__(self):
        self.ev = asyncio.Event()
        self.ev.set()

    def set(self, is_open):
        if is_open:
            self.ev.set()
        else:
            self.ev.clear()

    def is_open(self):
        return self.ev.is_set()

    async def wait(self):
        await self.ev.wait()


class Conn:
    seq = 0

    def __init__(self, proxy, creader, cwriter):
        Conn.seq += 1
        self.id = Conn.seq
        self.proxy = proxy
        self.cr, self.cw = creader, cwriter
        self.ur = self.uw = None
        self.tasks = []
        self.main = asyncio.current_task()
        self.closed = False

    async def run(self):
        p = self.proxy
        try:
            # A silent partition accepts a client but does not reach the server.
            await p.c2s.wait()
            try:
                self.ur, self.uw = await asyncio.wait_for(
                    asyncio.open_connection(*p.upstream), timeout=p.connect_timeout)
            except (OSError, asyncio.TimeoutError) as e:
                p.log(f"conn {self.id}: upstream {p.upstream[0]}:{p.upstream[1]} "
                      f"unreachable ({e.__class__.__name__}: {e}); client reset")
                p.refused += 1
                rst(self.cw)
                return
            self.tasks = [asyncio.ensure_future(self.pump(self.cr, self.uw, p.c2s, "c2s")),
                          asyncio.ensure_future(self.pump(self.ur, self.cw, p.s2c, "s2c"))]
            await asyncio.gather(*self.tasks, return_exceptions=True)
        except asyncio.CancelledError:
            pass
        finally:
            self.close()

    async def pump(self, reader, writer, gate, direction):
        """reader -> queue -> writer, so a delay holds each chunk its own time."""
        p = self.proxy
        q = asyncio.Queue(maxsize=256)

        async def read_side():
            try:
                while True:
                    await gate.wait()
                    data = await reader.read(CHUNK)
                    await q.put((time.monotonic(), data))
                    if not data:
                        return
            except (OSError, asyncio.IncompleteReadError):
                await q.put((time.monotonic(), b""))

        rt = asyncio.ensure_future(read_side())
        try:
            while True:
                t, data = await q.get()
                await gate.wait()
                if p.delay_ms:
                    left = t + p.delay_ms / 1000.0 - time.monotonic()
                    if left > 0:
                        await asyncio.sleep(left)
                    await gate.wait()
                if not data:
                    try:
                        if writer.can_write_eof():
                            writer.write_eof()
                    except OSError:
                        pass
                    return
                if direction == "c2s" and p.arm is not None:
                    p.count_requests(data)
                writer.write(data)
                setattr(p, "bytes_" + direction, getattr(p, "bytes_" + direction) + len(data))
                await writer.drain()
        except (OSError, ConnectionError):
            return
        finally:
            rt.cancel()

    def close(self, reset=False):
        if self.closed:
            return
        self.closed = True
        for t in self.tasks:
            t.cancel()
        if self.main is not None and self.main is not asyncio.current_task():
            self.main.cancel()
        for w in (self.cw, self.uw):
            if w is None:
                continue
            if reset:
                rst(w)
            else:
                try:
                    w.close()
                except Exception:
                    pass
        self.proxy.conns.discard(self)


class Proxy:
    def __init__(self, args):
        self.args = args
        self.listen = parse_addr(args.listen, "--listen")
        self.upstream = parse_addr(args.upstream, "--upstream")
        self.connect_timeout = 2.0
        self.c2s = Gate()
        self.s2c = Gate()
        self.delay_ms = 0
        self.arm = None  # drop-s2c-after: [tag, requests left]
        self.mode = "forward"
        self.server = None
        self.port = None
        self.conns = set()
        self.accepted = self.refused = self.resets = 0
        self.bytes_c2s = self.bytes_s2c = 0
        self.stopping = asyncio.Event()
        self.logf = open(args.log, "a", buffering=1) if args.log else None

    def log(self, msg):
        if self.logf:
            self.logf.write(f"{now_ns()} {msg}\n")

    async def on_client(self, r, w):
        self.accepted += 1
        c = Conn(self, r, w)
        self.conns.add(c)
        await c.run()

    async def start_listening(self):
        host, port = self.listen
        if self.port is not None:
            port = self.port
        # The port was ours a moment ago; another socket in TIME_WAIT does not
        # stop a listener with SO_REUSEADDR.  Bounded retries all the same.
        for attempt in range(50):
            try:
                self.server = await asyncio.start_server(
                    self.on_client, host, port, reuse_address=True, backlog=128)
                break
            except OSError as e:
                if attempt == 49:
                    raise
                self.log(f"listen on {host}:{port} failed ({e}); retrying")
                await asyncio.sleep(0.1)
        self.port = self.server.sockets[0].getsockname()[1]

    async def stop_listening(self):
        if self.server is not None:
            self.server.close()
            try:
                await asyncio.wait_for(self.server.wait_closed(), timeout=2)
            except asyncio.TimeoutError:
                pass
            self.server = None

    def count_requests(self, data):
        """drop-s2c-after: close s2c before the request that makes N goes
        on, so that no byte of its answer can pass."""
        for tag in ldap_ops(data):
            if tag == self.arm[0]:
                self.arm[1] -= 1
                if self.arm[1] == 0:
                    self.s2c.set(False)
                    self.arm = None
                    self.mode = self.describe()
                    self.log(f"mode {self.mode} delay_ms={self.delay_ms} (drop-s2c-after reached)")
                    return

    def status(self):
        return (f"mode={self.mode} delay_ms={self.delay_ms} port={self.port} "
                f"listening={'yes' if self.server else 'no'} conns={len(self.conns)} "
                f"accepted={self.accepted} refused={self.refused} resets={self.resets} "
                f"bytes_c2s={self.bytes_c2s} bytes_s2c={self.bytes_s2c}")

    def describe(self):
        if self.server is None:
            m = "reset"
        elif self.c2s.is_open() and self.s2c.is_open():
            m = "forward"
        elif not self.c2s.is_open() and not self.s2c.is_open():
            m = "drop"
        elif not self.c2s.is_open():
            m = "drop-c2s"
        else:
            m = "drop-s2c"
        return m

    async def command(self, line):
        words = line.split()
        if not words:
            return "error empty command"
        cmd, rest = words[0], words[1:]
        if cmd == "forward" and not rest:
            self.arm = None
            self.c2s.set(True)
            self.s2c.set(True)
            self.delay_ms = 0
            if self.server is None:
                await self.start_listening()
        elif cmd == "drop" and len(rest) <= 1:
            which = rest[0] if rest else "both"
            if which not in ("both", "c2s", "s2c"):
                return "error drop takes both, c2s or s2c"
            if self.server is None:
                await self.start_listening()
            self.c2s.set(which == "s2c")
            self.s2c.set(which == "c2s")
        elif cmd == "reset" and not rest:
            await self.stop_listening()
            n = 0
            for c in list(self.conns):
                c.close(reset=True)
                n += 1
            self.resets += n
            self.c2s.set(True)
            self.s2c.set(True)
            self.log(f"reset {n} connections")
        elif cmd == "delay" and len(rest) == 1 and rest[0].isdigit():
            self.delay_ms = int(rest[0])
        elif cmd == "drop-s2c-after" and len(rest) == 1:
            op, _, n = rest[0].partition(":")
            if op not in LDAP_OPS or not n.isdigit() or int(n) < 1:
                return f"error drop-s2c-after takes OP:N, OP one of {', '.join(LDAP_OPS)}"
            self.arm = [LDAP_OPS[op], int(n)]
        elif cmd == "status" and not rest:
            return "ok " + self.status()
        elif cmd == "quit" and not rest:
            self.stopping.set()
            return "ok quitting"
        else:
            return f"error unknown command {line.strip()!r}"
        self.mode = self.describe()
        self.log(f"mode {self.mode} delay_ms={self.delay_ms}")
        return "ok " + self.status()

    async def on_control(self, r, w):
        try:
            while True:
                line = await asyncio.wait_for(r.readline(), timeout=CTL_TIMEOUT)
                if not line:
                    break
                try:
                    reply = await asyncio.wait_for(self.command(line.decode("utf-8", "replace")),
                                                   timeout=CTL_TIMEOUT)
                except Exception as e:  # the proxy must keep serving
                    reply = f"error {e.__class__.__name__}: {e}"
                w.write((reply + "\n").encode())
                await asyncio.wait_for(w.drain(), timeout=CTL_TIMEOUT)
        except (asyncio.TimeoutError, OSError):
            pass
        finally:
            w.close()

    async def watch_parent(self):
        ppid = os.getppid()
        watch = self.args.watch
        while not self.stopping.is_set():
            if os.getppid() != ppid:
                self.log("parent gone; exiting")
                self.stopping.set()
                break
            if watch:
                try:
                    os.kill(watch, 0)
                except ProcessLookupError:
                    self.log(f"watched pid {watch} gone; exiting")
                    self.stopping.set()
                    break
                except PermissionError:
                    pass
            await asyncio.sleep(0.5)

    async def main(self):
        loop = asyncio.get_running_loop()
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(s, self.stopping.set)
        try:
            os.unlink(self.args.control)
        except FileNotFoundError:
            pass
        ctl = await asyncio.start_unix_server(self.on_control, self.args.control)
        os.chmod(self.args.control, 0o600)
        await self.start_listening()
        if self.args.port_file:
            tmp = self.args.port_file + ".tmp"
            with open(tmp, "w") as f:
                f.write(f"{self.port}\n")
            os.rename(tmp, self.args.port_file)
        self.log(f"listening on {self.listen[0]}:{self.port} -> {self.upstream[0]}:{self.upstream[1]}")
        wp = asyncio.ensure_future(self.watch_parent())
        try:
            await asyncio.wait_for(self.stopping.wait(), timeout=self.args.deadline)
        except asyncio.TimeoutError:
            self.log(f"deadline of {self.args.deadline}s reached; exiting")
        wp.cancel()
        ctl.close()
        await self.stop_listening()
        for c in list(self.conns):
            c.close()
        try:
            os.unlink(self.args.control)
        except FileNotFoundError:
            pass
        self.log("exit")


def ctl(paths, words):
    """Send one command to every proxy in PATHS (comma-separated) at once:
    all are connected first, then sent it back to back, so that a host
    whose link is several proxies (one per cluster member) is cut within a
    millisecond, not a process start apart.  Prints each reply."""
    socks, rc = [], 0
    line = (" ".join(words) + "\n").encode()
    try:
        for path in paths.split(","):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(CTL_TIMEOUT + 2)
            socks.append((path, s))
            s.connect(path)
        for path, s in socks:
            s.sendall(line)
        for path, s in socks:
            buf = b""
            while not buf.endswith(b"\n"):
                d = s.recv(4096)
                if not d:
                    break
                buf += d
            reply = buf.decode("utf-8", "replace").strip()
            print(reply)
            if not reply.startswith("ok"):
                rc = 1
    except OSError as e:
        print(f"error proxy control {path}: {e}")
        return 1
    finally:
        for _, s in socks:
            s.close()
    return rc


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "ctl":
        return ctl(sys.argv[2], sys.argv[3:])
    ap = argparse.ArgumentParser(prog="proxy.py serve")
    ap.add_argument("serve")
    ap.add_argument("--upstream", required=True)
    ap.add_argument("--listen", default="127.0.0.1:0")
    ap.add_argument("--control", required=True)
    ap.add_argument("--port-file")
    ap.add_argument("--log")
    ap.add_argument("--watch", type=int, default=0)
    ap.add_argument("--deadline", type=float, default=3600.0)
    args = ap.parse_args()
    if args.serve != "serve":
        ap.error("the first word is serve or ctl")
    asyncio.run(Proxy(args).main())
    return 0


if __name__ == "__main__":
    sys.exit(main())
