from __future__ import annotations

import dataclasses
import enum
from typing import Annotated, Any, Literal, Optional, TypedDict, Union

import pytest

from req_managed_agents import ToolContext, ToolResult, Tools
from req_managed_agents.model import SessionInfo, ToolUse
from req_managed_agents.tools import Handler
from req_managed_agents.tools._handler import invoke_tool
from req_managed_agents.tools._schema import parse_docstring

INFO = SessionInfo("sesn_1", "test")


class Mode(enum.Enum):
    FAST = "fast"
    SLOW = "slow"


class Point(TypedDict):
    x: int
    y: int


@dataclasses.dataclass
class Box:
    """A box.

    Attributes:
        width: Width in centimetres.
    """

    width: float
    label: str = "box"


class Unit(enum.Enum):
    C = "celsius"


@dataclasses.dataclass
class Reading:
    value: float
    unit: Unit


@dataclasses.dataclass
class Tree:
    children: list[Tree]


@dataclasses.dataclass
class Scaled:
    value: float
    factor: dataclasses.InitVar[float]


def context(tool_use_id: str = "tu_1") -> ToolContext:
    return ToolContext(tool_use_id, INFO)


def schema_of(function: Any) -> dict[str, Any]:
    return Tools([function]).schemas()[0]["input_schema"]


def test_primitive_hints_map_to_json_types_and_required_follows_defaults() -> None:
    def f(s: str, i: int, x: float, b: bool = False) -> str:
        """Do it."""
        return ""

    assert schema_of(f) == {
        "type": "object",
        "properties": {
            "s": {"type": "string"},
            "i": {"type": "integer"},
            "x": {"type": "number"},
            "b": {"type": "boolean", "default": False},
        },
        "required": ["s", "i", "x"],
        "additionalProperties": False,
    }


def test_optional_literal_and_enum_hints() -> None:
    def f(
        a: Optional[int],  # noqa: UP045 - users still write the typing spelling
        a2: int | None,
        choice: Literal["x", "y"],
        mode: Mode = Mode.FAST,
        either: Union[int, str, None] = None,  # noqa: UP007 - the typing spelling on purpose
    ) -> str:
        """Do it."""
        return ""

    props = schema_of(f)["properties"]
    assert props["a"] == props["a2"] == {"type": ["integer", "null"]}
    assert props["choice"] == {"enum": ["x", "y"], "type": "string"}
    assert props["mode"] == {"enum": ["fast", "slow"], "type": "string", "default": "fast"}
    assert props["either"] == {"type": ["integer", "string", "null"], "default": None}


def test_containers_typeddict_and_dataclass_parameters() -> None:
    def f(tags: list[str], scores: dict[str, float], where: Point, box: Box) -> str:
        """Do it."""
        return ""

    props = schema_of(f)["properties"]
    assert props["tags"] == {"type": "array", "items": {"type": "string"}}
    assert props["scores"] == {"type": "object", "additionalProperties": {"type": "number"}}
    assert props["where"] == {
        "type": "object",
        "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
        "required": ["x", "y"],
        "additionalProperties": False,
    }
    assert props["box"] == {
        "type": "object",
        "properties": {
            "width": {"type": "number", "description": "Width in centimetres."},
            "label": {"type": "string"},
        },
        "required": ["width"],
        "additionalProperties": False,
    }


def test_descriptions_come_from_the_docstring() -> None:
    def lookup(city: str, days: int = 1) -> str:
        """Look up the weather forecast.

        Uses the national service; this second paragraph is not part of the description.

        Args:
            city: The city name,
                in English.
            days (int): How many days ahead.

        Returns:
            The forecast.
        """
        return ""

    declaration = Tools([lookup]).schemas()[0]
    assert declaration["name"] == "lookup"
    assert declaration["description"] == "Look up the weather forecast."
    props = declaration["input_schema"]["properties"]
    assert props["city"]["description"] == "The city name, in English."
    assert props["days"]["description"] == "How many days ahead."


def test_annotated_strings_describe_a_parameter() -> None:
    def f(n: Annotated[int, "How many."]) -> str:
        """Do it."""
        return ""

    assert schema_of(f)["properties"]["n"] == {"type": "integer", "description": "How many."}


def test_rest_style_params_are_understood() -> None:
    summary, params = parse_docstring(
        """Fetch a page.

        :param url: The address
            to fetch.
        :param int retries: How often.
        """
    )
    assert summary == "Fetch a page."
    assert params == {"url": "The address to fetch.", "retries": "How often."}


def test_context_parameter_is_injected_and_hidden_from_the_agent() -> None:
    seen: list[ToolContext] = []

    def whoami(ctx: ToolContext) -> str:
        """Report the session."""
        seen.append(ctx)
        return ctx.session.session_id

    tools = Tools([whoami])
    assert tools.schemas()[0]["input_schema"]["properties"] == {}
    assert tools.handle_tool_call("whoami", {}, context("tu_9")) == "sesn_1"
    assert seen[0].tool_use_id == "tu_9"


def test_arguments_are_coerced_into_dataclasses_and_enums() -> None:
    def record(reading: Reading, history: list[Reading]) -> str:
        """Record a reading."""
        assert isinstance(reading.unit, Unit)
        assert all(isinstance(item, Reading) for item in history)
        return f"{reading.value} {reading.unit.value} after {len(history)}"

    tools = Tools([record])
    out = tools.handle_tool_call(
        "record",
        {
            "reading": {"value": 21.5, "unit": "celsius"},
            "history": [{"value": 1, "unit": "celsius"}],
        },
        context(),
    )
    assert out == "21.5 celsius after 1"


