"""Processes for the tests: ``sexton dev`` and a three-master cluster with
holders (plain, or mutual TLS), started from the built binary, test
certificates from a small Go program (certgen/), and a scripted fake server
(plain or TLS) for the client's leader-following, outcome and TLS rules.

Ports come from 32000-33999 (the Go harnesses use 20000-31999), each
checked free by binding it first.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import random
import select
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Set, Tuple

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


Files = Dict[str, str]  # {"cert": ..., "key": ..., "ca": ...}


def make_certs(tmp: Path, *specs: str) -> Dict[str, Files]:
    """Certificates for CA/ROLE/NAME specs (certgen/main.go says which
    names and usages each role gets), keyed by spec. The generator is
    $SEXTON_CERTGEN (``make python-test`` builds it) or built here with go."""
    gen = os.environ.get("SEXTON_CERTGEN", "")
    if not gen:
        go = os.environ.get("GO") or shutil.which("go")
        if not go:
            raise RuntimeError("no certificate generator: set SEXTON_CERTGEN or put go on PATH "
                               "(go build ./clients/python/tests/certgen)")
        gen = str(tmp / "certgen")
        out = subprocess.run([go, "build", "-o", gen, "./clients/python/tests/certgen"], cwd=REPO,
                             capture_output=True, text=True, timeout=300)
        if out.returncode != 0:
            raise RuntimeError(f"go build certgen: {out.stderr}")
    out = subprocess.run([gen, str(tmp), *specs], capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise RuntimeError(f"certgen: {out.stderr}")
    return json.loads(out.stdout)


def tls_kwargs(f: Files) -> Dict[str, str]:
    """Client arguments presenting the certificate f."""
    return {"tls_ca": f["ca"], "tls_cert": f["cert"], "tls_key": f["key"]}


def tls_args(f: Files) -> List[str]:
    """A server's flags for the certificate f, client certificates required."""
    return ["--tls-cert", f["cert"], "--tls-key", f["key"], "--tls-ca", f["ca"], "--tls-client-auth", "require"]


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
    """Three masters (bootstrapped together, with a cluster token) and
    ``holders`` holders, each its own process of the built binary. With
    ``certs`` (node name, "m1".."m3" and "h1".., and "client" to their
    files) every listener runs mutual TLS (``--tls-client-auth require``)
    and the harness's own clients present the "client" certificate."""

    def __init__(self, tmp: Path, token: str, *, holders: int = 1, certs: Optional[Dict[str, Files]] = None) -> None:
        self.token = token
        self.certs = certs
        self.masters: List[Tuple[str, str, Proc]] = []  # (id, rpc addr, proc)
        nodes = [(f"m{i + 1}", free_port(), free_port(), free_port()) for i in range(3)]
        peers = ",".join(f"{nid}={raft}" for nid, raft, _, _ in nodes)
        for nid, raft, rpc, http in nodes:
            args = [sexton_bin(), "master", "--id", nid, "--data-dir", str(tmp / nid), "--raft-addr", raft,
                    "--rpc-addr", rpc, "--http-addr", http, "--peers", peers, "--bootstrap",
                    "--cluster-token", token] + self._tls_args(nid)
            proc = Proc(nid, args, tmp / f"{nid}.log")
            proc.start()
            self.masters.append((nid, rpc, proc))
        self.holders: List[Tuple[str, str, Proc]] = []  # (name, data addr, proc)
        for i in range(holders):
            name, addr = f"h{i + 1}", free_port()
            proc = Proc(name, [sexton_bin(), "holder", "--masters", ",".join(self.addrs()), "--dir", str(tmp / name),
                               "--rpc-addr", addr, "--client-id", name, "--capacity", "1GiB",
                               "--cluster-token", token] + self._tls_args(name), tmp / f"{name}.log")
            proc.start()
            self.holders.append((name, addr, proc))

    def _tls_args(self, node: str) -> List[str]:
        return tls_args(self.certs[node]) if self.certs is not None else []

    def client_kwargs(self) -> Dict[str, Any]:
        """The token and, with TLS, the "client" certificate."""
        kw: Dict[str, Any] = {"cluster_token": self.token}
        if self.certs is not None:
            kw.update(tls_kwargs(self.certs["client"]))
        return kw

    def client(self, addrs: Optional[List[str]] = None, **kw: Any) -> sexton.Client:
        return sexton.Client(addrs or self.addrs(), **{**self.client_kwargs(), **kw})

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
                    with self.client([node[1]], timeout=1, attempt_timeout=1) as c:
                        if c.status().get("state") == "Leader":
                            return node
                except sexton.SextonError:
                    pass
            time.sleep(0.1)
        raise RuntimeError("no leader: " + " | ".join(p.tail(1500) for _, _, p in self.masters))

    def wait_ready(self, timeout: float = 40.0) -> None:
        """Until a put through the leader lands on the holder."""
        self.leader(timeout)
        self._wait_put("ready-probe", 1, timeout, "cluster not ready")

    def wait_holders(self, n: int, timeout: float = 40.0) -> None:
        """Until a put with n replicas lands, so every holder is mounted."""
        self._wait_put(f"ready-probe-{n}", n, timeout, f"{n} holders not ready")

    def _wait_put(self, key: str, replicas: int, timeout: float, what: str) -> None:
        """Until a put of key with that many replicas lands; after timeout,
        RuntimeError saying what, with the holders' logs."""
        deadline = time.monotonic() + timeout
        with self.client(timeout=5) as c:
            while True:
                try:
                    c.put(key, b"x", replicas=replicas)
                    return
                except sexton.SextonError as e:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"{what}: {e}\nholders: "
                                           + " | ".join(p.tail(1500) for _, _, p in self.holders)) from e
                    time.sleep(0.2)

    def stop(self) -> None:
        for _, _, p in self.holders:
            p.kill(signal.SIGTERM)
        for _, _, p in self.masters:
            p.kill(signal.SIGTERM)


