"""What a Claude emulator session runs with besides its resources: its agent and its budget.

A create names the agent by id (its latest version), pinned (``{"type": "agent", "id",
"version"}``) or ``agent_with_overrides``, whose ``model``, ``system``, ``tools``,
``mcp_servers`` and ``skills`` replace the agent's for this session only. A ``budget`` is a
spend ceiling in USD cents; an update replaces it, or removes it for good with null, and one
can never be added to a session created without one.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.claude import _bedrock
from req_managed_agents.testing.claude._config import resolved_model, resolved_skills
from req_managed_agents.testing.claude._config_tools import resolved_tools
from req_managed_agents.testing.claude._wire import _invalid, _optional_string, _reject_unknown

if TYPE_CHECKING:
    from collections.abc import Mapping

    from req_managed_agents.testing.claude._model import _Session

_OVERRIDES = frozenset({"model", "system", "tools", "mcp_servers", "skills"})


def _budget(value: Any) -> dict[str, Any]:
    """A spend ceiling: ``{"type": "limit", "max_list_cost": {"amount", "currency"}}``, the
    amount in cents as a string of digits, in USD."""
    if not isinstance(value, dict) or value.get("type") != "limit":
        raise _invalid("budget.type: Input should be 'limit'")
    _reject_unknown(value, frozenset({"type", "max_list_cost"}))
    cost = value.get("max_list_cost")
    if not isinstance(cost, dict) or set(cost) != {"amount", "currency"}:
        raise _invalid("budget.max_list_cost: Field required ({amount, currency})")
    amount = cost["amount"]
    if not isinstance(amount, str) or not amount.isdigit() or int(amount) <= 0:
        raise _invalid("budget.max_list_cost.amount: whole cents, as a string of digits")
    if cost["currency"] != "USD":
        raise _invalid("budget.max_list_cost.currency: Input should be 'USD'")
    return {"type": "limit", "max_list_cost": {"amount": amount, "currency": "USD"}}


def _agent_reference(reference: Any) -> tuple[str, int | None, dict[str, Any]]:
    """The agent a create names: its id, the version it pins and its overrides."""
    if isinstance(reference, str) and reference:
        return reference, None, {}
    kind = reference.get("type") if isinstance(reference, dict) else None
    if kind not in ("agent", "agent_with_overrides"):
        raise _invalid("agent: Field required (an agent id, or {type, id, version})")
    overrides = _OVERRIDES if kind == "agent_with_overrides" else frozenset()
    _reject_unknown(reference, frozenset({"type", "id", "version"}) | overrides)
    agent_id = reference.get("id")
    if not isinstance(agent_id, str) or not agent_id:
        raise _invalid("agent.id: Field required")
    version = reference.get("version")
    if version is not None and (
        isinstance(version, bool) or not isinstance(version, int) or version < 1
    ):
        raise _invalid("agent.version: Input should be an integer of at least 1")
    return agent_id, version, {k: v for k, v in reference.items() if k in overrides}


def _overridden(
    snapshot: dict[str, Any], overrides: Mapping[str, Any], *, bedrock: bool = False
) -> None:
    """Apply ``agent_with_overrides`` fields to a session's snapshot of its agent."""
    if "model" in overrides:
        if bedrock:
            _bedrock.check_model(overrides["model"])
        model = resolved_model(overrides["model"])
        model.pop("effort", None)  # a model override replaces it all; effort is not taken
        snapshot["model"] = model
    if "system" in overrides:
        snapshot["system"] = _optional_string(overrides, "system")
    if "tools" in overrides or "mcp_servers" in overrides:
        snapshot["tools"], snapshot["mcp_servers"] = resolved_tools(
            overrides.get("tools", snapshot["tools"]),
            overrides.get("mcp_servers", snapshot["mcp_servers"]),
            "agent.",
            bedrock=bedrock,
        )
    if "skills" in overrides:
        if bedrock:
            snapshot["skills"] = _bedrock.resolved_skills(overrides["skills"])
        else:
            snapshot["skills"] = resolved_skills(overrides["skills"], "agent.skills")


def _update_budget(session: _Session, value: Any, changes: dict[str, Any]) -> None:
    """Replace or remove a budget; one can never be added to a session without one."""
    record = session.record
    if record["budget"] is None:
        reason = "was removed" if session.budget_removed else "was created without one"
        raise _invalid(f"budget: cannot add a budget to a session that {reason}")
    if value is None:
        record["budget"] = changes["budget"] = None
        session.budget_removed = True
        return
    budget = _budget(value)  # greater than the consumed list cost, which stays at 0
    if budget != record["budget"]:
        record["budget"] = budget
        changes["budget"] = copy.deepcopy(budget)
