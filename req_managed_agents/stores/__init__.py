"""Stores: where the package keeps what must outlive one process.

Provisioning remembers its handles here, the :class:`~req_managed_agents.ToolLedger` its
tool calls, ``run_batch`` which prompts finished. Pick by reach: :class:`MemoryStore` for one
process, :class:`FileStore` for one machine, :class:`RedisStore` (the ``[redis]`` extra) for
many. Any object with ``get``/``put``/``delete``/``delete_value`` is a :class:`Store`; all
three are also a :class:`RecordStore`: per-key compare-and-set records that may expire,
claimed without the store-wide lock, as exactly-once claims need.
"""

from req_managed_agents.stores._base import RecordStore, Store
from req_managed_agents.stores._file import FileStore
from req_managed_agents.stores._memory import MemoryStore
from req_managed_agents.stores._redis import RedisStore

__all__ = ["FileStore", "MemoryStore", "RecordStore", "RedisStore", "Store"]