def running_cluster(tmp: Path, token: str, *, holders: int = 1,
                    certs: Optional[Dict[str, Files]] = None) -> Iterator[Cluster]:
    """A :class:`Cluster` once it serves puts on every holder, stopped
    afterwards: the body of a pytest fixture (``yield from``)."""
    c = Cluster(tmp, token, holders=holders, certs=certs)
    try:
        c.wait_ready()
        if holders > 1:
            c.wait_holders(holders)
        yield c
    finally:
        c.stop()


def kill_leader_under_load(cluster: Cluster, worker: Callable[[int, threading.Event], None],
                           done_at: List[float], lock: threading.Lock) -> Tuple[str, str, int, int]:
    """Runs ``worker(w, stop)`` on two threads until ``stop`` is set,
    SIGKILLs the leader 1.5 s in, and keeps them going until at least 30
    operations completed after the kill (the workers append each
    completion's time to ``done_at`` under ``lock``) or 25 s passed.
    Returns the killed leader's id and RPC address and how many operations
    completed before and after the kill."""
    stop = threading.Event()
    threads = [threading.Thread(target=worker, args=(w, stop)) for w in range(2)]
    for t in threads:
        t.start()
    try:
        time.sleep(1.5)
        nid, old_rpc, proc = cluster.leader()
        proc.kill()  # SIGKILL
        killed_at = time.monotonic()
        # Keep going until operations have completed well after the kill.
        deadline = killed_at + 25
        while time.monotonic() < deadline:
            with lock:
                after = sum(1 for t in done_at if t > killed_at + 0.1)
            if after >= 30 and time.monotonic() > killed_at + 3:
                break
            time.sleep(0.1)
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    with lock:
        before = sum(1 for t in done_at if t <= killed_at)
        after = sum(1 for t in done_at if t > killed_at)
    return nid, old_rpc, before, after


