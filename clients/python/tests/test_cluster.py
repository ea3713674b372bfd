"""Three masters and a holder, each a process of the built binary: the
token handshake, leader following, and a leader SIGKILLed mid-run."""

import uuid
from pathlib import Path
from typing import Iterator

import pytest

import harness
import sexton

TOKEN = "python-client-test-token-0123456789"  # the servers take 32 bytes or more


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[harness.Cluster]:
    yield from harness.running_cluster(Path(tmp_path_factory.mktemp("cluster")), TOKEN)


def test_token_handshake(cluster: harness.Cluster) -> None:
    with pytest.raises(sexton.Unauthenticated):
        sexton.Client(cluster.addrs(), token="not-the-token", timeout=3).status()
    with pytest.raises(sexton.Unauthenticated):
        sexton.Client(cluster.addrs(), timeout=3).status()
    with sexton.Client(cluster.addrs(), token=TOKEN) as c:
        assert c.status()["cluster"] != 0


def test_follows_the_leader_from_a_follower(cluster: harness.Cluster) -> None:
    _, leader_rpc, _ = cluster.leader()
    followers = [a for a in cluster.addrs() if a != leader_rpc]
    with sexton.Client(followers + [leader_rpc], token=TOKEN) as c:
        k = f"py/follow/{uuid.uuid4().hex[:8]}"
        c.put(k, b"v")
        assert c.leader == leader_rpc
        assert c.get(k) == b"v"
        c.remove(k)


def test_leader_sigkill_mid_run(cluster: harness.Cluster) -> None:
    """Puts and removes keep going through a SIGKILL of the leader; no
    acknowledged put is lost and no acknowledged remove is undone."""
    harness.leader_sigkill_run(cluster)
