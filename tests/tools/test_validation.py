"""Tool arguments are held to the declared schema before the tool runs.

The model's input is untrusted: a value the schema does not allow must come back as an
``is_error`` result naming the field, and the function must not run.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import math
import time
from collections.abc import Callable
from typing import Any, Literal, Optional, TypedDict, Union

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from req_managed_agents import ToolContext, ToolResult, Tools
from req_managed_agents.model import SessionInfo
from req_managed_agents.tools._validation import (
    MAX_DEPTH,
    MAX_PROBLEMS,
    is_valid,
    preview,
    validate,
)

CONTEXT = ToolContext("tu_1", SessionInfo("sesn_1", "test"))


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.Enum):
    LOW = 1
    HIGH = 2


@dataclasses.dataclass
class Retry:
    attempts: int
    backoff: float = 1.0


@dataclasses.dataclass
class Config:
    retries: int
    retry: Retry | None = None
    color: Color = Color.RED


class Point(TypedDict):
    x: int
    y: int


class Labelled(TypedDict):
    color: Color
    at: Point


@dataclasses.dataclass(frozen=True)
class Cell:
    row: int
    column: int


class Recorder:
    """Registers a stub's signature as a tool and records every call that reaches it."""

    def __init__(self, stub: Callable[..., Any]) -> None:
        self.calls: list[dict[str, Any]] = []
        self.name = stub.__name__

        @functools.wraps(stub)
        def record(**kwargs: Any) -> str:
            self.calls.append(kwargs)
            return "ran"

        self.tools = Tools()
        self.tools.add(record, description="Record the call.")

    def __call__(self, **arguments: Any) -> str | ToolResult:
        return self.tools.handle_tool_call(self.name, arguments, CONTEXT)

    def error(self, **arguments: Any) -> str:
        """The error text for arguments that must be refused; fails if the tool ran."""
        result = self(**arguments)
        assert isinstance(result, ToolResult), result
        assert result.is_error
        assert self.calls == []
        return result.content.removeprefix(f"invalid arguments for tool {self.name!r}: ")

    def value(self, **arguments: Any) -> dict[str, Any]:
        """What the function received for arguments that must be accepted."""
        assert self(**arguments) == "ran"
        return self.calls.pop()


# The three reported cases.


def test_a_literal_outside_its_choices_is_refused_and_the_tool_does_not_run() -> None:
    def deploy(mode: Literal["dry-run", "apply"]) -> None: ...

    tool = Recorder(deploy)
    assert tool.error(mode="apply; really") == (
        "mode: expected one of 'dry-run', 'apply', got 'apply; really'"
    )
    assert tool.value(mode="apply") == {"mode": "apply"}


def test_an_int_given_a_string_is_refused() -> None:
    def purge(count: int) -> None: ...

    tool = Recorder(purge)
    assert tool.error(count="all") == "count: expected integer, got 'all'"
    assert tool.value(count=3) == {"count": 3}


def test_a_dataclass_given_a_string_is_refused() -> None:
    def configure(config: Config) -> None: ...

    tool = Recorder(configure)
    assert tool.error(config="fast") == "config: expected object, got 'fast'"
    assert tool.value(config={"retries": 2}) == {"config": Config(2)}


def test_all_problems_come_back_in_one_message() -> None:
    def deploy(mode: Literal["dry-run", "apply"], count: int, config: Config) -> None: ...

    tool = Recorder(deploy)
    assert tool.error(mode="apply; really", count="all", config="fast") == (
        "mode: expected one of 'dry-run', 'apply', got 'apply; really'; "
        "count: expected integer, got 'all'; config: expected object, got 'fast'"
    )


# JSON types.


def test_bool_is_not_an_integer_nor_a_number_and_numbers_are_not_bools() -> None:
    def f(n: int = 0, x: float = 0.0, flag: bool = False) -> None: ...

    tool = Recorder(f)
    assert tool.error(n=True) == "n: expected integer, got True"
    assert tool.error(x=False) == "x: expected number, got False"
    assert tool.error(flag=1) == "flag: expected boolean, got 1"
    assert tool.value(n=1, x=2, flag=True) == {"n": 1, "x": 2, "flag": True}


