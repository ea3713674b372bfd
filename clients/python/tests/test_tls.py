"""The client over TLS: against a scripted TLS server (what it verifies of
the server, where its settings come from, the errors of a TLS/plain
mismatch), and against three masters and two holders of the built binary
with mutual TLS on every listener (``--tls-client-auth require``): puts,
gets and removes with a client certificate, the refusals of a client
without one or with one of another CA, and a leader SIGKILLed mid-run; a client, an operator and a holder certificate each
doing what its role may and nothing else, before and after that SIGKILL."""

import time
import uuid
from pathlib import Path
from typing import Dict, Iterator

import pytest

import harness
import sexton
from sexton import wire

TOKEN = "python-tls-test-token-of-35-bytes-x"


def ok(method: str, body: object) -> tuple:
    return ("ok", {"state": "Leader"})


@pytest.fixture
def tls_server(certs: Dict[str, harness.Files]) -> Iterator[harness.FakeServer]:
    """A scripted server with a holder's certificate of the cluster CA,
    requiring a client certificate of that CA."""
    srv = harness.FakeServer(ok, tls=harness.tls_server_context(certs["cluster/holder/h1"]))
    yield srv
    srv.close()


def test_tls_presents_the_client_certificate(tls_server: harness.FakeServer, certs: Dict[str, harness.Files]) -> None:
    with sexton.Client(tls_server.addr, timeout=3, **harness.tls_kwargs(certs["cluster/client/py"])) as c:
        assert c.status() == {"state": "Leader"}
    assert [m for m, _ in tls_server.requests] == ["Status"]
    assert tls_server.tls_errors == []


def test_tls_refuses_a_server_of_another_ca(certs: Dict[str, harness.Files]) -> None:
    srv = harness.FakeServer(ok, tls=harness.tls_server_context(certs["other/holder/impostor"], require_client_cert=False))
    try:
        t0 = time.monotonic()
        with pytest.raises(sexton.Unauthenticated, match="server certificate"):
            sexton.Client(srv.addr, timeout=5, **harness.tls_kwargs(certs["cluster/client/py"])).status()
        # A certificate verdict is configuration: no retries until the timeout.
        assert time.monotonic() - t0 < 2
        assert srv.requests == []
    finally:
        srv.close()


def test_tls_checks_the_dialed_address_against_the_certificate(certs: Dict[str, harness.Files]) -> None:
    """The certificate names 127.0.0.1, ::1 and localhost, not 127.0.0.2:
    dialing 127.0.0.2 is refused even though the chain is good, as the Go
    client refuses it; the same server by a name it carries is served."""
    srv = harness.FakeServer(ok, tls=harness.tls_server_context(certs["cluster/holder/h1"]), bind="127.0.0.2")
    try:
        kw = harness.tls_kwargs(certs["cluster/client/py"])
        with pytest.raises(sexton.Unauthenticated, match="server certificate"):
            sexton.Client(srv.addr, timeout=3, **kw).status()
        assert srv.requests == []
        srv2 = harness.FakeServer(ok, tls=harness.tls_server_context(certs["cluster/holder/h1"]))
        try:
            port = srv2.addr.rsplit(":", 1)[1]
            with sexton.Client(f"localhost:{port}", timeout=3, **kw) as c:
                assert c.status() == {"state": "Leader"}
        finally:
            srv2.close()
    finally:
        srv.close()


def test_plain_client_on_a_tls_port_fails_fast_saying_tls(tls_server: harness.FakeServer) -> None:
    t0 = time.monotonic()
    with pytest.raises(sexton.Unavailable) as ei:
        sexton.Client(tls_server.addr, tls_ca="", timeout=2, connect_timeout=1).status()
    took = time.monotonic() - t0
    assert "does the server use TLS" in str(ei.value), ei.value
    assert took < 4, f"took {took:.1f}s"


def test_tls_client_on_a_plain_port_fails_fast_saying_tls(certs: Dict[str, harness.Files]) -> None:
    srv = harness.FakeServer(ok)
    try:
        t0 = time.monotonic()
        with pytest.raises(sexton.Unavailable) as ei:
            sexton.Client(srv.addr, timeout=2, connect_timeout=1, **harness.tls_kwargs(certs["cluster/client/py"])).status()
        took = time.monotonic() - t0
        assert "is the server without TLS" in str(ei.value), ei.value
        assert took < 4, f"took {took:.1f}s"
        assert srv.requests == []
    finally:
        srv.close()


