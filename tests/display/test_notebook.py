"""How results, turns, usage, tool calls and tools look in Jupyter and in ``repr``."""

from __future__ import annotations

import dataclasses
import pickle
from typing import Any, Literal

import pytest

from req_managed_agents import SessionResult, ToolResult, Tools
from req_managed_agents.display._layout import ROW_LIMIT, TEXT_LIMIT, VALUE_LIMIT
from req_managed_agents.model import Document, Image, ToolUse, TurnResult, Usage

HOSTILE = "<script>alert('x')</script> & <b>bold</b>"


def _result(**changes: Any) -> SessionResult:
    result = SessionResult(
        terminal="end_turn",
        text="It is sunny in Paris.",
        usage=Usage(20, 10),
        turns=2,
        turn_usage=(Usage(10, 5), Usage(10, 5)),
        session_id="sesn_1",
        stop_reason={"type": "end_turn"},
        events=tuple({"type": "agent.message", "id": f"sevt_{n}"} for n in range(100)),
        tool_uses=(ToolUse("toolu_1", "get_weather", {"city": "Paris"}),),
        tool_results=(ToolResult("toolu_1", "sunny in Paris"),),
    )
    return dataclasses.replace(result, **changes)


def _hostile_result() -> SessionResult:
    return _result(
        text=HOSTILE,
        session_id="sesn_<1>",
        stop_reason={"type": "<end>"},
        tool_uses=(ToolUse("toolu_1", "<b>tool</b>", {"q": HOSTILE}, mcp_server="<mcp>"),),
        tool_results=(ToolResult("toolu_1", HOSTILE, is_error=True),),
        terminal_tool_input={"answer": HOSTILE},
        outcome={"result": "<satisfied>", "explanation": HOSTILE},
    )


def _renderings(value: Any) -> list[str]:
    return [value._repr_html_(), value._repr_markdown_()]


# --- escaping ---------------------------------------------------------------------------


@pytest.mark.parametrize("rendering", ["html", "markdown"])
def test_provider_and_tool_text_is_escaped(rendering: str) -> None:
    result = _hostile_result()
    page = result._repr_html_() if rendering == "html" else result._repr_markdown_()
    assert "<script" not in page
    assert "<b>" not in page
    assert "&lt;script&gt;" in page
    assert "&amp; &lt;b&gt;" in page
    assert "sesn_&lt;1&gt;" in page.replace("\\_", "_")


def test_every_displayed_value_escapes_what_it_was_given() -> None:
    tools = Tools()

    def lookup(query: str) -> str:
        return query

    tools.add(lookup, description=HOSTILE)
    values = [
        TurnResult(
            "requires_action",
            HOSTILE,
            tool_uses=(ToolUse("<id>", "t", {"<key>": HOSTILE}),),
            server_tool_uses=(ToolUse("s", "web_search", {"q": HOSTILE}),),
            confirmations=(ToolUse("c", "<rm>", {}, session_thread_id="<thread>"),),
            stop_reason=HOSTILE,
            outcome={"type": HOSTILE},
        ),
        ToolUse("<id>", "t", {"q": HOSTILE}),
        ToolResult("<id>", HOSTILE, is_error=True),
        tools,
    ]
    for value in values:
        for page in _renderings(value):
            assert "<script" not in page
            assert "&lt;script&gt;" in page
            assert "<b>" not in page


def test_markdown_keeps_the_agents_text_inert() -> None:
    text = "# Title\n- item\n1. first\n    indented\n*a* _b_ [l](u) `c` | ~d~ $x$ \\ end"
    page = _result(text=text)._repr_markdown_()
    quoted = [line for line in page.splitlines() if line.startswith(">")]
    assert quoted == [
        "> \\# Title  ",
        "> \\- item  ",
        "> 1\\. first  ",
        "> &nbsp;&nbsp;&nbsp;&nbsp;indented  ",
        "> \\*a\\* \\_b\\_ \\[l\\](u) \\`c\\` \\| \\~d\\~ \\$x\\$ \\\\ end  ",
    ]


def test_markdown_table_cells_stay_one_cell() -> None:
    result = _result(tool_results=(ToolResult("toolu_1", "a | b\nc"),))
    row = next(line for line in result._repr_markdown_().splitlines() if line.startswith("| 1 "))
    assert row.endswith("| a \\| b<br>c |")
    assert row.replace("\\|", "").count("|") == 5


