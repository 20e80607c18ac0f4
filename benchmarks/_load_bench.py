"""A load test against the emulators: many concurrent sessions, client and emulator in one
process, as a user load-testing their web server or task queue runs them (by hand).

    .venv/bin/python benchmarks/_load_bench.py [sessions]

Each session is a whole run (``run_to_completion`` of a one-turn script, on threads of their
own, sharing one provider whose pool holds a connection per session, as the README advises
for many sessions). The run happens in a child process, so that its peak memory and threads
are its own: wall time from the first session started to the last one finished, the most
threads alive at once (sampled every 50 ms) and the peak RSS, with the RSS before the first
session for reference.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from _table import Row

_CHILD = textwrap.dedent(
    """
    import json, resource, sys, threading, time

    import requests
    from requests.adapters import HTTPAdapter

    from req_managed_agents import Tools, run_to_completion
    from req_managed_agents.testing import ClaudeEmulator, OpenAIAgentsEmulator

    flavor, count = sys.argv[1], int(sys.argv[2])
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 6 * count + 1024  # each session: a stream and a connection, both ends
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))

    def rss_kib():
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))

    peak = [threading.active_count()]
    sampling = threading.Event()

    def sample():
        while not sampling.wait(0.05):
            peak[0] = max(peak[0], threading.active_count())

    if flavor == "claude":
        emulator = ClaudeEmulator(["Hello."], ping_interval=5.0)
        connect = {"agent_id": emulator.add_agent(), "environment_id": emulator.add_environment()}
    else:
        emulator = OpenAIAgentsEmulator(["Hello."], ping_interval=5.0)
        connect = {"agent_id": emulator.add_agent()}
    http = requests.Session()
    http.mount("http://", HTTPAdapter(pool_maxsize=count + 64))
    provider = emulator.provider(http=http, timeout=120)
    failures, texts = [], []
    start = threading.Barrier(count + 1)

    def one_session():
        start.wait()
        try:
            result = run_to_completion(
                provider, "Hi.", handler=Tools(), timeout=600, **connect
            )
            texts.append(result.text)
        except Exception as error:
            failures.append(repr(error)[:200])

    sessions = [threading.Thread(target=one_session) for _ in range(count)]
    for session in sessions:
        session.start()
    threading.Thread(target=sample, daemon=True).start()
    before = rss_kib()
    start.wait()
    started = time.perf_counter()
    for session in sessions:
        session.join()
    wall = time.perf_counter() - started
    sampling.set()
    provider.close()
    emulator.close()
    print(json.dumps({
        "sessions": count,
        "completed": texts.count("Hello."),
        "failures": failures[:5],
        "wall": wall,
        "threads": peak[0],
        "before_kib": before,
        "peak_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    }))
    """
)


_IDLE_CHILD = textwrap.dedent(
    """
    import json, resource, socket, sys, time

    import requests

    from req_managed_agents.testing import ClaudeEmulator

    count, seconds = int(sys.argv[1]), float(sys.argv[2])
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 4 * count + 1024:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(4 * count + 1024, hard), hard))
    with ClaudeEmulator(ping_interval=seconds * 2) as emulator:
        headers = {
            "x-api-key": emulator.api_key,
            "anthropic-version": "2023-06-01",
            "anthropic-beta": "managed-agents-2026-04-01",
        }
        http = requests.Session()
        http.headers.update(headers)
        body = {"agent": emulator.add_agent(), "environment_id": emulator.add_environment()}
        sessions = [
            http.post(emulator.base_url + "/v1/sessions", json=body).json()["id"]
            for _ in range(count)
        ]
        http.close()
        port = int(emulator.base_url.rsplit(":", 1)[1])
        lines = "".join(f"{name}: {value}\\r\\n" for name, value in headers.items())
        clients = []
        for session_id in sessions:
            client = socket.create_connection(("127.0.0.1", port))
            path = f"/v1/sessions/{session_id}/events/stream"
            client.sendall(f"GET {path} HTTP/1.1\\r\\nHost: x\\r\\n{lines}\\r\\n".encode())
            clients.append(client)
        assert emulator.wait_until(lambda: emulator.open_stream_count() == count, 120)
        time.sleep(0.5)
        cpu, wall = time.process_time(), time.perf_counter()
        time.sleep(seconds)
        busy = (time.process_time() - cpu) / (time.perf_counter() - wall)
        for client in clients:
            client.close()
    print(json.dumps({"streams": count, "cpu": busy}))
    """
)


def idle_cpu(streams: int, seconds: float = 5.0) -> float:
    """The share of a core an emulator holding ``streams`` open idle streams uses."""
    done = subprocess.run(
        [sys.executable, "-c", _IDLE_CHILD, str(streams), str(seconds)],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
        cwd=Path(__file__).parent.parent,
    )
    return float(json.loads(done.stdout)["cpu"])


def measure(flavor: str, sessions: int) -> dict[str, Any]:
    """One load test in a child process; what it measured."""
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, flavor, str(sessions)],
        capture_output=True,
        text=True,
        check=True,
        timeout=900,
        cwd=Path(__file__).parent.parent,
    )
    measured: dict[str, Any] = json.loads(done.stdout)
    return measured


def load_rows(sessions: int) -> list[Row]:
    """The report's rows: a load test on each emulator, and what idle streams cost."""
    rows = []
    for flavor, name in (("claude", "Claude"), ("openai", "OpenAI")):
        measured = measure(flavor, sessions)
        done = measured["completed"]
        assert done == sessions, measured
        rows.append(
            Row(
                "load test",
                f"{sessions} concurrent sessions in one process, {name} emulator "
                "(`run_to_completion` of a one-turn script each, one provider)",
                f"{measured['wall']:.1f} s wall",
                f"peak {measured['threads']:,} threads, peak RSS "
                f"{measured['peak_kib'] / 1024:.0f} MiB "
                f"({measured['before_kib'] / 1024:.0f} MiB before)",
                f"{sessions / measured['wall']:.0f} sessions/s",
                f"all {sessions} complete",
            )
        )
    busy = idle_cpu(sessions)
    rows.append(
        Row(
            "load test",
            f"{sessions} open idle streams (Claude emulator): CPU it uses meanwhile",
            f"{busy:.1%} of a core",
            target="~0: a stream waits, never polls",
        )
    )
    return rows


def main() -> None:
    sessions = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    for flavor in ("claude", "openai"):
        print(flavor, measure(flavor, sessions))
    print(f"{sessions} idle streams: {idle_cpu(sessions):.1%} of a core")


if __name__ == "__main__":
    main()
