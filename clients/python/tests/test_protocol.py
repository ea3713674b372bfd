"""The client's protocol rules against a scripted server: framing, the
token handshake, leader following, and what OUTCOME_UNKNOWN means."""

import os
import signal
import socket
import threading
import time
from typing import Any, Callable, List, Optional, Tuple

import pytest

import harness
import sexton
from sexton import wire
from sexton.client import _Sessions


def test_envelope_round_trip_and_refusals() -> None:
    frame = wire.encode_frame(4, 7, "Get", 1500, None, {"key": "k\udcff"})
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4
    kind, rid, method, ms, err, body = wire.decode_envelope(frame[4:])
    assert (kind, rid, method, ms, err) == (4, 7, "Get", 1500, None)
    # A key that is not UTF-8 travels as its bytes and comes back the same.
    assert body == {"key": "k\udcff"}
    assert frame.endswith(b"\xa2k\xff")
    for bad in (wire.pack([4, 1, "Get", 0, None]), wire.pack({"kind": 4}), wire.pack([9, 1, "", 0, None, None]), b"\xc1"):
        with pytest.raises(sexton.Corrupt):
            wire.decode_envelope(bad)


#: The class each wire code raises, spelled out apart from sexton/errors.py.
WIRE_CODES = {
    "OBJECT_NOT_FOUND": sexton.ObjectNotFound, "OBJECT_ALREADY_EXISTS": sexton.ObjectAlreadyExists,
    "INVALID_KEY": sexton.InvalidKey, "INVALID_PARAMS": sexton.InvalidParams,
    "INCARNATION_MISMATCH": sexton.IncarnationMismatch, "INCARNATION_STALE": sexton.IncarnationStale,
    "NO_SPACE": sexton.NoSpace, "LOCAL_DELETE_REGISTRY_FULL": sexton.RegistryFull,
    "GRANT_REFUSED": sexton.GrantRefused, "NOT_LEADER": sexton.NotLeader, "UNAVAILABLE": sexton.Unavailable,
    "TIMEOUT": sexton.Timeout, "OUTCOME_UNKNOWN": sexton.OutcomeUnknown, "UNAUTHENTICATED": sexton.Unauthenticated,
    "PERMISSION_DENIED": sexton.PermissionDenied, "FRAME_TOO_LARGE": sexton.FrameTooLarge,
    "CORRUPT": sexton.Corrupt, "INTERNAL": sexton.Internal,
}


def test_each_wire_code_raises_its_class() -> None:
    for code, cls in WIRE_CODES.items():
        e = sexton.errors.error_for(code, "why", "10.0.0.1:7101")
        assert type(e) is cls and cls.code == code and e.code == code, (code, type(e))
        assert str(e) == f"{code}: why" and e.message == "why" and e.leader == "10.0.0.1:7101"
        assert type(sexton.errors.from_wire({"code": code, "msg": "m"})) is cls
    # A code without a class: a plain SextonError that keeps the code.
    e = sexton.errors.error_for("SEGMENT_NOT_FOUND", "why")
    assert type(e) is sexton.SextonError and e.code == "SEGMENT_NOT_FOUND"
    assert isinstance(sexton.errors.from_wire({"msg": "no code"}), sexton.Corrupt)
    # A second class for a code is refused where it is written.
    with pytest.raises(TypeError, match="NO_SPACE"):
        class Again(sexton.SextonError, code="NO_SPACE"):
            pass


def test_batch_results_are_ok_only_without_an_error() -> None:
    from sexton.types import GetResult, KeyResult, PutResult
    failed = sexton.ObjectNotFound("k")
    for cls in (KeyResult, PutResult, GetResult):
        assert cls(key="k").ok
        assert not cls(key="k", error=failed).ok
    assert not KeyResult.from_wire({"key": "k", "err": {"code": "OBJECT_NOT_FOUND", "msg": "k"}}).ok


def test_session_floor_is_oldest_outstanding() -> None:
    s = _Sessions("c")
    a, b, c = s.begin(), s.begin(), s.begin()
    assert (a["seq"], b["seq"], c["seq"], a["floor"], c["floor"]) == (1, 2, 3, 1, 1)
    s.end(b["seq"])
    assert s.begin()["floor"] == 1
    s.end(a["seq"])
    assert s.begin()["floor"] == 3
    for seq in (3, 4, 5):
        s.end(seq)
    f = s.begin()
    assert f["floor"] == f["seq"] == 6


