"""Processes for the tests: ``sexton dev`` and a three-master cluster with a
holder, started from the built binary, and a scripted fake server for the
client's leader-following and outcome rules.

Ports come from 32000-33999 (the Go harnesses use 20000-31999), each
checked free by binding it first.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import random
import select
import signal
import socket
import struct
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import msgpack

import sexton
from sexton import wire

REPO = Path(__file__).resolve().parents[3]
PORT_LO, PORT_HI = 32000, 33999
_handed: set = set()
_port_lock = threading.Lock()


def sexton_bin() -> str:
    path = os.environ.get("SEXTON_BIN") or str(REPO / "bin" / "sexton")
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"{path} is not an executable: run `make build` (or set SEXTON_BIN)")
    return path


def free_port() -> str:
    """A loopback host:port in 32000-33999 that nobody listens on now."""
    with _port_lock:
        for _ in range(500):
            port = random.randint(PORT_LO, PORT_HI)
            if port in _handed:
                continue
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            finally:
                s.close()
            _handed.add(port)
            return f"127.0.0.1:{port}"
    raise RuntimeError(f"no free port in {PORT_LO}-{PORT_HI}")


class Proc:
    """One child process, its output in a log file."""

    def __init__(self, name: str, args: List[str], log: Path) -> None:
        self.name, self.args, self.log = name, args, log
        self.p: Optional[subprocess.Popen] = None

    def start(self) -> None:
        out = open(self.log, "ab")
        self.p = subprocess.Popen(self.args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        out.close()

    def alive(self) -> bool:
        return self.p is not None and self.p.poll() is None

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.p is not None and self.p.poll() is None:
            self.p.send_signal(sig)
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()

    def tail(self, n: int = 3000) -> str:
        try:
            return self.log.read_text(errors="replace")[-n:]
        except OSError:
            return ""


class DevCluster:
    """``sexton dev``: one master and one holder in one process."""

    def __init__(self, tmp: Path) -> None:
        self.rpc, raft, http, holder = free_port(), free_port(), free_port(), free_port()
        self.proc = subprocess.Popen(
            [sexton_bin(), "dev", "--rpc-addr", self.rpc, "--raft-addr", raft, "--http-addr", http, "--holder-addr", holder],
            stdout=subprocess.PIPE, stderr=open(tmp / "dev.log", "wb"), stdin=subprocess.DEVNULL, cwd=tmp)
        self.log = tmp / "dev.log"
        deadline = time.monotonic() + 30
        line = b""
        assert self.proc.stdout is not None
        while b"sexton dev: master at" not in line:
            left = deadline - time.monotonic()
            if left <= 0 or self.proc.poll() is not None:
                self.stop()
                raise RuntimeError(f"sexton dev did not start: {self.log.read_text(errors='replace')[-3000:]}")
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if ready:
                line = self.proc.stdout.readline()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()


class Cluster:
    """Three masters (bootstrapped together, with a cluster token) and one
    holder, each its own process of the built binary."""

    def __init__(self, tmp: Path, token: str) -> None:
        self.token = token
        self.masters: List[Tuple[str, str, Proc]] = []  # (id, rpc addr, proc)
        nodes = [(f"m{i + 1}", free_port(), free_port(), free_port()) for i in range(3)]
        peers = ",".join(f"{nid}={raft}" for nid, raft, _, _ in nodes)
        for nid, raft, rpc, http in nodes:
            args = [sexton_bin(), "master", "--id", nid, "--data-dir", str(tmp / nid), "--raft-addr", raft,
                    "--rpc-addr", rpc, "--http-addr", http, "--peers", peers, "--bootstrap",
                    "--cluster-token", token]
            proc = Proc(nid, args, tmp / f"{nid}.log")
            proc.start()
            self.masters.append((nid, rpc, proc))
        self.holder_addr = free_port()
        self.holder = Proc("h1", [sexton_bin(), "holder", "--masters", ",".join(self.addrs()), "--dir", str(tmp / "h1"),
                                  "--rpc-addr", self.holder_addr, "--client-id", "h1", "--capacity", "1GiB",
                                  "--cluster-token", token], tmp / "h1.log")
        self.holder.start()

    def addrs(self) -> List[str]:
        return [rpc for _, rpc, _ in self.masters]

    def leader(self, timeout: float = 30.0) -> Tuple[str, str, Proc]:
        """The master that says it is the leader (polled on every node)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for node in self.masters:
                if not node[2].alive():
                    continue
                try:
                    with sexton.Client([node[1]], token=self.token, timeout=1, attempt_timeout=1) as c:
                        if c.status().get("state") == "Leader":
                            return node
                except sexton.SextonError:
                    pass
            time.sleep(0.1)
        raise RuntimeError("no leader: " + " | ".join(p.tail(1500) for _, _, p in self.masters))

    def wait_ready(self, timeout: float = 40.0) -> None:
        """Until a put through the leader lands on the holder."""
        self.leader(timeout)
        deadline = time.monotonic() + timeout
        with sexton.Client(self.addrs(), token=self.token, timeout=5) as c:
            while True:
                try:
                    c.put("ready-probe", b"x")
                    return
                except sexton.SextonError as e:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"cluster not ready: {e}\nholder: {self.holder.tail()}") from e
                    time.sleep(0.2)

    def stop(self) -> None:
        self.holder.kill(signal.SIGTERM)
        for _, _, p in self.masters:
            p.kill(signal.SIGTERM)