def test_markdown_styles_keep_spaces_outside_their_markers() -> None:
    result = _result(tool_results=(ToolResult("toolu_1", "boom", is_error=True),))
    assert "**error**: boom" in result._repr_markdown_()


# --- content ----------------------------------------------------------------------------


def test_session_result_shows_text_tool_calls_turns_and_usage() -> None:
    html, markdown = _renderings(_result(usage=Usage(1200, 34, 5, 6)))
    for page in (html, markdown):
        assert "It is sunny in Paris." in page
        assert "end" in page
        assert "after 2 turns" in page
        assert "sunny in Paris" in page
        assert "1,245 tokens" in page
        assert "5 cache write" in page
        assert "100 raw events" in page
        assert "Usage per turn (2)" in page
    assert "<code>get_weather</code>" in html
    assert "<code>{&quot;city&quot;: &quot;Paris&quot;}</code>" in html
    assert '| 1 | <code>get\\_weather</code> | <code>{"city": "Paris"}</code> |' in markdown


def test_session_result_marks_failed_and_missing_tool_results() -> None:
    result = _result(
        tool_uses=(ToolUse("a", "one"), ToolUse("b", "two")),
        tool_results=(ToolResult("a", "boom", is_error=True, blocks=("boom", Image(b"png"))),),
    )
    html = result._repr_html_()
    assert '<strong style="color:#c62828">error</strong>: boom' in html
    assert "[1 image (3 bytes)]" in html
    assert "no result" in html


def test_session_result_shows_terminal_tool_input_and_outcome() -> None:
    result = _result(
        terminal_tool_input={"answer": 42},
        outcome={"type": "span.outcome_evaluation_end", "result": "satisfied", "explanation": "ok"},
    )
    html = result._repr_html_()
    assert "terminal tool input <code>{&quot;answer&quot;: 42}</code>" in html
    assert "outcome <strong>satisfied</strong>: ok" in html


def test_a_run_without_text_or_tools_says_so() -> None:
    html = _result(text="", tool_uses=(), tool_results=(), turn_usage=(Usage(),))._repr_html_()
    assert "(no final text)" in html
    assert "Tool calls" not in html
    assert "Usage per turn" not in html


def test_turn_result_shows_each_kind_of_call() -> None:
    turn = TurnResult(
        "requires_action",
        "Checking.",
        tool_uses=(ToolUse("toolu_1", "get_weather", {"city": "Paris"}),),
        server_tool_uses=(ToolUse("srv_1", "search", {"q": "x"}, mcp_server="web"),),
        confirmations=(ToolUse("conf_1", "delete_repo", {}, mcp_server="github"),),
        usage=Usage(3, 4),
        stop_reason={"type": "requires_action"},
    )
    html = turn._repr_html_()
    assert "requires_action" in html
    assert "Checking." in html
    assert "Tool calls to run here (1)" in html
    assert "Tools the provider ran (1)" in html
    assert "<code>search</code> on <code>web</code>" in html
    assert "Waiting for confirmation (1)" in html
    assert "<code>conf_1</code>" in html
    assert "7 tokens" in html


def test_usage_tool_use_and_tool_result_render_alone() -> None:
    assert "<strong>3 tokens</strong> (1 input, 2 output)" in Usage(1, 2)._repr_html_()
    assert "**Usage** **3 tokens** (1 input, 2 output)" in Usage(1, 2)._repr_markdown_()
    tool_use = ToolUse("toolu_1", "lookup", {"q": "x"}, session_thread_id="th_1")
    assert "<code>lookup</code> in thread <code>th_1</code>" in tool_use._repr_html_()
    answer = ToolResult.of_blocks("toolu_1", ["pages", Document(b"%PDF-1.7")])
    html = answer._repr_html_()
    assert "1 document (8 bytes)" in html
    assert "pages" in html
    assert "error" not in html


def test_tools_list_their_parameters_and_descriptions() -> None:
    tools = Tools()

    @tools.tool
    def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> str:
        """Current weather for a city."""
        return city

    html, markdown = _renderings(tools)
    assert "<strong>Tools</strong> 1 tool" in html
    assert "city: string, unit?: &quot;celsius&quot; | &quot;fahrenheit&quot;" in html
    assert "Current weather for a city." in html
    assert '<code>city: string, unit?: "celsius" \\| "fahrenheit"</code>' in markdown
    assert "0 tools" in Tools()._repr_html_()


