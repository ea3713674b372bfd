"""The sexton client: leader following, sessions, and the data path.

Written from docs/PROTOCOL.md (§7 sessions, §8 leader following, §9 the
data path). Method names follow Mooncake's ``MooncakeDistributedStore``
where the meaning is the same (see the package docstring for the list).
"""

from __future__ import annotations

import concurrent.futures
import os
import random
import threading
import time
import uuid
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, TypeVar, Union

from .errors import (
    Corrupt,
    IncarnationStale,
    InvalidParams,
    NoSpace,
    ObjectNotFound,
    OutcomeUnknown,
    SextonError,
    Timeout,
    Unavailable,
    error_for,
    from_wire,
)
from .types import LOCAL_DISK, DeleteTask, GetResult, Incarnation, KeyResult, ObjectInfo, PutResult, Replica, Stat
from .wire import (
    ANSWERED,
    DATA_MAX_FRAME,
    DEFAULT_MAX_FRAME,
    NOT_SENT,
    PipelinedCall,
    Pool,
    byte_view,
    outcome_of,
    readable,
    tls_context,
)

#: At most this many keys per BatchRemove, BatchGet or Exist request.
MAX_BATCH_KEYS = 4096
#: At most this many objects per BatchPutStart or BatchPutEnd request.
MAX_BATCH_PUT_ITEMS = 256
#: At most this many calls pipelined on one holder connection at a time.
PIPELINE_DEPTH = 32
#: At most this many holders' pipelined writes run at once besides the
#: calling thread's (the threads that run them are kept for the next
#: batch; reads need none).
MAX_LANES = 16

Buffer = Union[bytes, bytearray, memoryview]

_T = TypeVar("_T")


class _Sessions:
    """Session numbering (docs/PROTOCOL.md §7): a random client id, sequence
    numbers from 1, and the floor = the oldest request still in flight."""

    def __init__(self, client_id: str) -> None:
        self.client_id = client_id
        self._next = 1
        self._outstanding: set = set()
        self._lock = threading.Lock()

    def begin(self) -> Dict[str, Any]:
        with self._lock:
            seq = self._next
            self._next += 1
            self._outstanding.add(seq)
            floor = min(self._outstanding)
            return {"client": self.client_id, "seq": seq, "floor": floor}

    def end(self, seq: int) -> None:
        with self._lock:
            self._outstanding.discard(seq)


class _Backoff:
    """Capped exponential backoff with equal jitter."""

    def __init__(self, lo: float, hi: float) -> None:
        self._step, self._max = lo, hi

    def next(self) -> float:
        half = self._step / 2
        d = half + random.uniform(0, half)
        self._step = min(2 * self._step, self._max)
        return d


def _with_context(err: SextonError, prefix: str) -> SextonError:
    """The same kind of error, its message prefixed (the original chained)."""
    new = error_for(err.code, f"{prefix}: {err.message}" if err.message else prefix, err.leader)
    new.__cause__ = err
    if hasattr(err, "outcome"):
        new.outcome = err.outcome  # type: ignore[attr-defined]
    return new


# Write failures after which a put is placed again elsewhere.
#: How often one put is granted and written again after INCARNATION_STALE
#: (each time another put of the key committed first, or the writes
#: outlived the grant's block), as in the Go client.
MAX_STALE_COMMITS = 8


class _NoPutGrant(Exception):
    """The master does not know PutGrant (a build older than it)."""


_REPLACEABLE = {"UNAVAILABLE", "TIMEOUT", "NO_SPACE", "GRANT_REFUSED", "INTERNAL"}


