"""Every client operation against ``sexton dev`` (one master, one holder)."""

import uuid

import pytest

import harness
import sexton


def key(name: str) -> str:
    return f"py/{uuid.uuid4().hex[:8]}/{name}"


def test_put_get_remove(store: sexton.Client) -> None:
    k = key("hello")
    inc = store.put(k, b"world")
    assert store.get(k) == b"world"
    value, info = store.get_with_info(k)
    assert (value, info.key, info.size, info.incarnation) == (b"world", k, 5, inc)
    assert len(info.replicas) == 1 and info.replicas[0].endpoint
    assert store.is_exist(k) and store.get_size(k) == 5
    store.remove(k)
    assert not store.is_exist(k)
    with pytest.raises(sexton.ObjectNotFound):
        store.get(k)
    with pytest.raises(sexton.ObjectNotFound):
        store.remove(k)
    # Its bytes wait for the read lease of the get above (10 s); a key
    # nobody read is deleted from the holder at once.
    unread = key("unread")
    unread_inc = store.put(unread, b"bytes")
    store.remove(unread)
    store.wait_deleted(unread, unread_inc, timeout=5)
    assert store.pending_deletes(unread) == []
    assert [t.incarnation for t in store.pending_deletes(k)] == [inc]
    with pytest.raises(sexton.Timeout):
        store.wait_deleted(k, inc, timeout=0.3)


def test_overwrite_and_conditions(store: sexton.Client) -> None:
    k = key("cond")
    first = store.put(k, b"v1")
    second = store.put(k, bytearray(b"v2"))
    assert first < second and store.get(k) == b"v2"
    with pytest.raises(sexton.ObjectAlreadyExists):
        store.put(k, b"v3", if_absent=True)
    with pytest.raises(sexton.IncarnationMismatch):
        store.remove(k, if_incarnation=first)
    assert store.get(k) == b"v2"
    assert sexton.Incarnation.parse(str(second)) == second
    store.remove(k, if_incarnation=second)
    assert not store.is_exist(k)


def test_stat_and_list(store: sexton.Client) -> None:
    prefix = key("list/")
    keys = [prefix + str(i) for i in range(5)]
    incs = [store.put(k, k.encode()) for k in keys]
    st = store.stat(keys[0])
    assert st.object.incarnation == incs[0] and st.object.size == len(keys[0]) and st.pending_put is None
    page, nxt = store.list(prefix, limit=3)
    assert [o.key for o in page] == keys[:3] and nxt
    page, nxt = store.list(prefix, nxt, 3)
    assert [o.key for o in page] == keys[3:] and nxt == ""
    assert [o.key for o in store.iter_objects(prefix, page=2)] == keys
    assert store.remove_all(prefix) == 5
    assert list(store.iter_objects(prefix)) == []


def test_batches(store: sexton.Client) -> None:
    a, b, missing = key("a"), key("b"), key("missing")
    inc_a = store.put(a, b"a")
    store.put(b, b"b")
    assert store.batch_is_exist([a, missing, b]) == [True, False, True]
    results = store.batch_remove([a, missing, b], [inc_a, None, None])
    assert [r.key for r in results] == [a, missing, b]
    assert results[0].ok and results[2].ok
    assert isinstance(results[1].error, sexton.ObjectNotFound)
    assert store.batch_is_exist([a, b]) == [False, False]


def test_errors_map_to_exceptions(store: sexton.Client) -> None:
    with pytest.raises(sexton.InvalidKey):
        store.put("", b"x")
    with pytest.raises(sexton.InvalidKey):
        store.remove("a\x00b")
    with pytest.raises(sexton.InvalidParams):
        store.call("Get", {"key": "k", "no_such_field": 1})
    with pytest.raises(sexton.ObjectNotFound) as ei:
        store.stat(key("absent"))
    assert ei.value.code == "OBJECT_NOT_FOUND" and isinstance(ei.value, sexton.SextonError)


def test_binary_keys_and_large_values(store: sexton.Client) -> None:
    k = key("bin-\udcff-\u00e9")  # not UTF-8 on the wire, and UTF-8
    big = bytes(range(256)) * (24 << 10)  # 6 MiB: more than a master frame, fine for a holder
    store.put(k, big)
    assert store.get(k) == big
    assert [o.key for o in store.iter_objects(k)] == [k]
    store.remove(k)


def test_a_repeated_session_is_answered_not_executed_again(dev: harness.DevCluster, store: sexton.Client) -> None:
    # The same Remove sent twice under one session: the second is the
    # first's answer (success), not a second remove (which would say
    # OBJECT_NOT_FOUND). Without a session it is a second remove.
    k = key("once")
    store.put(k, b"x")
    sess = {"client": str(uuid.uuid4()), "seq": 1, "floor": 1}
    store.call("Remove", {"key": k, "sess": sess})
    store.call("Remove", {"key": k, "sess": sess})
    with pytest.raises(sexton.ObjectNotFound):
        store.call("Remove", {"key": k})
    # And a put under the client's own sessions after all that works.
    store.put(k, b"y")
    assert store.get(k) == b"y"
    store.remove(k)
