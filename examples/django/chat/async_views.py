"""The same two views for ASGI servers (uvicorn, daphne, hypercorn).

Served over ASGI, the views of chat.views would work badly: Django runs a sync view on one
thread shared by all sync code (``sync_to_async``'s ``thread_sensitive=True`` default), so
runs would wait for each other, and it sends a sync streaming body by first reading all of it
into a list, so nothing streams and a disconnect stops nothing. Here every blocking call
runs on a thread of its own from chat.agent.executor(); the event loop only waits.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from req_managed_agents import ManagedAgentsError, SessionTimeoutError

from .agent import executor, new_session
from .views import event, prompt_from_body, result_json, sse_frame, sse_response

log = logging.getLogger(__name__)


def blocking(call: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
    """``call`` as an awaitable run on the agent threads (never Django's shared one)."""
    return sync_to_async(call, thread_sensitive=False, executor=executor())


@csrf_exempt
@require_POST
async def ask(request: HttpRequest) -> HttpResponse:
    """As chat.views.ask; a client that disconnects stops the run."""
    prompt = prompt_from_body(request.body)
    if prompt is None:
        return JsonResponse({"error": 'send {"prompt": "..."}'}, status=400)
    session = new_session()  # no I/O yet: the session connects when the run starts
    try:
        result = await blocking(session.run)(prompt, timeout=settings.AGENT_RUN_TIMEOUT)
    except SessionTimeoutError:
        return JsonResponse({"error": "the agent did not finish in time"}, status=504)
    except ManagedAgentsError as exc:
        log.warning("agent run failed: %s", exc)
        return JsonResponse({"error": "the agent service failed"}, status=502)
    finally:
        # On a disconnect Django cancels this view, but session.run() goes on in its thread
        # until the session is closed: close() stops it, remote turn included.
        await blocking(session.close)()
    return JsonResponse(result_json(result))


@require_GET
async def stream(request: HttpRequest) -> HttpResponse:
    """As chat.views.stream; the body is an async generator, so it streams under ASGI."""
    prompt = request.GET.get("q", "").strip()
    if not prompt:
        return JsonResponse({"error": "pass the prompt as ?q=..."}, status=400)
    return sse_response(stream_events(prompt))


async def stream_events(prompt: str) -> AsyncIterator[str]:
    yield ": stream open\n\n"
    session = new_session()
    items = session.stream(prompt, timeout=settings.AGENT_RUN_TIMEOUT)
    pull = blocking(next)
    try:
        while (item := await pull(items, None)) is not None:
            frame = sse_frame(item)
            if frame:
                yield frame
    except ManagedAgentsError as exc:
        log.warning("agent stream failed: %s", exc)
        yield event("error", {"error": type(exc).__name__})
    finally:
        # A disconnect cancels this generator while next(items) still waits on its thread,
        # and a generator cannot be closed while another thread runs it. Closing the session
        # instead stops the run (remote turn included), and that next() then returns.
        await blocking(session.close)()
