"""``ToolLedger.unbind``: a keyed run's binding let go of once the run is over, by
compare-and-set - a binding another process moved meanwhile stays."""

from __future__ import annotations

from pathlib import Path

from req_managed_agents import ToolLedger
from req_managed_agents.stores import FileStore


def test_unbind_lets_a_key_name_nothing_and_leaves_no_record_file(tmp_path: Path) -> None:
    ledger = ToolLedger(FileStore(tmp_path / "state"))
    binding = {"session_id": "sess_1", "prompt": "p", "phase": "new"}
    assert ledger.bind("batch:1", binding) == binding
    assert ledger.unbind("batch:1") is True
    assert ledger.binding("batch:1") is None
    assert list((tmp_path / "state.records").rglob("*.json")) == []
    assert ledger.unbind("batch:1") is False, "nothing left to let go of"
    other = {**binding, "session_id": "sess_2"}
    assert ledger.bind("batch:1", other) == other, "the key can name a new run"
