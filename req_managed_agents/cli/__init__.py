"""The ``rma`` command: one module per command group. Internal; run it as ``rma`` or
``python -m req_managed_agents``."""
