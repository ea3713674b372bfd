"""The values the client returns, decoded from the wire maps of
docs/PROTOCOL.md §4."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from .errors import SextonError, from_wire

#: Replica kinds.
LOCAL_DISK, DFS = 1, 2


@functools.total_ordering
@dataclass(frozen=True)
class Incarnation:
    """One life of a key: ``high`` the cluster id, ``low`` the Raft index
    of its PutStart. Ordered by ``low`` first, then ``high``, like the Go
    client."""

    high: int
    low: int

    def __lt__(self, other: "Incarnation") -> bool:
        if not isinstance(other, Incarnation):
            return NotImplemented
        return (self.low, self.high) < (other.low, other.high)

    @classmethod
    def from_wire(cls, m: Any) -> "Incarnation":
        m = m or {}
        return cls(high=int(m.get("h", 0)), low=int(m.get("l", 0)))

    @classmethod
    def parse(cls, s: str) -> "Incarnation":
        """Read ``HIGH:LOW`` as printed by ``str()`` and the Go CLI."""
        hi, sep, lo = s.partition(":")
        if not sep or len(hi) != 16:
            raise ValueError(f"incarnation {s!r} is not HIGH:LOW (16 hex digits, a colon, a decimal index)")
        return cls(high=int(hi, 16), low=int(lo, 10))

    def wire(self) -> Dict[str, int]:
        return {"h": self.high, "l": self.low}

    def is_zero(self) -> bool:
        return self.high == 0 and self.low == 0

    def __str__(self) -> str:
        return f"{self.high:016x}:{self.low}"


@dataclass
class Replica:
    """Where one copy is: a holder's segment (kind LOCAL_DISK) or a DFS file."""

    kind: int
    segment: str = ""
    pool: str = ""
    endpoint: str = ""
    #: The write grant, only in a put's placement; passed to the holder as is.
    grant: Optional[Dict[str, Any]] = None
    dfs: Optional[Dict[str, Any]] = None

    @classmethod
    def from_wire(cls, m: Dict[str, Any]) -> "Replica":
        return cls(kind=int(m.get("kind", 0)), segment=m.get("seg") or "", pool=m.get("pool") or "",
                   endpoint=m.get("ep") or "", grant=m.get("grant"), dfs=m.get("dfs"))


@dataclass
class ObjectInfo:
    """The newest complete incarnation of a key."""

    key: str
    size: int
    incarnation: Incarnation
    tenant: str = "default"
    #: Leader's clock at the PutStart, unix nanoseconds.
    created: int = 0
    replicas: List[Replica] = field(default_factory=list)

    @classmethod
    def from_wire(cls, m: Dict[str, Any]) -> "ObjectInfo":
        return cls(key=m.get("key") or "", size=int(m.get("size", 0)), incarnation=Incarnation.from_wire(m.get("inc")),
                   tenant=m.get("tenant") or "default", created=int(m.get("created", 0)),
                   replicas=[Replica.from_wire(r) for r in (m.get("replicas") or [])])


@dataclass
class Stat:
    """An object, the put in progress on its key if any, and how many of its
    delete tasks are still pending."""

    object: ObjectInfo
    pending_put: Optional[Incarnation]
    pending_deletes: int

    @classmethod
    def from_wire(cls, m: Dict[str, Any]) -> "Stat":
        p = m.get("pending")
        return cls(object=ObjectInfo.from_wire(m.get("object") or {}),
                   pending_put=Incarnation.from_wire(p) if p else None,
                   pending_deletes=int(m.get("pending_deletes", 0)))


class _Outcome:
    """An item's answer in a batch: ``ok`` when it carries no ``error``."""

    error: Optional[SextonError]

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class KeyResult(_Outcome):
    """One key's answer in a batch: ``error`` is None on success."""

    key: str
    error: Optional[SextonError] = None

    @classmethod
    def from_wire(cls, m: Dict[str, Any]) -> "KeyResult":
        err = m.get("err")
        return cls(key=m.get("key") or "", error=from_wire(err) if err else None)


@dataclass
class PutResult(_Outcome):
    """One item's answer in ``put_batch``: the new incarnation, or the
    error the item failed with."""

    key: str
    incarnation: Optional[Incarnation] = None
    error: Optional[SextonError] = None


@dataclass
class GetResult(_Outcome):
    """One key's answer in ``get_batch`` / ``batch_get_into``: ``value`` (a
    ``bytearray``, or for ``batch_get_into`` a memoryview of the caller's
    buffer), its ``size`` and the object's ``info``; or the ``error``
    (:class:`ObjectNotFound` for a missing key)."""

    key: str
    value: Any = None
    size: int = 0
    info: Optional[ObjectInfo] = None
    error: Optional[SextonError] = None


@dataclass
class DeleteTask:
    """A pending deletion of one incarnation's bytes on one segment."""

    id: int
    segment: str
    key: str
    incarnation: Incarnation
    tenant: str = ""
    created: int = 0

    @classmethod
    def from_wire(cls, m: Dict[str, Any]) -> "DeleteTask":
        return cls(id=int(m.get("id", 0)), segment=m.get("seg") or "", key=m.get("k") or "",
                   incarnation=Incarnation.from_wire(m.get("i")), tenant=m.get("t") or "", created=int(m.get("c", 0)))
