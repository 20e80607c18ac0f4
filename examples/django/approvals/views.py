"""The approvals page and its JSON: what waits for a person, a click on Approve or Deny, and
what became of that click.

``GET approvals/`` is the page; it fetches ``pending`` (the decisions still waiting), posts
a click to ``answer``, which enqueues the Celery task and answers 202 with the click's id,
then polls ``clicks/<id>`` until the task says it is over. Nothing here runs a session:
the worker does, so a page left open or closed changes nothing.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_GET, require_POST

from req_managed_agents import pending as waiting_decisions

from . import progress
from .agent import KINDS, decisions, describe

PAGE = Path(__file__).with_name("page.html")


@ensure_csrf_cookie  # the page's script sends it back with every click (X-CSRFToken)
@require_GET
def page(request: HttpRequest) -> HttpResponse:
    """``GET approvals/``: the page (plain HTML and fetch, no build step)."""
    return HttpResponse(PAGE.read_bytes(), content_type="text/html; charset=utf-8")


@require_GET
def pending(request: HttpRequest) -> HttpResponse:
    """``GET approvals/pending``: every decision still waiting, oldest first. Authenticate
    this page your own way: a token is what lets its holder answer."""
    listed = [
        {
            "token": d.token,
            "kind": d.kind,
            "item": d.item_id,
            "asks": describe(d),
            "reason": d.reason,
            "session_id": d.session_id,
            "created": d.created.isoformat(),
            "expires": d.expires.isoformat() if d.expires else None,
            "expired": d.expired,
        }
        for d in waiting_decisions(decisions())
    ]
    return JsonResponse({"pending": listed})


@require_POST
def answer(request: HttpRequest) -> HttpResponse:
    """``POST approvals/answer {"token", "kind", "item", "allow", "message"}``: enqueue the
    answer; 202 ``{"click": id}``. Whether it wins is the task's to find out (the first
    answer wins): the page learns it from ``clicks/<id>``."""
    try:
        body = json.loads(request.body or b"null")
        token, kind, item = str(body["token"]), str(body["kind"]), str(body["item"])
        allow, message = body["allow"], str(body.get("message") or "").strip()
    except (ValueError, TypeError, KeyError):
        return JsonResponse({"error": "send token, kind, item, allow and message"}, status=400)
    if kind not in KINDS or not isinstance(allow, bool):
        return JsonResponse({"error": "unknown kind, or allow not true/false"}, status=400)
    from .tasks import answer_decision  # here: importing it needs celery (see apps.py)

    click = uuid.uuid4().hex
    progress.record(click, "queued", "sending your answer")
    answer_decision.apply_async((click, token, kind, item, allow, message), task_id=click)
    return JsonResponse({"click": click}, status=202)


@require_GET
def click(request: HttpRequest, click_id: str) -> HttpResponse:
    """``GET approvals/clicks/<id>``: ``{"state", "headline", "text", "over"}`` of a click;
    ``state`` is queued, finishing (``text``: the agent's words so far), done (``text``: the
    session's final text), already_answered or failed."""
    found = progress.read(click_id)
    if found is None:
        return JsonResponse({"error": "no such click"}, status=404)
    return JsonResponse({**found, "over": found["state"] in progress.OVER})
