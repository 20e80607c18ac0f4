from __future__ import annotations

import hashlib
import json
import random
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from req_managed_agents.provisioner._identity import (
    AGENTCORE_NAMES,
    CLAUDE_NAMES,
    GEMINI_NAMES,
    NamePolicy,
    canonical_json,
    compose_name,
    digest,
    digest8,
    split_name,
)

AGENTCORE_NAME = re.compile(r"[a-zA-Z][a-zA-Z0-9_]{0,39}")
HEX64 = re.compile(r"[0-9a-f]{64}")

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=15,
)


def reorder(value: Any, rng: random.Random) -> Any:
    """The same JSON value with every object's keys inserted in a random order."""
    if isinstance(value, dict):
        keys = list(value)
        rng.shuffle(keys)
        return {key: reorder(value[key], rng) for key in keys}
    if isinstance(value, list):
        return [reorder(item, rng) for item in value]
    return value


# --- canonical JSON ---------------------------------------------------------------------


def test_canonical_json_sorts_keys_at_every_level() -> None:
    first = {"b": 1, "a": {"y": 2, "x": 3}}
    second = {"a": {"x": 3, "y": 2}, "b": 1}
    assert canonical_json(first) == b'{"a":{"x":3,"y":2},"b":1}'
    assert canonical_json(second) == canonical_json(first)


def test_canonical_json_is_compact() -> None:
    assert canonical_json({"k": [1, 2, {"n": None}], "t": True}) == (
        b'{"k":[1,2,{"n":null}],"t":true}'
    )


def test_canonical_json_is_utf8_with_non_ascii_kept() -> None:
    encoded = canonical_json({"name": "caf\u00e9 \u65e5\u672c \U0001f600"})
    assert encoded == '{"name":"caf\u00e9 \u65e5\u672c \U0001f600"}'.encode()
    assert b"\\u" not in encoded


def test_lists_keep_their_order_and_tuples_encode_as_lists() -> None:
    assert canonical_json([2, 1]) == b"[2,1]"
    assert digest([1, 2]) != digest([2, 1])
    assert canonical_json(("a", ("b",))) == canonical_json(["a", ["b"]])


@pytest.mark.parametrize(
    ("left", "right"),
    [
        (1.0, 1),
        ({"n": 2.0}, {"n": 2}),
        ([0.0, -0.0], [0, 0]),
        ({"deep": [{"x": 1e3}]}, {"deep": [{"x": 1000}]}),
    ],
)
def test_integral_floats_hash_like_integers(left: Any, right: Any) -> None:
    assert canonical_json(left) == canonical_json(right)
    assert digest(left) == digest(right)


def test_non_integral_floats_use_shortest_repr_and_stay_distinct() -> None:
    assert canonical_json(0.1) == b"0.1"
    assert canonical_json(2.5) == b"2.5"
    assert digest(1.5) != digest(1)


def test_booleans_are_not_integers() -> None:
    assert canonical_json(True) == b"true"
    assert digest(True) != digest(1)
    assert digest(False) != digest(0)


@pytest.mark.parametrize(
    "value",
    [
        float("nan"),
        float("inf"),
        float("-inf"),
        {"nested": [1, float("nan")]},
        b"bytes",
        bytearray(b"bytes"),
        {1, 2},
        frozenset({"a"}),
        {1: "non-string key"},
        {("tuple",): "key"},
        {"ok": {None: "key"}},
        object(),
        {"when": 1j},
    ],
    ids=lambda value: type(value).__name__,  # stable across processes (no addresses)
)
def test_values_json_cannot_express_raise_value_error(value: Any) -> None:
    # Every message starts with the JSON path of the offending value.
    with pytest.raises(ValueError, match=r"^\$"):
        canonical_json(value)
    with pytest.raises(ValueError, match=r"^\$"):
        digest(value)


def test_memoryview_is_rejected_like_bytes() -> None:
    with pytest.raises(ValueError, match="not JSON"):
        canonical_json(memoryview(b"ab"))


def test_error_message_names_the_offending_path() -> None:
    with pytest.raises(ValueError, match=r"\$\.config\.ratio"):
        canonical_json({"config": {"ratio": float("nan")}})


# --- digest -------------------------------------------------------------------------------


