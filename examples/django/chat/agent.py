"""The agent side of the site: the process's one provider, the local tools, session options.

The provider holds the connection pool and is thread-safe, so every request of the process
shares it. It is created on first use rather than at import or in ``AppConfig.ready()``:
processes that import the project but serve nothing (``runserver``'s autoreloader parent,
``manage.py check``, the master of ``gunicorn --preload``) never build one, and no pooled
socket is ever copied into a forked worker.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import requests
import requests.adapters
from django.conf import settings

from req_managed_agents import ClaudeManagedAgents, Session, Tools

tools = Tools()


@tools.tool
def get_weather(city: str) -> str:
    """Current weather for a city.

    Args:
        city: City name, in English.
    """
    return f"18 degrees and sunny in {city}"


_lock = threading.Lock()
_provider: ClaudeManagedAgents | None = None
_executor: ThreadPoolExecutor | None = None


def get_provider() -> ClaudeManagedAgents:
    """The process's provider, built from settings on first call (thread-safe)."""
    global _provider
    with _lock:  # two first requests at once must not build two pools
        if _provider is None:
            _provider = ClaudeManagedAgents(
                settings.ANTHROPIC_API_KEY or None,
                base_url=settings.ANTHROPIC_BASE_URL or None,
                http=_http_session(settings.AGENT_HTTP_POOL_MAXSIZE),
            )
            atexit.register(_provider.close)
        return _provider


def _http_session(pool_maxsize: int) -> requests.Session | None:
    """A session with a bigger pool, or None for the library's own (see README: pool size)."""
    if pool_maxsize <= 0:
        return None
    http = requests.Session()
    adapter = requests.adapters.HTTPAdapter(pool_maxsize=pool_maxsize)
    http.mount("https://", adapter)
    http.mount("http://", adapter)
    atexit.register(http.close)  # the provider leaves a session it was given open
    return http


def session_options() -> dict[str, Any]:
    """What every run of the site passes to ``Session`` / ``run_to_completion``."""
    return {
        "handler": tools,
        "agent_id": settings.CLAUDE_AGENT_ID,
        "environment_id": settings.CLAUDE_ENVIRONMENT_ID,
        # Nobody resumes a web request's session: a run that times out is stopped remotely
        # too, instead of working (and billing) on for no one.
        "interrupt_on_timeout": True,
    }


def new_session() -> Session:
    """A new agent session on the shared provider."""
    return Session(get_provider(), **session_options())


# The streamed runs in flight in this process, by the id their page gave them, so that the
# page's stop button (a second request) can reach the session of the first.
_running: dict[str, Session] = {}


@contextmanager
def registered(run_id: str | None, session: Session) -> Iterator[Session]:
    """Make ``session`` stoppable by ``stop(run_id)`` while the block runs."""
    if run_id is None:
        yield session
        return
    with _lock:
        _running[run_id] = session
    try:
        yield session
    finally:
        with _lock:
            if _running.get(run_id) is session:
                del _running[run_id]


def stop(run_id: str) -> bool:
    """Stop the run ``run_id`` everywhere (its tools, and the remote turn); False if no such
    run is in flight in this process. With several server processes, route the stop to the
    one streaming the run (or keep this map in a shared store)."""
    with _lock:
        session = _running.get(run_id)
    if session is None:
        return False
    session.cancel()
    return True


def executor() -> ThreadPoolExecutor:
    """Threads for the async views' blocking calls, one per run in flight (ASGI only).

    Not asyncio's default executor: it has only ``min(32, CPUs + 4)`` threads, and a run
    holds its thread for its whole length, so a few long runs would queue every other one.
    """
    global _executor
    with _lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(
                settings.AGENT_MAX_ASYNC_RUNS, thread_name_prefix="agent-run"
            )
        return _executor
