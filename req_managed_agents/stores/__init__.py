"""Stores: where the package keeps what must outlive one process.

Provisioning remembers its handles here, the :class:`~req_managed_agents.ToolLedger` its
tool calls, ``run_batch`` which prompts finished. Pick by reach: :class:`MemoryStore` for one
process, :class:`FileStore` for one machine, :class:`RedisStore` (the ``[redis]`` extra) for
many. Any object with ``get``/``put``/``delete``/``delete_value`` is a :class:`Store`.
"""

from req_managed_agents.stores._base import Store
from req_managed_agents.stores._file import FileStore
from req_managed_agents.stores._memory import MemoryStore
from req_managed_agents.stores._redis import RedisStore

__all__ = ["FileStore", "MemoryStore", "RedisStore", "Store"]