def leader_sigkill_run(cluster: Cluster) -> None:
    """Two clients put and remove (every third key right after its put)
    while the leader is SIGKILLed; operations keep completing after the
    kill, none fails, no acknowledged put is lost and no acknowledged
    remove is undone."""
    run = uuid.uuid4().hex[:8]
    acked_puts: Dict[str, bytes] = {}
    acked_removes: Set[str] = set()
    unknown: List[str] = []
    failures: List[str] = []
    done_at: List[float] = []
    slowest: List[float] = [0.0]  # the longest acknowledged operation, seconds
    lock = threading.Lock()

    def worker(w: int, stop: threading.Event) -> None:
        with cluster.client(timeout=15) as c:
            i = 0
            while not stop.is_set():
                i += 1
                k = f"py/kill/{run}/{w}/{i}"
                v = f"{k}:{time.monotonic()}".encode()
                t0 = time.monotonic()
                try:
                    c.put(k, v)
                    with lock:
                        acked_puts[k] = v
                        done_at.append(time.monotonic())
                        slowest[0] = max(slowest[0], time.monotonic() - t0)
                except sexton.OutcomeUnknown:
                    with lock:
                        unknown.append(k)
                    continue
                except sexton.SextonError as e:
                    with lock:
                        failures.append(f"put {k}: {e}")
                    continue
                if i % 3 == 0:
                    t0 = time.monotonic()
                    try:
                        c.remove(k)
                        with lock:
                            acked_removes.add(k)
                            done_at.append(time.monotonic())
                            slowest[0] = max(slowest[0], time.monotonic() - t0)
                    except sexton.OutcomeUnknown:
                        with lock:
                            unknown.append(k)
                    except sexton.SextonError as e:
                        with lock:
                            failures.append(f"remove {k}: {e}")

    nid, old_rpc, before, after = kill_leader_under_load(cluster, worker, done_at, lock)
    print(f"leader {nid} killed: {before} operations before, {after} after, {len(unknown)} unknown, "
          f"{len(acked_puts)} puts and {len(acked_removes)} removes acknowledged; slowest {slowest[0]:.2f}s")
    assert before > 0, "no operation completed before the kill"
    assert after >= 30, f"only {after} operations completed after killing leader {nid}; failures: {failures[-5:]}"
    # Retries with sessions ride through the failover: nothing failed, at
    # most the operation in flight at the kill (per worker) is unknown.
    assert not failures, failures
    assert len(unknown) <= 2, unknown

    new_leader = cluster.leader()
    assert new_leader[1] != old_rpc
    with cluster.client() as c:
        for k, v in acked_puts.items():
            if k in acked_removes:
                continue
            got = c.get(k)
            assert got == v, f"{k}: acknowledged {v!r}, read {got!r}"
        removed = sorted(acked_removes)
        gone = c.batch_is_exist(removed)
        assert not any(gone), [k for k, g in zip(removed, gone) if g]
        for k in removed[:5]:
            try:
                c.get(k)
            except sexton.ObjectNotFound:
                continue
            raise AssertionError(f"{k}: acknowledged remove undone")


# ---------------------------------------------------------------------------
# A scripted server speaking the transport (docs/PROTOCOL.md §1-3), for the rules
# a real cluster cannot show on demand.

Handler = Callable[[str, Any], Tuple[str, Any]]


def tls_server_context(f: Files, require_client_cert: bool = True) -> ssl.SSLContext:
    """A TLS server's settings with certificate f, verifying client
    certificates against f's CA (required, or only when presented)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(f["cert"], f["key"])
    ctx.load_verify_locations(cafile=f["ca"])
    ctx.verify_mode = ssl.CERT_REQUIRED if require_client_cert else ssl.CERT_OPTIONAL
    return ctx


class FakeServer:
    """Accepts connections, runs the server side of the handshake (after a
    TLS handshake with ``tls``), and answers each request with
    ``handler(method, body)``, which returns ("ok", body), ("err",
    {"code":..}) or ("drop", None) to close the connection without
    answering. Every request is recorded. ``bind`` is the listening host
    (the address handed out keeps 127.0.0.1 unless ``bind`` is another
    loopback address)."""

    def __init__(self, handler: Handler, token: str = "", *, tls: Optional[ssl.SSLContext] = None,
                 bind: str = "127.0.0.1") -> None:
        self.handler, self.token, self.tls = handler, token, tls
        self.requests: List[Tuple[str, Any]] = []
        self.auths: List[Any] = []  # the clients' auth answers
        self.tls_errors: List[str] = []  # TLS handshakes this server refused
        _, port = wire.split_addr(free_port())
        self.addr = f"{bind}:{port}"
        host = bind
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
            if self.tls is not None:
                conn.settimeout(10)
                try:
                    conn = self.tls.wrap_socket(conn, server_side=True)
                except (ssl.SSLError, OSError) as e:
                    self.tls_errors.append(str(e))
                    return
                conn.settimeout(None)
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