class Client:
    """A connection to a sexton cluster.

    ``masters`` is every master's RPC address (a list, or a comma-separated
    string like ``SEXTON_MASTERS``). ``cluster_token`` (or its older name
    ``token``) is the token this caller proves (a client token, or the
    cluster token when the cluster has no role tokens), when the cluster
    requires one.
    ``tls_ca``, ``tls_cert`` and ``tls_key`` name PEM files as the CLI's
    ``--tls-ca``, ``--tls-cert`` and ``--tls-key`` do: with ``tls_ca`` every
    connection, to masters and to holders, uses TLS and verifies the
    server's certificate against that CA and the host dialed; with
    ``tls_cert`` and ``tls_key`` as well the client presents that
    certificate. Each of these four left at None takes its value from the
    environment like the CLI's flag (``SEXTON_CLUSTER_TOKEN``,
    ``SEXTON_TLS_CA``, ``SEXTON_TLS_CERT``, ``SEXTON_TLS_KEY``; unset or
    empty means none); a value given here, "" included, wins over it.
    ``timeout`` bounds one operation against the masters (all retries
    included), ``attempt_timeout`` one attempt, ``connect_timeout`` the
    connect and handshakes of one connection.

    The client is safe to use from several threads. Close it (or use it as
    a context manager) to close its connections.
    """

    def __init__(
        self,
        masters: Union[str, Sequence[str]],
        *,
        cluster_token: Optional[str] = None,
        token: Optional[str] = None,
        tls_ca: Optional[str] = None,
        tls_cert: Optional[str] = None,
        tls_key: Optional[str] = None,
        timeout: float = 15.0,
        attempt_timeout: float = 5.0,
        connect_timeout: float = 5.0,
        backoff_min: float = 0.05,
        backoff_max: float = 0.25,
        put_attempts: int = 3,
        read_attempts: int = 4,
        placement_wait: float = 3.0,
        client_id: Optional[str] = None,
    ) -> None:
        if isinstance(masters, str):
            masters = masters.split(",")
        addrs: List[str] = []
        for a in masters:
            a = a.strip()
            if a and a not in addrs:
                addrs.append(a)
        if not addrs:
            raise InvalidParams("no master addresses")
        self.masters = addrs
        self.timeout = timeout
        self.attempt_timeout = attempt_timeout
        self.backoff_min, self.backoff_max = backoff_min, max(backoff_max, backoff_min)
        self.put_attempts = max(put_attempts, 1)
        self.read_attempts = max(read_attempts, 1)
        self.placement_wait = placement_wait
        self._sessions = _Sessions(client_id or str(uuid.uuid4()))
        self._leader = addrs[0]
        self._lock = threading.Lock()
        if cluster_token is not None and token is not None and cluster_token != token:
            raise InvalidParams("cluster_token and token are two names of one setting; give one")
        tok = _setting(cluster_token if cluster_token is not None else token, "SEXTON_CLUSTER_TOKEN")
        self._tls = tls_context(_setting(tls_ca, "SEXTON_TLS_CA"), _setting(tls_cert, "SEXTON_TLS_CERT"),
                               _setting(tls_key, "SEXTON_TLS_KEY"))
        self._master_pool = Pool(token=tok, max_frame=DEFAULT_MAX_FRAME, connect_timeout=connect_timeout, tls=self._tls)
        self._holder_pool = Pool(token=tok, max_frame=DATA_MAX_FRAME, connect_timeout=connect_timeout, tls=self._tls)
        self._closed = False
        #: The threads that run other holders' pipelined writes (_pipelined),
        #: made on first use, and the process that made them (a forked child
        #: makes its own: threads do not survive a fork).
        self._lanes: Optional[concurrent.futures.ThreadPoolExecutor] = None
        self._lanes_pid = 0
        #: Set once a master refused PutGrant as an unknown method.
        self._no_put_grant = False
        #: Hosts (names or addresses as the masters give holder endpoints,
        #: or whole endpoints) whose replicas are read first: a replica on the client's own
        #: machine is the cheapest to read.
        self.prefer_hosts: frozenset = frozenset()

    # -- lifecycle ------------------------------------------------------

    @property
    def client_id(self) -> str:
        """The session client id (random per Client)."""
        return self._sessions.client_id

    @property
    def leader(self) -> str:
        """The address last known to be the leader."""
        with self._lock:
            return self._leader

    def close(self) -> None:
        self._closed = True
        self._master_pool.close()
        self._holder_pool.close()
        with self._lock:
            lanes, self._lanes = self._lanes, None
        if lanes is not None and self._lanes_pid == os.getpid():
            lanes.shutdown(wait=False)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- leader following (docs/PROTOCOL.md §8) -------------------------

    def call(self, method: str, body: Dict[str, Any], *, mutation: bool = False, timeout: Optional[float] = None) -> Any:
        """Call ``method`` on the leader, following it; return the response
        body (a dict, keys as in docs/PROTOCOL.md §5). The low-level way to any
        master method. ``mutation`` marks a request whose body carries a
        session (``"sess"``, which the caller provides): it is also repeated
        after OUTCOME_UNKNOWN, and giving up after an attempt that may have
        run raises :class:`OutcomeUnknown`, never :class:`Unavailable`."""
        start = time.monotonic()
        give_up = start + (self.timeout if timeout is None else timeout)
        backoff = _Backoff(self.backoff_min, self.backoff_max)
        target = self.leader
        pos = self.masters.index(target) if target in self.masters else -1
        in_round = 0
        tried: Dict[str, SextonError] = {}
        count = 0
        may_have_run = False
        while True:
            if self._closed:
                raise Unavailable("client closed")
            deadline = min(time.monotonic() + self.attempt_timeout, give_up)
            try:
                resp = self._master_pool.call(target, method, body, deadline)
            except SextonError as e:
                outcome = outcome_of(e)
                retry, hint = _should_retry(e, outcome, mutation)
                if not retry:
                    raise
                tried[target] = e
                count += 1
                if _may_have_run(e, outcome):
                    may_have_run = True
                if hint and hint != target:
                    target = hint
                    with self._lock:
                        self._leader = hint
                    if hint in self.masters:
                        pos = self.masters.index(hint)
                else:
                    pos = (pos + 1) % len(self.masters)
                    target = self.masters[pos]
                in_round += 1
                if time.monotonic() >= give_up:
                    raise self._give_up(method, mutation, may_have_run, start, count, tried) from None
                if in_round >= len(self.masters):
                    in_round = 0
                    time.sleep(max(min(backoff.next(), give_up - time.monotonic()), 0))
                    if time.monotonic() >= give_up:
                        raise self._give_up(method, mutation, may_have_run, start, count, tried) from None
                continue
            with self._lock:
                self._leader = target
            return resp

    def _give_up(self, method: str, mutation: bool, may_have_run: bool, start: float, count: int,
                 tried: Dict[str, SextonError]) -> SextonError:
        where = "; ".join(f"{a}: {e}" for a, e in tried.items())
        msg = f"{method}: gave up after {time.monotonic() - start:.3f}s and {count} attempts; tried {where}"
        if mutation and may_have_run:
            return OutcomeUnknown(msg + "; an attempt may have executed, the outcome is unknown")
        return Unavailable(msg)

    def _mutate(self, method: str, body: Dict[str, Any]) -> Any:
        """A mutation under a new session number; retries repeat it."""
        sess = self._sessions.begin()
        try:
            body["sess"] = sess
            return self.call(method, body, mutation=True)
        finally:
            self._sessions.end(sess["seq"])

    # -- put (docs/PROTOCOL.md §9) --------------------------------------

    def put(self, key: str, value: Union[bytes, bytearray, memoryview], *, replicas: int = 1, tenant: str = "",
            if_absent: bool = False, pool: str = "", prefer: Sequence[str] = ()) -> Incarnation:
        """Store ``value`` under ``key`` on ``replicas`` holders and return the
        new incarnation. When it returns, the put is acknowledged: every
        later get (on any leader) sees this value or a newer one.

        Raises :class:`ObjectAlreadyExists` (``if_absent`` and the key exists,
        or another put of the key is in progress), :class:`NoSpace`,
        :class:`OutcomeUnknown` (it may or may not have completed), ...
        """
        return self._put(key, bytes(value), replicas=replicas, tenant=tenant, if_absent=if_absent, pool=pool,
                         prefer=prefer)

    def put_from(self, key: str, buffer: Buffer, *, replicas: int = 1, tenant: str = "",
                 if_absent: bool = False, pool: str = "", prefer: Sequence[str] = ()) -> Incarnation:
        """``put`` sending the value from the caller's buffer (any contiguous
        bytes-like object): the request frame's head is written, then the
        buffer itself, so the value is never copied into a frame. Do not
        change the buffer until this returns."""
        return self._put(key, byte_view(buffer), replicas=replicas, tenant=tenant, if_absent=if_absent, pool=pool,
                         prefer=prefer)

    def _put(self, key: str, data: Union[bytes, memoryview], *, replicas: int, tenant: str, if_absent: bool,
             pool: str, prefer: Sequence[str] = ()) -> Incarnation:
        # One Raft commit (PutGrant, the holder writes, PutCommit), as the Go
        # client puts; PutStart and PutEnd against a master without PutGrant.
        if not self._no_put_grant:
            try:
                return self._put_one_commit(key, data, replicas, tenant, if_absent, pool, prefer)
            except _NoPutGrant:
                self._no_put_grant = True
        return self._put_two_commits(key, data, replicas, tenant, if_absent, pool, prefer)

    def _put_one_commit(self, key: str, data: Union[bytes, memoryview], replicas: int, tenant: str,
                        if_absent: bool, pool: str, prefer: Sequence[str]) -> Incarnation:
        """A put through PutGrant and PutCommit. A grant that is not committed
        needs no revoke: the holders reclaim its bytes once its block expired.
        A commit refused with INCARNATION_STALE (the key moved past the
        incarnation, or its block expired during the writes) is granted and
        written again, at most MAX_STALE_COMMITS times."""
        stale = 0

        def grant(req: Dict[str, Any]) -> Tuple[Incarnation, List[Any]]:
            try:
                # Not a mutation: a grant commits nothing, a repeat is another grant.
                ans = self.call("PutGrant", req)
            except InvalidParams as e:
                if "unknown method" in e.message:
                    raise _NoPutGrant() from None
                raise
            return Incarnation.from_wire(ans.get("inc")), ans.get("replicas") or []

        def commit(inc: Incarnation, granted: List[Any]) -> bool:
            nonlocal stale
            # The replicas as granted: each carries the grant the leader checks.
            req = _with_set({"key": key, "size": len(data), "inc": inc.wire(), "replicas": granted},
                            tenant=tenant, if_absent=if_absent)
            try:
                self._mutate("PutCommit", req)
            except IncarnationStale as e:
                if stale < MAX_STALE_COMMITS:
                    stale += 1
                    return False
                raise _with_context(e, f"PutCommit {inc}") from None
            except SextonError as e:
                raise _with_context(e, f"PutCommit {inc}") from None
            return True

        return self._put_placed(key, data, _put_request(key, len(data), replicas, tenant, if_absent, pool, prefer, []),
                                tenant, "PutGrant", grant, commit)

    def _put_two_commits(self, key: str, data: Union[bytes, memoryview], replicas: int, tenant: str,
                         if_absent: bool, pool: str, prefer: Sequence[str]) -> Incarnation:
        """A put through PutStart and PutEnd; a put whose writes or PutEnd
        failed is revoked, since it would block the key until the master
        discards it."""

        def start(req: Dict[str, Any]) -> Tuple[Incarnation, List[Any]]:
            # A refused PutStart did nothing, so every retry takes a new seq.
            ans = self._mutate("PutStart", req)
            return Incarnation.from_wire(ans.get("inc")), ans.get("replicas") or []

        def end(inc: Incarnation, _: List[Any]) -> bool:
            try:
                self._mutate("PutEnd", {"key": key, "inc": inc.wire()})
            except OutcomeUnknown as e:
                raise _with_context(e, f"PutEnd {inc}") from None
            except SextonError as e:
                self._revoke(key, inc)
                raise _with_context(e, f"PutEnd {inc}") from None
            return True

        return self._put_placed(key, data, _put_request(key, len(data), replicas, tenant, if_absent, pool, prefer, []),
                                tenant, "PutStart", start, end, abandon=lambda inc: self._revoke(key, inc))

    def _put_placed(self, key: str, data: Union[bytes, memoryview], req: Dict[str, Any], tenant: str, method: str,
                    place: Callable[[Dict[str, Any]], Tuple[Incarnation, List[Any]]],
                    finish: Callable[[Incarnation, List[Any]], bool],
                    abandon: Optional[Callable[[Incarnation], None]] = None) -> Incarnation:
        """The placement loop both put protocols share. place (PutGrant or
        PutStart) places the replicas; a refused placement did nothing. The
        replicas are written; a write refused by a replaceable holder is
        abandoned and placed again without that holder. finish makes the put
        visible, or returns False to place it again."""
        exclude: List[str] = []
        last_write_err: Optional[SextonError] = None
        placement_deadline = time.monotonic() + self.placement_wait
        attempt = 0
        while attempt < self.put_attempts:
            if exclude:
                req["exclude"] = list(exclude)
            else:
                req.pop("exclude", None)
            try:
                inc, granted = place(req)
            except SextonError as e:
                attempt = self._placement_refused(e, method, exclude, attempt, placement_deadline, last_write_err)
                continue
            placed = [Replica.from_wire(r) for r in granted]
            failed_seg, err = self._write_replicas(key, tenant, inc, placed, data)
            if err is not None:
                if abandon is not None:
                    abandon(inc)
                if failed_seg is None or err.code not in _REPLACEABLE:
                    raise err
                last_write_err = err
                exclude.append(failed_seg)
                attempt += 1
                continue
            if finish(inc, granted):
                return inc
        raise Unavailable(f"put {key}: every placement failed ({self.put_attempts} attempts): {last_write_err}")

    def _placement_refused(self, e: SextonError, method: str, exclude: List[str], attempt: int,
                           placement_deadline: float, last_write_err: Optional[SextonError]) -> int:
        """After a refused PutGrant or PutStart (it did nothing): the attempt
        to go on with, or raise."""
        if isinstance(e, NoSpace):
            # Nowhere else to go after a failed write: try the excluded
            # holders again, as the Go client does.
            if exclude and attempt + 1 < self.put_attempts:
                exclude.clear()
                time.sleep(0.05)
                return attempt + 1
            # Right after a failover the new leader has not yet heard the
            # holders' heartbeats (docs/PROTOCOL.md §5): wait a moment.
            if time.monotonic() < placement_deadline:
                time.sleep(0.1)
                return attempt
        if last_write_err is not None:
            raise _with_context(e, f"{method} after a failed write ({last_write_err})") from last_write_err
        raise e

    def _write_replicas(self, key: str, tenant: str, inc: Incarnation, placed: List[Replica],
                        data: Union[bytes, memoryview]) -> Tuple[Optional[str], Optional[SextonError]]:
        if not placed:
            return None, Corrupt("PutStart placed no replicas")
        for r in placed:
            if r.kind != LOCAL_DISK:
                return None, InvalidParams("the master placed a DFS replica; this client has no DFS data path")
            if not r.endpoint:
                return r.segment, Unavailable(f"segment {r.segment} has no mounted holder")
            req = _write_request(key, tenant, inc, r)
            # The frame's head (the grant before the value), then the value
            # from its own buffer: never copied into a msgpack frame.
            view = byte_view(data)
            try:
                err, _ = self._holder_pool.pipeline(r.endpoint, [PipelinedCall("HolderWrite", req, value=view)],
                                                    time.monotonic() + self.timeout)[0]
                if err is not None:
                    raise err
            except SextonError as e:
                return r.segment, _with_context(e, f"write replica on segment {r.segment} ({r.endpoint})")
        return None, None

    def _revoke(self, key: str, inc: Incarnation) -> None:
        try:
            self._mutate("PutRevoke", {"key": key, "inc": inc.wire()})
        except SextonError:
            pass  # best effort: the master discards a put that never ends

    # -- batches (docs/PROTOCOL.md §9) ---------------------------------

    def put_batch(self, items: Sequence[Tuple[str, Buffer]], *, replicas: int = 1, tenant: str = "",
                  if_absent: bool = False, pool: str = "", prefer: Sequence[str] = ()) -> List[PutResult]:
        """Put many ``(key, value)`` pairs: one BatchPutStart (a Raft entry)
        per 256 items, the holder writes pipelined on one connection per
        holder (each value sent from its own buffer), one BatchPutEnd.
        Returns one :class:`PutResult` per item, in order. An item a holder
        failed is revoked and, when worth placing elsewhere, put again on
        its own. Keys must be distinct. Raises only when a whole request
        failed; the items of earlier requests stand."""
        seen: Dict[str, int] = {}
        for i, (k, _) in enumerate(items):
            if k in seen:
                raise InvalidParams(f"put_batch: key {k!r} is both item {seen[k]} and item {i}; a batch puts each key once")
            seen[k] = i
        out: List[PutResult] = []
        for lo in range(0, len(items), MAX_BATCH_PUT_ITEMS):
            chunk = [(k, byte_view(v)) for k, v in items[lo:lo + MAX_BATCH_PUT_ITEMS]]
            out.extend(self._put_chunk(chunk, replicas, tenant, if_absent, pool, prefer))
        return out

    def _put_chunk(self, items: List[Tuple[str, memoryview]], replicas: int, tenant: str, if_absent: bool,
                   pool: str, prefer: Sequence[str] = ()) -> List[PutResult]:
        reqs: List[Dict[str, Any]] = []
        for k, v in items:
            reqs.append(_put_request(k, len(v), replicas, tenant, if_absent, pool, prefer, []))
        resp = self._mutate("BatchPutStart", {"items": reqs})
        starts = resp.get("results") or []
        if len(starts) != len(items):
            raise Corrupt(f"BatchPutStart answered {len(starts)} results for {len(items)} items")
        out = [PutResult(key=k) for k, _ in items]
        incs: List[Optional[Incarnation]] = [None] * len(items)
        # The writes, grouped by holder: (item, segment, call).
        by_ep: Dict[str, List[Tuple[int, str, PipelinedCall]]] = {}
        failed: Dict[int, Tuple[Optional[str], SextonError]] = {}
        for i, st in enumerate(starts):
            if st.get("err"):
                out[i].error = from_wire(st["err"])
                continue
            inc = Incarnation.from_wire(st.get("inc"))
            incs[i] = inc
            placed = [Replica.from_wire(r) for r in (st.get("replicas") or [])]
            if not placed:
                failed[i] = (None, Corrupt("BatchPutStart placed no replicas"))
            for r in placed:
                if r.kind != LOCAL_DISK:
                    failed[i] = (None, InvalidParams("the master placed a DFS replica; this client has no DFS data path"))
                elif not r.endpoint:
                    failed.setdefault(i, (r.segment, Unavailable(f"segment {r.segment} has no mounted holder")))
                else:
                    call = PipelinedCall("HolderWrite", _write_request(items[i][0], tenant, inc, r), value=items[i][1])
                    by_ep.setdefault(r.endpoint, []).append((i, r.segment, call))

        def written(ep: str, w: Tuple[int, str, PipelinedCall], err: Optional[SextonError], _: Any) -> None:
            i, seg, _ = w
            if err is not None and i not in failed:
                failed[i] = (seg, _with_context(err, f"write replica on segment {seg} ({ep})"))

        self._pipelined(by_ep, lambda w: w[2], written, skip=lambda w: w[0] in failed)
        ends: List[int] = []
        redo: List[int] = []
        for i in range(len(items)):
            inc = incs[i]
            if inc is None:
                continue
            if i in failed:
                self._revoke(items[i][0], inc)
                seg, err = failed[i]
                if seg is not None and err.code in _REPLACEABLE and self.put_attempts > 1:
                    redo.append(i)
                else:
                    out[i].error = err
                continue
            ends.append(i)
        if ends:
            resp = self._mutate("BatchPutEnd", {"items": [{"key": items[i][0], "inc": incs[i].wire()} for i in ends]})  # type: ignore[union-attr]
            results = resp.get("results") or []
            if len(results) != len(ends):
                raise Corrupt(f"BatchPutEnd answered {len(results)} results for {len(ends)} items")
            for i, r in zip(ends, results):
                kr = KeyResult.from_wire(r)
                if kr.error is not None:
                    # Refused: the put is still pending and would hold the key.
                    self._revoke(items[i][0], incs[i])  # type: ignore[arg-type]
                    out[i].error = _with_context(kr.error, f"PutEnd {incs[i]}")
                else:
                    out[i].incarnation = incs[i]
        for i in redo:
            try:
                out[i].incarnation = self._put(items[i][0], items[i][1], replicas=replicas, tenant=tenant,
                                               if_absent=if_absent, pool=pool, prefer=prefer)
            except SextonError as e:
                out[i].error = e
        return out

    def get_batch(self, keys: Sequence[str]) -> List[GetResult]:
        """Read many keys: one BatchGet (every key's replicas and read leases
        at once) per 4096 keys, then the holder reads pipelined on one
        connection per holder, each value received into its own
        ``bytearray``. One :class:`GetResult` per key, in order; a missing
        key's error is :class:`ObjectNotFound`."""
        return self._get_batch(keys, None)

    def get_into(self, key: str, buffer: Union[bytearray, memoryview]) -> int:
        """Read the value of ``key`` into the caller's writable buffer and
        return its length: the holder's answer is received into it with
        ``recv_into``, no intermediate ``bytes``. A value larger than the
        buffer raises :class:`InvalidParams` (reading nothing)."""
        r = self._get_batch([key], [buffer])[0]
        if r.error is not None:
            raise r.error
        return r.size

    def batch_get_into(self, keys: Sequence[str], buffers: Sequence[Union[bytearray, memoryview]]) -> List[GetResult]:
        """``get_into`` of many keys, key i into ``buffers[i]``, as one
        BatchGet and pipelined holder reads. Each result's ``value`` is a
        memoryview of its buffer's first ``size`` bytes. A buffer may be a
        :class:`~sexton.regions.Regions` (the value received into several
        regions in order), or a function of the key's
        :class:`ObjectInfo` that returns its buffer, for a caller that
        lays the buffer out once it knows the object's size."""
        if len(buffers) != len(keys):
            raise InvalidParams(f"batch_get_into: {len(buffers)} buffers for {len(keys)} keys; give one buffer per key")
        return self._get_batch(keys, buffers)

    def _get_batch(self, keys: Sequence[str], buffers: Optional[Sequence[Union[bytearray, memoryview]]]) -> List[GetResult]:
        out = [GetResult(key=k) for k in keys]
        views: Optional[List[memoryview]] = None
        if buffers is not None:
            views = []
            for b in buffers:
                v = b if callable(b) else byte_view(b)
                if getattr(v, "readonly", False):
                    raise InvalidParams("get_into needs a writable buffer (a bytearray or a writable memoryview)")
                views.append(v)
        for lo in range(0, len(keys), MAX_BATCH_KEYS):
            todo = list(range(lo, min(lo + MAX_BATCH_KEYS, len(keys))))
            last: Dict[int, SextonError] = {}
            for _ in range(self.read_attempts):
                if not todo:
                    break
                resp = self.call("BatchGet", {"keys": [keys[i] for i in todo]})
                results = resp.get("results") or []
                if len(results) != len(todo):
                    raise Corrupt(f"BatchGet answered {len(results)} results for {len(todo)} keys")
                reads: List[Tuple[int, ObjectInfo, memoryview]] = []
                for i, r in zip(todo, results):
                    if r.get("err"):
                        out[i].error, out[i].info = from_wire(r["err"]), None
                        continue
                    obj = self._prefer(ObjectInfo.from_wire(r.get("object") or {}))
                    out[i].info = obj
                    if views is not None:
                        view = byte_view(views[i](obj)) if callable(views[i]) else views[i]
                        if view.readonly:
                            out[i].error = InvalidParams(f"{obj.key}: the buffer given for it is read-only")
                            continue
                        if obj.size > len(view):
                            out[i].error = InvalidParams(f"{obj.key} ({obj.incarnation}) is {obj.size} bytes, its buffer "
                                                         f"{len(view)}: give a buffer of at least the object's size")
                            continue
                        reads.append((i, obj, view[:obj.size]))
                    else:
                        reads.append((i, obj, memoryview(bytearray(obj.size))))
                gone = self._read_many(reads, out, last)
                todo = gone
            for i in todo:
                out[i].error = Unavailable(f"get {keys[i]}: the replicas kept losing the incarnation the master named "
                                           f"({self.read_attempts} attempts): {last.get(i)}")
                out[i].info = None
        for r in out:
            if r.error is not None:
                r.value = None
            elif buffers is None and isinstance(r.value, memoryview):
                r.value = r.value.obj  # the bytearray received into
        return out

    def _read_many(self, reads: List[Tuple[int, ObjectInfo, memoryview]], out: List[GetResult],
                   last: Dict[int, SextonError]) -> List[int]:
        """Read each object into its view, trying its replicas in order, each
        round pipelined per holder. Returns the keys some replica said it
        no longer holds (worth asking the master again)."""
        errs: Dict[int, List[str]] = {i: [] for i, _, _ in reads}
        gone: set = set()
        pending = [(i, obj, view, 0) for i, obj, view in reads]
        while pending:
            by_ep: Dict[str, List[Tuple[int, ObjectInfo, memoryview, int]]] = {}
            nxt: List[Tuple[int, ObjectInfo, memoryview, int]] = []
            for i, obj, view, k in pending:
                if k >= len(obj.replicas):
                    out[i].error = last[i] = Unavailable(f"no replica of {obj.key} ({obj.incarnation}) could be read: {'; '.join(errs[i])}")
                    continue
                r = obj.replicas[k]
                if r.kind != LOCAL_DISK or not r.endpoint:
                    why = "DFS replica, but this client has no DFS data path" if r.kind != LOCAL_DISK else f"segment {r.segment}: no holder mounted"
                    errs[i].append(f"{r.endpoint or r.segment or 'DFS'}: {why}")
                    nxt.append((i, obj, view, k + 1))
                    continue
                by_ep.setdefault(r.endpoint, []).append((i, obj, view, k))

            def read(ep: str, rd: Tuple[int, ObjectInfo, memoryview, int], err: Optional[SextonError], body: Any) -> None:
                i, obj, view, k = rd
                if err is None:
                    err = _take_value(body, view, obj.size)
                if err is None:
                    out[i].value = view
                    out[i].size = obj.size
                    out[i].error = None
                    return
                if isinstance(err, ObjectNotFound):
                    gone.add(i)
                errs[i].append(f"{ep}: {err}")
                nxt.append((i, obj, view, k + 1))

            self._pipelined(by_ep, lambda rd: PipelinedCall("HolderRead", {"key": rd[1].key, "inc": rd[1].incarnation.wire()},
                                                            into=rd[2]), read)
            pending = nxt
        return sorted(i for i in gone if out[i].error is not None)

    def _pipelined(self, by_ep: Dict[str, List[_T]], call_of: Callable[[_T], PipelinedCall],
                   take: Callable[[str, _T, Optional[SextonError], Any], None],
                   skip: Optional[Callable[[_T], bool]] = None) -> None:
        """Each holder's calls pipelined on one connection, PIPELINE_DEPTH
        at a time, the holders concurrently: a batch takes as long as its
        slowest holder, not as their sum. Calls without a value (reads:
        small requests) are sent to every holder by the calling thread
        before any answer is read, and it reads each answer as its holder
        sends it (poll over the connections), so no holder's work waits
        for a thread to be scheduled. Calls with a value (puts) are sent
        and answered per holder, the first holder on the calling thread,
        the others on the client's lane threads, which stay for the next
        batch: a batch pays no thread start. take(endpoint, item, error,
        body) sees every answer; items skip names when their turn comes
        are not sent."""
        def send(ep: str, group: List[_T], calls: List[PipelinedCall]) -> Tuple[List[_T], Any, float]:
            """group's calls sent on one of ep's connections: (group, what the
            holder pool's send_calls gave or the SextonError it raised,
            deadline)."""
            deadline = time.monotonic() + self.timeout
            try:
                return group, self._holder_pool.send_calls(ep, calls, deadline), deadline
            except SextonError as e:
                return group, e, deadline

        def early(ep: str, items: List[_T]) -> Optional[Tuple[List[_T], Any, float]]:
            """ep's first group, sent now when none of its calls carries a
            value (a value is sent by its holder's own thread, so that one
            holder's large writes do not hold up another's)."""
            group = [x for x in items[:PIPELINE_DEPTH] if skip is None or not skip(x)]
            calls = [call_of(x) for x in group]
            if not group or any(c.value is not None for c in calls):
                return None
            return send(ep, group, calls)

        def one(ep: str, items: List[_T], first: Optional[Tuple[List[_T], Any, float]]) -> None:
            for lo in range(0, len(items), PIPELINE_DEPTH):
                if lo == 0 and first is not None:
                    group, started, deadline = first
                else:
                    group = [x for x in items[lo:lo + PIPELINE_DEPTH] if skip is None or not skip(x)]
                    if not group:
                        continue
                    group, started, deadline = send(ep, group, [call_of(x) for x in group])
                if isinstance(started, SextonError):
                    answers = [(started, None)] * len(group)
                else:
                    try:
                        answers = self._holder_pool.receive(started, deadline)
                    except SextonError as e:
                        answers = [(e, None)] * len(group)
                for x, (err, body) in zip(group, answers):
                    take(ep, x, err, body)

        eps = [(ep, items, early(ep, items)) for ep, items in by_ep.items()]
        if all(first is not None for _, _, first in eps):
            self._multiplexed(eps, call_of, take, skip, send)
            return
        raised: List[BaseException] = []

        def guarded(ep: str, items: List[_T], first: Optional[Tuple[List[_T], Any, float]]) -> None:
            try:
                one(ep, items, first)
            except BaseException as e:  # handed to the calling thread
                raised.append(e)

        pool = self._lane_pool()
        lanes = [pool.submit(guarded, *e) for e in eps[1:]] if pool is not None else []
        for e in eps[:1] if pool is not None else eps:
            guarded(*e)
        concurrent.futures.wait(lanes)
        if raised:
            raise raised[0]

    def _multiplexed(self, eps: List[Tuple[str, List[_T], Any]], call_of: Callable[[_T], PipelinedCall],
                     take: Callable[[str, _T, Optional[SextonError], Any], None],
                     skip: Optional[Callable[[_T], bool]], send: Callable[[str, List[_T], List[PipelinedCall]], Any]) -> None:
        """_pipelined's answers read on the calling thread from whichever
        holder has bytes to read, a frame at a time; eps holds each
        holder's items and its first group, already sent."""
        # Each started group: [endpoint, items, index of its first item,
        # group, (connection, Sent), deadline].
        live: List[List[Any]] = []

        def advance(ep: str, items: List[_T], lo: int, first: Any) -> None:
            """Start ep's group at lo (first: already sent), or the next one
            with anything to send; a group that could not be sent fails
            its items at once."""
            while lo < len(items):
                if first is not None:
                    group, started, deadline = first
                    first = None
                else:
                    group = [x for x in items[lo:lo + PIPELINE_DEPTH] if skip is None or not skip(x)]
                    if not group:
                        lo += PIPELINE_DEPTH
                        continue
                    group, started, deadline = send(ep, group, [call_of(x) for x in group])
                if not isinstance(started, SextonError):
                    live.append([ep, items, lo, group, started, deadline])
                    return
                for x in group:
                    take(ep, x, started, None)
                lo += PIPELINE_DEPTH

        for ep, items, first in eps:
            advance(ep, items, 0, first)
        while live:
            ready = set(readable([st[4][0] for st in live], min(st[5] for st in live) - time.monotonic()))
            # None ready: the earliest deadline has passed, which its read reports.
            for st in [st for st in live if st[4][0] in ready] or [min(live, key=lambda st: st[5])]:
                ep, items, lo, group, started, deadline = st
                try:
                    answers = self._holder_pool.receive_one(started, deadline)
                except SextonError as e:
                    answers = [(e, None)] * len(group)
                if answers is None:
                    continue
                live.remove(st)
                for x, (err, body) in zip(group, answers):
                    take(ep, x, err, body)
                advance(ep, items, lo + PIPELINE_DEPTH, None)

    def _lane_pool(self) -> Optional[concurrent.futures.ThreadPoolExecutor]:
        """The lane threads of this process, started as pipelines need them;
        None once the client is closed (its pipelines then fail at once,
        on the calling thread, with the holder pool's "client closed")."""
        with self._lock:
            if self._closed:
                return None
            if self._lanes is None or self._lanes_pid != os.getpid():
                self._lanes = concurrent.futures.ThreadPoolExecutor(max_workers=MAX_LANES,
                                                                    thread_name_prefix="sexton-lane")
                self._lanes_pid = os.getpid()
            return self._lanes

    # -- get -------------------------------------------------------------

    def get(self, key: str) -> bytes:
        """The value of ``key``; raises :class:`ObjectNotFound` if absent."""
        return self.get_with_info(key)[0]

    def get_with_info(self, key: str) -> Tuple[bytes, ObjectInfo]:
        """The value and the object's metadata (incarnation, size, replicas)."""
        last: Optional[SextonError] = None
        for _ in range(self.read_attempts):
            obj = self._prefer(ObjectInfo.from_wire(self.call("Get", {"key": key})["object"]))
            value, gone, err = self._read_replicas(obj)
            if err is None:
                assert value is not None
                return value, obj
            last = err
            if not gone:
                raise err
        raise Unavailable(f"get {key}: the replicas kept losing the incarnation the master named "
                          f"({self.read_attempts} attempts): {last}")

    def _prefer(self, obj: ObjectInfo) -> ObjectInfo:
        """Order the replicas so that those on a host in ``prefer_hosts`` are
        tried first (the order is otherwise the master's)."""
        if self.prefer_hosts and len(obj.replicas) > 1:
            obj.replicas.sort(key=lambda r: r.endpoint not in self.prefer_hosts
                              and _endpoint_host(r.endpoint) not in self.prefer_hosts)
        return obj

    def _read_replicas(self, obj: ObjectInfo) -> Tuple[Optional[bytes], bool, Optional[SextonError]]:
        errs: List[str] = []
        gone = False
        for r in obj.replicas:
            try:
                if r.kind != LOCAL_DISK:
                    raise InvalidParams("DFS replica, but this client has no DFS data path")
                if not r.endpoint:
                    raise Unavailable(f"segment {r.segment}: no holder mounted")
                resp = self._holder_pool.call(r.endpoint, "HolderRead", {"key": obj.key, "inc": obj.incarnation.wire()},
                                              time.monotonic() + self.timeout)
                value = resp.get("value") if isinstance(resp, dict) else None
                if not isinstance(value, bytes):
                    raise Corrupt("holder answered no value")
                if len(value) != obj.size:
                    raise Corrupt(f"replica returned {len(value)} bytes, object has {obj.size}")
                return value, False, None
            except SextonError as e:
                if isinstance(e, ObjectNotFound):
                    gone = True
                errs.append(f"{r.endpoint or r.segment or 'DFS'}: {e}")
        # A holder's OBJECT_NOT_FOUND never means the key is absent: only
        # the master says that. Report the read as failed.
        return None, gone, Unavailable(f"no replica of {obj.key} ({obj.incarnation}) could be read: {'; '.join(errs)}")

    def get_size(self, key: str) -> int:
        """The size in bytes of the object (Mooncake's ``get_size``)."""
        return self.stat(key).object.size

    # -- queries ---------------------------------------------------------

    def is_exist(self, key: str) -> bool:
        """Whether ``key`` has a complete incarnation."""
        return self.batch_is_exist([key])[0]

    def batch_is_exist(self, keys: Sequence[str]) -> List[bool]:
        """``is_exist`` of many keys, in order."""
        out: List[bool] = []
        for chunk in _chunks(keys, MAX_BATCH_KEYS):
            resp = self.call("Exist", {"keys": chunk})
            exists = resp.get("exists") or []
            if len(exists) != len(chunk):
                raise Corrupt(f"Exist answered {len(exists)} results for {len(chunk)} keys")
            out.extend(bool(x) for x in exists)
        return out

    def stat(self, key: str) -> Stat:
        """The object, a put in progress on the key, and its pending deletes."""
        return Stat.from_wire(self.call("Stat", {"key": key}))

    def list(self, prefix: str = "", cursor: str = "", limit: int = 0) -> Tuple[List[ObjectInfo], str]:
        """One page of objects with ``prefix`` after ``cursor``, in key
        order, and the cursor of the next page ("" on the last one)."""
        resp = self.call("List", _with_set({}, prefix=prefix, cursor=cursor, limit=limit))
        return [ObjectInfo.from_wire(o) for o in (resp.get("objects") or [])], resp.get("next") or ""

    def iter_objects(self, prefix: str = "", page: int = 1000) -> Iterator[ObjectInfo]:
        """Every object with ``prefix``, page by page."""
        cursor = ""
        while True:
            objs, cursor = self.list(prefix, cursor, page)
            yield from objs
            if not cursor:
                return

    def status(self) -> Dict[str, Any]:
        """The status map of the master that answers (docs/PROTOCOL.md §5)."""
        return dict(self.call("Status", {}))

    # -- removes ---------------------------------------------------------

    def remove(self, key: str, *, if_incarnation: Optional[Incarnation] = None) -> None:
        """Remove ``key`` (only ``if_incarnation``, when given). Raises
        :class:`ObjectNotFound`, :class:`IncarnationMismatch`,
        :class:`OutcomeUnknown`, ... When it returns, the remove is
        acknowledged: no later get returns the removed value."""
        req: Dict[str, Any] = {"key": key}
        if if_incarnation is not None:
            req["if_inc"] = if_incarnation.wire()
        self._mutate("Remove", req)

    def batch_remove(self, keys: Sequence[str], if_incarnations: Optional[Sequence[Optional[Incarnation]]] = None) -> List[KeyResult]:
        """Remove many keys; one :class:`KeyResult` per key, in order. A
        ``None`` condition is unconditional. Requests carry at most 4096
        keys; a failure of a later request raises, the earlier ones stand."""
        if if_incarnations is not None and len(if_incarnations) != len(keys):
            raise InvalidParams(f"{len(if_incarnations)} conditions for {len(keys)} keys")
        out: List[KeyResult] = []
        for start in range(0, len(keys), MAX_BATCH_KEYS):
            chunk = list(keys[start:start + MAX_BATCH_KEYS])
            req: Dict[str, Any] = {"keys": chunk}
            if if_incarnations is not None:
                req["if_incs"] = [(i or Incarnation(0, 0)).wire() for i in if_incarnations[start:start + MAX_BATCH_KEYS]]
            resp = self._mutate("BatchRemove", req)
            results = resp.get("results") or []
            if len(results) != len(chunk):
                raise Corrupt(f"BatchRemove answered {len(results)} results for {len(chunk)} keys")
            out.extend(KeyResult.from_wire(r) for r in results)
        return out

    def remove_all(self, prefix: str = "") -> int:
        """Remove every object (with ``prefix``); return how many this call
        removed. Not atomic: objects put meanwhile may survive."""
        removed = 0
        cursor = ""
        while True:
            objs, cursor = self.list(prefix, cursor, 1000)
            if objs:
                for r in self.batch_remove([o.key for o in objs]):
                    if r.ok:
                        removed += 1
                    elif not isinstance(r.error, ObjectNotFound):
                        raise r.error  # type: ignore[misc]
            if not cursor:
                return removed

    def pending_deletes(self, key: str) -> List[DeleteTask]:
        """The delete tasks of ``key`` the holders have not yet done."""
        resp = self.call("ListTasks", {"key": key})
        return [DeleteTask.from_wire(t) for t in (resp.get("tasks") or [])]

    def wait_deleted(self, key: str, incarnation: Optional[Incarnation] = None, timeout: float = 30.0) -> None:
        """Wait until the holders have deleted the removed bytes of ``key``
        (of ``incarnation`` only, when given). Raises :class:`Timeout`."""
        deadline = time.monotonic() + timeout
        pause = 0.005
        while True:
            pending = [t for t in self.pending_deletes(key) if incarnation is None or t.incarnation == incarnation]
            if not pending:
                return
            if time.monotonic() + pause > deadline:
                raise Timeout(f"{key}: {len(pending)} delete tasks still pending after {timeout}s")
            time.sleep(pause)
            pause = min(2 * pause, 0.25)


