"""``rma harnesses list|sweep`` against the AgentCore emulator: a CI clean-up that deletes
only its own prefix's harnesses and says which deletions it could not confirm."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.cli import fails, rma


def names(listing: list[dict[str, Any]]) -> list[str]:
    return [h["harnessName"] for h in listing]


def test_list_shows_every_harness_or_a_prefixs(
    agentcore_env: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("ci_a1b2c3d4", "ci_e5f6a7b8", "ci2_deadbeef", "cizz", "prod_12345678"):
        agentcore_env.add_harness(name=name)
    code, listing = rma(capsys, "harnesses", "list")
    assert code == 0
    assert sorted(names(listing)) == sorted(
        ["ci_a1b2c3d4", "ci_e5f6a7b8", "ci2_deadbeef", "cizz", "prod_12345678"]
    )
    assert {h["status"] for h in listing} == {"READY"}
    code, listing = rma(capsys, "harnesses", "list", "--prefix", "ci")
    assert (code, sorted(names(listing))) == (0, ["ci_a1b2c3d4", "ci_e5f6a7b8"])


def test_list_on_an_empty_account_is_an_empty_list(
    agentcore_env: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    assert rma(capsys, "harnesses", "list") == (0, [])


def test_sweep_deletes_only_the_prefixs_harnesses_and_reports_a_stuck_one_unconfirmed(
    agentcore_env: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    emulator = agentcore_env
    for name in ("ci_ready", "ci_failed", "ci_stuck", "ci2_other", "keep_me"):
        emulator.add_harness(name=name)
    emulator.harness_statuses(["CREATE_FAILED"], name="ci_failed")
    emulator.script_deletion("ci_stuck", "stuck")
    code, outcomes = rma(capsys, "harnesses", "sweep", "--prefix", "ci", "--timeout", "1.5")
    by_name = {o["harnessName"]: o for o in outcomes}
    assert sorted(by_name) == ["ci_failed", "ci_ready", "ci_stuck"]
    assert by_name["ci_ready"]["outcome"] == "deleted"
    assert by_name["ci_failed"] == {**by_name["ci_failed"], "status": "CREATE_FAILED"}
    assert by_name["ci_failed"]["outcome"] == "deleted"
    assert by_name["ci_stuck"]["outcome"] == "unconfirmed"
    assert code == 1, "a deletion it could not confirm fails the sweep"
    assert sorted(h["harnessName"] for h in emulator.harnesses()) == [
        "ci2_other",
        "ci_stuck",
        "keep_me",
    ]
    deleted = {
        r.path.rsplit("/", 1)[-1].rsplit("-", 1)[0]
        for r in emulator.requests
        if r.method == "DELETE"
    }
    assert deleted == {"ci_ready", "ci_failed", "ci_stuck"}, "nothing outside the prefix"


def test_a_clean_sweep_exits_zero_and_a_second_finds_nothing(
    agentcore_env: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    agentcore_env.add_harness(name="job_1")
    code, outcomes = rma(capsys, "harnesses", "sweep", "--prefix", "job")
    assert (code, [o["outcome"] for o in outcomes]) == (0, ["deleted"])
    assert rma(capsys, "harnesses", "sweep", "--prefix", "job") == (0, [])


def test_a_failed_deletion_is_reported_failed(
    agentcore_env: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    agentcore_env.add_harness(name="ci_broken")
    agentcore_env.script_deletion("ci_broken", "failed")
    code, outcomes = rma(capsys, "harnesses", "sweep", "--prefix", "ci", "--timeout", "5")
    assert (code, [o["outcome"] for o in outcomes]) == (1, ["failed"])


def test_a_creating_harness_is_left_and_says_so(
    agentcore_env: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    agentcore_env.add_harness(name="ci_young")
    agentcore_env.harness_statuses(["CREATING"], name="ci_young")
    code, outcomes = rma(capsys, "harnesses", "sweep", "--prefix", "ci")
    assert (code, [(o["status"], o["outcome"]) for o in outcomes]) == (1, [("CREATING", "skipped")])
    assert not [r for r in agentcore_env.requests if r.method == "DELETE"]


@pytest.mark.parametrize("prefix", ["", "1ci", "ci-x", "c" * 40])
def test_a_bad_prefix_is_refused_before_any_request(
    agentcore_env: Any, capsys: pytest.CaptureFixture[str], prefix: str
) -> None:
    line = fails(capsys, 2, "harnesses", "sweep", "--prefix", prefix)
    assert "--prefix" in line
    assert agentcore_env.requests == []


def test_sweep_needs_a_prefix(agentcore_env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    fails(capsys, 2, "harnesses", "sweep")
    assert agentcore_env.requests == []
