"""The Mooncake-compatible store (sexton.mooncake) against ``sexton dev``,
written from Mooncake Store's Python API reference: method names,
arguments and return codes (0 / Mooncake's negative ErrorCode, 1/0/-1 for
is_exist, b"" for a missing get), insert-if-absent ``put``, and the race
of many processes putting the same keys."""

import ctypes
import multiprocessing as mp
import os
import sys
import threading
import time
import tracemalloc
import uuid
from pathlib import Path
from typing import Dict, Iterator, List

import pytest

import harness
import sexton
from sexton.mooncake import ErrorCode, MooncakeDistributedStore, ReplicateConfig
from sexton.regions import Regions

SHIM = str(Path(__file__).resolve().parents[1] / "mooncake_shim")

OK, NOT_FOUND, INVALID_PARAMS, RPC_FAIL = 0, -704, -600, -900


def cbuf(data: bytes = b"", size: int = 0):  # type: ignore[no-untyped-def]
    """Memory at a raw address, as engines hand Mooncake (a ctypes array
    here; a tensor's data_ptr() there): the array and its address."""
    n = max(size, len(data))
    arr = (ctypes.c_ubyte * n)()
    ctypes.memmove(arr, data, len(data))
    return arr, ctypes.addressof(arr)


def key(name: str) -> str:
    return f"py/mc/{uuid.uuid4().hex[:8]}/{name}"


def setup_store(rpc: str, **kw) -> MooncakeDistributedStore:  # type: ignore[no-untyped-def]
    s = MooncakeDistributedStore()
    rc = s.setup("localhost", "P2PHANDSHAKE", 512 << 20, 128 << 20, "tcp", "", rpc, **kw)
    assert rc == 0, rc
    return s


@pytest.fixture
def store(dev: harness.DevCluster) -> Iterator[MooncakeDistributedStore]:
    s = setup_store(dev.rpc, timeout=10)
    yield s
    s.close()


def test_the_shim_serves_mooncake_store(dev: harness.DevCluster) -> None:
    sys.path.insert(0, SHIM)
    try:
        from mooncake.store import MooncakeDistributedStore as Shimmed
        from mooncake.store import ReplicateConfig as ShimConfig
    finally:
        sys.path.remove(SHIM)
    assert Shimmed is MooncakeDistributedStore and ShimConfig is ReplicateConfig
    s = Shimmed()
    # Mooncake's hello world, word for word but the master address.
    assert s.setup("localhost", "http://localhost:8080/metadata", 512 * 1024 * 1024, 128 * 1024 * 1024, "tcp", "",
                   dev.rpc) == 0
    k = key("hello")
    assert s.put(k, b"Hello, Mooncake Store!") == 0
    assert s.get(k).decode() == "Hello, Mooncake Store!"
    assert s.close() == 0


def test_setup_refuses_what_sexton_cannot_use(dev: harness.DevCluster) -> None:
    s = MooncakeDistributedStore()
    # Mooncake's HA form names etcd endpoints, not sexton masters.
    assert s.setup("localhost", "P2PHANDSHAKE", 0, 0, "tcp", "", "etcd://127.0.0.1:2379") == INVALID_PARAMS
    assert s.setup("localhost", "P2PHANDSHAKE", 0, 0, "tcp", "", "127.0.0.1:" + harness.free_port().split(":")[-1],
                   timeout=0.5) == RPC_FAIL
    assert s.put(key("x"), b"v") == INVALID_PARAMS  # not set up
    # Comma- and semicolon-separated lists and a sexton:// prefix work.
    assert s.setup("node7:12345", "", 0, 0, "tcp", "", f"sexton://{dev.rpc};{dev.rpc}") == 0
    assert s.get_hostname() == "node7:12345"
    assert s.health_check() == 0
    s.close()
    assert s.health_check() == 1  # closed
    # A master that stops answering after setup: 2.
    gone: List[bool] = []
    fake = harness.FakeServer(lambda method, body: ("drop", None) if gone else ("ok", {}))
    try:
        assert s.setup("localhost", "", 0, 0, "tcp", "", fake.addr, timeout=0.5) == 0
        gone.append(True)
        fake.close()
        assert s.health_check() == 2
    finally:
        fake.close()
    s.close()


