"""Batch runs: many prompts, each in its own session, a bounded number at a time.

:func:`run_batch` is for jobs such as "summarise these 10,000 tickets": each prompt runs to
completion in a session of its own, ``max_workers`` at once. Outcomes are appended to a JSON
Lines file as each finishes; the last line for an id is the one that counts, and a line cut
off by a killed batch is skipped. Run again with the same output, a batch picks up where it
left off: prompts that succeeded are skipped; every other prompt is a keyed run
(``idempotency_key``, from the batch and the prompt's id), so one that was running when the
batch stopped - or that failed - continues its own session instead of starting over, its
delivered prompt never sent again and its finished tools never run again (the ledger lives
beside the output, in ``<output>.state``, unless a ``ledger`` is given). A prompt without an
id is named by its content, so inserting a prompt never renames the others.

The ledger keeps nothing of a prompt that succeeded. Its line is written, flushed and fsynced,
and only then are its session's tool calls (all answered) and its key's binding forgotten (a
key given in the prompt's own options is the user's, and stays bound). A kill anywhere is
safe: before the line is whole, the prompt is not done, and the next run continues its
session through the binding still there; after it, the prompt is done, the next run skips it
and clears whatever the killed run had not forgotten yet. A prompt that failed keeps both,
for the next run to continue it.

A rate limit the HTTP layer could not wait out pauses the whole pool - every worker, not just
the one that hit it - for the server's ``retry-after`` (up to a minute; a longer one fails
the prompt) or a growing backoff, then the prompt goes on in the same session. Ctrl-C ends
the pause at once. A prompt that fails is recorded with its error and its session id and
never stops the others.

``progress`` hears how the batch stands - prompts running, failed, done of all - on the
calling thread, each time a prompt finishes and at least every second (``PROGRESS_TICK``)
while it waits for them.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from req_managed_agents._redact import get_logger
from req_managed_agents.drivers._ledger import ToolLedger
from req_managed_agents.errors import ConfigurationError, ManagedAgentsError, RateLimitError
from req_managed_agents.model._progress import Progress, ProgressCallback
from req_managed_agents.model._vocabulary import SessionResult
from req_managed_agents.providers._base import Provider
from req_managed_agents.stores import FileStore
from req_managed_agents.tools._handler import Handler, describe_exception
from req_managed_agents.transport._backoff import RetryPolicy

__all__ = ["BatchItem", "BatchOutcome", "content_id", "read_prompts", "run_batch"]

# A prompt hit by rate limits is tried again five times (six in all) before it is recorded
# failed, after 2 s doubling to 60 s or the server's retry-after up to 60 s (a longer one is
# not waited out: the prompt is recorded failed with the rate limit).
RATE_LIMITED = RetryPolicy(max_retries=5, base=2.0, cap=60.0, max_retry_after=60.0)
# How often a paused worker looks whether the pool may resume.
POOL_PAUSE_POLL = RetryPolicy.poll(1.0)
# How often the calling thread, waiting for prompts to finish, reports to ``progress``.
PROGRESS_TICK = RetryPolicy.poll(1.0)
_log = get_logger(__name__)


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
    session_id: str | None = None

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
            line.update(error=self.error, session_id=self.session_id)
        return line


Runner = Callable[[BatchItem], SessionResult]
LetGo = Callable[[BatchItem, "str | None"], None]


def read_prompts(path: str | Path) -> list[BatchItem]:
    """Prompts from a JSON Lines file: each line ``{"prompt": ..., "id"?: ...}`` plus any
    per-prompt driver options (``agent_id``, ``session_metadata``, ...); a line without an
    ``id`` is named by its content (see :func:`content_id`)."""
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
            prompt = record.pop("prompt")
            given = record.pop("id", None)
            item_id = str(given) if given is not None else content_id(prompt, record, seen)
            if item_id in seen:
                raise ConfigurationError(f"{path}:{number}: the id {item_id!r} comes twice")
            seen.add(item_id)
            items.append(BatchItem(item_id, prompt, record))
    return items


def content_id(prompt: str, options: Mapping[str, Any], taken: set[str]) -> str:
    """An id for a prompt given none: a digest of the prompt and its options (the second
    identical one gets ``#2``, and so on), so it does not change when others are added."""
    canonical = json.dumps([prompt, options], sort_keys=True, separators=(",", ":"), default=str)
    base = "p-" + hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    item_id, count = base, 1
    while item_id in taken:
        count += 1
        item_id = f"{base}#{count}"
    return item_id


def run_batch(
    provider: Provider,
    prompts: Iterable[str | BatchItem],
    *,
    handler: Handler,
    max_workers: int = 4,
    output: str | Path | None = None,
    progress: ProgressCallback | None = None,
    timeout: float | None = None,
    **options: Any,
) -> list[BatchOutcome]:
    """Run each prompt in a session of its own, ``max_workers`` at once; return how each
    ended, in input order.

    ``options`` go to every run (``agent_id``, ``environment_id``, ``harness_arn``,
    ``max_turns``, ``ledger``, ...), a :class:`BatchItem`'s own ``options`` on top. With
    ``output``, each outcome is appended to that JSON Lines file as it comes, prompts that
    already succeeded there are skipped (their outcomes come back with only their ``id``),
    and the others continue their sessions (see the module docs). ``progress`` is called
    on this thread with a :class:`~req_managed_agents.model.Progress` as prompts finish and every
    second meanwhile (``ProgressLine()`` shows it as ``rma batch`` does); what it raises
    stops the batch as Ctrl-C does.
    """
    if max_workers < 1:
        raise ConfigurationError("max_workers must be at least 1")
    items: list[BatchItem] = []
    taken: set[str] = set()
    for prompt in prompts:
        item = prompt if isinstance(prompt, BatchItem) else None
        if item is None:
            item = BatchItem(content_id(str(prompt), {}, taken), str(prompt))
        if item.id in taken:
            raise ConfigurationError(f"batch item ids must be unique; {item.id!r} comes twice")
        taken.add(item.id)
        items.append(item)
    done = _read_output(output) if output is not None else {}
    todo = [item for item in items if item.id not in done]
    if options.get("ledger") is None:
        options["ledger"] = ToolLedger(FileStore(f"{output}.state") if output else None)
    # A batch without an output is never resumed: its keys name this call only.
    scope = str(Path(output).resolve()) if output else secrets.token_hex(16)
    namespace = hashlib.sha256(scope.encode()).hexdigest()[:12]

    def let_go(item: BatchItem, session_id: str | None) -> None:
        """Forget what the ledger holds of a prompt that succeeded (see the module)."""
        merged = {**options, **item.options}
        ledger = merged.get("ledger")
        if not isinstance(ledger, ToolLedger):
            return
        try:
            if session_id:
                ledger.forget(session_id)
            if "idempotency_key" not in merged:
                ledger.unbind(f"batch:{namespace}:{item.id}")
        except ManagedAgentsError as exc:  # kept until the ledger's ttl: nothing is lost
            _log.warning("could not forget the ledger entries of batch item %s: %s", item.id, exc)

    for item in items:  # what a killed run may have left of the prompts done before
        if item.id in done:
            let_go(item, done[item.id])
    batch = _Batch(len(items), len(items) - len(todo), output, let_go)

    def run_one(item: BatchItem) -> SessionResult:
        from req_managed_agents.drivers._session import Session

        merged = {**options, **item.options}
        tags = {**(merged.pop("telemetry_metadata", None) or {}), "batch_item": item.id}
        merged.setdefault("idempotency_key", f"batch:{namespace}:{item.id}")
        with Session(provider, handler=handler, telemetry_metadata=tags, **merged) as session:
            batch.live(session, True)
            try:
                return session.run(item.prompt, timeout=timeout)
            finally:
                batch.live(session, False, item.id)

    pool = ThreadPoolExecutor(max_workers, thread_name_prefix="rma-batch")
    try:
        futures = [pool.submit(batch.run, item, run_one) for item in todo]
        _wait_reporting(futures, batch, progress)
        outcomes = {o.id: o for o in (future.result() for future in futures)}
    except BaseException:
        # Ctrl-C: start nothing more and stop what runs (remote turns included); each is
        # recorded as cancelled, so the next run of the batch continues it.
        batch.stop()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        pool.shutdown(wait=True)
        batch.close()
    return [outcomes.get(item.id) or BatchOutcome(item.id) for item in items]


class _Batch:
    """The state the workers share: the pool-wide pause, the output file, the counts."""

    def __init__(self, total: int, skipped: int, output: str | Path | None, let_go: LetGo) -> None:
        self._lock = threading.Lock()
        self._let_go = let_go
        self._total = total
        self._finished = skipped
        self._failed = 0
        self._started = time.monotonic()
        self._resume_at = 0.0
        self._sessions: set[Any] = set()
        self._session_ids: dict[str, str] = {}
        self._stopping = threading.Event()
        self._output = _open_for_append(Path(output)) if output is not None else None

    def live(self, session: Any, running: bool, item_id: str | None = None) -> None:
        """Track the sessions running now, so that stop() can reach them, and the session
        each prompt ran in, for its record."""
        with self._lock:
            if running:
                self._sessions.add(session)
            else:
                self._sessions.discard(session)
                if item_id is not None and session.session_id:
                    self._session_ids[item_id] = session.session_id
        if running and self._stopping.is_set():
            session.cancel()

    def stop(self) -> None:
        with self._lock:
            self._stopping.set()
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
        if outcome.result is not None and self._recorded():
            self._let_go(item, outcome.result.session_id)
        return outcome

    def _recorded(self) -> bool:
        """Make the lines written so far durable (a flushed line outlives a killed process;
        fsync makes it outlive the machine too); whether they are."""
        if self._output is None:
            return True
        try:
            os.fsync(self._output.fileno())
        except OSError as exc:
            _log.warning("could not sync the batch output: %s", exc)
            return False
        return True

    def _attempt(self, item: BatchItem, run_one: Runner) -> BatchOutcome:
        for attempt in range(RATE_LIMITED.max_retries + 1):
            self._wait_for_the_pool()
            if self._stopping.is_set():
                return BatchOutcome(item.id, error="cancelled")
            try:
                result = run_one(item)
                if result.stop_reason == {"type": "cancelled"}:
                    return BatchOutcome(item.id, error="cancelled", session_id=result.session_id)
                return BatchOutcome(item.id, result=result)
            except RateLimitError as exc:
                last_try = attempt == RATE_LIMITED.max_retries
                if last_try or not RATE_LIMITED.honours(exc.retry_after):
                    return self._outcome_of(item, exc)
                self._pause(RATE_LIMITED.delay(attempt, exc.retry_after))
            except Exception as exc:
                return self._outcome_of(item, exc)
        raise AssertionError("unreachable: the last attempt returns")

    def _outcome_of(self, item: BatchItem, error: Exception) -> BatchOutcome:
        session_id = getattr(error, "session_id", None)
        with self._lock:
            known = self._session_ids.get(item.id)
        return BatchOutcome(
            item.id,
            error=describe_exception(error),
            session_id=session_id if isinstance(session_id, str) else known,
        )

    def _pause(self, seconds: float) -> None:
        """Hold every worker back for ``seconds`` (the longest pause asked for wins)."""
        with self._lock:
            self._resume_at = max(self._resume_at, time.monotonic() + seconds)

    def _wait_for_the_pool(self) -> None:
        """Wait out the pool's pause; a stop (Ctrl-C) ends it at once."""
        while not self._stopping.is_set():
            with self._lock:
                wait = self._resume_at - time.monotonic()
            if wait <= 0:
                return
            self._stopping.wait(min(wait, POOL_PAUSE_POLL.delay(0)))

    def progress(self) -> Progress:
        """Where the batch stands now."""
        with self._lock:
            failed = f", {self._failed} failed" if self._failed else ""
            return Progress(
                f"batch: {len(self._sessions)} running{failed}",
                time.monotonic() - self._started,
                self._finished,
                self._total,
                "prompt done",
            )

    def close(self) -> None:
        if self._output is not None and not self._output.closed:
            self._output.close()


def _wait_reporting(
    futures: list[Future[BatchOutcome]], batch: _Batch, progress: ProgressCallback | None
) -> None:
    """Wait for every prompt, telling ``progress`` how the batch stands as each finishes
    and at every ``PROGRESS_TICK`` meanwhile."""
    pending: set[Future[BatchOutcome]] = set(futures)
    while True:
        if progress is not None:
            progress(batch.progress())
        if not pending:
            return
        _, pending = wait(pending, timeout=PROGRESS_TICK.delay(0), return_when=FIRST_COMPLETED)


def _open_for_append(path: Path) -> TextIO:
    """The output, opened to append whole lines: a last line cut off by a killed batch is
    ended first, so the next record starts a line of its own."""
    cut_off = False
    if path.exists() and path.stat().st_size:
        with path.open("rb") as existing:
            existing.seek(-1, 2)
            cut_off = existing.read(1) != b"\n"
    output = path.open("a", encoding="utf-8")
    if cut_off:
        output.write("\n")
        output.flush()
    return output


def _read_output(output: str | Path) -> dict[str, str | None]:
    """The prompts an earlier run of the batch finished well, by the last line for each
    id (a failure, or a cut-off line from a batch killed mid-write, does not count: that
    prompt goes on), and the session each ran in."""
    path = Path(output)
    if not path.exists():
        return {}
    done: dict[str, str | None] = {}
    for line in _lines(path):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict) or "id" not in record:
            continue
        if record.get("error") is None:
            session_id = record.get("session_id")
            done[str(record["id"])] = session_id if isinstance(session_id, str) else None
        else:
            done.pop(str(record["id"]), None)
    return done


def _lines(path: Path) -> Iterator[str]:
    with path.open(encoding="utf-8") as lines:
        yield from (line for line in lines if line.strip())
