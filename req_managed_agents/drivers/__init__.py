"""The drivers: ``Session`` and ``run_to_completion`` (the turn loop on a worker thread), the
tool runner, the tool ledger and ``run_batch``. They speak only the vocabulary and the
provider seam (:mod:`req_managed_agents.providers._base`). Internal: the public names are
re-exported at the top."""
