"""The transport: frames, envelopes, TLS, the token handshake, one connection.

Written from docs/PROTOCOL.md §1-3. A :class:`Connection` carries one call
at a time, so a response is simply the next response frame, or one
pipelined group of calls (:meth:`Connection.pipeline`: every request
sent, then every answer read, matched by id), which the batch calls use
against a holder. A connection whose call failed in transit is closed,
never reused, so a late answer cannot be taken for the next call's.

Values travel without whole-frame copies where the wire allows: a request
whose body ends in ``"value"`` is sent as the envelope's bytes (the
msgpack bin header written by hand) followed by the caller's buffer, and
an answer ``{"value": bin}`` can be received straight into a caller's
buffer with ``recv_into``.

Every failure is a :class:`~sexton.errors.SextonError` with an ``outcome``
attribute saying how far the call got (:data:`NOT_SENT`,
:data:`SENT_NO_ANSWER`, :data:`ANSWERED`): that, not the code alone,
decides whether a mutation may have executed.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import select
import socket
import ssl
import struct
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import msgpack

from .errors import (
    Corrupt,
    FrameTooLarge,
    InvalidParams,
    SextonError,
    Timeout,
    Unauthenticated,
    Unavailable,
    error_for,
    from_wire,
)
from .regions import Regions

PROTOCOL_VERSION = 1
NONCE_LEN = 32
AUTH_DOMAIN = b"sexton transport auth v1\x00"
#: Every frame before the handshake completes is bounded by this.
HANDSHAKE_MAX_FRAME = 16 << 10
#: The default frame bound (masters' control plane).
DEFAULT_MAX_FRAME = 4 << 20
#: Frames we accept from holders: a bucket-sized value plus the envelope.
DATA_MAX_FRAME = (256 << 20) + (1 << 20)
_MIN_FRAME, _MAX_FRAME_LIMIT = HANDSHAKE_MAX_FRAME, 1 << 30

KIND_HELLO, KIND_AUTH, KIND_WELCOME, KIND_REQUEST, KIND_RESPONSE, KIND_GOAWAY = 1, 2, 3, 4, 5, 6

#: How far a failed call got.
NOT_SENT, SENT_NO_ANSWER, ANSWERED = "not_sent", "sent_no_answer", "answered"

# Keys are Go strings: arbitrary bytes. surrogateescape carries bytes that
# are not UTF-8 through a Python str and back unchanged.
_UNICODE_ERRORS = "surrogateescape"


def _fail(err: SextonError, outcome: str) -> SextonError:
    err.outcome = outcome  # type: ignore[attr-defined]
    return err


def outcome_of(err: BaseException) -> str:
    """How far the call that raised err got (ANSWERED for server errors)."""
    return getattr(err, "outcome", ANSWERED)


def clamp_max_frame(n: int) -> int:
    if n <= 0:
        return DEFAULT_MAX_FRAME
    return max(_MIN_FRAME, min(n, _MAX_FRAME_LIMIT))


def token_mac(token: str, nonce: bytes) -> bytes:
    """HMAC-SHA256(token, domain || nonce): the proof of the cluster token."""
    return hmac.new(token.encode(), AUTH_DOMAIN + nonce, hashlib.sha256).digest()


def pack(value: Any) -> bytes:
    return msgpack.packb(value, use_bin_type=True, unicode_errors=_UNICODE_ERRORS)


def encode_frame(kind: int, req_id: int, method: str, timeout_ms: int, err: Optional[Dict[str, Any]], body: Any) -> bytes:
    payload = pack([kind, req_id, method, timeout_ms, err, body])
    return struct.pack(">I", len(payload)) + payload


def bin_header(n: int) -> bytes:
    """The msgpack bin header of an n-byte value."""
    if n < 1 << 8:
        return b"\xc4" + bytes([n])
    if n < 1 << 16:
        return b"\xc5" + struct.pack(">H", n)
    return b"\xc6" + struct.pack(">I", n)


def _map_header(n: int) -> bytes:
    return bytes([0x80 | n]) if n < 16 else b"\xde" + struct.pack(">H", n)


def byte_view(value: Union[bytes, bytearray, memoryview]) -> memoryview:
    """A flat unsigned-byte view of a bytes-like value, without copying
    (a :class:`Regions` is returned as it is: sent and received part by
    part)."""
    if isinstance(value, Regions):
        return value  # type: ignore[return-value]
    mv = memoryview(value)
    if not mv.contiguous:
        raise error_for("INVALID_PARAMS", "the value's buffer is not contiguous")
    return mv if mv.format == "B" and mv.ndim == 1 else mv.cast("B")


def encode_request_parts(req_id: int, method: str, timeout_ms: int, body: Dict[str, Any],
                         value: memoryview) -> Tuple[bytes, memoryview]:
    """A request frame whose body is ``body`` plus ``"value": value``, as the
    bytes before the value and the value itself: sending the two is the
    frame, and the value is never copied into one."""
    fields = [(k, v) for k, v in body.items() if k != "value"]
    head = b"".join([b"\x96", pack(KIND_REQUEST), pack(req_id), pack(method), pack(timeout_ms), b"\xc0",
                     _map_header(len(fields) + 1)] + [pack(k) + pack(v) for k, v in fields] +
                    [pack("value"), bin_header(len(value))])
    return struct.pack(">I", len(head) + len(value)) + head, value


class _Short(Exception):
    """The prefix read ended inside the envelope."""


class _Other(Exception):
    """Not the shape received in place; decode the whole frame."""


class _Scan:
    """Reads the msgpack envelope of an answer from its first bytes: just
    the types the Go server writes there."""

    def __init__(self, b: Union[bytes, bytearray]) -> None:
        self.b, self.pos = b, 0

    def _take(self, n: int) -> int:
        if self.pos + n > len(self.b):
            raise _Short
        at = self.pos
        self.pos += n
        return at

    def byte(self) -> int:
        return self.b[self._take(1)]

    def _be(self, n: int) -> int:
        at = self._take(n)
        return int.from_bytes(self.b[at:at + n], "big")

    def uint(self) -> int:
        c = self.byte()
        if c <= 0x7F:
            return c
        sizes = {0xCC: 1, 0xCD: 2, 0xCE: 4, 0xCF: 8}
        if c not in sizes:
            raise _Other
        return self._be(sizes[c])

    def str(self) -> bytes:
        c = self.byte()
        if 0xA0 <= c <= 0xBF:
            n = c & 0x1F
        elif c in (0xD9, 0xDA, 0xDB):
            n = self._be({0xD9: 1, 0xDA: 2, 0xDB: 4}[c])
        else:
            raise _Other
        at = self._take(n)
        return bytes(self.b[at:at + n])

    def map_len(self) -> int:
        c = self.byte()
        if 0x80 <= c <= 0x8F:
            return c & 0x0F
        if c in (0xDE, 0xDF):
            return self._be(2 if c == 0xDE else 4)
        raise _Other

    def bin_len(self) -> int:
        c = self.byte()
        if c not in (0xC4, 0xC5, 0xC6):
            raise _Other
        return self._be({0xC4: 1, 0xC5: 2, 0xC6: 4}[c])


#: The most buffers one sendmsg takes (Linux's IOV_MAX is 1024).
_IOV_MAX = 512

#: How much of an answer frame is read before deciding whether its value
#: can go into the caller's buffer: the envelope and the value's header.
_PEEK = 256


def decode_envelope(payload: Union[bytes, bytearray]) -> Tuple[int, int, str, int, Any, Any]:
    """Parse one frame payload into (kind, id, method, timeout_ms, err, body)."""
    try:
        env = msgpack.unpackb(payload, raw=False, unicode_errors=_UNICODE_ERRORS, strict_map_key=False)
    except Exception as e:  # msgpack raises several types for bad input
        raise Corrupt(f"malformed frame: {e}") from None
    if not isinstance(env, (list, tuple)) or len(env) != 6:
        raise Corrupt(f"malformed frame: envelope is not a 6-element array: {type(env).__name__}")
    kind, req_id, method, timeout_ms, err, body = env
    if not isinstance(kind, int) or not KIND_HELLO <= kind <= KIND_GOAWAY:
        raise Corrupt(f"malformed frame: unknown kind {kind!r}")
    if not isinstance(req_id, int) or req_id < 0 or not isinstance(method, str) or not isinstance(timeout_ms, int):
        raise Corrupt("malformed frame: bad id, method or timeout field")
    return kind, req_id, method, timeout_ms, err, body


def split_addr(addr: str) -> Tuple[str, int]:
    host, sep, port = addr.rpartition(":")
    if not sep or not port.isdigit():
        raise Unavailable(f"address {addr!r} is not host:port")
    return host.strip("[]"), int(port)


def tls_context(tls_ca: str = "", tls_cert: str = "", tls_key: str = "") -> Optional[ssl.SSLContext]:
    """The TLS settings of a client, from the files the CLI's --tls-ca,
    --tls-cert and --tls-key name: None (plain TCP) when none is given, the
    CA alone for a client without a certificate, or all three. Like the Go
    client it verifies the server's chain against the CA and its name
    against the host dialed (an IP address against the IP SANs), and
    requires TLS 1.2 or newer. A partial set or an unreadable file raises
    :class:`InvalidParams` naming it."""
    ca, cert, key = tls_ca, tls_cert, tls_key
    if not (ca or cert or key):
        return None
    if not ca or bool(cert) != bool(key):
        raise InvalidParams("tls_cert, tls_key and tls_ca must be given together (or tls_ca alone for a client "
                            f"without a certificate); got tls_ca={ca!r} tls_cert={cert!r} tls_key={key!r}")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.check_hostname = True
    ctx.verify_mode = ssl.CERT_REQUIRED
    try:
        ctx.load_verify_locations(cafile=ca)
    except (OSError, ssl.SSLError) as e:
        raise InvalidParams(f"tls_ca {ca}: {e}") from None
    if cert:
        try:
            ctx.load_cert_chain(cert, key)
        except (OSError, ssl.SSLError) as e:
            raise InvalidParams(f"tls_cert {cert} with tls_key {key}: {e}") from None
    return ctx


# Without TLS, a TLS server waits for our ClientHello and says nothing.
_PLAIN_ON_TLS_HINT = (" (does the server use TLS? this client does not: give tls_ca, and tls_cert and tls_key "
                      "where the server requires a client certificate)")


def _tls_error(addr: str, e: OSError) -> SextonError:
    """A TLS failure as a sexton error. A certificate verdict, ours on the
    server's chain or the server's alert on ours, is UNAUTHENTICATED, like
    a token mismatch: configuration that another attempt will not fix
    (the client does not retry it). Anything else is UNAVAILABLE."""
    if isinstance(e, ssl.SSLCertVerificationError):
        return Unauthenticated(f"TLS handshake with {addr}: server certificate: {e.verify_message or e}")
    if isinstance(e, ssl.SSLError) and "ALERT" in (e.reason or ""):
        # TLS 1.3: the server checks our certificate after our side of the
        # handshake is done, so its refusal arrives as an alert on the first
        # read, not in do_handshake.
        return Unauthenticated(f"TLS with {addr}: the server refused this client: {e.reason}")
    if isinstance(e, ssl.SSLError) and not isinstance(e, (ssl.SSLEOFError, ssl.SSLZeroReturnError)):
        return Unavailable(f"TLS handshake with {addr}: {e.reason or e} (is the server without TLS?)")
    return Unavailable(f"TLS handshake with {addr}: {e}")


# LOCAL_CONGESTION_CONTROL is the congestion control of a connection to a
# server on this host. Reno never paces; a host default that does (BBR)
# spreads a large value's segments over timer interrupts, which on
# loopback, with no network to pace for, only costs CPU and time
# (docs/SCALING.md, "The write path"). The kernel lets every process set
# Reno.
LOCAL_CONGESTION_CONTROL = b"reno"


def unpace_local(sock: socket.socket) -> None:
    """Set LOCAL_CONGESTION_CONTROL on a TCP connection whose peer is on
    this host (a loopback address, or this end's own address); any other
    keeps the host's default, as does a failure (only slower)."""
    try:
        peer, local = sock.getpeername()[0], sock.getsockname()[0]
        if ipaddress.ip_address(peer).is_loopback or peer == local:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, LOCAL_CONGESTION_CONTROL)
    except (OSError, ValueError, AttributeError):
        pass


