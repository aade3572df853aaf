"""bench/benchlib.py — what the Python benchmarks (holdmany, handoff) share:
a FUSE daemon started in the foreground on a mount point of its own, waited
for with a deadline and unmounted afterwards, and a mount's .lockfs/metrics."""

import os
import re
import subprocess
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def metrics(mnt):
    """The mount's .lockfs/metrics as {name{labels}: value}."""
    out = {}
    with open(os.path.join(mnt, ".lockfs", "metrics")) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            k, _, v = line.rpartition(" ")
            # Without the mount="..." label every sample carries.
            k = re.sub(r'mount="[^"]*",?', "", k).replace("{}", "")
            try:
                out[k] = float(v)
            except ValueError:
                pass
    return out


class Daemon:
    """BIN MNT -f -o OPTS [--config FILE], its output in LOG."""

    def __init__(self, binary, mnt, log, opts, config=""):
        self.dir, self.log = mnt, log
        try:
            os.makedirs(mnt, exist_ok=True)
        except FileExistsError:
            pass  # a killed daemon's dead mount (ENOTCONN): lockfs unmounts it itself
        cmd = [binary, mnt, "-f", "-o", opts]
        if config:
            cmd += ["--config", config]
        self.logf = open(log, "w")
        self.proc = subprocess.Popen(cmd, stdout=self.logf, stderr=subprocess.STDOUT)

    def wait_mounted(self, secs=20):
        end = time.monotonic() + secs
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                return False
            if os.path.ismount(self.dir):
                return True
            time.sleep(0.05)
        return False

    def log_tail(self, n=2000):
        with open(self.log) as f:
            return f.read()[-n:]

    def stop(self):
        subprocess.run(["fusermount3", "-u", self.dir], stderr=subprocess.DEVNULL)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.logf.close()
