"""Mooncake Store's Python API over sexton: ``MooncakeDistributedStore``.

Engines written against Mooncake Store (vLLM's MooncakeStoreConnector,
SGLang's HiCache Mooncake backend, LMCache's ``mooncakestore://`` remote)
call ``setup(...)`` with a master address, register their KV-cache memory
with ``register_buffer(ptr, size)`` and move blocks with
``batch_put_from`` / ``batch_get_into``. This class keeps those names,
arguments and return conventions (0 or Mooncake's negative ``ErrorCode``;
1/0/-1 for ``is_exist``; ``b""`` for a missing ``get``) and does the work
with :class:`sexton.Client`. docs/MOONCAKE.md says, method by method, what
is the same and what differs.

Two semantics matter most:

* ``put`` (and ``put_from``, ``batch_put_from``, ``put_batch``,
  ``put_parts``) is **insert-if-absent**, as in Mooncake: a put of a key
  that exists returns 0 and keeps the first value. When another put of the
  key is in flight the call waits for it (polling existence with a short
  backoff, at most ``put_wait`` seconds) and returns 0 once the key exists;
  if that put was abandoned instead (revoked, or discarded by the master),
  the call puts its own value. So 0 always means: when the call returned,
  the key held a complete value, this call's or another's.
* ``upsert`` (and its forms) replaces the value, as sexton's own ``put``.
"""

from __future__ import annotations

import bisect
import ctypes
import os
import re
import socket
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from .client import Client
from .errors import ObjectAlreadyExists, ObjectNotFound, OutcomeUnknown, SextonError
from .regions import Regions
from .types import ObjectInfo
from .wire import byte_view

__all__ = ["MooncakeDistributedStore", "ReplicateConfig", "BufferHandle", "ErrorCode"]


class ErrorCode:
    """Mooncake's ``ErrorCode`` values (mooncake-store/include/types.h) that
    this class returns."""

    OK = 0
    INTERNAL_ERROR = -1
    BUFFER_OVERFLOW = -10
    SEGMENT_NOT_FOUND = -101
    NO_AVAILABLE_HANDLE = -200
    INVALID_KEY = -400
    INVALID_PARAMS = -600
    ILLEGAL_CLIENT = -601
    INVALID_READ = -701
    OBJECT_NOT_FOUND = -704
    OBJECT_ALREADY_EXISTS = -705
    TRANSFER_FAIL = -800
    RPC_FAIL = -900
    UNAVAILABLE_IN_CURRENT_STATUS = -1010


#: sexton wire code -> Mooncake ErrorCode.
_CODES: Dict[str, int] = {
    "OBJECT_NOT_FOUND": ErrorCode.OBJECT_NOT_FOUND,
    "OBJECT_ALREADY_EXISTS": ErrorCode.OBJECT_ALREADY_EXISTS,
    "INVALID_KEY": ErrorCode.INVALID_KEY,
    "INVALID_PARAMS": ErrorCode.INVALID_PARAMS,
    "FRAME_TOO_LARGE": ErrorCode.INVALID_PARAMS,
    "NO_SPACE": ErrorCode.NO_AVAILABLE_HANDLE,
    "GRANT_REFUSED": ErrorCode.TRANSFER_FAIL,
    "CORRUPT": ErrorCode.TRANSFER_FAIL,
    "NOT_LEADER": ErrorCode.RPC_FAIL,
    "UNAVAILABLE": ErrorCode.RPC_FAIL,
    "TIMEOUT": ErrorCode.RPC_FAIL,
    "OUTCOME_UNKNOWN": ErrorCode.RPC_FAIL,
    "UNAUTHENTICATED": ErrorCode.ILLEGAL_CLIENT,
    "LOCAL_DELETE_REGISTRY_FULL": ErrorCode.UNAVAILABLE_IN_CURRENT_STATUS,
}


def error_code(err: BaseException) -> int:
    """The Mooncake code for an exception of the sexton client."""
    if isinstance(err, SextonError):
        return _CODES.get(err.code, ErrorCode.INTERNAL_ERROR)
    return ErrorCode.INTERNAL_ERROR