def test_an_integral_float_is_not_an_integer() -> None:
    def f(n: int) -> None: ...

    # 2**53 + 1 cannot be a float: accepting floats would hand the tool a different number.
    assert Recorder(f).error(n=3.0) == "n: expected integer, got 3.0"
    assert Recorder(f).value(n=2**53 + 1) == {"n": 2**53 + 1}


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_nan_and_infinities_are_not_numbers(bad: float) -> None:
    def f(x: float) -> None: ...

    assert Recorder(f).error(x=bad) == f"x: expected number, got {bad!r}"


def test_choices_tell_true_from_one_and_one_from_one_point_zero() -> None:
    def f(n: Literal[1, 2] = 1, flag: Literal[True] = True, level: Level = Level.LOW) -> None: ...

    tool = Recorder(f)
    assert tool.error(n=True) == "n: expected one of 1, 2, got True"
    assert tool.error(flag=1) == "flag: expected True, got 1"
    assert tool.error(level=1.0) == "level: expected one of 1, 2, got 1.0"
    assert tool.value(level=2) == {"level": Level.HIGH}


def test_literal_with_none_allows_null() -> None:
    def f(choice: Literal["a", None]) -> None: ...

    assert Recorder(f).tools.schemas()[0]["input_schema"]["properties"]["choice"] == {
        "enum": ["a", None]
    }
    assert Recorder(f).value(choice=None) == {"choice": None}


def test_arguments_must_be_an_object() -> None:
    def f() -> None: ...

    tool = Recorder(f)
    result = tool.tools.handle_tool_call("f", [1, 2], CONTEXT)  # type: ignore[arg-type]
    assert result == ToolResult(
        "tu_1", "invalid arguments for tool 'f': expected object, got [1, 2]", is_error=True
    )
    assert tool.calls == []


# Paths into nested values.


def test_nested_paths_name_list_items_dict_keys_and_record_fields() -> None:
    def f(
        items: list[int] = [],  # noqa: B006 - never mutated
        scores: dict[str, float] = {},  # noqa: B006
        where: Point | None = None,
        config: Config | None = None,
    ) -> None: ...

    tool = Recorder(f)
    assert tool.error(
        items=[1, 2, "3"],
        scores={"math": "A", "two words": None},
        where={"x": 1, "y": "2"},
        config={"retries": 1, "retry": {"attempts": "many"}},
    ) == (
        "items[2]: expected integer, got '3'; scores.math: expected number, got 'A'; "
        "scores['two words']: expected number, got None; where.y: expected integer, got '2'; "
        "config.retry.attempts: expected integer, got 'many'"
    )


def test_missing_and_unexpected_fields_at_a_nested_level() -> None:
    def f(config: Config) -> None: ...

    assert Recorder(f).error(config={"color": "red", "extra": 1}) == (
        "config: missing retries; config: unexpected extra"
    )
    assert Recorder(f).error(config={"retries": 1, "retry": {"attempts": 1, "jitter": 0}}) == (
        "config.retry: unexpected jitter"
    )


def test_optional_takes_null_and_the_type_but_nothing_else() -> None:
    def f(config: Config | None = None, n: int | None = 0, required: int = 0) -> None: ...

    tool = Recorder(f)
    assert tool.error(config="x", n="y", required=None) == (
        "config: expected object or null, got 'x'; n: expected integer or null, got 'y'; "
        "required: expected integer, got None"
    )
    assert tool.value(config=None, n=None) == {"config": None, "n": None}


def test_enum_values_are_checked_and_arrive_as_members() -> None:
    def f(color: Color, many: list[Color]) -> None: ...

    tool = Recorder(f)
    assert tool.error(color="blue", many=["red", "RED"]) == (
        "color: expected one of 'red', 'green', got 'blue'; "
        "many[1]: expected one of 'red', 'green', got 'RED'"
    )
    assert tool.value(color="green", many=["red"]) == {
        "color": Color.GREEN,
        "many": [Color.RED],
    }