def test_tls_and_token_default_from_the_environment(monkeypatch: pytest.MonkeyPatch, certs: Dict[str, harness.Files]) -> None:
    """SEXTON_TLS_CA/CERT/KEY and SEXTON_CLUSTER_TOKEN are the defaults, as
    for the CLI's flags; an argument wins over its variable, "" included."""
    srv = harness.FakeServer(ok, token="env-token", tls=harness.tls_server_context(certs["cluster/holder/h1"]))
    try:
        f = certs["cluster/client/py"]
        monkeypatch.setenv("SEXTON_TLS_CA", f["ca"])
        monkeypatch.setenv("SEXTON_TLS_CERT", f["cert"])
        monkeypatch.setenv("SEXTON_TLS_KEY", f["key"])
        monkeypatch.setenv("SEXTON_CLUSTER_TOKEN", "env-token")
        with sexton.connect(srv.addr, timeout=3) as c:
            assert c.status() == {"state": "Leader"}
        with pytest.raises(sexton.Unauthenticated):
            sexton.Client(srv.addr, cluster_token="not-it", timeout=3).status()
        with pytest.raises(sexton.Unavailable, match="does the server use TLS"):
            sexton.Client(srv.addr, tls_ca="", tls_cert="", tls_key="", timeout=1, connect_timeout=0.5).status()
        monkeypatch.setenv("SEXTON_MASTERS", srv.addr)
        with sexton.connect(timeout=3) as c:
            assert c.status() == {"state": "Leader"}
    finally:
        srv.close()


def test_incomplete_tls_settings_are_refused(certs: Dict[str, harness.Files], tmp_path: Path) -> None:
    f = certs["cluster/client/py"]
    for kw in ({"tls_cert": f["cert"], "tls_key": f["key"]}, {"tls_ca": f["ca"], "tls_cert": f["cert"]},
               {"tls_ca": f["ca"], "tls_key": f["key"]}):
        with pytest.raises(sexton.InvalidParams, match="must be given together"):
            sexton.Client("127.0.0.1:1", **kw)
    with pytest.raises(sexton.InvalidParams, match="tls_ca"):
        sexton.Client("127.0.0.1:1", tls_ca=str(tmp_path / "missing.pem"))
    empty = tmp_path / "empty.pem"
    empty.write_text("")
    with pytest.raises(sexton.InvalidParams, match="tls_ca"):
        sexton.Client("127.0.0.1:1", tls_ca=str(empty))
    with pytest.raises(sexton.InvalidParams, match="tls_cert"):
        sexton.Client("127.0.0.1:1", tls_ca=f["ca"], tls_cert=f["cert"], tls_key=certs["other/client/intruder"]["key"])
    with pytest.raises(sexton.InvalidParams, match="two names"):
        sexton.Client("127.0.0.1:1", cluster_token="a", token="b")


# ---------------------------------------------------------------------------
# Three masters and two holders, mutual TLS everywhere.


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory: pytest.TempPathFactory, certs: Dict[str, harness.Files]) -> Iterator[harness.Cluster]:
    nodes = {n: certs[f"cluster/master/{n}"] for n in ("m1", "m2", "m3")}
    nodes.update({n: certs[f"cluster/holder/{n}"] for n in ("h1", "h2")})
    nodes["client"] = certs["cluster/client/py"]
    yield from harness.running_cluster(Path(tmp_path_factory.mktemp("tlscluster")), TOKEN, holders=2, certs=nodes)


def test_tls_cluster_put_get_remove(tls_cluster: harness.Cluster) -> None:
    """Two replicas: the value goes over TLS to both holders' data ports."""
    k = f"py/tls/{uuid.uuid4().hex[:8]}"
    with tls_cluster.client() as c:
        inc = c.put(k, b"over tls", replicas=2)
        value, info = c.get_with_info(k)
        assert value == b"over tls"
        assert info.incarnation == inc
        assert sorted(r.endpoint for r in info.replicas) == sorted(a for _, a, _ in tls_cluster.holders)
        c.remove(k, if_incarnation=inc)
        with pytest.raises(sexton.ObjectNotFound):
            c.get(k)
    # Every holder serves its data port over TLS to the client certificate.
    ctx = wire.tls_context(**harness.tls_kwargs(tls_cluster.certs["client"]))  # type: ignore[index]
    for _, addr, _ in tls_cluster.holders:
        conn = wire.Connection(addr, token=TOKEN, deadline=time.monotonic() + 5, tls=ctx)
        conn.close()