class ReplicateConfig:
    """Mooncake's replication settings. ``replica_num`` is the number of
    holders written. ``preferred_segment`` and ``preferred_segments`` name
    where the first replica should go ("host:port" as Mooncake's
    ``get_hostname``, a host, a holder endpoint or a sexton segment id);
    ``prefer_alloc_in_same_node`` names this store's host. The masters
    place there when such a holder is live with room, elsewhere when not.
    The pin flags have no meaning in sexton, which never evicts: every
    object lives until it is removed."""

    def __init__(self, replica_num: int = 1, preferred_segment: str = "") -> None:
        self.replica_num = replica_num
        self.with_soft_pin = False
        self.with_hard_pin = False
        self.preferred_segment = preferred_segment
        self.preferred_segments: List[str] = []
        self.prefer_alloc_in_same_node = False

    def __repr__(self) -> str:
        return f"ReplicateConfig(replica_num={self.replica_num}, preferred_segment={self.preferred_segment!r})"


class BufferHandle:
    """What ``get_buffer`` returns: the value in memory this handle owns.
    ``ptr()`` is its address, ``size()`` and ``len()`` its length; it is a
    buffer (``memoryview(h)`` on Python 3.12+, ``h.view()`` anywhere) and a
    numpy array interface (``np.asarray(h)`` does not copy)."""

    __slots__ = ("_data", "_view")

    def __init__(self, data: bytearray, size: int) -> None:
        self._data = data
        self._view = memoryview(data)[:size]

    def ptr(self) -> int:
        if not len(self._view):
            return 0
        return ctypes.addressof(ctypes.c_char.from_buffer(self._data))

    def size(self) -> int:
        return len(self._view)

    def __len__(self) -> int:
        return len(self._view)

    def view(self) -> memoryview:
        """A memoryview of the value (no copy)."""
        return self._view

    def __bytes__(self) -> bytes:
        return bytes(self._view)

    def __buffer__(self, flags: int) -> memoryview:  # Python 3.12+ buffer protocol
        return self._view

    @property
    def __array_interface__(self) -> Dict[str, Any]:
        return {"shape": (len(self._view),), "typestr": "|u1", "data": (self.ptr(), False), "version": 3}


Pointer = Union[int, bytes, bytearray, memoryview, Any]