def test_token_is_proved_not_sent() -> None:
    srv = harness.FakeServer(lambda m, b: ("ok", {}), token="s3cret")
    try:
        with sexton.Client(srv.addr, token="s3cret", timeout=2) as c:
            assert c.call("Status", {}) == {}
        with pytest.raises(sexton.Unauthenticated):
            sexton.Client(srv.addr, token="wrong", timeout=2).call("Status", {})
        with pytest.raises(sexton.Unauthenticated):
            sexton.Client(srv.addr, timeout=2).call("Status", {})
        assert len(srv.auths) == 3
        assert all(b"s3cret" not in wire.pack(a) for a in srv.auths)
        assert "mac" not in srv.auths[2]  # no token, no proof
    finally:
        srv.close()


def test_follows_the_leader_hint_even_off_the_list() -> None:
    leader = harness.FakeServer(lambda m, b: ("ok", {"exists": [True]}))
    follower = harness.FakeServer(lambda m, b: ("err", {"code": "NOT_LEADER", "msg": "not me", "leader": leader.addr}))
    try:
        with sexton.Client([follower.addr], timeout=3) as c:
            assert c.batch_is_exist(["k"]) == [True]
            assert c.leader == leader.addr
            assert c.is_exist("k")
        assert len(follower.requests) == 1 and len(leader.requests) == 2
    finally:
        leader.close()
        follower.close()


def test_without_a_hint_tries_the_next_address_and_backs_off() -> None:
    down = harness.free_port()  # nothing listens
    unready = harness.FakeServer(lambda m, b: ("err", {"code": "UNAVAILABLE", "msg": "not ready"}))
    try:
        with sexton.Client([down, unready.addr], timeout=0.6, backoff_min=0.05, backoff_max=0.1) as c:
            start = time.monotonic()
            with pytest.raises(sexton.Unavailable) as ei:
                c.call("Get", {"key": "k"})
            took = time.monotonic() - start
        assert 0.5 < took < 2.0, took
        # Several rounds over both addresses, with pauses between them.
        assert 3 <= len(unready.requests) < 20, len(unready.requests)
        assert down in str(ei.value) and unready.addr in str(ei.value)
    finally:
        unready.close()


def test_a_mutation_sent_without_answer_is_outcome_unknown_and_repeats_its_session() -> None:
    # The server takes the request and drops the connection each time: it
    # may have executed it, so giving up must say OUTCOME_UNKNOWN, and every
    # repeat must carry the same session.
    srv = harness.FakeServer(lambda m, b: ("drop", None))
    try:
        with sexton.Client(srv.addr, timeout=0.5) as c:
            with pytest.raises(sexton.OutcomeUnknown):
                c.remove("k")
            assert not issubclass(sexton.OutcomeUnknown, sexton.Unavailable)
            # A read that got no answer has no outcome to lose: UNAVAILABLE.
            with pytest.raises(sexton.Unavailable):
                c.stat("k")
        removes = [b for m, b in srv.requests if m == "Remove"]
        assert len(removes) >= 2
        assert all(b["sess"] == removes[0]["sess"] for b in removes)
        assert removes[0]["sess"]["client"] == c.client_id and removes[0]["sess"]["seq"] == 1
    finally:
        srv.close()


def test_outcome_unknown_answer_is_repeated_for_mutations_only() -> None:
    answers = iter([("err", {"code": "OUTCOME_UNKNOWN", "msg": "leadership lost"}), ("ok", {})])

    def handler(method: str, body: Any) -> Tuple[str, Any]:
        if method == "Remove":
            return next(answers)
        return ("err", {"code": "OUTCOME_UNKNOWN"})

    srv = harness.FakeServer(handler)
    try:
        with sexton.Client(srv.addr, timeout=2) as c:
            c.remove("k")  # repeated once, same session, then done
            with pytest.raises(sexton.OutcomeUnknown):
                c.call("Get", {"key": "k"})  # not a mutation: not repeated
        removes = [b for m, b in srv.requests if m == "Remove"]
        assert len(removes) == 2 and removes[0]["sess"] == removes[1]["sess"]
        assert [m for m, _ in srv.requests].count("Get") == 1
    finally:
        srv.close()