# ---------------------------------------------------------------------------
# A scripted server speaking the transport (docs/PROTOCOL.md §1-3), for the rules
# a real cluster cannot show on demand.

Handler = Callable[[str, Any], Tuple[str, Any]]


class FakeServer:
    """Accepts connections, runs the server side of the handshake, and
    answers each request with ``handler(method, body)``, which returns
    ("ok", body), ("err", {"code":..}) or ("drop", None) to close the
    connection without answering. Every request is recorded."""

    def __init__(self, handler: Handler, token: str = "") -> None:
        self.handler, self.token = handler, token
        self.requests: List[Tuple[str, Any]] = []
        self.auths: List[Any] = []  # the clients' auth answers
        self.addr = free_port()
        host, port = wire.split_addr(self.addr)
        self._ln = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._ln.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._ln.bind((host, port))
        self._ln.listen(16)
        self._stop = False
        self._threads: List[threading.Thread] = []
        t = threading.Thread(target=self._accept, daemon=True)
        t.start()
        self._threads.append(t)

    def _accept(self) -> None:
        while not self._stop:
            try:
                conn, _ = self._ln.accept()
            except OSError:
                return
            t = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            t.start()

    @staticmethod
    def _read(conn: socket.socket) -> Optional[list]:
        def exact(n: int) -> bytes:
            b = b""
            while len(b) < n:
                c = conn.recv(n - len(b))
                if not c:
                    raise ConnectionError("eof")
                b += c
            return b
        (n,) = struct.unpack(">I", exact(4))
        return msgpack.unpackb(exact(n), raw=False)

    def _serve(self, conn: socket.socket) -> None:
        try:
            nonce = os.urandom(32)
            conn.sendall(wire.encode_frame(1, 0, "", 0, None, {"v": 1, "nonce": nonce, "auth": bool(self.token), "max_frame": 4 << 20}))
            auth = self._read(conn)
            assert auth is not None
            self.auths.append(auth[5])
            mac = auth[5].get("mac")
            # The proof as docs/PROTOCOL.md §3 defines it, not the client's own
            # function, so a wrong client is caught here too.
            want = hmac.new(self.token.encode(), b"sexton transport auth v1\x00" + nonce, hashlib.sha256).digest()
            if self.token and mac != want:
                conn.sendall(wire.encode_frame(3, 0, "", 0, {"code": "UNAUTHENTICATED", "msg": "cluster token mismatch"}, None))
                return
            conn.sendall(wire.encode_frame(3, 0, "", 0, None, {"v": 1}))
            while True:
                env = self._read(conn)
                assert env is not None
                kind, rid, method, _, _, body = env
                self.requests.append((method, body))
                what, val = self.handler(method, body)
                if what == "drop":
                    return
                if what == "err":
                    conn.sendall(wire.encode_frame(5, rid, "", 0, val, None))
                else:
                    conn.sendall(wire.encode_frame(5, rid, "", 0, None, val))
        except (OSError, ConnectionError):
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self._stop = True
        self._ln.close()