def test_put_is_insert_if_absent_and_upsert_replaces(store: MooncakeDistributedStore) -> None:
    k = key("first")
    assert store.put(k, b"first") == OK
    assert store.put(k, b"second") == OK  # success, the first value stays
    assert store.get(k) == b"first"
    assert store.upsert(k, b"third") == OK
    assert store.get(k) == b"third"
    cfg = ReplicateConfig()
    cfg.replica_num = 1
    cfg.preferred_segment = store.get_hostname()
    k2 = key("cfg")
    assert store.put(k2, b"with config", cfg) == OK and store.get(k2) == b"with config"
    kp = key("parts")
    assert store.put_parts(kp, b"Hello, ", bytearray(b"World"), memoryview(b"!")) == OK and store.get(kp) == b"Hello, World!"
    assert store.upsert_parts(kp, b"Bye", b"") == OK and store.get(kp) == b"Bye"
    assert store.put_parts(key("parts-bad"), b"x", "not bytes") == INVALID_PARAMS
    keys = [key(f"b{i}") for i in range(3)]
    assert store.put_batch(keys, [b"value1", b"value2", b"value3"]) == OK
    assert store.put_batch(keys, [b"x", b"y", b"z"]) == OK
    assert store.get_batch(keys + [key("missing")]) == [b"value1", b"value2", b"value3", b""]
    assert store.upsert_batch(keys, [b"x", b"y", b"z"]) == OK
    assert store.get_batch(keys) == [b"x", b"y", b"z"]
    assert store.put(key("bad"), "not bytes") == INVALID_PARAMS


def test_queries_and_removes_return_mooncakes_codes(store: MooncakeDistributedStore) -> None:
    k, missing = key("q"), key("missing")
    assert store.get(missing) == b""
    assert store.is_exist(missing) == 0
    assert store.get_size(missing) == NOT_FOUND
    assert store.remove(missing) == NOT_FOUND
    assert store.put(k, b"12345") == OK
    assert store.is_exist(k) == 1
    assert store.batch_is_exist([k, missing]) == [1, 0]
    assert store.get_size(k) == 5
    assert store.remove(k) == OK
    assert store.is_exist(k) == 0 and store.get(k) == b""
    ks = [key(f"r{i}") for i in range(3)]
    for x in ks:
        assert store.put(x, b"v") == OK
    assert store.batch_remove(ks + [missing]) == [OK, OK, OK, NOT_FOUND]
    assert store.get_buffer(missing) is None
    assert store.init_all("tcp", "") == OK
    assert store.health_check() == 0


def test_remove_by_regex_and_remove_all(store: MooncakeDistributedStore) -> None:
    run = uuid.uuid4().hex[:8]
    session = [f"py/mc/{run}/user_session_{i}" for i in range(5)]
    other = [f"py/mc/{run}/keep_{i}" for i in range(3)]
    for k in session + other:
        assert store.put(k, b"v") == OK
    assert store.remove_by_regex(f"^py/mc/{run}/user_session_.*") == 5
    assert store.batch_is_exist(session + other) == [0] * 5 + [1] * 3
    assert store.remove_by_regex("([") == INVALID_PARAMS
    assert store.remove_all() >= 3
    assert store.batch_is_exist(other) == [0] * 3