def test_refused_answers_are_not_retried() -> None:
    srv = harness.FakeServer(lambda m, b: ("err", {"code": "OBJECT_NOT_FOUND", "msg": "key \"k\""}))
    try:
        with sexton.Client(srv.addr, timeout=2) as c:
            with pytest.raises(sexton.ObjectNotFound):
                c.remove("k")
        assert len(srv.requests) == 1
    finally:
        srv.close()


def older_master(handler: Any) -> Any:
    """A master built before PutGrant: it refuses it as an unknown method."""
    def h(method: str, body: Any) -> Tuple[str, Any]:
        if method == "PutGrant":
            return ("err", {"code": "INVALID_PARAMS", "msg": 'unknown method "PutGrant"'})
        return handler(method, body)
    return h


def older_put_master(h: harness.FakeServer, inc: Any,
                     answer: Callable[[str], Optional[Tuple[str, Any]]] = lambda method: None) -> Any:
    """An older master that answers each method ``answer(method)`` or,
    where that is None, places inc on the holder h at PutStart and says ok
    to everything else."""
    @older_master
    def master(method: str, body: Any) -> Tuple[str, Any]:
        got = answer(method)
        if got is not None:
            return got
        if method == "PutStart":
            return ("ok", {"inc": inc, "replicas": [{"kind": 1, "seg": "s", "ep": h.addr, "grant": {"mac": b"m"}}]})
        return ("ok", {})
    return master


def test_put_is_one_commit_granted_and_written_again_after_a_failed_write_or_a_stale_commit() -> None:
    # PutGrant, a refused write (no revoke: the holder reclaims an
    # uncommitted grant), PutGrant away from it, the write, a PutCommit
    # refused as INCARNATION_STALE, a new grant and write, the PutCommit
    # whose answer is lost (repeated under its session), nothing else.
    incs = iter([{"h": 7, "l": 40}, {"h": 7, "l": 41}, {"h": 7, "l": 42}])
    bad = harness.FakeServer(lambda m, b: ("err", {"code": "GRANT_REFUSED", "msg": "expired"}))
    good = harness.FakeServer(lambda m, b: ("ok", {}))
    segs = iter([("seg-bad", bad.addr), ("seg-good", good.addr), ("seg-good", good.addr)])
    commits = iter([("err", {"code": "INCARNATION_STALE", "msg": "moved"}), ("drop", None)])

    def master(method: str, body: Any) -> Tuple[str, Any]:
        if method == "PutGrant":
            seg, ep = next(segs)
            inc = next(incs)
            grant = {"seg": seg, "key": body["key"], "inc": inc, "exp": 1, "mac": b"\x01" * 32}
            return ("ok", {"inc": inc, "replicas": [{"kind": 1, "seg": seg, "ep": ep, "grant": grant}]})
        if method == "PutCommit":
            return next(commits, ("ok", {}))
        return ("err", {"code": "INVALID_PARAMS", "msg": "unexpected " + method})

    m = harness.FakeServer(master)
    try:
        with sexton.Client(m.addr, timeout=3) as c:
            got = c.put("k", b"value", if_absent=True)
        assert got == sexton.Incarnation(high=7, low=42)
        methods = [meth for meth, _ in m.requests]
        assert methods == ["PutGrant", "PutGrant", "PutCommit", "PutGrant", "PutCommit", "PutCommit"], methods
        grants = [b for meth, b in m.requests if meth == "PutGrant"]
        assert "exclude" not in grants[0] and grants[1]["exclude"] == ["seg-bad"]
        assert all("sess" not in b for b in grants)  # a grant commits nothing
        first, lost, again = [b for meth, b in m.requests if meth == "PutCommit"]
        assert lost["sess"] == again["sess"] and lost["sess"]["seq"] > first["sess"]["seq"]
        assert again["inc"] == {"h": 7, "l": 42} and again["size"] == 5 and again["if_absent"] is True
        assert again["replicas"][0]["grant"]["inc"] == {"h": 7, "l": 42}  # the replicas as granted
        assert [meth for meth, _ in good.requests] == ["HolderWrite", "HolderWrite"]
    finally:
        for s in (bad, good, m):
            s.close()


