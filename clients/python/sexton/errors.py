"""Exceptions: one class per sexton error code (docs/PROTOCOL.md §6).

Every error a server answers, and every failure of the client itself, is a
:class:`SextonError` carrying the wire ``code``. :class:`OutcomeUnknown` is
deliberately *not* a subclass of :class:`Unavailable` or of any other
failure: it means the request may have executed, and code that treats
"failed" as "not done" must not catch it by accident.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Type


#: The class of each wire code: every subclass of SextonError that names
#: its code (``class NoSpace(SextonError, code="NO_SPACE")``).
_BY_CODE: Dict[str, Type[SextonError]] = {}


class SextonError(Exception):
    """Base of every sexton error. ``code`` is the wire code string."""

    code: str = "INTERNAL"

    def __init_subclass__(cls, *, code: Optional[str] = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if code is not None:
            if code in _BY_CODE:
                raise TypeError(f"{cls.__name__}: wire code {code} is already {_BY_CODE[code].__name__}'s")
            cls.code = code
            _BY_CODE[code] = cls

    def __init__(self, message: str = "", *, code: Optional[str] = None, leader: str = "") -> None:
        if code is not None:
            self.code = code
        self.message = message
        #: On NOT_LEADER: the leader's RPC address, when the master knows it.
        self.leader = leader
        super().__init__(f"{self.code}: {message}" if message else self.code)


class ObjectNotFound(SextonError, code="OBJECT_NOT_FOUND"):
    """No such key (or incarnation, or pending put)."""


class ObjectAlreadyExists(SextonError, code="OBJECT_ALREADY_EXISTS"):
    """A put of the key is in progress, or ``if_absent`` and the key exists."""


class InvalidKey(SextonError, code="INVALID_KEY"):
    """Empty, longer than 4096 bytes, or containing NUL."""


class InvalidParams(SextonError, code="INVALID_PARAMS"):
    """A malformed request."""


class IncarnationMismatch(SextonError, code="INCARNATION_MISMATCH"):
    """A conditional request named an incarnation the key does not hold."""


class IncarnationStale(SextonError, code="INCARNATION_STALE"):
    """A PutCommit's incarnation can no longer commit (its block expired,
    or the key holds an incarnation at or above it); nothing changed. The
    client's put asks for a new grant and writes again."""


class NoSpace(SextonError, code="NO_SPACE"):
    """No placement possible (no pool with enough live holders with room)."""


class RegistryFull(SextonError, code="LOCAL_DELETE_REGISTRY_FULL"):
    """Too many deletes pending on the masters; retry later."""


class GrantRefused(SextonError, code="GRANT_REFUSED"):
    """A holder refused a write grant."""


class NotLeader(SextonError, code="NOT_LEADER"):
    """The master asked is not the leader (the client follows it itself)."""


class Unavailable(SextonError, code="UNAVAILABLE"):
    """Nothing could serve the request; it was **not** executed."""


class Timeout(SextonError, code="TIMEOUT"):
    """A deadline passed (for a read; a mutation reports OutcomeUnknown)."""


class OutcomeUnknown(SextonError, code="OUTCOME_UNKNOWN"):
    """The request may or may not have executed. Never "not done".

    Raised for a mutation when the client gave up after an attempt that may
    have run (sent without an answer, or answered OUTCOME_UNKNOWN/TIMEOUT).
    """


class Unauthenticated(SextonError, code="UNAUTHENTICATED"):
    """The cluster token was refused (or required and not given)."""


class PermissionDenied(SextonError, code="PERMISSION_DENIED"):
    """The caller's role (its certificate's or its token's) may not call
    the method; nothing was done."""


class FrameTooLarge(SextonError, code="FRAME_TOO_LARGE"):
    """A request or response over a frame limit."""


class Corrupt(SextonError, code="CORRUPT"):
    """A malformed frame, or bytes that failed a check."""


class Internal(SextonError, code="INTERNAL"):
    """Anything else."""


def error_for(code: str, message: str = "", leader: str = "") -> SextonError:
    """The exception for a wire code; unknown codes give a plain SextonError."""
    cls = _BY_CODE.get(code)
    if cls is None:
        return SextonError(message, code=code or "INTERNAL", leader=leader)
    return cls(message, leader=leader)


def from_wire(err: Any) -> SextonError:
    """Decode an ``{"code", "msg", "leader"}`` map from the wire."""
    if not isinstance(err, dict) or not isinstance(err.get("code"), str) or not err["code"]:
        return Corrupt(f"malformed error field: {err!r}")
    msg = err.get("msg") or ""
    leader = err.get("leader") or ""
    return error_for(err["code"], msg if isinstance(msg, str) else repr(msg), leader if isinstance(leader, str) else "")