def test_zero_copy_with_registered_buffers(store: MooncakeDistributedStore) -> None:
    # Mooncake's zero-copy workflow: register, put_from, get_into.
    v = bytes(range(256)) * 160
    src, ptr = cbuf(v)
    size = len(v)
    assert store.register_buffer(ptr, size) == 0
    k = key("tensor")
    assert store.put_from(k, ptr, size) == OK
    dst, rptr = cbuf(size=size)
    assert store.register_buffer(rptr, size) == 0
    assert store.get_into(k, rptr, size) == size
    assert bytes(dst) == v
    # An address outside every registered buffer, a buffer too small, a missing key.
    other, optr = cbuf(size=size)
    assert store.get_into(k, optr, size) == INVALID_PARAMS
    assert store.get_into(k, rptr + 1, size) == INVALID_PARAMS  # runs past the registered end
    assert store.get_into(k, rptr, 100) == INVALID_PARAMS
    assert store.get_into(key("none"), rptr, size) == NOT_FOUND
    assert store.unregister_buffer(ptr) == 0 and store.unregister_buffer(rptr) == 0
    assert store.unregister_buffer(rptr) == INVALID_PARAMS
    assert store.put_from(key("after"), ptr, size) == INVALID_PARAMS
    # Registrations may nest: a range inside the outer buffer but past a
    # smaller one registered inside it is still registered memory.
    outer, op = cbuf(size=3 * size)
    assert store.register_buffer(op, 3 * size) == 0 and store.register_buffer(op + size, 10) == 0
    assert store.get_into(k, op + size + 5, size) == size and bytes(outer[size + 5:2 * size + 5]) == v
    # Buffer objects are taken as they are (a bytearray, a memoryview).
    ba = bytearray(size)
    assert store.get_into(k, ba, size) == size and bytes(ba) == v
    assert store.put_from(key("ba"), memoryview(ba), size) == OK