def test_put_against_an_older_master_falls_back_to_put_start_and_end_once() -> None:
    h = harness.FakeServer(lambda m, b: ("ok", {}))
    m = harness.FakeServer(older_put_master(h, {"h": 3, "l": 11}))
    try:
        with sexton.Client(m.addr, timeout=3) as c:
            c.put("a", b"v")
            c.put("b", b"v")
        assert [meth for meth, _ in m.requests] == ["PutGrant", "PutStart", "PutEnd", "PutStart", "PutEnd"]
    finally:
        h.close()
        m.close()


def test_put_places_again_away_from_a_failed_holder() -> None:
    inc = {"h": 7, "l": 40}
    bad = harness.FakeServer(lambda m, b: ("err", {"code": "GRANT_REFUSED", "msg": "expired"}))
    good = harness.FakeServer(lambda m, b: ("ok", {}))
    starts = iter([("seg-bad", bad.addr), ("seg-good", good.addr)])

    @older_master
    def master(method: str, body: Any) -> Tuple[str, Any]:
        if method == "PutStart":
            seg, ep = next(starts)
            grant = {"seg": seg, "key": body["key"], "inc": inc, "exp": 1, "mac": b"\x01" * 32}
            return ("ok", {"inc": inc, "replicas": [{"kind": 1, "seg": seg, "ep": ep, "grant": grant}]})
        return ("ok", {})

    m = harness.FakeServer(master)
    try:
        with sexton.Client(m.addr, timeout=3) as c:
            got = c.put("k", b"value")
        assert got == sexton.Incarnation(high=7, low=40) and str(got) == "0000000000000007:40"
        methods = [meth for meth, _ in m.requests]
        assert methods == ["PutGrant", "PutStart", "PutRevoke", "PutStart", "PutEnd"]
        bodies = [b for meth, b in m.requests if meth != "PutGrant"]
        assert bodies[2]["exclude"] == ["seg-bad"] and "exclude" not in bodies[0]
        assert [b["sess"]["seq"] for b in bodies] == [1, 2, 3, 4]  # a new request, a new number
        (meth, w), = good.requests
        assert meth == "HolderWrite" and w["value"] == b"value" and w["grant"]["seg"] == "seg-good" and w["inc"] == inc
    finally:
        for s in (bad, good, m):
            s.close()


def test_get_asks_the_master_again_when_a_holder_lost_the_incarnation() -> None:
    old, new = {"h": 1, "l": 5}, {"h": 1, "l": 9}

    def holder(method: str, body: Any) -> Tuple[str, Any]:
        if body["inc"] == old:
            return ("err", {"code": "OBJECT_NOT_FOUND", "msg": "replaced"})
        return ("ok", {"value": b"new!"})

    h = harness.FakeServer(holder)
    objects = iter([old, new])

    def master(method: str, body: Any) -> Tuple[str, Any]:
        return ("ok", {"object": {"key": body["key"], "size": 4, "inc": next(objects), "created": 0,
                                  "replicas": [{"kind": 1, "seg": "s", "ep": h.addr}]}})

    m = harness.FakeServer(master)
    try:
        with sexton.Client(m.addr, timeout=3) as c:
            value, info = c.get_with_info("k")
        assert value == b"new!" and info.incarnation == sexton.Incarnation(high=1, low=9)
        assert [meth for meth, _ in m.requests] == ["Get", "Get"]
    finally:
        h.close()
        m.close()


@pytest.mark.parametrize("end_code, raised, revoked", [
    ("LOCAL_DELETE_REGISTRY_FULL", sexton.RegistryFull, True),  # refused: revoke the pending put
    ("OUTCOME_UNKNOWN", sexton.OutcomeUnknown, False),  # may be complete: leave it, say unknown
])
def test_a_put_whose_end_fails(end_code: str, raised: type, revoked: bool) -> None:
    h = harness.FakeServer(lambda m, b: ("ok", {}))
    m = harness.FakeServer(older_put_master(
        h, {"h": 3, "l": 11}, lambda method: ("err", {"code": end_code, "msg": "no"}) if method == "PutEnd" else None))
    try:
        with sexton.Client(m.addr, timeout=0.5) as c:
            with pytest.raises(raised):
                c.put("k", b"v")
        methods = [meth for meth, _ in m.requests]
        assert ("PutRevoke" in methods) == revoked, methods
        ends = [b for meth, b in m.requests if meth == "PutEnd"]
        assert all(b["sess"] == ends[0]["sess"] for b in ends)
    finally:
        h.close()
        m.close()


