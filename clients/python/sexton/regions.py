"""Several memory regions taken as one value, for scatter and gather.

A KV block that an engine keeps as one slice per layer is one object in
sexton. :class:`Regions` lets that value travel without being joined
into one buffer: a put sends the regions one after the other after the
frame's head (gather), and a read receives the holder's answer into them
in order with ``recv_into`` (scatter). The client's put and read paths
take a ``Regions`` wherever they take a buffer.
"""

from __future__ import annotations

from typing import Any, List, Sequence

__all__ = ["Regions"]


def _flat(buf: Any) -> memoryview:
    mv = memoryview(buf)
    if not mv.contiguous:
        raise ValueError("a region's buffer is not contiguous")
    return mv if mv.format == "B" and mv.ndim == 1 else mv.cast("B")


class Regions:
    """The concatenation of ``parts`` (bytes-like objects), without copying
    them. ``len`` is the total; a slice (step 1) is the ``Regions`` of that
    byte range; assigning to a slice copies into the regions it covers.
    Regions may alias each other: a read into aliased regions keeps the
    last bytes received there (used to discard bytes into one scratch
    buffer)."""

    __slots__ = ("parts", "readonly", "_len")

    def __init__(self, parts: Sequence[Any]) -> None:
        self.parts: List[memoryview] = [v for v in (_flat(p) for p in parts) if len(v)]
        self._len = sum(len(v) for v in self.parts)
        self.readonly = any(v.readonly for v in self.parts)

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, s: slice) -> "Regions":
        if not isinstance(s, slice):
            raise TypeError("Regions take slices only")
        start, stop, step = s.indices(self._len)
        if step != 1:
            raise ValueError("Regions take slices of step 1 only")
        out: List[memoryview] = []
        at = 0
        for v in self.parts:
            lo, hi = max(start - at, 0), min(stop - at, len(v))
            if lo < hi:
                out.append(v[lo:hi])
            at += len(v)
            if at >= stop:
                break
        return Regions(out)

    def __setitem__(self, s: slice, data: Any) -> None:
        dst = self[s]
        src = _flat(data)
        if len(src) != len(dst):
            raise ValueError(f"{len(src)} bytes assigned to {len(dst)}")
        at = 0
        for v in dst.parts:
            v[:] = src[at:at + len(v)]
            at += len(v)

    def tobytes(self) -> bytes:
        """A copy of the bytes, in order."""
        return b"".join(v.tobytes() for v in self.parts)