def test_tls_cluster_refuses_a_client_without_certificate(tls_cluster: harness.Cluster) -> None:
    ca = tls_cluster.certs["client"]["ca"]  # type: ignore[index]
    t0 = time.monotonic()
    with pytest.raises(sexton.Unauthenticated, match="refused this client"):
        sexton.Client(tls_cluster.addrs(), cluster_token=TOKEN, tls_ca=ca, timeout=10).status()
    assert time.monotonic() - t0 < 3, "a refused certificate was retried"
    ctx = wire.tls_context(ca)
    for _, addr, _ in tls_cluster.holders:
        with pytest.raises(sexton.Unauthenticated, match="refused this client"):
            wire.Connection(addr, token=TOKEN, deadline=time.monotonic() + 5, tls=ctx)


def test_tls_cluster_refuses_a_certificate_of_another_ca(tls_cluster: harness.Cluster,
                                                         certs: Dict[str, harness.Files]) -> None:
    ca = tls_cluster.certs["client"]["ca"]  # type: ignore[index]
    intruder = certs["other/client/intruder"]
    kw = {"tls_ca": ca, "tls_cert": intruder["cert"], "tls_key": intruder["key"]}
    with pytest.raises(sexton.Unauthenticated, match="refused this client"):
        sexton.Client(tls_cluster.addrs(), cluster_token=TOKEN, timeout=10, **kw).status()
    ctx = wire.tls_context(**kw)
    for _, addr, _ in tls_cluster.holders:
        with pytest.raises(sexton.Unauthenticated, match="refused this client"):
            wire.Connection(addr, token=TOKEN, deadline=time.monotonic() + 5, tls=ctx)


def test_tls_cluster_plain_client_fails_fast_saying_tls(tls_cluster: harness.Cluster) -> None:
    t0 = time.monotonic()
    # The server answers a plain client on its TLS port with a refusal that
    # says so (within 400 ms), which the client does not retry.
    with pytest.raises(sexton.Unauthenticated) as ei:
        sexton.Client(tls_cluster.addrs(), cluster_token=TOKEN, tls_ca="", timeout=2, connect_timeout=1).status()
    took = time.monotonic() - t0
    assert "this port speaks TLS" in str(ei.value), ei.value
    assert took < 1.5, f"took {took:.1f}s"


def check_roles(cluster: harness.Cluster, certs: Dict[str, harness.Files]) -> None:
    """Each certificate acts in the role it names, whatever token it proves:
    the client puts, gets and lists and is refused an operator method
    (SettingsSet) with PermissionDenied; the operator changes the settings
    and reads and writes as a client may; a holder's certificate may not
    put."""
    k = f"py/roles/{uuid.uuid4().hex[:8]}"
    with cluster.client(**harness.tls_kwargs(certs["cluster/client/py"])) as c:
        c.put(k, b"by the client", replicas=2)
        assert c.get(k) == b"by the client"
        assert [o.key for o in c.list(k)[0]] == [k]
        cap = c.call("SettingsGet", {})["settings"]["registry_cap"]
        with pytest.raises(sexton.PermissionDenied, match="SettingsSet needs role operator; this caller is client"):
            c.call("SettingsSet", {"settings": {"registry_cap": cap + 1}})
        assert c.call("SettingsGet", {})["settings"]["registry_cap"] == cap
    with cluster.client(**harness.tls_kwargs(certs["cluster/operator/ops"])) as c:
        c.call("SettingsSet", {"settings": {"registry_cap": cap + 1}})
        assert c.call("SettingsGet", {})["settings"]["registry_cap"] == cap + 1
        assert c.get(k) == b"by the client"
        c.remove(k)
    with cluster.client(**harness.tls_kwargs(certs["cluster/holder/h1"])) as c:
        with pytest.raises(sexton.PermissionDenied, match="this caller is holder"):
            c.put(k, b"by a holder")


def test_tls_cluster_roles(tls_cluster: harness.Cluster, certs: Dict[str, harness.Files]) -> None:
    check_roles(tls_cluster, certs)


def test_tls_cluster_leader_sigkill_mid_run(tls_cluster: harness.Cluster) -> None:
    """Last in this module: it kills a master. Over TLS, the clients'
    retries reach the new leader; no acknowledged put is lost and no
    acknowledged remove is undone."""
    harness.leader_sigkill_run(tls_cluster)


def test_tls_cluster_roles_after_leader_sigkill(tls_cluster: harness.Cluster, certs: Dict[str, harness.Files]) -> None:
    """After the SIGKILL above, the new leader enforces the same roles."""
    check_roles(tls_cluster, certs)
