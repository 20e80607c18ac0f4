"""Batch runs: many prompts, each in its own session, a bounded number at a time.

:func:`run_batch` is for jobs such as "summarise these 10,000 tickets": each prompt runs to
completion in a fresh session, ``max_workers`` at once. Results are appended to a JSON Lines
file as each finishes, so a batch that is stopped (a crash, a deploy, Ctrl-C) picks up where
it left off when run again with the same output: prompts that already succeeded there are
skipped, and those that failed are tried again (the last line for an id is the one that
counts). A prompt that fails is recorded with its error and never stops the others. A rate limit the
HTTP layer could not wait out pauses the whole pool - every worker, not just the one that
hit it - for the server's ``retry-after`` (or a growing backoff), then the prompt is tried
again.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from req_managed_agents.errors import ConfigurationError, RateLimitError
from req_managed_agents.model._vocabulary import SessionResult
from req_managed_agents.tools._handler import Handler, describe_exception
from req_managed_agents.transport._backoff import RetryPolicy

__all__ = ["BatchItem", "BatchOutcome", "read_prompts", "run_batch"]

# A prompt hit by rate limits is tried again five times (six in all) before it is recorded
# failed, after 2 s doubling to 60 s or the server's retry-after up to 60 s (a longer one is
# not waited out: the prompt is recorded failed with the rate limit).
RATE_LIMITED = RetryPolicy(max_retries=5, base=2.0, cap=60.0, max_retry_after=60.0)
# How often a paused worker looks whether the pool may resume.
POOL_PAUSE_POLL = RetryPolicy.poll(1.0)


@dataclass(frozen=True)
class BatchItem:
    """One prompt of a batch; ``id`` names it in the output (unique within the batch)."""

    id: str
    prompt: str
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class BatchOutcome:
    """How one prompt ended: its ``result``, or the ``error`` that stopped it."""

    id: str
    result: SessionResult | None = None
    error: str | None = None

    def record(self) -> dict[str, Any]:
        """The JSON line written to the output."""
        line: dict[str, Any] = {"id": self.id}
        if self.result is not None:
            usage = self.result.usage
            line.update(
                terminal=self.result.terminal,
                text=self.result.text,
                session_id=self.result.session_id,
                turns=self.result.turns,
                usage={
                    "input_tokens": usage.input_tokens,
                    "output_tokens": usage.output_tokens,
                    "cache_creation_input_tokens": usage.cache_creation_input_tokens,
                    "cache_read_input_tokens": usage.cache_read_input_tokens,
                },
            )
        else:
            line["error"] = self.error
        return line


Runner = Callable[[BatchItem], SessionResult]


def read_prompts(path: str | Path) -> list[BatchItem]:
    """Prompts from a JSON Lines file: each line ``{"prompt": ..., "id"?: ...}`` plus any
    per-prompt driver options (``agent_id``, ``session_metadata``, ...); a line without an
    ``id`` is named by its line number."""
    items = []
    seen: set[str] = set()
    with Path(path).open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as exc:
                raise ConfigurationError(f"{path}:{number}: not JSON ({exc})") from None
            if not isinstance(record, dict) or not isinstance(record.get("prompt"), str):
                raise ConfigurationError(f'{path}:{number}: expected {{"prompt": "..."}}')
            item_id = str(record.pop("id", number))
            if item_id in seen:
                raise ConfigurationError(f"{path}:{number}: the id {item_id!r} comes twice")
            seen.add(item_id)
            items.append(BatchItem(item_id, record.pop("prompt"), record))
    return items


def run_batch(
    provider: Any,
    prompts: Iterable[str | BatchItem],
    *,
    handler: Handler,
    max_workers: int = 4,
    output: str | Path | None = None,
    progress: TextIO | None = None,
    timeout: float | None = None,
    **options: Any,
) -> list[BatchOutcome]:
    """Run each prompt in a session of its own, ``max_workers`` at once; return how each
    ended, in input order.

    ``options`` go to every run (``agent_id``, ``environment_id``, ``harness_arn``,
    ``max_turns``, ...), a :class:`BatchItem`'s own ``options`` on top. With ``output``,
    each outcome is appended to that JSON Lines file as it comes, and prompts that already
    succeeded there are skipped (their outcomes come back with only their ``id``).
    ``progress`` gets a one-line progress display; by default stderr when it is a
    terminal.
    """
    if max_workers < 1:
        raise ConfigurationError("max_workers must be at least 1")
    items = [BatchItem(str(n), p) if isinstance(p, str) else p for n, p in enumerate(prompts, 1)]
    if len({item.id for item in items}) != len(items):
        raise ConfigurationError("batch item ids must be unique")
    done = _read_output(output) if output is not None else {}
    todo = [item for item in items if item.id not in done]
    shown = progress if progress is not None else (sys.stderr if sys.stderr.isatty() else None)
    batch = _Batch(len(items), len(items) - len(todo), shown, output)

    def run_one(item: BatchItem) -> SessionResult:
        from req_managed_agents.drivers._session import Session

        merged = {**options, **item.options}
        tags = {**(merged.pop("telemetry_metadata", None) or {}), "batch_item": item.id}
        with Session(provider, handler=handler, telemetry_metadata=tags, **merged) as session:
            batch.live(session, True)
            try:
                return session.run(item.prompt, timeout=timeout)
            finally:
                batch.live(session, False)

    pool = ThreadPoolExecutor(max_workers, thread_name_prefix="rma-batch")
    try:
        outcomes = {o.id: o for o in pool.map(lambda i: batch.run(i, run_one), todo)}
    except BaseException:
        # Ctrl-C: start nothing more and stop what runs (remote turns included); each is
        # recorded as cancelled, so the next run of the batch tries it again.
        batch.stop()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        pool.shutdown(wait=True)
        batch.close()
    return [outcomes.get(item.id) or done[item.id] for item in items]


class _Batch:
    """The state the workers share: the pool-wide pause, the output file, the counts."""

    def __init__(
        self, total: int, skipped: int, progress: TextIO | None, output: str | Path | None
    ) -> None:
        self._lock = threading.Lock()
        self._total = total
        self._finished = skipped
        self._failed = 0
        self._started = time.monotonic()
        self._progress = progress
        self._resume_at = 0.0
        self._sessions: set[Any] = set()
        self._stopping = False
        # Held for the whole batch, closed by close().
        self._output = (
            Path(output).open("a", encoding="utf-8")  # noqa: SIM115 - see above
            if output is not None
            else None
        )

    def live(self, session: Any, running: bool) -> None:
        """Track the sessions running now, so that stop() can reach them."""
        with self._lock:
            if running:
                self._sessions.add(session)
            else:
                self._sessions.discard(session)
        if running and self._stopping:
            session.cancel()

    def stop(self) -> None:
        with self._lock:
            self._stopping = True
            sessions = list(self._sessions)
        for session in sessions:
            session.cancel()

    def run(self, item: BatchItem, run_one: Runner) -> BatchOutcome:
        outcome = self._attempt(item, run_one)
        with self._lock:
            self._finished += 1
            self._failed += outcome.error is not None
            if self._output is not None:
                self._output.write(json.dumps(outcome.record(), ensure_ascii=False) + "\n")
                self._output.flush()
            self._show()
        return outcome

    def _attempt(self, item: BatchItem, run_one: Runner) -> BatchOutcome:
        for attempt in range(RATE_LIMITED.max_retries + 1):
            self._wait_for_the_pool()
            if self._stopping:
                return BatchOutcome(item.id, error="cancelled")
            try:
                result = run_one(item)
                if result.stop_reason == {"type": "cancelled"}:
                    return BatchOutcome(item.id, error="cancelled")
                return BatchOutcome(item.id, result=result)
            except RateLimitError as exc:
                if attempt == RATE_LIMITED.max_retries or not RATE_LIMITED.honours(exc.retry_after):
                    return BatchOutcome(item.id, error=describe_exception(exc))
                self._pause(RATE_LIMITED.delay(attempt, exc.retry_after))
            except Exception as exc:
                return BatchOutcome(item.id, error=describe_exception(exc))
        raise AssertionError("unreachable: the last attempt returns")

    def _pause(self, seconds: float) -> None:
        """Hold every worker back for ``seconds`` (the longest pause asked for wins)."""
        with self._lock:
            self._resume_at = max(self._resume_at, time.monotonic() + seconds)

    def _wait_for_the_pool(self) -> None:
        while True:
            with self._lock:
                wait = self._resume_at - time.monotonic()
            if wait <= 0:
                return
            time.sleep(min(wait, POOL_PAUSE_POLL.delay(0)))

    def _show(self) -> None:
        if self._progress is None:
            return
        elapsed = max(time.monotonic() - self._started, 1e-9)
        failed = f", {self._failed} failed" if self._failed else ""
        self._progress.write(
            f"\r\033[K[{self._finished}/{self._total}{failed}, {self._finished / elapsed:.1f}/s]"
        )
        self._progress.flush()

    def close(self) -> None:
        if self._output is not None and not self._output.closed:
            self._output.close()
        if self._progress is not None:
            self._progress.write("\n")
            self._progress.flush()


def _read_output(output: str | Path) -> dict[str, BatchOutcome]:
    """The prompts an earlier run of the batch finished well (a failure, or a cut-off last
    line from a batch killed mid-write, does not count: that prompt runs again)."""
    path = Path(output)
    if not path.exists():
        return {}
    done: dict[str, BatchOutcome] = {}
    for line in _lines(path):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict) or "id" not in record:
            continue
        if record.get("error") is None:
            done[str(record["id"])] = BatchOutcome(str(record["id"]))
        else:
            done.pop(str(record["id"]), None)
    return done


def _lines(path: Path) -> Iterator[str]:
    with path.open(encoding="utf-8") as lines:
        yield from (line for line in lines if line.strip())