def test_a_fixed_tuple_needs_exactly_its_items() -> None:
    def f(pair: tuple[int, str]) -> None: ...

    tool = Recorder(f)
    assert tool.error(pair=[1]) == "pair: expected exactly 2 items, got 1"
    assert tool.error(pair=[1, "a", 3]) == "pair: expected exactly 2 items, got 3"
    assert tool.error(pair=["a", 1]) == (
        "pair[0]: expected integer, got 'a'; pair[1]: expected string, got 1"
    )
    assert tool.value(pair=[1, "a"]) == {"pair": (1, "a")}


def test_set_items_must_be_unique_and_arrive_as_a_set() -> None:
    def f(tags: set[str], cells: frozenset[Cell] = frozenset()) -> None: ...

    tool = Recorder(f)
    assert tool.error(tags=["a", "b", "a"]) == "tags: items must be unique, but [2] repeats [0]"
    assert tool.error(tags=[], cells=[{"column": 1, "row": 2}, {"row": 2, "column": 1}]) == (
        "cells: items must be unique, but [1] repeats [0]"
    )
    assert tool.value(tags=["a", "b"], cells=[{"row": 1, "column": 2}]) == {
        "tags": {"a", "b"},
        "cells": frozenset({Cell(1, 2)}),
    }


# Valid input arrives as the hinted Python values.


def test_nested_dataclasses_optional_dataclasses_and_typeddict_enums_are_built() -> None:
    def f(config: Config, maybe: Config | None, labelled: Labelled) -> None: ...

    received = Recorder(f).value(
        config={"retries": 1, "retry": {"attempts": 3, "backoff": 0.5}, "color": "green"},
        maybe=None,
        labelled={"color": "red", "at": {"x": 1, "y": 2}},
    )
    assert received == {
        "config": Config(1, Retry(3, 0.5), Color.GREEN),
        "maybe": None,
        "labelled": {"color": Color.RED, "at": {"x": 1, "y": 2}},
    }


def test_a_union_builds_the_member_the_value_fits() -> None:
    def f(
        shape: Config | Point,
        level: Level | str = "none",
        code: Color | int = 0,
        tags: set[str] | None = None,
        raw: tuple = (),  # type: ignore[type-arg]
    ) -> None: ...

    tool = Recorder(f)
    assert tool.value(shape={"x": 1, "y": 2}, level="loud", code=5, tags=["a"], raw=[1, 2]) == {
        "shape": {"x": 1, "y": 2},
        "level": "loud",
        "code": 5,
        "tags": {"a"},
        "raw": (1, 2),
    }
    received = tool.value(shape={"retries": 1}, level=1, code="red")
    assert received == {"shape": Config(1), "level": Level.LOW, "code": Color.RED}


def test_a_union_reports_the_closest_alternative() -> None:
    def f(shape: Config | Point) -> None: ...

    assert Recorder(f).error(shape={"x": 1, "y": "2"}) == "shape.y: expected integer, got '2'"
    assert Recorder(f).error(shape=[1]) == "shape: expected object, got [1]"


def test_literal_enum_members_arrive_as_members() -> None:
    def f(color: Literal[Color.RED]) -> None: ...

    assert Recorder(f).value(color="red") == {"color": Color.RED}


# Hostile input.