class MooncakeDistributedStore:
    """Mooncake Store's ``MooncakeDistributedStore`` over a sexton cluster.

    Make it, then ``setup(...)`` with ``master_server_addr`` naming the
    sexton masters (``"h1:7101,h2:7101,h3:7101"``). ``put_wait`` bounds how
    long an insert-if-absent put waits for another put of its key that is
    in flight. Every method returns Mooncake's codes and never raises for
    a store failure."""

    def __init__(self, *, put_wait: float = 15.0) -> None:
        self._client: Optional[Client] = None
        self._hostname = ""
        self.put_wait = put_wait
        self._buffers: Dict[int, int] = {}  # registered address -> size
        self._starts: List[int] = []  # registered addresses, sorted
        self._lock = threading.Lock()
        self._scratch = memoryview(bytearray(_SCRATCH))  # get_into_ranges' discarded bytes

    # -- set-up -----------------------------------------------------------

    def setup(self, local_hostname: str = "", metadata_server: str = "", global_segment_size: int = 16777216,
              local_buffer_size: int = 1073741824, protocol: str = "tcp", rdma_devices: str = "",
              master_server_addr: str = "", **client_options: Any) -> int:
        """Connect to the sexton masters named by ``master_server_addr``
        (comma- or semicolon-separated ``host:port``, optionally prefixed
        ``sexton://``; empty: ``SEXTON_MASTERS``). ``local_hostname`` is what
        ``get_hostname`` returns and the host whose replicas are read
        first. ``metadata_server``, ``global_segment_size``,
        ``local_buffer_size``, ``protocol`` and ``rdma_devices`` configure
        Mooncake's transfer engine and memory segments, which sexton does not
        have: they are accepted and ignored. Keyword arguments go to
        :class:`sexton.Client` (``cluster_token``, ``tls_ca``, ``timeout``,
        ...); the token and TLS files otherwise come from the environment
        (``SEXTON_CLUSTER_TOKEN``, ``SEXTON_TLS_CA``, ...). Returns 0, or
        ``INVALID_PARAMS`` for an address sexton cannot use (an ``etcd://``
        HA address names etcd, not sexton masters), ``RPC_FAIL`` when no
        master answers."""
        masters = _parse_masters(master_server_addr or os.environ.get("SEXTON_MASTERS", ""))
        if masters is None:
            return ErrorCode.INVALID_PARAMS
        if self._client is not None:
            self._client.close()
        try:
            client = Client(masters, **client_options)
        except SextonError as e:
            return error_code(e)
        except TypeError:
            return ErrorCode.INVALID_PARAMS
        try:
            client.status()
        except SextonError as e:
            client.close()
            return error_code(e)
        self._hostname = local_hostname or socket.gethostname()
        client.prefer_hosts = _local_hosts(self._hostname)
        self._client = client
        return ErrorCode.OK

    def init_all(self, protocol: str = "tcp", device_name: str = "", mount_segment_size: int = 16777216) -> int:
        """A no-op (sexton has no transfer engine to start): 0 after
        ``setup``, ``INVALID_PARAMS`` before."""
        return ErrorCode.OK if self._client is not None else ErrorCode.INVALID_PARAMS

    def get_hostname(self) -> str:
        """The ``local_hostname`` given to ``setup`` (this machine's name when
        none was given)."""
        return self._hostname or socket.gethostname()

    def health_check(self) -> int:
        """0 when a master answers, 1 before ``setup`` or after ``close``, 2
        when no master answers (Mooncake's codes)."""
        if self._client is None:
            return 1
        try:
            self._client.status()
            return 0
        except SextonError:
            return 2

    def close(self) -> int:
        if self._client is not None:
            self._client.close()
            self._client = None
        return ErrorCode.OK

    @property
    def client(self) -> Client:
        """The sexton client under this store (after ``setup``)."""
        if self._client is None:
            raise SextonError("setup() has not been called", code="INVALID_PARAMS")
        return self._client

    # -- buffers ----------------------------------------------------------

    def register_buffer(self, buffer_ptr: Pointer, size: int) -> int:
        """Record ``[buffer_ptr, buffer_ptr + size)`` as memory the ``*_from``
        and ``*_into`` methods may use. sexton moves bytes over TCP from
        this process, so nothing is pinned; the registry only lets those
        methods refuse an address outside every registered buffer. A
        buffer object (numpy array, bytearray, writable memoryview) may be
        given instead of its address."""
        addr = _address(buffer_ptr)
        if addr is None or size <= 0:
            return ErrorCode.INVALID_PARAMS
        with self._lock:
            if addr not in self._buffers:
                bisect.insort(self._starts, addr)
            self._buffers[addr] = max(size, self._buffers.get(addr, 0))
        return ErrorCode.OK

    def unregister_buffer(self, buffer_ptr: Pointer) -> int:
        addr = _address(buffer_ptr)
        with self._lock:
            if addr is None or addr not in self._buffers:
                return ErrorCode.INVALID_PARAMS
            del self._buffers[addr]
            self._starts.remove(addr)
        return ErrorCode.OK

    def _view(self, ptr: Pointer, size: int) -> memoryview:
        """A memoryview of ``size`` bytes at ``ptr`` (an address inside a
        registered buffer, or a buffer object) without copying."""
        if size < 0:
            raise SextonError(f"negative size {size}", code="INVALID_PARAMS")
        if not isinstance(ptr, int):
            view = byte_view(ptr)
            if len(view) < size:
                raise SextonError(f"buffer of {len(view)} bytes for {size}", code="INVALID_PARAMS")
            return view[:size]
        with self._lock:
            # The registered buffers starting at or below ptr, nearest first:
            # one of them must hold the whole range (they may nest).
            i = bisect.bisect_right(self._starts, ptr)
            ok = any(ptr + size <= a + self._buffers[a] for a in reversed(self._starts[:i]))
        if not ok:
            raise SextonError(f"address {ptr:#x}+{size} is not inside a registered buffer: call register_buffer first",
                              code="INVALID_PARAMS")
        if size == 0:
            return memoryview(b"")
        return memoryview((ctypes.c_char * size).from_address(ptr)).cast("B")

    # -- puts -------------------------------------------------------------

    def put(self, key: str, value: Any, config: Optional[ReplicateConfig] = None) -> int:
        """Insert-if-absent: 0 when the key holds a value on return (this
        one, or the one already there)."""
        return self._guard(lambda: self._insert(key, byte_view(value), config))

    def put_from(self, key: str, buffer_ptr: Pointer, size: int, config: Optional[ReplicateConfig] = None) -> int:
        return self._guard(lambda: self._insert(key, self._view(buffer_ptr, size), config))

    def put_parts(self, key: str, *parts: Any, config: Optional[ReplicateConfig] = None) -> int:
        return self._guard(lambda: self._insert(key, Regions(parts), config))

    def put_batch(self, keys: Sequence[str], values: Sequence[Any], config: Optional[ReplicateConfig] = None) -> int:
        """0 when every key holds a value, else the first failed key's code."""
        if len(keys) != len(values):
            return ErrorCode.INVALID_PARAMS
        codes = self._insert_many(keys, [byte_view(v) for v in values], config)
        return next((c for c in codes if c != 0), 0)

    def batch_put_from(self, keys: Sequence[str], buffer_ptrs: Sequence[Pointer], sizes: Sequence[int],
                       config: Optional[ReplicateConfig] = None) -> List[int]:
        """Insert-if-absent of many keys, each from its registered buffer:
        one BatchPutStart, pipelined holder writes, one BatchPutEnd. A code
        per key."""
        if not (len(keys) == len(buffer_ptrs) == len(sizes)):
            return [ErrorCode.INVALID_PARAMS] * len(keys)
        return self._put_many(keys, [lambda p=p, n=n: self._view(p, n) for p, n in zip(buffer_ptrs, sizes)], config)

    def batch_put_from_multi_buffers(self, keys: Sequence[str], all_buffer_ptrs: Sequence[Sequence[Pointer]],
                                     all_sizes: Sequence[Sequence[int]],
                                     config: Optional[ReplicateConfig] = None) -> List[int]:
        """Insert-if-absent of many keys, each the concatenation of several
        registered regions (vLLM's per-layer blocks). A key's regions are
        sent one after the other from where they are (:class:`Regions`),
        never joined into one buffer."""
        if not (len(keys) == len(all_buffer_ptrs) == len(all_sizes)):
            return [ErrorCode.INVALID_PARAMS] * len(keys)
        return self._put_many(keys, [lambda p=p, n=n: self._regions(p, n) for p, n in zip(all_buffer_ptrs, all_sizes)],
                              config)

    def _put_many(self, keys: Sequence[str], sources: Sequence[Callable[[], Any]],
                  config: Optional[ReplicateConfig]) -> List[int]:
        """Insert-if-absent of key i from what sources[i]() names (a
        SextonError there is that key's code): a code per key."""
        codes = [0] * len(keys)
        views: List[Any] = []
        idx: List[int] = []
        for i, src in enumerate(sources):
            try:
                views.append(src())
                idx.append(i)
            except SextonError as e:
                codes[i] = error_code(e)
        for i, c in zip(idx, self._insert_many([keys[i] for i in idx], views, config)):
            codes[i] = c
        return codes

    def batch_get_into_multi_buffers(self, keys: Sequence[str], all_buffer_ptrs: Sequence[Sequence[Pointer]],
                                     all_sizes: Sequence[Sequence[int]], prefer_same_node: bool = True) -> List[int]:
        """Each key's value spread over several registered regions in order:
        bytes read per key, or a negative code. The holder's answer is
        received straight into the regions, one after the other
        (:class:`Regions`); a value larger than the regions together is
        ``INVALID_PARAMS``. Reads prefer this host's replicas whatever
        ``prefer_same_node`` says."""
        if not (len(keys) == len(all_buffer_ptrs) == len(all_sizes)):
            return [ErrorCode.INVALID_PARAMS] * len(keys)
        return self._get_many(keys, [lambda p=p, n=n: self._regions(p, n) for p, n in zip(all_buffer_ptrs, all_sizes)])

    def _get_many(self, keys: Sequence[str], targets: Sequence[Callable[[], Any]]) -> List[int]:
        """Key i received into what targets[i]() names (a SextonError there
        is that key's code), all in one batch: bytes read per key, or a
        negative code."""
        out = [0] * len(keys)
        views: List[Any] = []
        idx: List[int] = []
        for i, dst in enumerate(targets):
            try:
                views.append(dst())
                idx.append(i)
            except SextonError as e:
                out[i] = error_code(e)
        if not idx:
            return out
        try:
            res = self.client.batch_get_into([keys[i] for i in idx], views)
        except SextonError as e:
            for i in idx:
                out[i] = error_code(e)
            return out
        for i, r in zip(idx, res):
            out[i] = r.size if r.ok else error_code(r.error)  # type: ignore[arg-type]
        return out

    def _regions(self, ptrs: Sequence[Pointer], sizes: Sequence[int]) -> Regions:
        """The registered regions ptrs[k]+sizes[k] as one value."""
        if len(ptrs) != len(sizes):
            raise SextonError(f"{len(ptrs)} buffers and {len(sizes)} sizes", code="INVALID_PARAMS")
        return Regions([self._view(p, n) for p, n in zip(ptrs, sizes)])

    def upsert(self, key: str, value: Any, config: Optional[ReplicateConfig] = None) -> int:
        """Insert or replace (sexton's ``put``)."""
        return self._guard(lambda: self._replace(key, byte_view(value), config))

    def upsert_from(self, key: str, buffer_ptr: Pointer, size: int, config: Optional[ReplicateConfig] = None) -> int:
        return self._guard(lambda: self._replace(key, self._view(buffer_ptr, size), config))

    def upsert_parts(self, key: str, *parts: Any, config: Optional[ReplicateConfig] = None) -> int:
        return self._guard(lambda: self._replace(key, Regions(parts), config))

    def upsert_batch(self, keys: Sequence[str], values: Sequence[Any], config: Optional[ReplicateConfig] = None) -> int:
        if len(keys) != len(values):
            return ErrorCode.INVALID_PARAMS
        codes = [self.upsert(k, v, config) for k, v in zip(keys, values)]
        return next((c for c in codes if c != 0), 0)

    def batch_upsert_from(self, keys: Sequence[str], buffer_ptrs: Sequence[Pointer], sizes: Sequence[int],
                          config: Optional[ReplicateConfig] = None) -> List[int]:
        if not (len(keys) == len(buffer_ptrs) == len(sizes)):
            return [ErrorCode.INVALID_PARAMS] * len(keys)
        return [self.upsert_from(k, p, n, config) for k, p, n in zip(keys, buffer_ptrs, sizes)]

    def _insert(self, key: str, data: Union[memoryview, Regions], config: Optional[ReplicateConfig]) -> int:
        """Insert-if-absent of one key, racing well: a put refused because
        the key exists, or because another put of it is in flight, or whose
        outcome is unknown, becomes a wait for the key to exist; a key that
        stays absent with no put in flight is put again."""
        c = self.client
        deadline = time.monotonic() + self.put_wait
        pause = 0.002
        while True:
            try:
                c.put_from(key, data, replicas=_replicas(config), if_absent=True, prefer=self._prefer(config))
                return ErrorCode.OK
            except (ObjectAlreadyExists, OutcomeUnknown) as e:
                last: SextonError = e
            if c.is_exist(key):
                return ErrorCode.OK
            if time.monotonic() + pause > deadline:
                # Another put of the key was still in flight after put_wait:
                # this call stored nothing and no value is readable yet.
                return error_code(last)
            time.sleep(pause)
            pause = min(2 * pause, 0.05)

    def _insert_many(self, keys: Sequence[str], views: Sequence[memoryview],
                     config: Optional[ReplicateConfig]) -> List[int]:
        if not keys:
            return []
        if len(set(keys)) != len(keys):
            # A batch puts a key once; repeated keys go one by one (the
            # first value wins, as a sequence of puts would have it).
            return [self._guard(lambda k=k, v=v: self._insert(k, v, config)) for k, v in zip(keys, views)]
        try:
            results = self.client.put_batch(list(zip(keys, views)), replicas=_replicas(config), if_absent=True,
                                            prefer=self._prefer(config))
        except OutcomeUnknown:
            # Some of the batch may be stored: settle each key on its own.
            return [self._guard(lambda k=k, v=v: self._insert(k, v, config)) for k, v in zip(keys, views)]
        except SextonError as e:
            return [error_code(e)] * len(keys)
        codes = [0 if r.ok else error_code(r.error) for r in results]  # type: ignore[arg-type]
        retry = [i for i, r in enumerate(results) if isinstance(r.error, (ObjectAlreadyExists, OutcomeUnknown))]
        if retry:
            try:
                exists = self.client.batch_is_exist([keys[i] for i in retry])
            except SextonError:
                exists = [False] * len(retry)
            for i, ex in zip(retry, exists):
                codes[i] = 0 if ex else self._guard(lambda i=i: self._insert(keys[i], views[i], config))
        return codes

    def _replace(self, key: str, data: Union[memoryview, Regions], config: Optional[ReplicateConfig]) -> int:
        """sexton's put; while another put of the key is in flight, wait for
        it to end (bounded by put_wait) and put again."""
        c = self.client
        deadline = time.monotonic() + self.put_wait
        pause = 0.002
        while True:
            try:
                c.put_from(key, data, replicas=_replicas(config), prefer=self._prefer(config))
                return ErrorCode.OK
            except ObjectAlreadyExists as e:
                if time.monotonic() + pause > deadline:
                    return error_code(e)
            time.sleep(pause)
            pause = min(2 * pause, 0.05)

    # -- gets -------------------------------------------------------------

    def get(self, key: str) -> bytes:
        """The value, or ``b""`` when the key is absent or the read failed."""
        try:
            return self.client.get(key)
        except SextonError:
            return b""

    def get_batch(self, keys: Sequence[str]) -> List[bytes]:
        try:
            res = self.client.get_batch(keys)
        except SextonError:
            return [b""] * len(keys)
        return [bytes(r.value) if r.ok else b"" for r in res]  # type: ignore[arg-type]

    def get_buffer(self, key: str) -> Optional[BufferHandle]:
        """The value in a :class:`BufferHandle` (received into its memory,
        no copy), or None when absent or the read failed."""
        return self.batch_get_buffer([key])[0]

    def batch_get_buffer(self, keys: Sequence[str]) -> List[Optional[BufferHandle]]:
        try:
            res = self.client.get_batch(keys)
        except SextonError:
            return [None] * len(keys)
        return [BufferHandle(r.value, r.size) if r.ok else None for r in res]  # type: ignore[arg-type]

    def get_into(self, key: str, buffer_ptr: Pointer, size: int) -> int:
        """Read the value into the registered buffer: its length, or a
        negative code (``OBJECT_NOT_FOUND``, ``INVALID_PARAMS`` for a buffer
        smaller than the value, ...)."""
        return self.batch_get_into([key], [buffer_ptr], [size])[0]

    def batch_get_into(self, keys: Sequence[str], buffer_ptrs: Sequence[Pointer], sizes: Sequence[int]) -> List[int]:
        """Each key into its registered buffer, received in place (one
        BatchGet, pipelined holder reads): bytes read per key, or a
        negative code."""
        if not (len(keys) == len(buffer_ptrs) == len(sizes)):
            return [ErrorCode.INVALID_PARAMS] * len(keys)
        return self._get_many(keys, [lambda p=p, n=n: self._view(p, n) for p, n in zip(buffer_ptrs, sizes)])

    def get_into_ranges(self, buffer_ptrs: Sequence[Pointer], all_keys: Sequence[Sequence[str]],
                        all_dst_offsets: Sequence[Sequence[Sequence[int]]],
                        all_src_offsets: Sequence[Sequence[Sequence[int]]],
                        all_sizes: Sequence[Sequence[Sequence[int]]]) -> List[List[List[int]]]:
        """Byte ranges of objects into registered buffers, Mooncake's
        buffer-major shape: ``results[i][j][k]`` is the bytes read for
        fragment k of key j into buffer i, or a negative code. sexton reads
        whole objects: each key of each buffer is one holder read (all in
        one BatchGet, pipelined), received straight into its fragments'
        places in the buffer, the bytes no fragment wants into a scratch
        buffer of at most 64 KiB. A key whose fragments overlap in the
        object is received whole and its fragments copied from it."""
        n = len(buffer_ptrs)
        if not (len(all_keys) == len(all_dst_offsets) == len(all_src_offsets) == len(all_sizes) == n):
            return [[[ErrorCode.INVALID_PARAMS] * len(all_sizes[i][j]) for j in range(len(all_keys[i]))]
                    for i in range(min(len(all_keys), len(all_sizes)))]
        out: List[List[List[int]]] = []
        reads: List[_RangeRead] = []
        for i in range(n):
            keys, dsts, srcs, lens = all_keys[i], all_dst_offsets[i], all_src_offsets[i], all_sizes[i]
            if not (len(keys) == len(dsts) == len(srcs) == len(lens)):
                out.append([[ErrorCode.INVALID_PARAMS] * len(lens[j]) if j < len(lens) else [] for j in range(len(keys))])
                continue
            extent = max((d + m for j in range(len(keys)) for d, m in zip(dsts[j], lens[j])), default=0)
            try:
                dest: Optional[memoryview] = self._view(buffer_ptrs[i], extent)
            except SextonError:
                dest = None
            per_key: List[List[int]] = []
            for j, k in enumerate(keys):
                if not (len(dsts[j]) == len(srcs[j]) == len(lens[j])):
                    per_key.append([ErrorCode.INVALID_PARAMS] * len(lens[j]))
                    continue
                rr = _RangeRead(k, dest, list(zip(dsts[j], srcs[j], lens[j])), self._scratch)
                per_key.append(rr.codes)
                if rr.wanted:
                    reads.append(rr)
            out.append(per_key)
        if reads:
            try:
                res: List[Any] = self.client.batch_get_into([r.key for r in reads], [r.layout for r in reads])
                fail = ErrorCode.INTERNAL_ERROR
            except SextonError as e:
                res, fail = [None] * len(reads), error_code(e)
            for rr, r in zip(reads, res):
                rr.finish(r, fail)
        return out

    # -- queries ----------------------------------------------------------

    def is_exist(self, key: str) -> int:
        """1 when the key holds a value, 0 when not, -1 on error."""
        try:
            return 1 if self.client.is_exist(key) else 0
        except SextonError:
            return -1

    def batch_is_exist(self, keys: Sequence[str]) -> List[int]:
        try:
            return [1 if e else 0 for e in self.client.batch_is_exist(keys)]
        except SextonError:
            return [-1] * len(keys)

    def get_size(self, key: str) -> int:
        """The value's size in bytes, or a negative code (``OBJECT_NOT_FOUND``)."""
        try:
            return self.client.get_size(key)
        except SextonError as e:
            return error_code(e)

    # -- removes ----------------------------------------------------------

    def remove(self, key: str, force: bool = False) -> int:
        """Remove the key: 0, ``OBJECT_NOT_FOUND``, ... sexton's reads never
        block a remove, so ``force`` changes nothing. A remove whose outcome
        is unknown returns 0 when the key turns out absent."""
        try:
            self.client.remove(key)
            return ErrorCode.OK
        except OutcomeUnknown as e:
            return ErrorCode.OK if self.is_exist(key) == 0 else error_code(e)
        except SextonError as e:
            return error_code(e)

    def batch_remove(self, keys: Sequence[str], force: bool = False) -> List[int]:
        try:
            return [0 if r.ok else error_code(r.error) for r in self.client.batch_remove(keys)]  # type: ignore[arg-type]
        except OutcomeUnknown as e:
            # Settled by looking, as remove does: 0 for each key now absent.
            try:
                exists = self.client.batch_is_exist(keys)
            except SextonError:
                return [error_code(e)] * len(keys)
            return [error_code(e) if ex else ErrorCode.OK for ex in exists]
        except SextonError as e:
            return [error_code(e)] * len(keys)

    def remove_by_regex(self, regex: str, force: bool = False) -> int:
        """Remove every key matching ``regex`` (``re.search``, as Mooncake's
        std::regex_search); the number removed, or a negative code. sexton
        has no server-side regex: this lists every key (a List per 1000
        keys) and removes the matches with BatchRemove, so it costs a scan
        of the whole key space. Keys put meanwhile may survive."""
        try:
            pat = re.compile(regex)
        except re.error:
            return ErrorCode.INVALID_PARAMS
        return self._remove_matching(lambda k: pat.search(k) is not None)

    def remove_all(self, force: bool = False) -> int:
        """Remove every object; the number removed, or -1 on error."""
        n = self._remove_matching(lambda k: True)
        return n if n >= 0 else -1

    def _remove_matching(self, match: Any) -> int:
        removed = 0
        try:
            cursor = ""
            while True:
                objs, cursor = self.client.list("", cursor, 1000)
                keys = [o.key for o in objs if match(o.key)]
                if keys:
                    for r in self.client.batch_remove(keys):
                        if r.ok:
                            removed += 1
                        elif not isinstance(r.error, ObjectNotFound):
                            return error_code(r.error)  # type: ignore[arg-type]
                if not cursor:
                    return removed
        except SextonError as e:
            return error_code(e)

    # -- helpers ----------------------------------------------------------

    def _prefer(self, config: Optional[ReplicateConfig]) -> List[str]:
        """PutStart's ``prefer`` for a config: the preferred segments as
        given, and this store's hostname with ``prefer_alloc_in_same_node``
        (the masters match a segment id or holder endpoint exactly, else the
        host of "host:port")."""
        if config is None:
            return []
        named = [config.preferred_segment] + list(config.preferred_segments or [])
        if config.prefer_alloc_in_same_node:
            named.append(self.get_hostname())
        out: List[str] = []
        for n in named:
            if n and n not in out:
                out.append(n)
        return out[:16]

    def _guard(self, fn: Any) -> int:
        try:
            return int(fn())
        except SextonError as e:
            return error_code(e)
        except (TypeError, ValueError):
            return ErrorCode.INVALID_PARAMS  # a value that is not a contiguous bytes-like object