def connect(masters: Union[str, Sequence[str], None] = None, **kwargs: Any) -> Client:
    """A :class:`Client`; ``masters`` defaults to ``SEXTON_MASTERS`` (then
    127.0.0.1:7101), as the CLI's ``--masters`` does. Keyword arguments are
    the constructor's (``cluster_token``, ``tls_ca``, ``tls_cert``,
    ``tls_key``, ``timeout``, ...)."""
    if masters is None:
        masters = _setting(None, "SEXTON_MASTERS") or "127.0.0.1:7101"
    return Client(masters, **kwargs)


def _setting(value: Optional[str], env: str) -> str:
    """A setting given as an argument, else from the environment: the CLI's
    rule for its flags (an empty variable counts as unset)."""
    if value is not None:
        return value
    return os.environ.get(env, "")


def _should_retry(err: SextonError, outcome: str, mutation: bool) -> Tuple[bool, str]:
    if err.code == "NOT_LEADER":
        return True, err.leader
    if err.code in ("UNAVAILABLE", "TIMEOUT"):
        return True, ""
    if err.code == "OUTCOME_UNKNOWN":
        return mutation, ""  # only a sessioned repeat gets the first result
    return False, ""


def _may_have_run(err: SextonError, outcome: str) -> bool:
    if err.code == "OUTCOME_UNKNOWN":
        return True
    if outcome == ANSWERED:
        return err.code == "TIMEOUT"
    return outcome != NOT_SENT