def test_put_waits_out_no_space_with_new_sequence_numbers() -> None:
    # A new leader answers NO_SPACE until the holders' first heartbeats.
    h = harness.FakeServer(lambda m, b: ("ok", {}))
    refusals = iter(range(2))

    def refuse(method: str) -> Optional[Tuple[str, Any]]:
        if method == "PutStart" and next(refusals, None) is not None:
            return ("err", {"code": "NO_SPACE", "msg": "no pool has 1 live holders"})
        return None

    m = harness.FakeServer(older_put_master(h, {"h": 2, "l": 8}, refuse))
    try:
        with sexton.Client(m.addr, timeout=2, placement_wait=2) as c:
            assert c.put("k", b"v") == sexton.Incarnation(high=2, low=8)
        with sexton.Client(m.addr, timeout=2, placement_wait=0) as c:
            refusals = iter(range(1))
            with pytest.raises(sexton.NoSpace):
                c.put("k", b"v")
        starts = [b["sess"]["seq"] for meth, b in m.requests if meth == "PutStart"]
        assert starts[:3] == [1, 2, 3]
    finally:
        h.close()
        m.close()


def test_put_batch_repeats_its_session_and_places_a_failed_item_again() -> None:
    # The first BatchPutStart is taken and its answer lost: the repeat
    # carries the same session. The holder refuses one item's write: that
    # item is revoked and put again on its own (one commit), away from that holder; the
    # other ends in the BatchPutEnd. Both writes went down one connection.
    inc_a, inc_b, inc_c = {"h": 7, "l": 40}, {"h": 7, "l": 41}, {"h": 7, "l": 50}

    def holder(method: str, body: Any) -> Tuple[str, Any]:
        if body["key"] == "b" and body["inc"] == inc_b:
            return ("err", {"code": "GRANT_REFUSED", "msg": "expired"})
        return ("ok", {})

    h = harness.FakeServer(holder)
    dropped = []

    def replica(seg: str, key: str, inc: Any) -> Any:
        return {"kind": 1, "seg": seg, "ep": h.addr, "grant": {"seg": seg, "key": key, "inc": inc, "exp": 1, "mac": b"\x01" * 32}}

    def master(method: str, body: Any) -> Tuple[str, Any]:
        if method == "BatchPutStart":
            if not dropped:
                dropped.append(body)
                return ("drop", None)
            return ("ok", {"results": [{"inc": inc_a, "replicas": [replica("s1", "a", inc_a)]},
                                       {"inc": inc_b, "replicas": [replica("s1", "b", inc_b)]}]})
        if method == "BatchPutEnd":
            return ("ok", {"results": [{"key": it["key"]} for it in body["items"]]})
        if method == "PutGrant":
            return ("ok", {"inc": inc_c, "replicas": [replica("s2", "b", inc_c)]})
        return ("ok", {})

    m = harness.FakeServer(master)
    try:
        with sexton.Client(m.addr, timeout=3) as c:
            res = c.put_batch([("a", b"AAAA"), ("b", memoryview(bytearray(b"BBBB")))])
        assert [(r.key, r.ok) for r in res] == [("a", True), ("b", True)]
        assert res[0].incarnation == sexton.Incarnation(7, 40) and res[1].incarnation == sexton.Incarnation(7, 50)
        methods = [meth for meth, _ in m.requests]
        assert methods == ["BatchPutStart", "BatchPutStart", "PutRevoke", "BatchPutEnd", "PutGrant", "PutCommit"], methods
        bodies = [b for _, b in m.requests]
        assert bodies[0]["sess"] == bodies[1]["sess"]
        assert bodies[2]["key"] == "b" and bodies[2]["inc"] == inc_b
        assert [it["key"] for it in bodies[3]["items"]] == ["a"]
        writes = [(b["key"], b["value"]) for meth, b in h.requests if meth == "HolderWrite"]
        assert writes == [("a", b"AAAA"), ("b", b"BBBB"), ("b", b"BBBB")]
    finally:
        h.close()
        m.close()


