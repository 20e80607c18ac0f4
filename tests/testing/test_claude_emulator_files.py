"""The Claude emulator's Files API, session resources and agent outputs, over real sockets."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import datetime
from typing import Any, Callable

import pytest
import requests

from req_managed_agents.testing import ClaudeEmulator, Turn
from req_managed_agents.testing.claude._wire import BETA
from tests.support.api import FILES_BETA, Api, error_of, ok

BOTH_BETAS = f"{FILES_BETA},{BETA}"


def invalid(response: requests.Response) -> str:
    """The message of a 400 ``invalid_request_error``."""
    error = error_of(response, 400)
    assert error["type"] == "invalid_request_error"
    return str(error["message"])


def created(record: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(record["created_at"].replace("Z", "+00:00"))


@pytest.fixture
def harness() -> Iterator[Callable[..., tuple[ClaudeEmulator, Api]]]:
    started: list[tuple[ClaudeEmulator, Api]] = []

    def start(*args: Any, **kwargs: Any) -> tuple[ClaudeEmulator, Api]:
        emulator = ClaudeEmulator(*args, **kwargs)
        started.append((emulator, Api(emulator, BOTH_BETAS)))
        return started[-1]

    yield start
    for emulator, api in started:
        api.http.close()
        emulator.close()


# --- upload and metadata ----------------------------------------------------------------------


def test_an_upload_answers_metadata_and_keeps_the_last_path_component(harness: Any) -> None:
    emulator, api = harness()
    data = b"city,temp\nParis,21\n"
    response = api.upload(
        {"file": ("reports/2026/data.csv", data, "text/csv"), "purpose": (None, "agent")}
    )
    record = ok(response)
    assert record["id"].startswith("file_")
    assert record == {
        "id": record["id"],
        "type": "file",
        "filename": "data.csv",
        "mime_type": "text/csv",
        "size_bytes": len(data),
        "created_at": record["created_at"],
        "downloadable": False,
    }
    assert record["created_at"].endswith("Z")
    created(record)  # RFC 3339
    assert ok(api.get(f"/v1/files/{record['id']}")) == record
    assert api.upload_file("C:\\Users\\me\\notes.txt", b"x")["filename"] == "notes.txt"
    assert emulator.files()[0] == record

    recorded = emulator.requests[0]
    assert recorded.headers["content-type"].startswith("multipart/form-data; boundary=")
    assert isinstance(recorded.body, bytes)
    assert recorded.body == recorded.raw_body
    assert data in recorded.body


def test_malformed_uploads_are_rejected(harness: Any) -> None:
    emulator, api = harness()
    assert "content type" in invalid(api.upload({"file": ("a.txt", b"x")}))  # no part type
    assert "filename" in invalid(api.upload({"file": ("", b"x", "text/plain")}))
    assert "exactly one" in invalid(api.upload({"purpose": (None, "agent")}))
    two = [("file", ("a.txt", b"x", "text/plain")), ("file", ("b.txt", b"y", "text/plain"))]
    assert "exactly one" in invalid(api.upload(two))
    extra = {"file": ("a.txt", b"x", "text/plain"), "colour": (None, "red")}
    assert "colour" in invalid(api.upload(extra))
    assert "multipart" in invalid(api.post("/v1/files", {"file": "x"}))
    cut_short = b'--b\r\ncontent-disposition: form-data; name="file"; filename="a"\r\n\r\nx'
    response = api.http.post(
        emulator.base_url + "/v1/files",
        data=cut_short,
        headers={"content-type": "multipart/form-data; boundary=b"},
        timeout=5,
    )
    assert "multipart" in invalid(response)
    assert emulator.files() == []


# --- download and delete ----------------------------------------------------------------------


def test_uploads_are_not_downloadable_unless_the_emulator_allows_it(harness: Any) -> None:
    _, api = harness()
    file_id = api.upload_file("data.csv", b"a,b\n")["id"]
    assert "not downloadable" in invalid(api.get(f"/v1/files/{file_id}/content"))

    _, lenient = harness(downloadable_uploads=True)
    record = lenient.upload_file("data.csv", b"a,b\n")
    assert record["downloadable"] is True
    response = lenient.get(f"/v1/files/{record['id']}/content")
    assert response.status_code == 200
    assert response.content == b"a,b\n"
    assert response.headers["content-type"] == "text/csv"


def test_outputs_download_byte_for_byte(harness: Any) -> None:
    emulator, api = harness()
    session_id = api.new_session()
    binary = b"\x00\x01\r\n\x00--boundary\r\n\xff" * 100
    big = os.urandom(1024 * 1024)
    for name, data, mime in [
        ("blob.bin", binary, "application/octet-stream"),
        ("big", big, "application/octet-stream"),
        ("notes.txt", b"", "text/plain"),
    ]:
        record = emulator.add_output(session_id, name, data)
        assert record["scope"] == {"type": "session", "id": session_id}
        assert (record["downloadable"], record["size_bytes"]) == (True, len(data))
        assert ok(api.get(f"/v1/files/{record['id']}")) == record
        response = api.get(f"/v1/files/{record['id']}/content")
        assert response.status_code == 200
        assert response.headers["content-type"] == mime
        assert response.content == data


def test_a_deleted_file_is_gone(harness: Any) -> None:
    _, api = harness(downloadable_uploads=True)
    file_id = api.upload_file("data.csv", b"x")["id"]
    assert ok(api.delete(f"/v1/files/{file_id}")) == {"id": file_id, "type": "file_deleted"}
    for response in (
        api.get(f"/v1/files/{file_id}"),
        api.get(f"/v1/files/{file_id}/content"),
        api.delete(f"/v1/files/{file_id}"),
    ):
        assert error_of(response, 404)["type"] == "not_found_error"
    assert ok(api.get("/v1/files"))["data"] == []


# --- listing ----------------------------------------------------------------------------------


def test_a_scoped_listing_has_only_the_sessions_outputs_newest_first(harness: Any) -> None:
    emulator, api = harness()
    upload = api.upload_file("input.csv", b"in")
    session_id = api.new_session()
    other_session = api.new_session()
    ok(api.attach(session_id, file_id=upload["id"]))
    emulator.add_output(other_session, "theirs.txt", b"no")
    names = ["a.txt", "b.txt", "report.csv", "c.txt", "report.csv"]
    written = [emulator.add_output(session_id, name, name.encode()) for name in names]

    listed, pages = api.list_all("/v1/files", scope_id=session_id, limit=2)
    assert pages == 3
    assert listed == written[::-1]
    assert [created(r) for r in listed] == sorted((created(r) for r in listed), reverse=True)
    assert len({r["created_at"] for r in listed}) == len(listed)
    assert emulator.files(session_id) == written

    everything, _ = api.list_all("/v1/files", limit=1000)
    assert len(everything) == 1 + 1 + 1 + len(names)  # upload, its mounted copy, outputs
    assert everything[-1] == upload
    assert ok(api.get("/v1/files", scope_id="sesn_unknown")) == {"data": [], "next_page": None}


def test_file_listing_pages_and_limits(harness: Any) -> None:
    emulator, api = harness()
    session_id = api.new_session()
    for i in range(25):
        emulator.add_output(session_id, f"f{i}.txt", b"x")
    first = ok(api.get("/v1/files"))
    assert len(first["data"]) == 20
    assert first["next_page"].startswith("page_")
    rest = ok(api.get("/v1/files", page=first["next_page"]))
    assert (len(rest["data"]), rest["next_page"]) == (5, None)
    assert "page" in invalid(api.get("/v1/files", scope_id=session_id, page=first["next_page"]))
    assert "limit" in invalid(api.get("/v1/files", limit=0))
    assert "limit" in invalid(api.get("/v1/files", limit=1001))


# --- headers ----------------------------------------------------------------------------------


def test_the_files_api_needs_no_beta_but_a_scoped_listing_needs_the_managed_agents_one(
    harness: Any,
) -> None:
    emulator, api = harness()
    session_id = api.new_session()
    file_id = api.upload_file("data.csv", b"x")["id"]
    for beta in (None, FILES_BETA, BETA, f"{FILES_BETA},{BETA}"):
        client = Api(emulator, beta)
        ok(client.get("/v1/files"))
        ok(client.get(f"/v1/files/{file_id}"))
        ok(client.upload({"file": ("a.txt", b"x", "text/plain")}))
        scoped = client.get("/v1/files", scope_id=session_id)
        if beta is not None and BETA in beta:
            ok(scoped)
        else:
            assert BETA in invalid(scoped)
        client.http.close()
    repeated = api.http.get(
        emulator.base_url + "/v1/files",
        params={"scope_id": session_id},
        headers={"anthropic-beta": FILES_BETA},  # replaces the session's combined value
        timeout=5,
    )
    assert BETA in invalid(repeated)

    no_key = requests.get(
        emulator.base_url + "/v1/files", headers={"anthropic-version": "2023-06-01"}, timeout=5
    )
    assert error_of(no_key, 401)["type"] == "authentication_error"
    no_version = requests.get(
        emulator.base_url + "/v1/files", headers={"x-api-key": emulator.api_key}, timeout=5
    )
    assert "anthropic-version" in invalid(no_version)
    files_only = Api(emulator, FILES_BETA)
    assert error_of(files_only.get(f"/v1/sessions/{session_id}/resources"), 404)
    files_only.http.close()


# --- session resources ------------------------------------------------------------------------


def test_attaching_a_file_mounts_a_read_only_copy_with_a_new_id(harness: Any) -> None:
    emulator, api = harness()
    upload = api.upload_file("data.csv", b"a,b\n")
    session_id = api.new_session()

    resource = ok(api.attach(session_id, file_id=upload["id"], mount_path="/data.csv"))
    assert resource["id"].startswith("sesrsc_")
    assert resource == {
        "id": resource["id"],
        "type": "file",
        "file_id": resource["file_id"],
        "mount_path": "/mnt/session/uploads/data.csv",
        "created_at": resource["created_at"],
        "updated_at": resource["created_at"],
    }
    assert resource["file_id"] != upload["id"]
    mounted = ok(api.get(f"/v1/files/{resource['file_id']}"))
    assert {k: mounted[k] for k in ("filename", "mime_type", "size_bytes")} == {
        "filename": "data.csv",
        "mime_type": "text/csv",
        "size_bytes": 4,
    }
    assert mounted["downloadable"] is False
    assert "scope" not in mounted
    assert created(mounted) > created(upload)

    def mount_path(**resource: Any) -> str:
        return str(ok(api.attach(session_id, file_id=upload["id"], **resource))["mount_path"])

    assert mount_path() == f"/mnt/session/uploads/{upload['id']}"
    assert mount_path(mount_path="src/main.py") == "/mnt/session/uploads/src/main.py"
    assert mount_path(mount_path="/../../etc/passwd") == "/mnt/session/uploads/etc/passwd"
    assert "mount_path" in invalid(api.attach(session_id, file_id=upload["id"], mount_path="/"))

    unknown = api.attach(session_id, file_id="file_nope")
    assert error_of(unknown, 404)["type"] == "not_found_error"
    assert "file_id" in invalid(api.attach(session_id))
    assert "extra" in invalid(api.attach(session_id, file_id=upload["id"], mode="rw")).lower()
    repo = {"type": "github_repository", "url": "https://github.com/o/r"}
    assert "type" in invalid(api.post(f"/v1/sessions/{session_id}/resources", repo))
    assert error_of(api.attach("sesn_nope", file_id=upload["id"]), 404)
    session = ok(api.get(f"/v1/sessions/{session_id}"))
    assert session["resources"][0] == resource
    assert emulator.files(session_id) == []  # mounted copies are not session-scoped


def test_resources_are_listed_read_and_deleted(harness: Any) -> None:
    _, api = harness()
    upload = api.upload_file("data.csv", b"x")
    session_id = api.new_session()
    path = f"/v1/sessions/{session_id}/resources"
    resources = [ok(api.attach(session_id, file_id=upload["id"])) for _ in range(3)]

    assert ok(api.get(path)) == {"data": resources, "next_page": None}
    assert api.list_all(path, limit=2) == (resources, 2)
    first = resources[0]
    assert ok(api.get(f"{path}/{first['id']}")) == first
    deleted = ok(api.delete(f"{path}/{first['id']}"))
    assert deleted == {"id": first["id"], "type": "session_resource_deleted"}
    assert error_of(api.get(f"{path}/{first['id']}"), 404)["type"] == "not_found_error"
    assert error_of(api.delete(f"{path}/{first['id']}"), 404)
    assert error_of(api.get(f"/v1/files/{first['file_id']}"), 404)  # the copy went with it
    assert ok(api.get(f"/v1/files/{upload['id']}")) == upload
    assert ok(api.get(path))["data"] == resources[1:]


def test_files_can_be_mounted_at_creation_up_to_the_limit(harness: Any) -> None:
    emulator, api = harness()
    upload = api.upload_file("data.csv", b"x")
    mount = {"type": "file", "file_id": upload["id"]}
    session_id = api.new_session(resources=[{**mount, "mount_path": "/in/data.csv"}])
    (resource,) = ok(api.get(f"/v1/sessions/{session_id}"))["resources"]
    assert resource["mount_path"] == "/mnt/session/uploads/in/data.csv"

    sessions = emulator.session_ids()
    body = {
        "agent": emulator.add_agent(),
        "environment_id": emulator.add_environment(),
        "resources": [mount, {"type": "file", "file_id": "file_nope"}],
    }
    assert error_of(api.post("/v1/sessions", body), 404)["type"] == "not_found_error"
    assert "resources[1].type" in invalid(
        api.post("/v1/sessions", {**body, "resources": [mount, 1]})
    )
    assert emulator.session_ids() == sessions
    assert len(emulator.files()) == 2  # nothing mounted by the refused creates

    assert "500" in invalid(api.post("/v1/sessions", {**body, "resources": [mount] * 501}))
    full = api.new_session(resources=[mount] * 500)
    assert len(ok(api.get(f"/v1/sessions/{full}/resources"))["data"]) == 500
    assert "500" in invalid(api.attach(full, file_id=upload["id"]))


# --- agent outputs ----------------------------------------------------------------------------


def test_a_turn_writes_session_scoped_outputs_before_it_ends(harness: Any) -> None:
    png = b"\x89PNG\r\n\x1a\n\x00\x00"
    script = [
        Turn(text="first", outputs={"report.csv": b"v1", "chart.png": png, "raw": b"\x00"}),
        Turn(text="second", outputs={"report.csv": b"v2"}),
    ]
    emulator, api = harness(script)
    upload = api.upload_file("input.csv", b"in")
    session_id = api.new_session(resources=[{"type": "file", "file_id": upload["id"]}])

    def run_turn(text: str, idles: int) -> None:
        message = {"type": "user.message", "content": [{"type": "text", "text": text}]}
        ok(api.post(f"/v1/sessions/{session_id}/events", {"events": [message]}))
        assert emulator.wait_until(
            lambda: (
                [e["type"] for e in emulator.events(session_id)].count("session.status_idle")
                == idles
            )
        )

    run_turn("go", 1)
    # Listed as soon as the idle is seen: written before the turn's final status event.
    listed = ok(api.get("/v1/files", scope_id=session_id))["data"]
    assert [(r["filename"], r["mime_type"]) for r in listed] == [
        ("raw", "application/octet-stream"),
        ("chart.png", "image/png"),
        ("report.csv", "text/csv"),
    ]
    assert all(r["scope"] == {"type": "session", "id": session_id} for r in listed)
    assert api.get(f"/v1/files/{listed[1]['id']}/content").content == png

    run_turn("again", 2)
    listed = ok(api.get("/v1/files", scope_id=session_id))["data"]
    reports = [r for r in listed if r["filename"] == "report.csv"]
    assert len(reports) == 2
    assert created(reports[0]) > created(reports[1])
    assert api.get(f"/v1/files/{reports[0]['id']}/content").content == b"v2"

    ok(api.delete(f"/v1/sessions/{session_id}"))
    assert ok(api.get("/v1/files", scope_id=session_id))["data"] == []
    assert emulator.files() == [upload]  # outputs and the mounted copy went with the session
    with pytest.raises(ValueError, match="deleted"):
        emulator.add_output(session_id, "late.txt", b"x")


def test_outputs_are_validated() -> None:
    for name in ("", "..", "dir/report.csv"):
        with pytest.raises(ValueError, match="plain file name"):
            Turn(outputs={name: b"x"})
    with pytest.raises(TypeError, match="bytes"):
        Turn(outputs={"a.txt": "text"})  # type: ignore[dict-item]
    turn = Turn(outputs={"a.txt": bytearray(b"x")})  # type: ignore[dict-item]
    assert turn.outputs == {"a.txt": b"x"}
    assert Turn().outputs == {}
    with ClaudeEmulator() as emulator, pytest.raises(KeyError):
        emulator.add_output("sesn_nope", "a.txt", b"x")