def _nested_lists(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


def test_deep_nesting_is_an_error_result_not_a_recursion_error() -> None:
    def f(grid: list[list[int]]) -> None: ...

    assert Recorder(f).error(grid=_nested_lists(100_000)) == (
        "grid[0][0]: expected integer, got " + "[" * 40 + "..."
    )


def test_a_schema_that_refers_to_itself_stops_at_the_depth_limit() -> None:
    endless: dict[str, Any] = {"type": "array"}
    endless["items"] = endless
    (problem,) = validate(_nested_lists(100_000), endless)
    assert problem.endswith(f": nests deeper than {MAX_DEPTH} levels")
    assert problem.startswith("[0][0][0]")
    assert len(problem) < 200
    unique_anything = {"type": "array", "uniqueItems": True}
    deep = _nested_lists(100_000)
    assert validate([deep, deep], unique_anything) == [f"nests deeper than {MAX_DEPTH} levels"]
    assert validate(_nested_lists(MAX_DEPTH), endless) == []
    assert validate(_nested_lists(MAX_DEPTH + 1), endless) != []


def test_many_problems_are_cut_short_and_long_values_and_names_too() -> None:
    def f(items: list[int] = [], mode: Literal["a", "b"] = "a") -> None: ...  # noqa: B006

    tool = Recorder(f)
    problems = tool.error(items=["x"] * 100_000).split("; ")
    assert len(problems) == MAX_PROBLEMS + 1
    assert problems[0] == "items[0]: expected integer, got 'x'"
    assert problems[-1] == "..."
    text = tool.error(mode="b" * 1_000_000)
    assert text == f"mode: expected one of 'a', 'b', got '{'b' * 39}..."
    flood = {f"key{i}": i for i in range(100_000)}
    assert tool.error(**flood) == "unexpected key0, key1, key2, key3, key4 and 99995 more"
    assert tool.error(**{"x; mode: fine" * 10: 1}).startswith("unexpected 'x; mode: fine")


def test_huge_valid_input_is_checked_in_linear_time() -> None:
    def f(items: list[Point]) -> None: ...

    tool = Recorder(f)
    small = [{"x": i, "y": i} for i in range(5_000)]
    start = time.perf_counter()
    tool.value(items=small)
    small_time = time.perf_counter() - start
    start = time.perf_counter()
    tool.value(items=small * 20)
    assert time.perf_counter() - start < 20 * small_time * 5 + 0.5


def test_preview_is_bounded_for_huge_and_deep_values() -> None:
    assert preview("a" * 10**7) == "'" + "a" * 39 + "..."
    assert preview(list(range(10**6))).startswith("[0, 1, 2")
    assert len(preview({"k": _nested_lists(100_000)})) <= 43
    assert preview({"k": [True, None, 1.5]}) == "{'k': [True, None, 1.5]}"
    assert preview({1, 2}) == "<set>"
    assert len(preview(10**5000)) <= 43  # too many digits for int-to-str conversion


def test_unknown_keywords_in_a_hand_written_schema_are_ignored() -> None:
    schema = {"type": "string", "format": "email", "pattern": "^x", "minLength": 99}
    assert validate("anything", schema) == []
    assert validate(1, {"type": "mystery"}) == ["expected mystery, got 1"]
    assert validate(1, {"properties": "not a mapping", "items": 3}) == []
    assert validate({"a": 1}, {"type": "object", "properties": {"a": True}}) == []


def test_prefix_items_then_items_and_bounds() -> None:
    schema = {
        "type": "array",
        "prefixItems": [{"type": "string"}],
        "items": {"type": "integer"},
        "minItems": 1,
        "maxItems": 3,
    }
    assert validate(["a", 1, 2], schema) == []
    assert validate([], schema) == ["expected at least 1 item, got 0"]
    assert validate(["a", 1, "b", 3], schema) == [
        "expected at most 3 items, got 4",
        "[2]: expected integer, got 'b'",
    ]
    assert is_valid(["a"], schema)
    assert not is_valid([1], schema)


# Properties: the validator agrees with a plain reference on random hints and values.

SCALAR_HINTS: list[Any] = [str, int, float, bool, Literal["a", 1, True], Color, Level]


def _hints() -> st.SearchStrategy[Any]:
    scalars = st.sampled_from(SCALAR_HINTS)
    return st.recursive(
        scalars | scalars.map(lambda h: set[h]),  # type: ignore[valid-type]
        lambda inner: st.one_of(
            inner.map(lambda h: Optional[h]),
            st.tuples(inner, inner).map(lambda p: Union[p[0], p[1]]),
            inner.map(lambda h: list[h]),  # type: ignore[valid-type]
            inner.map(lambda h: dict[str, h]),  # type: ignore[valid-type]
            st.tuples(inner, inner).map(lambda p: tuple[p[0], p[1]]),  # type: ignore[valid-type]
        ),
        max_leaves=4,
    )


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _fits(hint: Any, value: Any) -> bool:
    """Reference: whether a JSON value is one the hint's schema allows."""
    origin: Any = getattr(hint, "__origin__", None)
    args: tuple[Any, ...] = getattr(hint, "__args__", ())
    if hint is type(None):
        return value is None
    if hint is str or hint is bool:
        return type(value) is hint
    if hint is int:
        return type(value) is int
    if hint is float:
        return type(value) in (int, float) and math.isfinite(value)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return any(_same(value, member.value) for member in hint)
    if origin is Literal:
        return any(_same(value, arg) for arg in args)
    if origin is Union:
        return _member(hint, value) is not None
    if origin is list:
        return type(value) is list and all(_fits(args[0], item) for item in value)
    if origin is set:
        if type(value) is not list or not all(_fits(args[0], item) for item in value):
            return False
        return len({(type(item), item) for item in value}) == len(value)
    if origin is dict:
        return type(value) is dict and all(_fits(args[1], item) for item in value.values())
    assert origin is tuple
    return (
        type(value) is list
        and len(value) == 2
        and all(_fits(arg, item) for arg, item in zip(args, value))
    )


def _member(union: Any, value: Any) -> Any:
    """Reference: the first member of a union that a JSON value fits (the one it is built as)."""
    return next((arg for arg in union.__args__ if _fits(arg, value)), None)


def _expected(hint: Any, sent: Any) -> Any:
    """Reference: the Python value a tool hinted ``hint`` should get for JSON that fits."""
    origin: Any = getattr(hint, "__origin__", None)
    args: tuple[Any, ...] = getattr(hint, "__args__", ())
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return next(member for member in hint if _same(member.value, sent))
    if origin is Union:
        return _expected(_member(hint, sent), sent)
    if origin in (list, set):
        return origin(_expected(args[0], item) for item in sent)
    if origin is dict:
        return {key: _expected(args[1], item) for key, item in sent.items()}
    if origin is tuple:
        return tuple(_expected(arg, item) for arg, item in zip(args, sent))
    return sent


def _identical(a: Any, b: Any) -> bool:
    """Equal and of the same types all the way down (``==`` alone says ``True == 1``)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(map(_identical, a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_identical(a[key], b[key]) for key in a)
    return bool(a == b)


def _valid_values(hint: Any) -> st.SearchStrategy[Any]:
    origin: Any = getattr(hint, "__origin__", None)
    args: tuple[Any, ...] = getattr(hint, "__args__", ())
    if hint is type(None):
        return st.none()
    if hint in (str, int, float, bool):
        base: dict[Any, st.SearchStrategy[Any]] = {
            str: st.text(max_size=4),
            int: st.integers(),
            float: st.floats(allow_nan=False, allow_infinity=False) | st.integers(),
            bool: st.booleans(),
        }
        return base[hint]
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return st.sampled_from([member.value for member in hint])
    if origin is Literal:
        return st.sampled_from(args)
    if origin is Union:
        return st.one_of(*(_valid_values(arg) for arg in args))
    if origin is list:
        return st.lists(_valid_values(args[0]), max_size=3)
    if origin is set:
        return st.lists(_valid_values(args[0]), max_size=3, unique_by=lambda v: (type(v), v))
    if origin is dict:
        return st.dictionaries(st.text(max_size=3), _valid_values(args[1]), max_size=3)
    return st.tuples(*(_valid_values(arg) for arg in args)).map(list)


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.floats()
    | st.sampled_from(["a", "red", 1, 2, True, 1.0])
    | st.text(max_size=2),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner),
    max_leaves=6,
)


def _tool_for(hint: Any) -> Recorder:
    def probe(value: Any) -> None: ...

    probe.__annotations__ = {"value": hint, "return": str}
    return Recorder(probe)


@settings(max_examples=300, deadline=None, database=None)
@given(st.data())
def test_values_built_from_the_hint_are_accepted_and_arrive_as_python_values(
    data: st.DataObject,
) -> None:
    hint = data.draw(_hints(), label="hint")
    value = data.draw(_valid_values(hint), label="value")
    received = _tool_for(hint).value(value=value)["value"]
    assert _identical(received, _expected(hint, value)), received


@settings(max_examples=500, deadline=None, database=None)
@given(_hints(), JSON)
def test_the_tool_runs_exactly_when_the_reference_says_the_value_fits(
    hint: Any, value: Any
) -> None:
    tool = _tool_for(hint)
    result = tool(value=value)
    if _fits(hint, value):
        assert result == "ran"
        assert _identical(tool.calls[0]["value"], _expected(hint, value))
    else:
        assert isinstance(result, ToolResult)
        assert result.is_error
        assert tool.calls == []
