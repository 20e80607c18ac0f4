"""``transport._json.loads`` parses a str the way ``json.loads`` does, whichever path it takes."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from req_managed_agents.transport._json import loads

values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=12,
)
# Around a document: nothing (the usual frame), whitespace, a BOM, junk after it.
edges = st.sampled_from(["", " ", "\n", "\t \r\n", "\ufeff", "x", ",", "]", "{}", "0"])


def outcome(parse: Any, text: str) -> tuple[str, Any]:
    try:
        return "value", parse(text)
    except ValueError:
        return "error", None


@settings(max_examples=300, deadline=None)
@given(values, edges, edges)
def test_a_document_parses_as_json_loads_parses_it(value: Any, before: str, after: str) -> None:
    text = before + json.dumps(value) + after
    assert outcome(loads, text) == outcome(json.loads, text)


def test_a_document_cut_short_or_empty_is_an_error() -> None:
    for text in ("", " ", '{"a": 1', "[1,", "\ufeff{}"):
        assert outcome(loads, text) == ("error", None)