def _endpoint_host(endpoint: str) -> str:
    """The host part of a ``host:port`` (or ``[v6]:port``) endpoint."""
    host, sep, port = endpoint.rpartition(":")
    if not sep or not port.isdigit():
        return endpoint
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def _chunks(seq: Sequence[_T], n: int) -> Iterator[List[_T]]:
    for i in range(0, len(seq), n):
        yield list(seq[i:i + n])


def _put_request(key: str, size: int, replicas: int, tenant: str, if_absent: bool, pool: str,
                 prefer: Sequence[str], exclude: List[str]) -> Dict[str, Any]:
    """A PutGrant or PutStart body."""
    return _with_set({"key": key, "size": size, "replicas": replicas}, tenant=tenant, if_absent=if_absent,
                     pool=pool, prefer=list(prefer), exclude=list(exclude))


def _with_set(req: Dict[str, Any], **fields: Any) -> Dict[str, Any]:
    """req with each of fields that is set (not empty, zero or False) added:
    the wire leaves unset fields out."""
    req.update((k, v) for k, v in fields.items() if v)
    return req


def _write_request(key: str, tenant: str, inc: Incarnation, r: Replica) -> Dict[str, Any]:
    """A HolderWrite body without its value."""
    req: Dict[str, Any] = {"key": key, "inc": inc.wire()}
    if r.grant is not None:
        req["grant"] = r.grant
    if tenant:
        req["tenant"] = tenant
    return req


def _take_value(body: Any, view: memoryview, size: int) -> Optional[SextonError]:
    """Check a HolderRead answer and leave its value in view: received there
    already, or (an answer decoded whole) copied."""
    if not isinstance(body, dict):
        return Corrupt("holder answered no value")
    if body.get("into"):
        n = body.get("value")
        return None if n == size else Corrupt(f"replica returned {n} bytes, object has {size}")
    value = body.get("value")
    if not isinstance(value, (bytes, bytearray)):
        return Corrupt("holder answered no value")
    if len(value) != size:
        return Corrupt(f"replica returned {len(value)} bytes, object has {size}")
    view[:size] = value
    return None