def key_i_on_holder_i(hs: List[harness.FakeServer]) -> Callable[[str, Any], Tuple[str, Any]]:
    """A master that places the i-th key of a batch (put or get) on holder
    i, one 2-byte replica."""
    inc = {"h": 3, "l": 1}

    def master(method: str, body: Any) -> Tuple[str, Any]:
        if method == "BatchPutStart":
            return ("ok", {"results": [{"inc": inc, "replicas": [{"kind": 1, "seg": f"s{i}", "ep": hs[i].addr,
                                                                  "grant": {"seg": f"s{i}", "key": it["key"], "inc": inc,
                                                                            "exp": 1, "mac": b"\x01" * 32}}]}
                                       for i, it in enumerate(body["items"])]})
        if method == "BatchPutEnd":
            return ("ok", {"results": [{"key": it["key"]} for it in body["items"]]})
        if method == "BatchGet":
            return ("ok", {"results": [{"object": {"key": k, "size": 2, "inc": inc, "created": 0,
                                                   "replicas": [{"kind": 1, "seg": f"s{i}", "ep": hs[i].addr}]}}
                                       for i, k in enumerate(body["keys"])]})
        return ("ok", {})
    return master


def test_batches_call_their_holders_at_once() -> None:
    # Two holders that each take 0.5 s per call: a batch with a key on each
    # waits for the slower one, not for both in turn, writing and reading.
    delay = 0.5

    def holder(method: str, body: Any) -> Tuple[str, Any]:
        time.sleep(delay)
        return ("ok", {} if method == "HolderWrite" else {"value": body["key"].encode()})

    hs = [harness.FakeServer(holder), harness.FakeServer(holder)]
    m = harness.FakeServer(key_i_on_holder_i(hs))
    try:
        with sexton.Client(m.addr, timeout=5) as c:
            t0 = time.monotonic()
            res = c.put_batch([("k0", b"v0"), ("k1", b"v1")])
            t1 = time.monotonic()
            got = c.batch_get_into(["k0", "k1"], [bytearray(2), bytearray(2)])
            t2 = time.monotonic()
        assert all(r.ok for r in res) and [bytes(g.value) for g in got] == [b"k0", b"k1"]
        assert t1 - t0 < 1.6 * delay and t2 - t1 < 1.6 * delay, (t1 - t0, t2 - t1)
        assert [meth for h in hs for meth, _ in h.requests] == ["HolderWrite", "HolderRead"] * 2
    finally:
        for h in hs:
            h.close()
        m.close()


def test_batches_keep_their_lane_threads_across_batches_and_forks() -> None:
    # Batch puts over two holders write the second on a lane thread that
    # stays for the next batch: twenty batches start one thread, not
    # twenty. Batch reads need none: the calling thread reads every
    # holder. A forked child, where the parent's threads do not exist,
    # starts its own and puts and reads the same.
    hs = [harness.FakeServer(lambda m, b: ("ok", {} if m == "HolderWrite" else {"value": b["key"].encode()}))
          for _ in range(2)]

    def batches(c: sexton.Client) -> bool:
        put = c.put_batch([("k0", b"v0"), ("k1", b"v1")])
        got = c.batch_get_into(["k0", "k1"], [bytearray(2), bytearray(2)])
        return all(r.ok for r in put) and [bytes(g.value) for g in got] == [b"k0", b"k1"]

    def lanes() -> List[threading.Thread]:
        return [t for t in threading.enumerate() if t.name.startswith("sexton-lane")]

    m = harness.FakeServer(key_i_on_holder_i(hs))
    try:
        with sexton.Client(m.addr, timeout=5) as c:
            before = lanes()
            for _ in range(20):
                assert c.batch_get_into(["k0", "k1"], [bytearray(2), bytearray(2)])[1].ok
            assert lanes() == before
            for _ in range(20):
                assert batches(c)
            assert len(lanes()) - len(before) == 1, lanes()
            pid = os.fork()
            if pid == 0:
                ok = False
                signal.alarm(10)  # a child waiting for a thread it does not have dies of it
                try:
                    ok = batches(c)
                finally:
                    os._exit(0 if ok else 1)
            _, status = os.waitpid(pid, 0)
            assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
        assert [meth for h in hs for meth, _ in h.requests] == (["HolderRead"] * 20 + ["HolderWrite", "HolderRead"] * 21) * 2
    finally:
        for h in hs:
            h.close()
        m.close()


