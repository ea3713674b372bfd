"""sexton — a Python client for the sexton object cache.

Pure Python plus ``msgpack``, written from ``docs/PROTOCOL.md``::

    import sexton
    with sexton.Client("127.0.0.1:7101") as store:
        store.put("hello", b"world")
        assert store.get("hello") == b"world"
        store.remove("hello")

What it does for you (docs/PROTOCOL.md §7-9): follows the Raft leader (its
NOT_LEADER hint, else the next address, with capped jittered backoff),
speaks TLS to masters and holders when given a CA (``tls_ca``, and a
client certificate with ``tls_cert``/``tls_key``; the CLI's environment
variables are the defaults), proves the cluster token in the handshake
without sending it, gives every
mutation a session (client id, sequence number, floor) so that its retries
after a timeout or a failover never act twice, writes values to holders
with the leader's write grant, and reads them back from a holder.

Names shared with Mooncake's ``MooncakeDistributedStore``, with the same
meaning: ``put``, ``get``, ``remove``, ``is_exist``, ``batch_is_exist``,
``remove_all``, ``get_size``, ``close``. Differences: errors are
exceptions, not negative return codes (``put`` returns the new
incarnation, ``remove`` returns None, ``is_exist`` returns a bool); there is
no ``setup``/``init_all`` (the constructor takes the master addresses).
sexton's own: ``put_batch``, ``get_batch``, ``get_into``,
``batch_get_into``, ``put_from``, ``batch_remove``, ``list``, ``iter_objects``, ``stat``,
``get_with_info``, ``wait_deleted``, ``pending_deletes``, ``status``, and
``remove(key, if_incarnation=...)``.

Errors: every exception is a :class:`SextonError` with the wire ``code``;
one subclass per code (:class:`ObjectNotFound`, :class:`NoSpace`, ...).
:class:`OutcomeUnknown` is raised when a mutation may or may not have run;
it is not a subclass of :class:`Unavailable` (which means "not done").
"""

from .client import MAX_BATCH_KEYS, MAX_BATCH_PUT_ITEMS, Client, connect
from .errors import (
    Corrupt,
    FrameTooLarge,
    GrantRefused,
    IncarnationMismatch,
    IncarnationStale,
    Internal,
    InvalidKey,
    InvalidParams,
    NoSpace,
    NotLeader,
    ObjectAlreadyExists,
    ObjectNotFound,
    OutcomeUnknown,
    RegistryFull,
    SextonError,
    Timeout,
    Unauthenticated,
    PermissionDenied,
    Unavailable,
)
from .regions import Regions
from .types import DeleteTask, GetResult, Incarnation, KeyResult, ObjectInfo, PutResult, Replica, Stat

__version__ = "0.1.0"

__all__ = [
    "Client",
    "connect",
    "MAX_BATCH_KEYS",
    "MAX_BATCH_PUT_ITEMS",
    "Corrupt",
    "DeleteTask",
    "FrameTooLarge",
    "GrantRefused",
    "Incarnation",
    "IncarnationMismatch",
    "IncarnationStale",
    "Internal",
    "InvalidKey",
    "InvalidParams",
    "KeyResult",
    "GetResult",
    "PutResult",
    "Regions",
    "NoSpace",
    "NotLeader",
    "ObjectAlreadyExists",
    "ObjectInfo",
    "ObjectNotFound",
    "OutcomeUnknown",
    "RegistryFull",
    "Replica",
    "SextonError",
    "Stat",
    "Timeout",
    "Unauthenticated",
    "PermissionDenied",
    "Unavailable",
]