def test_return_values_become_text() -> None:
    tools = Tools()

    @tools.tool
    def as_dict() -> dict[str, int]:
        """A dict."""
        return {"a": 1}

    @tools.tool
    def as_none() -> None:
        """Nothing."""

    @tools.tool
    def as_result(ctx: ToolContext) -> ToolResult:
        """An explicit error."""
        return ToolResult(ctx.tool_use_id, "nope", is_error=True)

    assert tools.handle_tool_call("as_dict", {}, context()) == '{"a": 1}'
    assert tools.handle_tool_call("as_none", {}, context()) == ""
    assert tools.handle_tool_call("as_result", {}, context()) == ToolResult("tu_1", "nope", True)


def test_decorator_with_options_and_list_constructor() -> None:
    tools = Tools()

    @tools.tool(name="renamed", description="Overridden.")
    def original() -> str:
        return "x"

    assert tools.schemas()[0]["name"] == "renamed"
    assert tools.schemas()[0]["description"] == "Overridden."
    assert original() == "x"
    assert "renamed" in tools
    assert len(tools) == 1


@pytest.mark.parametrize(
    ("function_source", "message"),
    [
        ("def f(x):\n    'Doc.'\n", "has no type hint"),
        ("def f(x: complex) -> str:\n    'Doc.'\n", "has no JSON Schema"),
        ("def f(*xs: int) -> str:\n    'Doc.'\n", "named parameters only"),
        ("def f(x: dict[int, str]) -> str:\n    'Doc.'\n", "keys are strings"),
        ("def f(x: set) -> str:\n    'Doc.'\n", "set items must be hashable"),
        ("def f(x: set[list[int]]) -> str:\n    'Doc.'\n", "set items must be hashable"),
    ],
)
def test_unsupported_signatures_fail_at_registration(function_source: str, message: str) -> None:
    namespace: dict[str, Any] = {}
    exec(function_source, namespace)
    with pytest.raises(TypeError, match=message):
        Tools([namespace["f"]])


def test_hints_whose_values_json_cannot_build_fail_at_registration() -> None:
    def grow(tree: Tree) -> str:
        """Doc."""
        return ""

    def scale(scaled: Scaled) -> str:
        """Doc."""
        return ""

    def boxes(items: set[Box]) -> str:
        """Doc."""
        return ""

    with pytest.raises(TypeError, match="contains itself"):
        Tools([grow])
    with pytest.raises(TypeError, match="also needs factor, which is not a field"):
        Tools([scale])
    with pytest.raises(TypeError, match="set items must be hashable"):
        Tools([boxes])


def test_registration_rejects_bad_names_duplicates_and_missing_descriptions() -> None:
    def f() -> str:
        """Doc."""
        return ""

    def undocumented() -> str:
        return ""

    tools = Tools([f])
    with pytest.raises(ValueError, match="already registered"):
        tools.add(f)
    with pytest.raises(ValueError, match="letters, digits"):
        tools.add(f, name="has space")
    with pytest.raises(ValueError, match="needs a description"):
        tools.add(undocumented)


def test_unknown_tool_is_an_error_result_naming_the_known_ones() -> None:
    def known() -> str:
        """Doc."""
        return ""

    result = Tools([known]).handle_tool_call("missing", {}, context())
    assert isinstance(result, ToolResult)
    assert result.is_error
    assert "missing" in result.content
    assert "known" in result.content


def test_arguments_that_do_not_fit_are_an_error_result_and_the_tool_does_not_run() -> None:
    calls: list[int] = []

    def add(a: int, b: int) -> int:
        """Add."""
        calls.append(a)
        return a + b

    tools = Tools([add])
    result = tools.handle_tool_call("add", {"a": 1, "c": 2}, context())
    assert isinstance(result, ToolResult)
    assert result.is_error
    assert result.content == "invalid arguments for tool 'add': missing b; unexpected c"
    result = tools.handle_tool_call("add", {"a": 1, "b": "2"}, context())
    assert result == ToolResult(
        "tu_1", "invalid arguments for tool 'add': b: expected integer, got '2'", is_error=True
    )
    assert calls == []


def test_tools_is_a_handler() -> None:
    assert isinstance(Tools(), Handler)


def test_invoke_tool_turns_an_exception_into_an_error_result() -> None:
    def explode() -> str:
        """Fail."""
        raise RuntimeError("disk on fire")

    result = invoke_tool(Tools([explode]), ToolUse("tu_1", "explode", {}), context())
    assert result == ToolResult("tu_1", "RuntimeError: disk on fire", is_error=True)
    assert "Traceback" not in result.content


def test_invoke_tool_reports_unknown_tools_without_raising() -> None:
    result = invoke_tool(Tools(), ToolUse("tu_1", "nope", {}), context())
    assert result.is_error
    assert result.tool_use_id == "tu_1"


def test_invoke_tool_fixes_a_result_addressed_to_the_wrong_call() -> None:
    class Sloppy:
        def handle_tool_call(self, name: str, input: Any, context: ToolContext) -> ToolResult:
            return ToolResult("other", "fine")

    assert invoke_tool(Sloppy(), ToolUse("tu_1", "x", {}), context()) == ToolResult("tu_1", "fine")


def test_invoke_tool_rejects_a_handler_returning_a_non_string() -> None:
    class Wrong:
        def handle_tool_call(self, name: str, input: Any, context: ToolContext) -> Any:
            return 42

    result = invoke_tool(Wrong(), ToolUse("tu_1", "x", {}), context())
    assert result.is_error
    assert "returned int" in result.content
