"""Shared fixtures: the package under test from this checkout, one
``sexton dev`` for the whole session and a client of it, and the TLS
tests' certificates."""

import sys
from pathlib import Path
from typing import Dict, Iterator

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import harness  # noqa: E402
import sexton  # noqa: E402


@pytest.fixture(scope="session")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[harness.DevCluster]:
    d = harness.DevCluster(tmp_path_factory.mktemp("dev"))
    yield d
    d.stop()


@pytest.fixture
def store(dev: harness.DevCluster) -> Iterator[sexton.Client]:
    """A client of the session's ``sexton dev`` (a module may define its
    own ``store``, as the Mooncake tests do)."""
    with sexton.Client(dev.rpc, timeout=10) as c:
        yield c


#: Every certificate the TLS tests use: the cluster's CA issues the three
#: masters', the two holders', the client's and an operator's; another CA issues an
#: intruder's client certificate and a server certificate.
CERT_SPECS = ("cluster/master/m1", "cluster/master/m2", "cluster/master/m3", "cluster/holder/h1",
              "cluster/holder/h2", "cluster/client/py", "cluster/operator/ops", "other/client/intruder", "other/holder/impostor")


@pytest.fixture(scope="session")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, harness.Files]:
    return harness.make_certs(tmp_path_factory.mktemp("certs"), *CERT_SPECS)
