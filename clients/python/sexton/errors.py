"""Exceptions: one class per sexton error code (docs/PROTOCOL.md §6).

Every error a server answers, and every failure of the client itself, is a
:class:`SextonError` carrying the wire ``code``. :class:`OutcomeUnknown` is
deliberately *not* a subclass of :class:`Unavailable` or of any other
failure: it means the request may have executed, and code that treats
"failed" as "not done" must not catch it by accident.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Type


class SextonError(Exception):
    """Base of every sexton error. ``code`` is the wire code string."""

    code: str = "INTERNAL"

    def __init__(self, message: str = "", *, code: Optional[str] = None, leader: str = "") -> None:
        if code is not None:
            self.code = code
        self.message = message
        #: On NOT_LEADER: the leader's RPC address, when the master knows it.
        self.leader = leader
        super().__init__(f"{self.code}: {message}" if message else self.code)


class ObjectNotFound(SextonError):
    """No such key (or incarnation, or pending put)."""

    code = "OBJECT_NOT_FOUND"


class ObjectAlreadyExists(SextonError):
    """A put of the key is in progress, or ``if_absent`` and the key exists."""

    code = "OBJECT_ALREADY_EXISTS"


class InvalidKey(SextonError):
    """Empty, longer than 4096 bytes, or containing NUL."""

    code = "INVALID_KEY"


class InvalidParams(SextonError):
    """A malformed request."""

    code = "INVALID_PARAMS"


class IncarnationMismatch(SextonError):
    """A conditional request named an incarnation the key does not hold."""

    code = "INCARNATION_MISMATCH"


class IncarnationStale(SextonError):
    """A PutCommit's incarnation can no longer commit (its block expired,
    or the key holds an incarnation at or above it); nothing changed. The
    client's put asks for a new grant and writes again."""

    code = "INCARNATION_STALE"


class NoSpace(SextonError):
    """No placement possible (no pool with enough live holders with room)."""

    code = "NO_SPACE"


class RegistryFull(SextonError):
    """Too many deletes pending on the masters; retry later."""

    code = "LOCAL_DELETE_REGISTRY_FULL"


class GrantRefused(SextonError):
    """A holder refused a write grant."""

    code = "GRANT_REFUSED"


class NotLeader(SextonError):
    """The master asked is not the leader (the client follows it itself)."""

    code = "NOT_LEADER"


class Unavailable(SextonError):
    """Nothing could serve the request; it was **not** executed."""

    code = "UNAVAILABLE"


class Timeout(SextonError):
    """A deadline passed (for a read; a mutation reports OutcomeUnknown)."""

    code = "TIMEOUT"


class OutcomeUnknown(SextonError):
    """The request may or may not have executed. Never "not done".

    Raised for a mutation when the client gave up after an attempt that may
    have run (sent without an answer, or answered OUTCOME_UNKNOWN/TIMEOUT).
    """

    code = "OUTCOME_UNKNOWN"


class Unauthenticated(SextonError):
    """The cluster token was refused (or required and not given)."""

    code = "UNAUTHENTICATED"


class PermissionDenied(SextonError):
    """The caller's role (its certificate's or its token's) may not call
    the method; nothing was done."""

    code = "PERMISSION_DENIED"


class FrameTooLarge(SextonError):
    """A request or response over a frame limit."""

    code = "FRAME_TOO_LARGE"


class Corrupt(SextonError):
    """A malformed frame, or bytes that failed a check."""

    code = "CORRUPT"


class Internal(SextonError):
    """Anything else."""

    code = "INTERNAL"


_BY_CODE: Dict[str, Type[SextonError]] = {
    cls.code: cls
    for cls in (
        ObjectNotFound,
        ObjectAlreadyExists,
        InvalidKey,
        InvalidParams,
        IncarnationMismatch,
        IncarnationStale,
        NoSpace,
        RegistryFull,
        GrantRefused,
        NotLeader,
        Unavailable,
        Timeout,
        OutcomeUnknown,
        Unauthenticated,
        PermissionDenied,
        FrameTooLarge,
        Corrupt,
        Internal,
    )
}


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