def test_digest_is_pinned_to_sha256_of_the_canonical_bytes() -> None:
    content = {"c": {"d": True}, "b": None, "a": [1.0, 2.5, "\u00e9"]}
    expected_bytes = b'{"a":[1,2.5,"\xc3\xa9"],"b":null,"c":{"d":true}}'
    assert canonical_json(content) == expected_bytes
    # Computed once with hashlib.sha256(expected_bytes).hexdigest(); pinned so the identity
    # contract (and so every provider-side name) cannot drift silently.
    pinned = "86af810862901a945a2169bdb3627e3a014d2f7ef1e2395a756eaeb1f3fd2c29"
    assert hashlib.sha256(expected_bytes).hexdigest() == pinned
    assert digest(content) == pinned
    assert digest8(content) == "86af8108"


def test_empty_object_digest() -> None:
    assert digest({}) == "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"


@settings(max_examples=60)
@given(json_values)
def test_digest_is_64_hex_of_json_that_parses_back(value: Any) -> None:
    full = digest(value)
    assert HEX64.fullmatch(full)
    assert digest8(value) == full[:8]
    assert digest(value) == full  # stable across calls
    # Python compares 1 == 1.0 and -0.0 == 0, so normalisation keeps the value equal.
    assert json.loads(canonical_json(value).decode("utf-8")) == value


@settings(max_examples=60)
@given(json_values, st.randoms(use_true_random=False))
def test_digest_is_invariant_under_key_reordering(value: Any, rng: random.Random) -> None:
    shuffled = reorder(value, rng)
    assert canonical_json(shuffled) == canonical_json(value)
    assert digest(shuffled) == digest(value)


# --- compose_name ---------------------------------------------------------------------------


def test_short_base_is_base_underscore_digest8() -> None:
    assert compose_name("data_analysis", "1234abcd", CLAUDE_NAMES) == "data_analysis_1234abcd"
    assert compose_name("data_analysis", "1234abcd", AGENTCORE_NAMES) == "data_analysis_1234abcd"


@pytest.mark.parametrize(
    ("base", "expected"),
    [
        ("conformance-agent", "conformance_agent_14dcbc88"),
        ("my agent.v2", "my_agent_v2_14dcbc88"),
        ("1st-agent", "a1st_agent_14dcbc88"),
        ("_private", "a_private_14dcbc88"),
        ("-dash", "a_dash_14dcbc88"),
        ("\u00e9t\u00e9", "a_t__14dcbc88"),
        ("Agent", "Agent_14dcbc88"),
    ],
)
def test_agentcore_policy_fits_the_base(base: str, expected: str) -> None:
    assert compose_name(base, "14dcbc88", AGENTCORE_NAMES) == expected


@given(st.text(min_size=1), st.text())
def test_agentcore_names_always_satisfy_the_harness_pattern(base: str, content: str) -> None:
    d8 = digest8(content)
    name = compose_name(base, d8, AGENTCORE_NAMES)
    assert AGENTCORE_NAME.fullmatch(name), name
    assert name.endswith("_" + d8)
    assert split_name(name) == (name[:-9], d8)


def test_long_bases_sharing_a_prefix_get_different_names() -> None:
    prefix = "p" * 100
    d8 = "0badcafe"
    first = compose_name(prefix + "x", d8, AGENTCORE_NAMES)
    second = compose_name(prefix + "y", d8, AGENTCORE_NAMES)
    assert first != second
    for name, base in ((first, prefix + "x"), (second, prefix + "y")):
        assert len(name) == 40
        assert AGENTCORE_NAME.fullmatch(name)
        # The kept beginning, "_" + 6 hex of a hash of the whole base, then the full digest.
        shortened = re.fullmatch(r"(p+)_([0-9a-f]{6})_0badcafe", name)
        assert shortened is not None, name
        assert shortened[2] == hashlib.sha256(base.encode()).hexdigest()[:6]
    assert compose_name(prefix + "x", d8, AGENTCORE_NAMES) == first  # deterministic


def test_long_bases_differing_only_in_invalid_characters_stay_distinct() -> None:
    prefix = "agent" * 20
    first = compose_name(prefix + "-", "0badcafe", AGENTCORE_NAMES)
    second = compose_name(prefix + ".", "0badcafe", AGENTCORE_NAMES)
    assert first != second


def test_the_digest_is_never_truncated() -> None:
    for length in (1, 30, 31, 32, 40, 41, 300):
        name = compose_name("b" * length, "deadbeef", AGENTCORE_NAMES)
        assert name.endswith("_deadbeef")
        assert len(name) <= 40
    name = compose_name("b" * 300, "deadbeef", CLAUDE_NAMES)
    assert name.endswith("_deadbeef")
    assert len(name) == 256