#: The most memory a get_into_ranges read takes for bytes no fragment wants.
_SCRATCH = 64 << 10


class _RangeRead:
    """One key's fragments ``(dst, src, size)`` into one buffer, for
    ``get_into_ranges``. ``codes`` holds each fragment's result, 0 until
    read; ``layout`` gives, once the object's size is known, where the
    holder's answer is received: the fragments' places in ``dest`` in
    object order, the bytes between and after them into ``scratch``."""

    def __init__(self, key: str, dest: Optional[memoryview], frags: List[Any], scratch: memoryview) -> None:
        self.key, self.dest, self.frags, self.scratch = key, dest, frags, scratch
        self.codes = [ErrorCode.INVALID_PARAMS if dest is None or d < 0 or s < 0 or m < 0 else 0 for d, s, m in frags]
        self.wanted = [f for f, c in zip(frags, self.codes) if c == 0]
        self.whole: Optional[bytearray] = None
        self.size = 0

    def layout(self, obj: ObjectInfo) -> Any:
        self.size = size = obj.size
        assert self.dest is not None
        live = sorted((s, d, m) for d, s, m in self.wanted if s + m <= size and m > 0)
        if any(a[0] + a[2] > b[0] for a, b in zip(live, live[1:])):
            self.whole = bytearray(size)  # overlapping fragments: received whole, copied from
            return self.whole
        self.whole = None
        parts: List[memoryview] = []
        at = 0
        for s, d, m in live + [(size, 0, 0)]:
            while at < s:  # bytes no fragment wants
                skip = min(s - at, len(self.scratch))
                parts.append(self.scratch[:skip])
                at += skip
            if m:
                parts.append(self.dest[d:d + m])
                at = s + m
        return Regions(parts)

    def finish(self, r: Any, fail: int) -> None:
        """Set each fragment's result from the read's result r (None: the
        batch failed with fail)."""
        for k, (d, s, m) in enumerate(self.frags):
            if self.codes[k] != 0:
                continue
            if r is None:
                self.codes[k] = fail
            elif not r.ok:
                self.codes[k] = error_code(r.error)
            elif s + m > self.size:
                self.codes[k] = ErrorCode.INVALID_PARAMS
            else:
                if self.whole is not None and self.dest is not None:
                    self.dest[d:d + m] = memoryview(self.whole)[s:s + m]
                self.codes[k] = m