def test_batch_put_from_and_batch_get_into_one_registered_region(store: MooncakeDistributedStore) -> None:
    # As engines do: one registered KV region, blocks at offsets inside it.
    block, n = 64 << 10, 8
    data = bytes((i * 7 + i // 251) & 0xFF for i in range(block * n))
    src, sptr = cbuf(data)
    dst, dptr = cbuf(size=block * n)
    assert store.register_buffer(sptr, block * n) == 0
    assert store.register_buffer(dptr, block * n) == 0
    keys = [key(f"blk{i}") for i in range(n)]
    ptrs = [sptr + i * block for i in range(n)]
    dptrs = [dptr + i * block for i in range(n)]
    assert store.batch_put_from(keys, ptrs, [block] * n) == [OK] * n
    # Putting them again is insert-if-absent: all 0, nothing replaced.
    assert store.batch_put_from(keys, dptrs, [block] * n) == [OK] * n
    assert store.batch_get_into(keys + [key("missing")], dptrs + [dptrs[0]], [block] * (n + 1)) == [block] * n + [NOT_FOUND]
    assert bytes(dst) == data
    # A region partly outside the registered buffer fails that key only.
    bad = store.batch_get_into(keys[:2], [dptrs[0], dptr + block * n - 10], [block, block])
    assert bad == [block, INVALID_PARAMS]
    assert store.batch_put_from(keys[:2], ptrs[:1], [block]) == [INVALID_PARAMS] * 2
    assert store.batch_upsert_from(keys[:1], [ptrs[1]], [block]) == [OK]
    assert store.get(keys[0]) == data[block:2 * block]


def test_multi_buffer_batches_join_and_scatter_the_parts(store: MooncakeDistributedStore) -> None:
    # vLLM's layout: a key per block, a part per layer, parts scattered in one region.
    layers, part, n = 4, 1000, 3
    data = bytes(i % 253 for i in range(layers * part * n))
    src, sp = cbuf(data)
    dst, dp = cbuf(size=len(data))
    assert store.register_buffer(sp, len(data)) == 0 and store.register_buffer(dp, len(data)) == 0
    keys = [key(f"multi{b}") for b in range(n)]
    # Block b's layer l lives at (l * n + b) * part: interleaved, as per-layer KV tensors are.
    ptrs = [[sp + (l * n + b) * part for l in range(layers)] for b in range(n)]
    dptrs = [[dp + (l * n + b) * part for l in range(layers)] for b in range(n)]
    sizes = [[part] * layers for _ in range(n)]
    assert store.batch_put_from_multi_buffers(keys, ptrs, sizes) == [OK] * n
    assert store.get(keys[1]) == b"".join(data[(l * n + 1) * part:(l * n + 2) * part] for l in range(layers))
    assert store.batch_get_into_multi_buffers(keys, dptrs, sizes, True) == [layers * part] * n
    assert bytes(dst) == data
    assert store.batch_get_into_multi_buffers([key("missing")], dptrs[:1], sizes[:1]) == [NOT_FOUND]
    assert store.batch_get_into_multi_buffers(keys[:1], [dptrs[0][:1]], [[part]]) == [INVALID_PARAMS]
    assert store.batch_put_from_multi_buffers(keys[:1], [ptrs[0]], [[part]]) == [INVALID_PARAMS]


def test_get_into_ranges_as_documented(store: MooncakeDistributedStore) -> None:
    k1, k2 = key("key1"), key("key2")
    v1, v2 = bytes(range(40)), bytes(range(100, 140))
    assert store.put(k1, v1) == OK and store.put(k2, v2) == OK
    size = 32
    b0, b1 = (ctypes.c_ubyte * size)(), (ctypes.c_ubyte * size)()
    p0, p1 = ctypes.addressof(b0), ctypes.addressof(b1)
    assert store.register_buffer(p0, size) == 0 and store.register_buffer(p1, size) == 0
    res = store.get_into_ranges([p0, p1], [[k1, k2], [k2, k1]], [[[0, 20], [8]], [[4], [16]]],
                                [[[1, 30], [2]], [[0], [10]]], [[[4, 3], [5]], [[6], [4]]])
    assert res == [[[4, 3], [5]], [[6], [4]]]
    assert bytes(b0)[0:4] == v1[1:5] and bytes(b0)[20:23] == v1[30:33] and bytes(b0)[8:13] == v2[2:7]
    assert bytes(b1)[4:10] == v2[0:6] and bytes(b1)[16:20] == v1[10:14]
    # A missing key's fragments fail, the others succeed; a source range past the end is refused.
    res = store.get_into_ranges([p0], [[key("missing"), k1]], [[[0], [0, 4]]], [[[0], [0, 39]]], [[[4], [4, 4]]])
    assert res == [[[NOT_FOUND], [4, INVALID_PARAMS]]]


def peak_during(fn):  # type: ignore[no-untyped-def]
    """fn()'s result and the most memory Python allocated while it ran."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        out = fn()
        return out, tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_buffers_are_filled_in_place_with_no_value_sized_allocation(store: MooncakeDistributedStore) -> None:
    # Values of 8 MiB in 4 parts of 2 MiB, parts interleaved in one region
    # (per-layer KV tensors), and the single-buffer forms: no call may
    # allocate as much as one part, so no value passes through an
    # intermediate bytes or bytearray on the way in or out. (msgpack's
    # packer takes a 1 MiB scratch buffer for each request head it packs.)
    layers, part, n = 4, 2 << 20, 2
    total = layers * part * n
    data = os.urandom(total)
    src, sp = cbuf(data)
    dst, dp = cbuf(size=total)
    assert store.register_buffer(sp, total) == 0 and store.register_buffer(dp, total) == 0
    keys = [key(f"inplace{b}") for b in range(n)]
    ptrs = [[sp + (l * n + b) * part for l in range(layers)] for b in range(n)]
    dptrs = [[dp + (l * n + b) * part for l in range(layers)] for b in range(n)]
    sizes = [[part] * layers for _ in range(n)]
    store.is_exist(keys[0])  # connections made before measuring
    codes, peak = peak_during(lambda: store.batch_put_from_multi_buffers(keys, ptrs, sizes))
    assert codes == [OK] * n and peak < part, peak
    got, peak = peak_during(lambda: store.batch_get_into_multi_buffers(keys, dptrs, sizes))
    assert got == [layers * part] * n and peak < part, peak
    assert bytes(dst) == data
    ctypes.memset(dp, 0, total)
    got, peak = peak_during(lambda: store.batch_get_into(keys, [dp + b * layers * part for b in range(n)], [layers * part] * n))
    assert got == [layers * part] * n and peak < part, peak
    assert bytes(dst) == b"".join(store.get(k) for k in keys)
    one = [key(f"inplace-one{b}") for b in range(n)]
    codes, peak = peak_during(lambda: store.batch_put_from(one, [sp + b * layers * part for b in range(n)], [layers * part] * n))
    assert codes == [OK] * n and peak < part, peak
    # get_into_ranges: fragments of the 8 MiB values land in place, the
    # bytes no fragment wants go to a 64 KiB scratch buffer.
    ctypes.memset(dp, 0, total)
    frag = 1000
    res, peak = peak_during(lambda: store.get_into_ranges(
        [dp], [keys], [[[b * 4 * frag, b * 4 * frag + 2 * frag] for b in range(n)]],
        [[[10, 3 * part] for _ in range(n)]], [[[frag, 2 * frag] for _ in range(n)]]))
    assert res == [[[frag, 2 * frag]] * n] and peak < part, peak
    for b in range(n):
        value = store.get(keys[b])
        assert bytes(dst[b * 4 * frag:b * 4 * frag + frag]) == value[10:10 + frag]
        assert bytes(dst[b * 4 * frag + 2 * frag:b * 4 * frag + 4 * frag]) == value[3 * part:3 * part + 2 * frag]


def test_regions_slice_and_assign_across_their_parts() -> None:
    a, b, c = bytearray(3), bytearray(0), bytearray(4)
    r = Regions([a, b, memoryview(c)])
    assert len(r) == 7 and len(r.parts) == 2 and not r.readonly
    r[2:5] = b"xyz"
    assert bytes(a) == b"\0\0x" and bytes(c) == b"yz\0\0"
    assert r[1:6].tobytes() == b"\0xyz\0" and len(r[6:100]) == 1 and len(r[5:2]) == 0
    with pytest.raises(ValueError):
        r[0:2] = b"abc"
    with pytest.raises(ValueError):
        r[::2]  # noqa: B018
    assert Regions([b"ro", bytearray(1)]).readonly


def test_get_into_ranges_with_overlapping_fragments(store: MooncakeDistributedStore) -> None:
    # Two fragments of one key that share source bytes, in either order,
    # and a zero-length one: each gets its bytes.
    k = key("overlap")
    v = bytes(range(200))
    assert store.put(k, v) == OK
    buf = bytearray(300)
    res = store.get_into_ranges([buf], [[k]], [[[0, 100, 250]]], [[[50, 10, 0]]], [[[100, 60, 0]]])
    assert res == [[[100, 60, 0]]]
    assert bytes(buf[0:100]) == v[50:150] and bytes(buf[100:160]) == v[10:70]


def test_get_buffer_is_the_value_without_a_copy(store: MooncakeDistributedStore) -> None:
    k = key("buf")
    v = bytes(range(256)) * 1200
    assert store.put(k, v) == OK
    h = store.get_buffer(k)
    assert h is not None and h.size() == len(h) == len(v) and bytes(h) == v
    # ptr() is the address of the bytes the value was received into.
    assert ctypes.string_at(h.ptr(), len(v)) == v
    assert h.view().obj is h._data
    hs = store.batch_get_buffer([k, key("missing")])
    assert hs[1] is None and bytes(hs[0].view()) == v  # type: ignore[union-attr]
    np = pytest.importorskip("numpy")
    arr = np.asarray(h)
    assert arr.dtype == np.uint8 and arr.ctypes.data == h.ptr() and arr.tobytes() == v


def test_put_waits_for_an_in_flight_put_and_takes_over_an_abandoned_one(dev: harness.DevCluster) -> None:
    """0 from put means the key holds a value: when the put in flight is
    abandoned, the waiting put stores its own value."""
    s = setup_store(dev.rpc, timeout=10)
    other = sexton.Client(dev.rpc)
    try:
        k = key("inflight")
        start = other._mutate("PutStart", {"key": k, "size": 3, "replicas": 1})
        rc: List[int] = []
        t = threading.Thread(target=lambda: rc.append(s.put(k, b"mine")))
        t.start()
        time.sleep(0.3)
        assert not rc, "put returned while another put of the key was in flight"
        other._mutate("PutRevoke", {"key": k, "inc": start["inc"]})
        t.join(10)
        assert rc == [OK] and s.get(k) == b"mine"
        # A put in flight that completes: the waiting put returns 0, the first value stays.
        k2 = key("inflight2")
        start = other._mutate("PutStart", {"key": k2, "size": 5, "replicas": 1})
        rc.clear()
        t = threading.Thread(target=lambda: rc.append(s.put(k2, b"loser")))
        t.start()
        time.sleep(0.2)
        rep = sexton.Replica.from_wire(start["replicas"][0])
        other._holder_pool.call(rep.endpoint, "HolderWrite", {"key": k2, "inc": start["inc"], "grant": rep.grant,
                                                              "value": b"first"}, time.monotonic() + 5)
        other._mutate("PutEnd", {"key": k2, "inc": start["inc"]})
        t.join(10)
        assert rc == [OK] and s.get(k2) == b"first"
        # Bounded: a put in flight past put_wait returns OBJECT_ALREADY_EXISTS, storing nothing.
        k3 = key("inflight3")
        other._mutate("PutStart", {"key": k3, "size": 3, "replicas": 1})
        s.put_wait = 0.3
        assert s.put(k3, b"late") == ErrorCode.OBJECT_ALREADY_EXISTS and s.is_exist(k3) == 0
    finally:
        other.close()
        s.close()


# -- the race: many processes, the same keys ------------------------------

RACE_PROCS, RACE_KEYS, RACE_SIZE = 16, 20, 16 << 10


def race_value(proc: int, k: int) -> bytes:
    return (f"proc {proc} key {k} ".encode() * (RACE_SIZE // 8))[:RACE_SIZE]


def race_worker(rpc: str, run: str, proc: int, barrier, out) -> None:  # type: ignore[no-untyped-def]
    s = MooncakeDistributedStore()
    rc = s.setup("localhost", "P2PHANDSHAKE", 0, 0, "tcp", "", rpc)
    codes, slowest = [], 0.0
    barrier.wait(30)
    order = list(range(RACE_KEYS))
    if proc % 2:
        order.reverse()
    for k in order:
        t0 = time.monotonic()
        codes.append(s.put(f"py/mc/race/{run}/{k}", race_value(proc, k)))
        slowest = max(slowest, time.monotonic() - t0)
    s.close()
    out.put((proc, rc, codes, slowest))


def test_sixteen_processes_put_the_same_twenty_keys(dev: harness.DevCluster) -> None:
    """Every put returns 0 quickly (none fails "put in progress"), and every
    key reads back one of the written values, byte for byte."""
    ctx = mp.get_context("fork")
    run = uuid.uuid4().hex[:8]
    barrier, out = ctx.Barrier(RACE_PROCS), ctx.Queue()
    procs = [ctx.Process(target=race_worker, args=(dev.rpc, run, p, barrier, out)) for p in range(RACE_PROCS)]
    for p in procs:
        p.start()
    results: Dict[int, tuple] = {}
    try:
        for _ in procs:
            proc, rc, codes, slowest = out.get(timeout=60)
            results[proc] = (rc, codes, slowest)
    finally:
        for p in procs:
            p.join(10)
            if p.is_alive():
                p.kill()
    assert sorted(results) == list(range(RACE_PROCS))
    bad = {p: codes for p, (rc, codes, _) in results.items() if rc != 0 or any(c != 0 for c in codes)}
    assert not bad, f"puts that did not return 0: {bad}"
    slowest = max(s for _, _, s in results.values())
    assert slowest < 10, f"a put took {slowest:.1f}s"
    s = setup_store(dev.rpc)
    try:
        for k in range(RACE_KEYS):
            got = s.get(f"py/mc/race/{run}/{k}")
            assert any(got == race_value(p, k) for p in range(RACE_PROCS)), f"key {k}: {got[:40]!r}"
            assert s.get(f"py/mc/race/{run}/{k}") == got
    finally:
        s.close()
