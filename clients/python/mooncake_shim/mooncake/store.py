"""``mooncake.store`` served by sexton (see the package docstring)."""

from sexton.mooncake import BufferHandle, ErrorCode, MooncakeDistributedStore, ReplicateConfig

__all__ = ["MooncakeDistributedStore", "ReplicateConfig", "BufferHandle", "ErrorCode"]