def test_batch_read_keeps_the_answers_of_one_holder_when_another_fails() -> None:
    # Three holders read on one thread: one closes the connection without
    # answering, one answers too late, one answers. Each key gets its own
    # holder's outcome, and the late holder costs the client's timeout,
    # not a hang.
    hs = [harness.FakeServer(lambda m, b: ("drop", None)),
          harness.FakeServer(lambda m, b: (time.sleep(3), ("ok", {"value": b"k1"}))[1]),
          harness.FakeServer(lambda m, b: ("ok", {"value": b["key"].encode()}))]
    m = harness.FakeServer(key_i_on_holder_i(hs))
    try:
        with sexton.Client(m.addr, timeout=1, read_attempts=1) as c:
            t0 = time.monotonic()
            got = c.batch_get_into(["k0", "k1", "k2"], [bytearray(2), bytearray(2), bytearray(2)])
            took = time.monotonic() - t0
        assert isinstance(got[0].error, sexton.Unavailable) and "closed" in str(got[0].error), got[0].error
        assert isinstance(got[1].error, sexton.Unavailable) and "deadline" in str(got[1].error), got[1].error
        assert got[2].ok and bytes(got[2].value) == b"k2"
        assert took < 2.5, took
    finally:
        for h in hs:
            h.close()
        m.close()


def test_batch_reads_reach_every_holder_before_any_answer_is_read() -> None:
    # Reads are small requests: the calling thread sends them to every
    # holder before it reads an answer, so a holder's work does not wait
    # for a lane thread. Here every lane thread is busy until holder A has
    # seen holder B's request: the batch is quick only if B's request did
    # not need a lane (nor its answer: it is read on the calling thread).
    b_asked, lanes_free = threading.Event(), threading.Event()

    def holder_a(method: str, body: Any) -> Tuple[str, Any]:
        b_asked.wait(3)
        lanes_free.set()
        return ("ok", {"value": body["key"].encode()})

    def holder_b(method: str, body: Any) -> Tuple[str, Any]:
        b_asked.set()
        return ("ok", {"value": body["key"].encode()})

    hs = [harness.FakeServer(holder_a), harness.FakeServer(holder_b)]

    m = harness.FakeServer(key_i_on_holder_i(hs))
    try:
        with sexton.Client(m.addr, timeout=10) as c:
            pool = c._lane_pool()
            assert pool is not None
            busy = [pool.submit(lanes_free.wait, 10) for _ in range(sexton.client.MAX_LANES)]
            t0 = time.monotonic()
            got = c.batch_get_into(["k0", "k1"], [bytearray(2), bytearray(2)])
            took = time.monotonic() - t0
            assert all(f.result() for f in busy)
        assert [bytes(g.value) for g in got] == [b"k0", b"k1"]
        assert b_asked.is_set() and took < 2, took
    finally:
        for h in hs:
            h.close()
        m.close()


def test_pipelined_calls_get_their_own_answers() -> None:
    # Three calls sent before any answer is read: each answer lands with
    # the call of its id, a value into that call's buffer when it gave one
    # (and fits), decoded whole otherwise.
    v1, v2 = b"first value", b"second!"
    srv = harness.FakeServer(lambda m, b: ("ok", {"value": v1 if b["key"] == "one" else v2}))
    try:
        conn = wire.Connection(srv.addr, max_frame=wire.DATA_MAX_FRAME, deadline=time.monotonic() + 5)
        b1, b2 = bytearray(len(v1)), bytearray(64)
        calls = [wire.PipelinedCall("HolderRead", {"key": "two"}, into=memoryview(b2)),
                 wire.PipelinedCall("HolderRead", {"key": "one"}, into=memoryview(b1)),
                 wire.PipelinedCall("HolderRead", {"key": "two"})]
        out = conn.pipeline(calls, time.monotonic() + 5)
        assert [e for e, _ in out] == [None, None, None]
        assert out[0][1] == {"value": len(v2), "into": True} and bytes(b2[:len(v2)]) == v2
        assert out[1][1] == {"value": len(v1), "into": True} and bytes(b1) == v1
        assert out[2][1] == {"value": v2}
        conn.close()
    finally:
        srv.close()


