"""Pytest plugin providing the ``claude_emulator``, ``claude_bedrock_emulator``,
``agentcore_emulator``, ``openai_emulator`` and ``gemini_emulator`` fixtures.

Registered as a ``pytest11`` entry point, so installing the SDK makes the fixtures available
to every test suite without a conftest import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from req_managed_agents.testing import (
    AgentCoreEmulator,
    ClaudeEmulator,
    GeminiEmulator,
    OpenAIAgentsEmulator,
)

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture
def claude_emulator() -> Iterator[ClaudeEmulator]:
    """A started :class:`ClaudeEmulator` with default settings, closed after the test."""
    with ClaudeEmulator() as emulator:
        yield emulator


@pytest.fixture
def claude_bedrock_emulator() -> Iterator[ClaudeEmulator]:
    """A started :class:`ClaudeEmulator` of Claude on Amazon Bedrock (``flavor="bedrock"``,
    region ``us-east-1``), closed after the test: its ``provider()`` is a
    ``ClaudeManagedAgentsBedrock`` whose every request it checks for a SigV4 signature.

    Needs botocore (the ``aws`` extra), which only this fixture's use imports.
    """
    with ClaudeEmulator(flavor="bedrock") as emulator:
        yield emulator


@pytest.fixture
def agentcore_emulator() -> Iterator[AgentCoreEmulator]:
    """A started :class:`AgentCoreEmulator` with default settings, closed after the test.

    Needs botocore (the ``aws`` extra), which only this fixture's use imports.
    """
    with AgentCoreEmulator() as emulator:
        yield emulator


@pytest.fixture
def openai_emulator() -> Iterator[OpenAIAgentsEmulator]:
    """A started :class:`OpenAIAgentsEmulator` with default settings, closed after the test."""
    with OpenAIAgentsEmulator() as emulator:
        yield emulator


@pytest.fixture
def gemini_emulator() -> Iterator[GeminiEmulator]:
    """A started :class:`GeminiEmulator` with default settings, closed after the test."""
    with GeminiEmulator() as emulator:
        yield emulator
