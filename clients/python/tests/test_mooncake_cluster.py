"""The Mooncake-compatible store against three masters and a holder, the
leader SIGKILLed mid-run: puts and removes keep returning Mooncake's
success code through the failover, and no acknowledged put is lost."""

import threading
import time
import uuid
from pathlib import Path
from typing import Dict, Iterator, List, Set

import pytest

import harness
from sexton.mooncake import MooncakeDistributedStore, ReplicateConfig

TOKEN = "python-client-test-token-0123456789"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[harness.Cluster]:
    yield from harness.running_cluster(Path(tmp_path_factory.mktemp("mccluster")), TOKEN, holders=2)


def store_for(cluster: harness.Cluster) -> MooncakeDistributedStore:
    s = MooncakeDistributedStore()
    # Mooncake's setup, the sexton masters as master_server_addr (the
    # leader first, so that the run depends on setup having taken every
    # address); the token is a keyword sexton adds (or SEXTON_CLUSTER_TOKEN).
    leader = cluster.leader()[1]
    addrs = [leader] + [a for a in cluster.addrs() if a != leader]
    rc = s.setup("localhost", "P2PHANDSHAKE", 512 << 20, 128 << 20, "tcp", "", ",".join(addrs),
                 cluster_token=TOKEN, timeout=15)
    assert rc == 0, rc
    return s


def test_setup_without_the_token_is_refused(cluster: harness.Cluster) -> None:
    s = MooncakeDistributedStore()
    assert s.setup("localhost", "", 0, 0, "tcp", "", ",".join(cluster.addrs()), cluster_token="", timeout=3) == -601


def test_preferred_segment_places_and_reads_there(cluster: harness.Cluster) -> None:
    """ReplicateConfig.preferred_segment reaches placement (PutStart's
    prefer), and reads try the replica on the preferred host first."""
    s = store_for(cluster)
    try:
        for _, addr, _ in cluster.holders:
            cfg = ReplicateConfig()
            cfg.preferred_segment = addr
            keys = [f"py/mcpref/{uuid.uuid4().hex[:8]}/{i}" for i in range(10)]
            for k in keys[:5]:
                assert s.put(k, b"v", cfg) == 0
            assert s.batch_put_from(keys[5:], [b"v"] * 5, [1] * 5, cfg) == [0] * 5
            for k in keys:
                assert [r.endpoint for r in s.client.stat(k).object.replicas] == [addr], k
        # Two replicas: the one on the preferred holder is read first.
        k = f"py/mcpref/{uuid.uuid4().hex[:8]}/two"
        assert s.put(k, b"two", ReplicateConfig(replica_num=2)) == 0
        for _, addr, _ in cluster.holders:
            s.client.prefer_hosts = frozenset({addr})
            _, info = s.client.get_with_info(k)
            assert info.replicas[0].endpoint == addr and len(info.replicas) == 2
    finally:
        s.close()


def test_leader_sigkill_mid_run(cluster: harness.Cluster) -> None:
    run = uuid.uuid4().hex[:8]
    acked: Dict[str, bytes] = {}
    removed: Set[str] = set()
    bad: List[str] = []  # calls whose code is not what Mooncake documents for success
    unknown: List[str] = []
    done_at: List[float] = []
    lock = threading.Lock()

    def worker(w: int, stop: threading.Event) -> None:
        s = store_for(cluster)
        block = bytearray(4096)
        assert s.register_buffer(block, len(block)) == 0
        i = 0
        while not stop.is_set():
            i += 1
            k = f"py/mckill/{run}/{w}/{i}"
            v = f"{k}:{time.monotonic()}".encode().ljust(4096, b".")
            if i % 2:
                rc = s.put(k, v)
            else:
                block[:] = v
                rc = s.batch_put_from([k], [block], [len(block)])[0]
            with lock:
                if rc == 0:
                    acked[k] = v
                    done_at.append(time.monotonic())
                else:
                    bad.append(f"put {k}: {rc}")
            if rc == 0 and i % 3 == 0:
                rc = s.remove(k)
                with lock:
                    if rc == 0:
                        removed.add(k)
                        done_at.append(time.monotonic())
                    elif rc == -900:
                        unknown.append(k)  # RPC_FAIL: a remove whose outcome stayed unknown
                    else:
                        bad.append(f"remove {k}: {rc}")
        s.close()

    nid, old_rpc, before, after = harness.kill_leader_under_load(cluster, worker, done_at, lock)
    print(f"leader {nid} killed: {before} calls before, {after} after; {len(acked)} puts, {len(removed)} removes")
    assert before > 0 and after >= 30, (before, after, bad[-5:])
    assert not bad, bad
    assert len(unknown) <= 2, unknown
    assert cluster.leader()[1] != old_rpc
    s = store_for(cluster)
    try:
        for k, v in acked.items():
            if k in removed or k in unknown:
                continue
            assert s.get(k) == v, f"{k}: acknowledged put lost"
        gone = sorted(removed)
        assert s.batch_is_exist(gone) == [0] * len(gone)
    finally:
        s.close()