def test_get_batch_asks_again_only_for_keys_whose_holder_lost_the_incarnation() -> None:
    old, new, other = {"h": 1, "l": 5}, {"h": 1, "l": 9}, {"h": 1, "l": 6}

    def holder(method: str, body: Any) -> Tuple[str, Any]:
        if body["inc"] == old:
            return ("err", {"code": "OBJECT_NOT_FOUND", "msg": "replaced"})
        return ("ok", {"value": b"new!" if body["key"] == "k" else b"xy"})

    h = harness.FakeServer(holder)
    answers = iter([{"k": old, "o": other}, {"k": new}])

    def master(method: str, body: Any) -> Tuple[str, Any]:
        incs = next(answers)
        results = []
        for k in body["keys"]:
            if k == "gone":
                results.append({"err": {"code": "OBJECT_NOT_FOUND", "msg": "no such key"}})
                continue
            results.append({"object": {"key": k, "size": 4 if k == "k" else 2, "inc": incs[k], "created": 0,
                                       "replicas": [{"kind": 1, "seg": "s", "ep": h.addr}]}})
        return ("ok", {"results": results})

    m = harness.FakeServer(master)
    try:
        with sexton.Client(m.addr, timeout=3) as c:
            res = c.get_batch(["k", "gone", "o"])
        assert bytes(res[0].value) == b"new!" and res[0].info.incarnation == sexton.Incarnation(1, 9)
        assert isinstance(res[1].error, sexton.ObjectNotFound) and res[1].info is None
        assert bytes(res[2].value) == b"xy"
        assert [(meth, b["keys"]) for meth, b in m.requests] == [("BatchGet", ["k", "gone", "o"]), ("BatchGet", ["k"])]
    finally:
        h.close()
        m.close()


def test_put_sends_the_value_after_a_head_never_in_a_built_frame(monkeypatch: Any) -> None:
    """``put`` (like ``put_from``) writes the HolderWrite frame as its head
    (the grant before the value) and then the value's own buffer."""
    inc = {"h": 7, "l": 41}
    holder = harness.FakeServer(lambda m, b: ("ok", {}))

    def master(method: str, body: Any) -> Tuple[str, Any]:
        if method == "PutGrant":
            grant = {"seg": "seg", "key": body["key"], "inc": inc, "exp": 1, "mac": b"\x01" * 32}
            return ("ok", {"inc": inc, "replicas": [{"kind": 1, "seg": "seg", "ep": holder.addr, "grant": grant}]})
        return ("ok", {})

    built: List[str] = []
    encode = wire.encode_frame

    def spy(kind: int, req_id: int, method: str, *rest: Any) -> bytes:
        built.append(method)
        return encode(kind, req_id, method, *rest)

    monkeypatch.setattr(wire, "encode_frame", spy)
    m = harness.FakeServer(master)
    try:
        with sexton.Client(m.addr, timeout=3) as c:
            c.put("k", b"v" * 100000)
        (meth, w), = holder.requests
        assert meth == "HolderWrite" and w["value"] == b"v" * 100000
        assert list(w)[-1] == "value" and list(w).index("grant") < list(w).index("value")
        assert "HolderWrite" not in built
    finally:
        for s in (holder, m):
            s.close()


def test_connections_to_this_host_do_not_pace() -> None:
    # A pacing default (BBR) costs a large value's sender timer interrupts
    # for nothing on loopback; the client's connections to this host run
    # Reno whatever the host's default is.
    with open("/proc/sys/net/ipv4/tcp_congestion_control") as f:
        if f.read().strip() == "reno":
            pytest.skip("the host's default is reno already: nothing to tell apart")
    srv = harness.FakeServer(lambda m, b: ("ok", {}))
    try:
        conn = wire.Connection(srv.addr, deadline=time.monotonic() + 2)
        try:
            cc = conn._sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\0")
            assert cc == wire.LOCAL_CONGESTION_CONTROL
        finally:
            conn.close()
    finally:
        srv.close()
