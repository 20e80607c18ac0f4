"""The views for WSGI servers: a run answered in JSON, and a run streamed as server-sent events.

Each request blocks one server thread for as long as its run takes (the local tools run on
the library's own threads meanwhile), so give the server enough threads: ``gunicorn
--threads``, or ``runserver``, which uses one thread per request.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from req_managed_agents import (
    ConfigurationError,
    ManagedAgentsError,
    SessionResult,
    SessionTimeoutError,
    TextDelta,
    TextReset,
    ToolCallStarted,
    run_to_completion,
)

from . import agent
from .agent import get_provider, new_session, session_options

log = logging.getLogger(__name__)

PAGE = Path(__file__).with_name("page.html")
RUN_ID = re.compile(r"[A-Za-z0-9-]{1,64}")


@require_GET
def index(request: HttpRequest) -> HttpResponse:
    """``GET /``: a page that streams a run from ``/stream`` (EventSource) and stops it."""
    return HttpResponse(PAGE.read_bytes(), content_type="text/html; charset=utf-8")


@csrf_exempt  # the run id is the capability: only the page that started the run knows it
@require_POST
def stop(request: HttpRequest) -> HttpResponse:
    """``POST /stop?run=ID`` stops that streamed run, remote turn included (404: none)."""
    run_id = request.GET.get("run", "")
    if not RUN_ID.fullmatch(run_id):
        return JsonResponse({"error": "pass the run's id as ?run=..."}, status=400)
    if not agent.stop(run_id):
        return JsonResponse({"error": "no such run in flight here"}, status=404)
    return JsonResponse({"stopped": run_id})


@csrf_exempt  # a JSON API for programs, not a browser form: authenticate it your own way
@require_POST
def ask(request: HttpRequest) -> HttpResponse:
    """``POST {"prompt": "..."}`` -> ``{"text", "terminal", "session_id", "usage"}``."""
    prompt = prompt_from_body(request.body)
    if prompt is None:
        return JsonResponse({"error": 'send {"prompt": "..."}'}, status=400)
    try:
        result = run_to_completion(
            get_provider(), prompt, timeout=settings.AGENT_RUN_TIMEOUT, **session_options()
        )
    except SessionTimeoutError:
        return JsonResponse({"error": "the agent did not finish in time"}, status=504)
    except ConfigurationError:
        raise  # a broken deployment: let Django report it as the server error it is
    except ManagedAgentsError as exc:
        log.warning("agent run failed: %s", exc)
        return JsonResponse({"error": "the agent service failed"}, status=502)
    return JsonResponse(result_json(result))


@require_GET  # EventSource can only GET
def stream(request: HttpRequest) -> HttpResponse:
    """``GET ?q=...[&run=ID]`` -> ``text/event-stream`` of ``text``, ``reset``, ``tool``,
    ``done`` (or ``error``) events, each with a JSON ``data`` line. ``run`` names the run
    for ``POST /stop?run=ID``."""
    prompt = request.GET.get("q", "").strip()
    if not prompt:
        return JsonResponse({"error": "pass the prompt as ?q=..."}, status=400)
    run_id = request.GET.get("run") or None
    if run_id is not None and not RUN_ID.fullmatch(run_id):
        return JsonResponse({"error": "run ids are letters, digits and '-'"}, status=400)
    return sse_response(stream_events(prompt, run_id))


def stream_events(prompt: str, run_id: str | None = None) -> Iterator[str]:
    """The run as SSE frames. When the client goes away, the server closes this generator
    (GeneratorExit at a ``yield``); leaving the ``with`` block then closes the session,
    which stops the run and sends the remote turn a ``user.interrupt``. A server only
    notices the client left when it writes, so a quiet agent is stopped at its next item.
    """
    # Before anything else: the headers go out now and EventSource reports "open".
    yield ": stream open\n\n"
    try:
        with new_session() as session, agent.registered(run_id, session):
            for item in session.stream(prompt, timeout=settings.AGENT_RUN_TIMEOUT):
                frame = sse_frame(item)
                if frame:
                    yield frame
    except ManagedAgentsError as exc:
        # The status line is long gone; say it in band and end the stream.
        log.warning("agent stream failed: %s", exc)
        yield event("error", {"error": type(exc).__name__})


def sse_frame(item: object) -> str:
    """One stream item as an SSE frame ("" for the items this page shows nothing of)."""
    if isinstance(item, TextDelta):
        return event("text", {"text": item.text, "message": item.message})
    if isinstance(item, TextReset):  # rare: the provider rewrote a message already shown
        return event("reset", {"message": item.message})
    if isinstance(item, ToolCallStarted):
        return event("tool", {"name": item.tool_use.name, "input": dict(item.tool_use.input)})
    if isinstance(item, SessionResult):
        return event("done", result_json(item))
    return ""


def sse_response(frames: Any) -> StreamingHttpResponse:
    response = StreamingHttpResponse(frames, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # nginx would otherwise buffer the events
    return response


def event(name: str, data: Any) -> str:
    # json.dumps escapes newlines, so the data always fits one "data:" line.
    return f"event: {name}\ndata: {json.dumps(data)}\n\n"


def prompt_from_body(body: bytes) -> str | None:
    try:
        payload = json.loads(body or b"null")
    except ValueError:
        return None
    prompt = payload.get("prompt") if isinstance(payload, dict) else None
    return prompt.strip() or None if isinstance(prompt, str) else None


def result_json(result: SessionResult) -> dict[str, Any]:
    return {
        "session_id": result.session_id,
        "terminal": result.terminal,
        "text": result.text,
        "usage": {
            "input_tokens": result.usage.input_tokens,
            "output_tokens": result.usage.output_tokens,
        },
    }