# --- bounds -----------------------------------------------------------------------------


def test_long_texts_and_inputs_are_cut_saying_so() -> None:
    long_text = "a" * (TEXT_LIMIT * 3)
    result = _result(
        text=long_text,
        tool_uses=(ToolUse("toolu_1", "get_weather", {"city": "b" * (VALUE_LIMIT * 10)}),),
        tool_results=(ToolResult("toolu_1", "c" * (VALUE_LIMIT * 10)),),
    )
    for page in _renderings(result):
        assert len(page) < TEXT_LIMIT + 3 * VALUE_LIMIT + 3000
        assert f"cut, {TEXT_LIMIT * 3:,} characters in all" in page
        assert f"cut, {VALUE_LIMIT * 10:,} characters in all" in page
        assert "b" * (VALUE_LIMIT - 20) in page  # the input's JSON, cut
        assert "b" * VALUE_LIMIT not in page


def test_long_tables_show_the_first_rows_and_where_the_rest_are() -> None:
    calls = tuple(ToolUse(f"toolu_{n}", "get_weather", {"n": n}) for n in range(ROW_LIMIT + 75))
    result = _result(tool_uses=calls, tool_results=(), turn_usage=(Usage(1),) * 200, turns=200)
    html, markdown = _renderings(result)
    assert f"Tool calls ({ROW_LIMIT + 75})" in html
    assert html.count("<code>get_weather</code>") == ROW_LIMIT
    assert "… 75 more, all in" in html
    assert "<code>.tool_uses</code>" in html
    assert "… 175 more, all in" in html
    assert "<strong>all</strong>" in html
    assert len(html) < 40_000
    assert markdown.count("<code>get\\_weather</code>") == ROW_LIMIT


# --- repr -------------------------------------------------------------------------------


def test_session_result_repr_is_short() -> None:
    result = _result(text="The answer is " + "x" * 5000)
    text = repr(result)
    assert len(text) < 400
    assert text.startswith("SessionResult(terminal='end_turn', text='The answer is x")
    assert "…' (5,014 chars), turns=2, usage=Usage(input_tokens=20, output_tokens=10)" in text
    assert "tool_uses=1, events=100, session_id='sesn_1'" in text
    assert "sevt_" not in text
    assert "outcome" not in text  # fields at their default are left out


def test_session_result_repr_stays_short_with_every_field_set() -> None:
    result = _hostile_result()
    assert len(repr(result)) < 400
    assert str(result) == repr(result)


def test_turn_result_repr_is_short() -> None:
    turn = TurnResult(
        "requires_action",
        "Let me look.",
        tool_uses=(ToolUse("a", "b"),),
        usage=Usage(1, 2),
        events=tuple({"type": "agent.message", "text": "x" * 1000} for _ in range(100)),
        stop_reason={"type": "requires_action", "event_ids": ["sevt_" + "0" * 24] * 10},
    )
    text = repr(turn)
    assert len(text) < 300
    assert text.startswith(
        "TurnResult(terminal='requires_action', text='Let me look.', tool_uses=1, "
        "usage=Usage(input_tokens=1, output_tokens=2), events=100, stop_reason={"
    )
    assert text.endswith("…)")
    assert repr(TurnResult("end_turn")) == "TurnResult(terminal='end_turn')"


def test_equality_replace_and_pickling_are_unchanged() -> None:
    result = _result()
    assert result == _result()
    assert result != _result(events=())  # events still take part in ==
    changed = dataclasses.replace(result, text="other")
    assert changed.text == "other"
    assert changed.events == result.events
    assert pickle.loads(pickle.dumps(result)) == result
    turn = TurnResult("end_turn", "hi", events=({"type": "x"},))
    assert pickle.loads(pickle.dumps(turn)) == turn
    assert dataclasses.replace(turn, text="bye") != turn
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.text = "changed"  # type: ignore[misc]


def test_ipython_shows_html_markdown_and_the_short_repr() -> None:
    formatters = pytest.importorskip("IPython.core.formatters")
    bundle, _ = formatters.DisplayFormatter().format(_result())
    assert "It is sunny in Paris." in bundle["text/html"]
    assert "It is sunny in Paris." in bundle["text/markdown"]
    assert bundle["text/plain"] == repr(_result())
