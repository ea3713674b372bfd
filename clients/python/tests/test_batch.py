"""Batched puts and gets, and the buffer forms, against ``sexton dev``."""

import uuid

import pytest

import sexton
from sexton import wire


def key(name: str) -> str:
    return f"py/batch/{uuid.uuid4().hex[:8]}/{name}"


def value(i: int, size: int) -> bytes:
    return (f"value {i} ".encode() * (size // 8 + 1))[:size]


def test_put_batch_and_get_batch_per_key(store: sexton.Client) -> None:
    items = [(key(f"k{i}"), value(i, 1000 + i)) for i in range(40)]
    res = store.put_batch(items)
    assert [r.key for r in res] == [k for k, _ in items]
    assert all(r.ok and r.incarnation is not None for r in res), [r.error for r in res if not r.ok]
    missing = key("missing")
    got = store.get_batch([items[0][0], missing, items[39][0]])
    assert got[0].ok and bytes(got[0].value) == items[0][1] and got[0].info.incarnation == res[0].incarnation
    assert isinstance(got[0].value, bytearray) and got[0].size == len(items[0][1])
    assert isinstance(got[1].error, sexton.ObjectNotFound) and got[1].value is None
    assert got[2].ok and bytes(got[2].value) == items[39][1]
    # The single-key read agrees.
    assert store.get(items[5][0]) == items[5][1]


def test_put_batch_refuses_a_key_twice_and_keeps_if_absent_per_item(store: sexton.Client) -> None:
    k = key("dup")
    with pytest.raises(sexton.InvalidParams):
        store.put_batch([(k, b"a"), (k, b"b")])
    assert not store.is_exist(k)
    existing = key("exists")
    store.put(existing, b"old")
    res = store.put_batch([(existing, b"x"), (key("fresh"), b"y")], if_absent=True)
    assert isinstance(res[0].error, sexton.ObjectAlreadyExists) and res[1].ok
    assert store.get(existing) == b"old"


def test_get_into_receives_into_the_callers_buffer(store: sexton.Client) -> None:
    k = key("into")
    v = value(7, 200_000)
    store.put(k, v)
    buf = bytearray(300_000)
    n = store.get_into(k, buf)
    assert n == len(v) and bytes(buf[:n]) == v
    # A memoryview into a larger buffer works the same.
    big = bytearray(b"\xff" * 400_000)
    n = store.get_into(k, memoryview(big)[100:])
    assert bytes(big[100:100 + n]) == v and big[:100] == b"\xff" * 100
    with pytest.raises(sexton.InvalidParams):
        store.get_into(k, bytearray(10))
    with pytest.raises(sexton.InvalidParams):
        store.get_into(k, b"\x00" * 300_000)  # not writable
    with pytest.raises(sexton.ObjectNotFound):
        store.get_into(key("none"), buf)


def test_batch_get_into_per_key(store: sexton.Client) -> None:
    items = [(key(f"b{i}"), value(i, 64 << 10)) for i in range(8)]
    assert all(r.ok for r in store.put_batch(items))
    keys = [k for k, _ in items] + [key("missing")]
    bufs = [bytearray(64 << 10) for _ in keys]
    bufs[3] = bytearray(100)  # too small: that key only fails
    res = store.batch_get_into(keys, bufs)
    for i, (k, v) in enumerate(items):
        if i == 3:
            assert isinstance(res[i].error, sexton.InvalidParams) and res[i].info.size == len(v)
            continue
        assert res[i].ok and res[i].size == len(v) and bytes(bufs[i]) == v
        assert isinstance(res[i].value, memoryview) and res[i].value.obj is bufs[i]
    assert isinstance(res[-1].error, sexton.ObjectNotFound)
    with pytest.raises(sexton.InvalidParams):
        store.batch_get_into(keys, bufs[:2])


def test_put_from_sends_the_callers_buffer(store: sexton.Client) -> None:
    k = key("from")
    v = value(3, 3 << 20)
    buf = bytearray(b"\x00" * 10 + v + b"\x00" * 10)
    inc = store.put_from(k, memoryview(buf)[10:10 + len(v)])
    assert store.get(k) == v and store.stat(k).object.incarnation == inc
    small = key("from-small")
    store.put_from(small, b"tiny")
    assert store.get(small) == b"tiny"


def test_request_parts_are_the_same_frame_as_encode_frame() -> None:
    # Writing the head then the value is byte for byte the frame msgpack
    # would build whole, for each bin header size.
    for size in (0, 5, 255, 256, 65535, 65536, 100_000):
        v = bytes(range(256)) * (size // 256) + bytes(size % 256)
        body = {"key": "k", "inc": {"h": 1, "l": 2}, "tenant": "t"}
        head, view = wire.encode_request_parts(9, "HolderWrite", 1234, body, memoryview(v))
        whole = wire.encode_frame(wire.KIND_REQUEST, 9, "HolderWrite", 1234, None, {**body, "value": v})
        assert head + bytes(view) == whole, size


def test_values_are_received_in_place_not_decoded(store: sexton.Client, monkeypatch: pytest.MonkeyPatch) -> None:
    # get_into and get_batch receive a value with recv_into: no frame with a
    # value in it goes through the msgpack decoder.
    k = key("inplace")
    v = value(1, 1 << 20)
    store.put(k, v)
    decoded = []
    real = wire.decode_envelope

    def spy(payload):  # type: ignore[no-untyped-def]
        decoded.append(len(payload))
        return real(payload)

    monkeypatch.setattr(wire, "decode_envelope", spy)
    buf = bytearray(1 << 20)
    assert store.get_into(k, buf) == len(v) and bytes(buf) == v
    assert bytes(store.get_batch([k])[0].value) == v
    assert decoded and max(decoded) < 64 << 10, decoded