def _replicas(config: Optional[ReplicateConfig]) -> int:
    return max(int(config.replica_num), 1) if config is not None else 1


def _parse_masters(addr: str) -> Optional[List[str]]:
    """sexton master addresses from Mooncake's ``master_server_addr``: one
    ``host:port``, or several separated by commas or semicolons, optionally
    prefixed ``sexton://``. None for an address that names something else
    (``etcd://`` is Mooncake's HA form: etcd endpoints, not masters)."""
    addr = addr.strip()
    if addr.startswith("sexton://"):
        addr = addr[len("sexton://"):]
    if "://" in addr or not addr:
        return None
    out = [a.strip() for a in re.split(r"[,;]", addr) if a.strip()]
    return out or None


def _host_of(name: str) -> str:
    """The host of "host", "host:port" or "[v6]:port"."""
    if name.startswith("[") and "]" in name:
        return name[1:name.index("]")]
    return name.rsplit(":", 1)[0] if name.count(":") == 1 else name


def _local_hosts(hostname: str) -> frozenset:
    """The names and addresses of this host, as holder endpoints may name
    it: the host part of ``hostname`` and, best effort, its addresses."""
    host = _host_of(hostname)
    names = {host}
    try:
        names.update(info[4][0] for info in socket.getaddrinfo(host, None))
    except OSError:
        pass
    if names & {"localhost", "127.0.0.1", "::1"}:
        names.update({"localhost", "127.0.0.1", "::1"})
    return frozenset(n for n in names if n)


def _address(buf: Pointer) -> Optional[int]:
    """The address of a buffer given as an int, or as an object with the
    buffer protocol (numpy arrays, bytearrays, writable memoryviews)."""
    if isinstance(buf, int):
        return buf if buf > 0 else None
    try:
        data = getattr(getattr(buf, "ctypes", None), "data", None)  # numpy
        if isinstance(data, int):
            return data
        view = byte_view(buf)
        if view.readonly or not len(view):
            return None
        return ctypes.addressof(ctypes.c_char.from_buffer(view))
    except (TypeError, ValueError, SextonError):
        return None

