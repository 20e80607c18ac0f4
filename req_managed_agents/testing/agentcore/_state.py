r"""The state every part of the AgentCore emulator shares: its data, and the lock guarding it.

The control plane, InvokeHarness and the runtime routes keep no data of their own: they read
and change the :class:`AgentCoreState` they were given, under ``condition``, the emulator's
one lock (see :class:`~req_managed_agents.testing.server.Lifecycle`). Besides the data, the
state finds harnesses (by id, or the API's 404; by name, by their ARN and by their
runtime's ARN) and cuts lists into pages behind ``nextToken``\ s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.agentcore._harness import _harness_not_found
from req_managed_agents.testing.agentcore._wire import _AwsError, _invalid
from req_managed_agents.testing.server import PageTokens, Records

if TYPE_CHECKING:
    import threading
    from collections.abc import Sequence

    from req_managed_agents.testing.agentcore._commands import CommandRecord
    from req_managed_agents.testing.agentcore._conversation import _Conversation
    from req_managed_agents.testing.agentcore._frame_faults import _FrameFault
    from req_managed_agents.testing.agentcore._harness import _Harness
    from req_managed_agents.testing.agentcore._records import Invocation, StoppedSession
    from req_managed_agents.testing.server import RecordedRequest

_DEFAULT_PAGE = 10
_MAX_PAGE = 100


class AgentCoreState:
    """The AgentCore emulator's data, guarded by ``condition``."""

    def __init__(self, condition: threading.Condition) -> None:
        self.condition = condition
        self.harnesses: Records[_Harness] = Records(
            "harness", lambda _, id_: _harness_not_found(id_)
        )
        self.created = 0  # harnesses created so far; the order of the next one
        self.client_tokens: dict[str, str] = {}  # CreateHarness clientToken -> harness id
        self.update_tokens: dict[str, str] = {}  # UpdateHarness clientToken -> harness id
        self.endpoint_tokens: set[str] = set()  # clientTokens of endpoint creates and updates
        # Seconds from a harness's READY to its DEFAULT endpoint's (None: it never comes).
        self.endpoint_delay: float | None = 0.0
        self._pages = PageTokens(
            "maxResults", "nextToken", lambda name, problem: _invalid([(name, f"Member {problem}")])
        )
        # The status scripts of the next harnesses created, by name (None: any name).
        self.next_statuses: dict[str | None, tuple[str, ...]] = {}
        # By (harness ARN, runtime session id).
        self.conversations: dict[tuple[str, str], _Conversation] = {}
        self.frame_faults: list[_FrameFault] = []
        self.invocations: list[Invocation] = []
        self.stopped_sessions: list[StoppedSession] = []
        self.commands: list[CommandRecord] = []
        self.signature_failures: list[tuple[str, str, str]] = []  # (method, path, reason)

    def page(
        self, request: RecordedRequest, keyed: Sequence[tuple[int, Any]], member: str
    ) -> dict[str, Any]:
        """One page (``maxResults``, default 10) of ``keyed`` items (ascending keys) as
        ``member``, and the ``nextToken`` to the rest. A token names the key the next page
        starts at, so an item removed between pages shifts nothing; it only works for the
        list it came from."""
        page = self._pages.cut(request, keyed, _DEFAULT_PAGE, _MAX_PAGE)
        answer: dict[str, Any] = {member: page.items}
        if page.next_token is not None:
            answer["nextToken"] = page.next_token
        return answer

    def named(self, name: str) -> _Harness | None:
        """The live harness of that name, if any."""
        return next((h for h in self.harnesses.values() if h.record["harnessName"] == name), None)

    def harness_by_arn(self, arn: str) -> _Harness:
        """A harness by its ARN; a ResourceNotFoundException otherwise."""
        for harness in self.harnesses.values():
            if harness.record["arn"] == arn:
                return harness
        raise _harness_not_found(arn)

    def harness_by_runtime(self, arn: str) -> _Harness:
        """A harness by the ARN of the runtime behind it. The runtime operations take only
        that ARN (``agentRuntimeArn``); a harness's own ARN is refused, as by the service."""
        for harness in self.harnesses.values():
            runtime = harness.record["environment"]["agentCoreRuntimeEnvironment"]
            if arn == runtime["agentRuntimeArn"]:
                return harness
            if arn == harness.record["arn"]:
                raise _AwsError(
                    404,
                    "ResourceNotFoundException",
                    f"Runtime not found: {arn} is a harness; the runtime operations take the "
                    "agentRuntimeArn of its environment (GetHarness)",
                )
        raise _AwsError(404, "ResourceNotFoundException", f"Runtime not found: {arn}")
