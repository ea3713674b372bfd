"""A stand-in for Mooncake's ``mooncake`` package that serves sexton.

Put ``clients/python/mooncake_shim`` on ``PYTHONPATH`` (next to the
``sexton`` package, ``clients/python``) and engines that do
``from mooncake.store import MooncakeDistributedStore`` get
:class:`sexton.mooncake.MooncakeDistributedStore` without a code change.
It is a directory of its own, not part of the ``sexton`` package, so that
installing sexton never hides a real Mooncake install: only a process that
puts this directory on its path gets sexton behind the ``mooncake`` name.
"""