class Connection:
    """One authenticated connection to a master or a holder: TCP, then TLS
    when ``tls`` is given, then the token handshake."""

    def __init__(self, addr: str, *, token: str = "", max_frame: int = DEFAULT_MAX_FRAME, deadline: float,
                 tls: Optional[ssl.SSLContext] = None) -> None:
        self.addr = addr
        self._max_frame = clamp_max_frame(max_frame)
        self._send_max = DEFAULT_MAX_FRAME
        self._next_id = 0
        self._tls = tls is not None
        host, port = split_addr(addr)
        start = time.monotonic()
        try:
            self._sock = socket.create_connection((host, port), timeout=max(deadline - start, 0.001))
        except OSError as e:
            raise _fail(Unavailable(f"dial {addr}: {e}"), NOT_SENT) from None
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        unpace_local(self._sock)
        if tls is not None:
            self._tls_handshake(tls, host, deadline)
        try:
            self._handshake(token, deadline)
        except SextonError as e:
            self.close()
            raise _fail(e, NOT_SENT) from None
        except socket.timeout:
            self.close()
            raise _fail(Unavailable(f"handshake with {addr}: not completed within {time.monotonic() - start:.1f}s"),
                        NOT_SENT) from None
        except OSError as e:
            self.close()
            if self._tls:
                raise _fail(_tls_error(addr, e), NOT_SENT) from None
            raise _fail(Unavailable(f"handshake with {addr}: {e}"), NOT_SENT) from None

    def _tls_handshake(self, ctx: ssl.SSLContext, host: str, deadline: float) -> None:
        raw = self._sock
        start = time.monotonic()
        try:
            # server_hostname is both the SNI and the name checked: a host
            # name against the DNS SANs, an IP address against the IP SANs.
            tsock = ctx.wrap_socket(raw, server_hostname=host, do_handshake_on_connect=False)
        except (OSError, ValueError) as e:
            raw.close()
            raise _fail(Unavailable(f"TLS with {self.addr}: {e}"), NOT_SENT) from None
        self._sock = tsock
        try:
            tsock.settimeout(max(deadline - time.monotonic(), 0.001))
            tsock.do_handshake()
        except socket.timeout:
            self.close()
            raise _fail(Unavailable(f"TLS handshake with {self.addr}: not completed within "
                                    f"{time.monotonic() - start:.1f}s"), NOT_SENT) from None
        except OSError as e:
            self.close()
            raise _fail(_tls_error(self.addr, e), NOT_SENT) from None

    # -- raw frames -----------------------------------------------------

    def _recv_exact(self, n: int, deadline: float) -> bytearray:
        # Exactly n bytes into one buffer: a bucket-sized value is received
        # in place, and nothing past the frame is ever read ahead.
        buf = bytearray(n)
        self._recv_into(memoryview(buf), deadline)
        return buf

    def _recv_into(self, view: memoryview, deadline: float) -> None:
        n, got = len(view), 0
        while got < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout("deadline passed")
            self._sock.settimeout(left)
            m = self._sock.recv_into(view[got:], n - got)
            if m == 0:
                raise ConnectionError("connection closed by the server")
            got += m

    def _read_answer(self, deadline: float, buffer_for: Callable[[int], Optional[memoryview]]) -> Tuple[int, int, Any, Any]:
        """Read one frame as (kind, id, err, body). An answer without error
        whose body is exactly ``{"value": bin}``, for an id buffer_for gives
        a buffer at least that large, is received straight into that
        buffer: its body is then ``{"value": n, "into": True}``."""
        (n,) = struct.unpack(">I", self._recv_exact(4, deadline))
        if n > self._max_frame:
            raise FrameTooLarge(f"frame of {n} bytes from {self.addr} exceeds the {self._max_frame}-byte limit")
        if n == 0:
            raise Corrupt(f"empty frame from {self.addr}")
        first = self._recv_exact(min(n, _PEEK), deadline)
        try:
            sc = _Scan(first)
            if sc.byte() != 0x96:
                raise _Other
            kind, req_id = sc.uint(), sc.uint()
            sc.str()
            sc.uint()
            if kind != KIND_RESPONSE or sc.byte() != 0xC0:
                raise _Other
            buf = buffer_for(req_id)
            if buf is None or sc.map_len() != 1 or sc.str() != b"value":
                raise _Other
            size = sc.bin_len()
            if sc.pos + size != n or size > len(buf):
                raise _Other
        except (_Short, _Other):
            rest = self._recv_exact(n - len(first), deadline) if n > len(first) else bytearray()
            kind, req_id, _, _, err, body = decode_envelope(bytes(first) + bytes(rest))
            return kind, req_id, err, body
        have = len(first) - sc.pos
        buf[:have] = first[sc.pos:]
        rest = buf[have:size]
        for part in rest.parts if isinstance(rest, Regions) else (rest,):
            self._recv_into(part, deadline)
        return kind, req_id, None, {"value": size, "into": True}

    def _read_frame(self, limit: int, deadline: float) -> bytearray:
        (n,) = struct.unpack(">I", self._recv_exact(4, deadline))
        if n > limit:
            raise FrameTooLarge(f"frame of {n} bytes from {self.addr} exceeds the {limit}-byte limit")
        if n == 0:
            raise Corrupt(f"empty frame from {self.addr}")
        return self._recv_exact(n, deadline)

    def _send(self, frame: bytes, deadline: float) -> None:
        self._sock.settimeout(max(deadline - time.monotonic(), 0.001))
        self._sock.sendall(frame)

    def _send_parts(self, parts: Sequence[Union[bytes, memoryview]], deadline: float) -> None:
        """Send the parts in order, from their own buffers: with sendmsg
        (one system call for a head and its value) on a plain socket,
        one sendall each under TLS, which has no sendmsg."""
        if self._tls:
            for p in parts:
                self._send(p, deadline)
            return
        self._sock.settimeout(max(deadline - time.monotonic(), 0.001))
        views = [memoryview(p).cast("B") for p in parts]
        while views:
            n = self._sock.sendmsg(views[:_IOV_MAX])
            while views and n >= len(views[0]):
                n -= len(views[0])
                views.pop(0)
            if views and n:
                views[0] = views[0][n:]

    # -- handshake (docs/PROTOCOL.md §3) --------------------------------

    def _handshake(self, token: str, deadline: float) -> None:
        start = time.monotonic()
        try:
            first = self._read_frame(HANDSHAKE_MAX_FRAME, deadline)
        except socket.timeout:
            raise Unavailable(f"handshake with {self.addr}: no hello within {time.monotonic() - start:.1f}s"
                              f"{'' if self._tls else _PLAIN_ON_TLS_HINT}") from None
        kind, _, _, _, err, hello = decode_envelope(first)
        if err is not None:
            raise from_wire(err)
        if kind != KIND_HELLO or not isinstance(hello, dict):
            raise Corrupt(f"handshake with {self.addr}: expected hello, got kind {kind}")
        if hello.get("v") != PROTOCOL_VERSION:
            raise Unavailable(f"{self.addr} speaks transport protocol version {hello.get('v')}, this client speaks {PROTOCOL_VERSION}")
        answer: Dict[str, Any] = {"v": PROTOCOL_VERSION, "max_frame": self._max_frame}
        if hello.get("auth"):
            nonce = hello.get("nonce")
            if not isinstance(nonce, bytes) or len(nonce) != NONCE_LEN:
                raise Corrupt(f"handshake with {self.addr}: challenge is not {NONCE_LEN} bytes")
            if token:
                answer["mac"] = token_mac(token, nonce)
        self._send(encode_frame(KIND_AUTH, 0, "", 0, None, answer), deadline)
        kind, _, _, _, err, _ = decode_envelope(self._read_frame(HANDSHAKE_MAX_FRAME, deadline))
        if err is not None:
            e = from_wire(err)
            if e.code != "UNAUTHENTICATED":
                e = error_for(e.code, f"{self.addr}: {e.message}")
            raise e
        if kind != KIND_WELCOME:
            raise Corrupt(f"handshake with {self.addr}: expected welcome, got kind {kind}")
        self._send_max = clamp_max_frame(int(hello.get("max_frame") or 0))

    # -- calls ----------------------------------------------------------

    def usable(self) -> bool:
        """False if the server closed (or said anything) while we were idle."""
        if self._sock is None:
            return False
        try:
            if hasattr(select, "poll"):  # no FD_SETSIZE limit
                p = select.poll()
                p.register(self._sock, select.POLLIN)
                return not p.poll(0)
            readable, _, _ = select.select([self._sock], [], [], 0)
        except (OSError, ValueError):
            return False
        return not readable

    def call(self, method: str, body: Any, deadline: float) -> Any:
        """Send one request and return the response body, or raise."""
        left_ms = self._left_ms(f"call {method}", deadline)
        self._next_id += 1
        req_id = self._next_id
        self._send_all(self._request(req_id, method, left_ms, body), f"call {method}", deadline)
        try:
            while True:
                kind, got_id, _, _, err, resp = decode_envelope(self._read_frame(self._max_frame, deadline))
                self._expect_response(kind, err)
                if got_id != req_id:
                    continue  # cannot happen with one call at a time; harmless
                if err is not None:
                    raise _fail(from_wire(err), ANSWERED)
                return resp
        except socket.timeout:
            self.close()
            raise _fail(Timeout(f"call {method} to {self.addr}: no answer before the deadline"), SENT_NO_ANSWER) from None
        except SextonError as e:
            if getattr(e, "outcome", None) is not None:
                raise  # the server's answer, or a go-away already handled
            self.close()
            raise _fail(e, SENT_NO_ANSWER) from None
        except OSError as e:
            self.close()
            raise _fail(Unavailable(f"connection to {self.addr} lost: {e}"), SENT_NO_ANSWER) from None

    def pipeline(self, calls: Sequence["PipelinedCall"], deadline: float) -> List[Tuple[Optional[SextonError], Any]]:
        """Send every call, then read every answer (the server may answer
        in any order; ids match them up). Returns (error, body) per call,
        in order. A call with ``value`` sends it from the caller's buffer;
        one with ``into`` receives a ``{"value": bin}`` answer into that
        buffer (body ``{"value": n, "into": True}``). A failure in transit
        closes the connection and fails every unanswered call with it."""
        return self.receive(self.send_calls(calls, deadline), deadline)

    def send_calls(self, calls: Sequence["PipelinedCall"], deadline: float) -> "Sent":
        """The first half of :meth:`pipeline`: send every call; their
        answers are read by :meth:`receive`, which must follow before the
        connection carries anything else."""
        left_ms = self._left_ms("pipelined calls", deadline)
        out: List[Tuple[Optional[SextonError], Any]] = [(None, None)] * len(calls)
        by_id: Dict[int, int] = {}
        frames: List[Union[bytes, memoryview]] = []
        for i, c in enumerate(calls):
            self._next_id += 1
            by_id[self._next_id] = i
            frames += self._request(self._next_id, c.method, left_ms, c.body, c.value)
        self._send_all(frames, "pipelined calls", deadline)
        return Sent(calls, by_id, out)

    def _expect_response(self, kind: int, err: Any) -> None:
        """Raise unless a frame read for an answer is a response: a go-away
        closes the connection and fails the calls still waiting with its
        reason (SENT_NO_ANSWER); any other kind is CORRUPT."""
        if kind == KIND_GOAWAY:
            self.close()
            why = from_wire(err) if err is not None else Unavailable("")
            raise _fail(error_for(why.code, f"connection to {self.addr} closed by the server: {why.message}"), SENT_NO_ANSWER)
        if kind != KIND_RESPONSE:
            raise Corrupt(f"unexpected frame kind {kind} from {self.addr}")

    def _left_ms(self, what: str, deadline: float) -> int:
        """The milliseconds a request may take, for its header; NOT_SENT
        when the connection is closed or the deadline passed."""
        if self._sock is None:
            raise _fail(Unavailable(f"connection to {self.addr} closed"), NOT_SENT)
        left_ms = int((deadline - time.monotonic()) * 1000)
        if left_ms <= 0:
            raise _fail(Timeout(f"{what} to {self.addr}: deadline passed"), NOT_SENT)
        return left_ms

    def _request(self, req_id: int, method: str, left_ms: int, body: Any,
                 value: Optional[Any] = None) -> List[Union[bytes, memoryview]]:
        """A request's frame as the parts to send: one frame, or with
        ``value`` its head and then the value from the caller's buffers.
        NOT_SENT when the body does not encode or the frame exceeds the
        server's limit."""
        try:
            if value is None:
                frame = encode_frame(KIND_REQUEST, req_id, method, left_ms, None, body)
                parts: List[Union[bytes, memoryview]] = [frame]
                size = len(frame) - 4
            else:
                head, v = encode_request_parts(req_id, method, left_ms, body, value)
                parts = [head] + (v.parts if isinstance(v, Regions) else [v])
                size = len(head) - 4 + len(v)
        except (TypeError, ValueError, OverflowError) as e:
            raise _fail(error_for("INVALID_PARAMS", f"encode {method} body: {e}"), NOT_SENT) from None
        if size > self._send_max:
            raise _fail(FrameTooLarge(f"{method} request of {size} bytes exceeds the {self._send_max}-byte limit of {self.addr}"), NOT_SENT)
        return parts

    def _send_all(self, parts: List[Union[bytes, memoryview]], what: str, deadline: float) -> None:
        """Send the parts; a failure closes the connection and is
        SENT_NO_ANSWER: part of a frame may have left, so the server may
        run it."""
        try:
            if len(parts) == 1:
                self._send(parts[0], deadline)
            else:
                self._send_parts(parts, deadline)
        except (OSError, socket.timeout) as e:
            self.close()
            raise _fail(Unavailable(f"{what} to {self.addr}: sending: {e}"), SENT_NO_ANSWER) from None

    def receive(self, sent: "Sent", deadline: float) -> List[Tuple[Optional[SextonError], Any]]:
        """The second half of :meth:`pipeline`: read the answers of the
        calls :meth:`send_calls` sent."""
        while not self.receive_one(sent, deadline):
            pass
        return sent.out

    def receive_one(self, sent: "Sent", deadline: float) -> bool:
        """Read one frame of :meth:`receive` (waiting until it is whole):
        True once every call sent has its answer."""
        calls, by_id, out = sent.calls, sent.by_id, sent.out

        def buffer_for(req_id: int) -> Optional[memoryview]:
            i = by_id.get(req_id)
            return None if i is None else calls[i].into

        try:
            if by_id:
                kind, req_id, err, body = self._read_answer(deadline, buffer_for)
                self._expect_response(kind, err)
                i = by_id.pop(req_id, None)
                if i is not None:
                    out[i] = (_fail(from_wire(err), ANSWERED) if err is not None else None, body)
        except socket.timeout:
            self.close()
            raise _fail(Timeout(f"pipelined calls to {self.addr}: no answer before the deadline"), SENT_NO_ANSWER) from None
        except SextonError as e:
            if getattr(e, "outcome", None) is None:
                self.close()
                _fail(e, SENT_NO_ANSWER)
            raise
        except OSError as e:
            self.close()
            raise _fail(Unavailable(f"connection to {self.addr} lost: {e}"), SENT_NO_ANSWER) from None
        return not by_id

    def fileno(self) -> int:
        return self._sock.fileno() if self._sock is not None else -1

    def buffered(self) -> bool:
        """Whether bytes already received wait to be read (TLS decrypts
        ahead of what its socket shows readable)."""
        return isinstance(self._sock, ssl.SSLSocket) and self._sock.pending() > 0

    def close(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None  # type: ignore[assignment]


def readable(conns: Sequence[Connection], timeout: float) -> List[Connection]:
    """The connections with bytes to read (or a closed or failed socket,
    which the read then reports), waiting up to timeout seconds for one."""
    ready = [c for c in conns if c.buffered()]
    if ready:
        return ready
    by_fd = {c.fileno(): c for c in conns}
    if hasattr(select, "poll"):  # no FD_SETSIZE limit
        p = select.poll()
        for fd in by_fd:
            p.register(fd, select.POLLIN)
        return [by_fd[fd] for fd, _ in p.poll(max(timeout, 0) * 1000)]
    r, _, _ = select.select(list(by_fd), [], [], max(timeout, 0))
    return [by_fd[fd] for fd in r]


class Sent:
    """Calls :meth:`Connection.send_calls` sent, waiting for their answers:
    the request id of each call's index, and the (error, body) per call
    filled in as answers arrive."""

    __slots__ = ("calls", "by_id", "out")

    def __init__(self, calls: Sequence["PipelinedCall"], by_id: Dict[int, int],
                 out: List[Tuple[Optional[SextonError], Any]]) -> None:
        self.calls, self.by_id, self.out = calls, by_id, out


class PipelinedCall:
    """One call of :meth:`Connection.pipeline`: ``value`` is sent from the
    caller's buffer as the body's ``"value"``; ``into`` receives the
    answer's value."""

    __slots__ = ("method", "body", "value", "into")

    def __init__(self, method: str, body: Dict[str, Any], *, value: Optional[memoryview] = None,
                 into: Optional[memoryview] = None) -> None:
        self.method, self.body, self.value, self.into = method, body, value, into


class Pool:
    """Idle connections per address; each call takes one for itself."""

    def __init__(self, *, token: str, max_frame: int, connect_timeout: float,
                 tls: Optional[ssl.SSLContext] = None) -> None:
        self._token = token
        self._tls = tls
        self._max_frame = max_frame
        self._connect_timeout = connect_timeout
        self._idle: Dict[str, List[Connection]] = {}
        self._lock = threading.Lock()
        self._closed = False

    def call(self, addr: str, method: str, body: Any, deadline: float) -> Any:
        conn = self._take(addr)
        if conn is None:
            conn = Connection(addr, token=self._token, max_frame=self._max_frame,
                              deadline=min(deadline, time.monotonic() + self._connect_timeout), tls=self._tls)
        try:
            resp = conn.call(method, body, deadline)
        except SextonError as e:
            if outcome_of(e) == ANSWERED:
                self._give_back(conn)
            else:
                conn.close()
            raise
        self._give_back(conn)
        return resp

    def pipeline(self, addr: str, calls: Sequence[PipelinedCall], deadline: float) -> List[Tuple[Optional[SextonError], Any]]:
        """:meth:`Connection.pipeline` on one of addr's connections."""
        return self.receive(self.send_calls(addr, calls, deadline), deadline)

    def send_calls(self, addr: str, calls: Sequence[PipelinedCall], deadline: float) -> Tuple[Connection, Sent]:
        """:meth:`Connection.send_calls` on one of addr's connections, which
        is the caller's until it hands it to :meth:`receive`."""
        conn = self._take(addr)
        if conn is None:
            conn = Connection(addr, token=self._token, max_frame=self._max_frame,
                              deadline=min(deadline, time.monotonic() + self._connect_timeout), tls=self._tls)
        try:
            return conn, conn.send_calls(calls, deadline)
        except SextonError:
            conn.close()
            raise

    def receive(self, started: Tuple[Connection, Sent], deadline: float) -> List[Tuple[Optional[SextonError], Any]]:
        """:meth:`Connection.receive` of what :meth:`send_calls` sent; the
        connection goes back to the pool once every answer is read."""
        while True:
            out = self.receive_one(started, deadline)
            if out is not None:
                return out

    def receive_one(self, started: Tuple[Connection, Sent], deadline: float) -> Optional[List[Tuple[Optional[SextonError], Any]]]:
        """:meth:`Connection.receive_one` of what :meth:`send_calls` sent:
        None while answers are missing, then (error, body) per call, the
        connection back in the pool."""
        conn, sent = started
        try:
            done = conn.receive_one(sent, deadline)
        except SextonError:
            conn.close()
            raise
        if not done:
            return None
        self._give_back(conn)
        return sent.out

    def _take(self, addr: str) -> Optional[Connection]:
        with self._lock:
            if self._closed:
                raise _fail(Unavailable("client closed"), NOT_SENT)
            idle = self._idle.get(addr, [])
            while idle:
                conn = idle.pop()
                if conn.usable():
                    return conn
                conn.close()
        return None

    def _give_back(self, conn: Connection) -> None:
        with self._lock:
            if self._closed or conn._sock is None:
                conn.close()
                return
            self._idle.setdefault(conn.addr, []).append(conn)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, {}
        for conns in idle.values():
            for c in conns:
                c.close()