def test_agentcore_boundary_between_kept_and_shortened_base() -> None:
    # 40 - len("_1234abcd") leaves 31 characters for the base.
    assert compose_name("b" * 31, "1234abcd", AGENTCORE_NAMES) == "b" * 31 + "_1234abcd"
    shortened = compose_name("b" * 32, "1234abcd", AGENTCORE_NAMES)
    assert len(shortened) == 40
    assert not shortened.startswith("b" * 31)
    # The "a" prefix counts against the budget.
    prefixed = compose_name("1" * 31, "1234abcd", AGENTCORE_NAMES)
    assert len(prefixed) == 40
    assert AGENTCORE_NAME.fullmatch(prefixed)


@given(st.text(min_size=1, max_size=247))
def test_claude_policy_leaves_bases_up_to_247_chars_byte_identical(base: str) -> None:
    assert compose_name(base, "1234abcd", CLAUDE_NAMES) == f"{base}_1234abcd"


def test_claude_policy_boundary() -> None:
    base = "\u00e9-x " * 61 + "abc"  # 247 characters of mixed, non-ASCII text
    assert len(base) == 247
    assert compose_name(base, "1234abcd", CLAUDE_NAMES) == base + "_1234abcd"
    longer = compose_name(base + "z", "1234abcd", CLAUDE_NAMES)
    assert len(longer) == 256
    assert longer.endswith("_1234abcd")


@given(st.text(min_size=1, max_size=600))
def test_claude_names_never_exceed_256(base: str) -> None:
    name = compose_name(base, "1234abcd", CLAUDE_NAMES)
    assert len(name) <= 256
    assert name.endswith("_1234abcd")


def test_empty_base_is_rejected() -> None:
    with pytest.raises(ValueError, match="empty"):
        compose_name("", "1234abcd", AGENTCORE_NAMES)


def test_a_policy_too_small_for_digest_and_hash_is_rejected() -> None:
    with pytest.raises(ValueError, match="no room"):
        compose_name("base", "1234abcd", NamePolicy(max_length=16))
    # 17 leaves exactly 8: room for one kept character, "_" and the 6-hex hash.
    assert compose_name("b", "1234abcd", NamePolicy(max_length=17)) == "b_1234abcd"
    assert len(compose_name("b" * 50, "1234abcd", NamePolicy(max_length=17))) == 17


# --- split_name ---------------------------------------------------------------------------


def test_split_name_finds_base_and_digest() -> None:
    assert split_name("data_analysis_1234abcd") == ("data_analysis", "1234abcd")
    assert split_name("a_b_c_00000000_1234abcd") == ("a_b_c_00000000", "1234abcd")


@given(
    st.text(
        alphabet=st.characters(exclude_categories=["Cs"], exclude_characters="\n"),
        min_size=1,
        max_size=247,
    )
)
def test_split_name_round_trips_composed_claude_names(base: str) -> None:
    d8 = digest8(base)
    assert split_name(compose_name(base, d8, CLAUDE_NAMES)) == (base, d8)


@pytest.mark.parametrize(
    "name",
    [
        "data_analysis",
        "data_1234ABCD",
        "data_1234abc",
        "data_1234abcde",
        "data-1234abcd",
        "data1234abcd",
        "_1234abcd",
        "1234abcd",
        "data_1234abcd_",
        "data_1234abcg",
        "",
    ],
)
def test_split_name_rejects_names_that_are_not_content_addressed(name: str) -> None:
    assert split_name(name) is None


def test_split_name_rejects_a_trailing_newline() -> None:
    assert split_name("data_1234abcd\n") is None


@pytest.mark.parametrize("base", ["weather", "Weather_Bot", "9 lives!", "x" * 200, "ÄÖ-é"])
def test_gemini_names_are_agent_ids_ending_with_the_digest(base: str) -> None:
    """A Gemini agent's content address is its id: 1 to 63 lowercase letters, digits and
    dashes, starting with a letter, not ending with a dash."""
    name = compose_name(base, "0a1b2c3d", GEMINI_NAMES)
    assert re.fullmatch(r"[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?", name), name
    assert name.endswith("-0a1b2c3d")
    assert name != compose_name(base + "2", "0a1b2c3d", GEMINI_NAMES)
