"""What the Claude emulator's ``bedrock`` flavor does differently: Claude Managed Agents on
Amazon Bedrock, as the ``anthropic`` SDK's Bedrock models describe it.

The protocol and the state are Claude's; the differences are in here. On the way in:
models are inference profile IDs with a geography prefix (``us.anthropic.…``), skills live in
the sandbox or in S3, a multiagent roster is a ``coordinator`` of agents, and a session names
a sandbox ARN, a working directory and the role it runs as. On the way out
(:func:`bedrock_routes`): agents, sessions and memory stores name who created them (the one
caller the emulator knows, :data:`CALLER`) and their ``resource_arn``; lists answer the
Bedrock list items; and snapshots of an agent name no execution identity.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import re
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.claude._config import _list, _object, _string
from req_managed_agents.testing.claude._wire import ID, SESSION_PATH, _invalid

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from req_managed_agents.testing.server import Route

# The IAM role every request is signed as: the emulator has one caller.
CALLER = {
    "type": "role_actor",
    "arn": "arn:aws:iam::123456789012:role/EmulatorCaller",
    "role_id": "AROAEMULATORCALLER0001",
}
# An inference profile ID: a geography prefix, then the model (``us.anthropic.claude-…``).
_PROFILE_ID = re.compile(r"[a-z][a-z-]{0,15}\.anthropic\.[a-z0-9][a-z0-9.:-]*")
_IAM_ROLE = re.compile(r"arn:aws[a-z-]*:iam::\d{12}:role/\S+")
_PRINTABLE = re.compile(r"[!-~]+")  # printable ASCII, no space
_DEFAULT_WORKING_DIRECTORY = "/mnt/workspace"
DEFAULT_MODEL = "us.anthropic.claude-sonnet-4-6"  # the emulator's agents' model by default


# --- requests ------------------------------------------------------------------------------


def check_model(model: Any) -> None:
    """Refuse what Bedrock refuses: a Claude model name, an ID with no geography prefix, an
    inference profile ARN, and the options only the Claude API has."""
    spec = {"id": model} if isinstance(model, str) else model
    spec = _object(spec, "model", {"id", "effort"})
    model_id = _string(spec.get("id"), "model.id")
    if not _PROFILE_ID.fullmatch(model_id):
        raise _invalid(
            f"model: {model_id!r} is not an inference profile ID with a geography prefix"
            " (such as 'us.anthropic.claude-sonnet-4-6')"
        )


def resolved_skills(skills: Any) -> list[dict[str, str]]:
    """Skills as Bedrock has them: a folder in the sandbox, or a prefix in S3 it mounts."""
    fields = {"sandbox_path": ("path",), "s3_mount": ("s3_uri", "mount_path", "region")}
    resolved = []
    for index, entry in enumerate(_list(skills, "skills")):
        at = f"skills[{index}]"
        kind = entry.get("type") if isinstance(entry, dict) else None
        if kind not in fields:
            raise _invalid(f"{at}.type: Input should be 'sandbox_path' or 's3_mount'")
        _object(entry, at, {"type", *fields[kind]})
        skill = {"type": kind}
        for key in fields[kind]:
            skill[key] = _string(entry.get(key), f"{at}.{key}")
        if kind == "s3_mount" and not skill["s3_uri"].startswith("s3://"):
            raise _invalid(f"{at}.s3_uri: must be an s3:// URI")
        resolved.append(skill)
    return resolved


def check_multiagent(value: Any) -> None:
    """Bedrock's only roster is a ``coordinator`` of agents (no advisor)."""
    if value is None:
        return
    if not isinstance(value, dict) or value.get("type") != "coordinator":
        raise _invalid("multiagent.type: Input should be 'coordinator'")
    for index, entry in enumerate(_list(value.get("agents"), "multiagent.agents")):
        if isinstance(entry, dict) and entry.get("type") not in ("agent", "self"):
            raise _invalid(f"multiagent.agents[{index}].type: Input should be 'agent' or 'self'")


def session_fields(body: Mapping[str, Any], agent: Mapping[str, Any]) -> dict[str, Any]:
    """A Bedrock session's own fields, checked: the sandbox ARN, the working directory and
    the role it runs as (``role_arn`` is the older name of ``execution_identity``; not both;
    neither: the agent's role)."""
    arn = body["environment_id"]
    if not arn.startswith("arn:") or len(arn) > 2048 or not _PRINTABLE.fullmatch(arn) or "#" in arn:
        raise _invalid("environment_id: must be the ARN of a sandbox")
    directory = body.get("working_directory") or _DEFAULT_WORKING_DIRECTORY
    if (
        not isinstance(directory, str)
        or not directory.startswith("/")
        or len(directory) > 1024
        or not _PRINTABLE.fullmatch(directory)
        or ".." in directory.split("/")
    ):
        raise _invalid("working_directory: an absolute path of printable ASCII, no '..'")
    identity = body.get("execution_identity")
    if identity is not None and body.get("role_arn") is not None:
        raise _invalid("execution_identity and role_arn: give one of them, not both")
    if body.get("role_arn") is not None:
        identity = {"type": "aws_role", "role_arn": body["role_arn"]}
    if identity is None:
        identity = agent["execution_identity"]
        if identity.get("type") != "aws_role":
            raise _invalid("execution_identity: the agent has no role; name one")
    if (
        not isinstance(identity, dict)
        or set(identity) != {"type", "role_arn"}
        or identity["type"] != "aws_role"
        or not isinstance(identity["role_arn"], str)
        or not _IAM_ROLE.fullmatch(identity["role_arn"])
    ):
        raise _invalid("execution_identity: {type: 'aws_role', role_arn: <IAM role ARN>}")
    return {"working_directory": directory, "execution_identity": dict(identity)}


# A path under /mnt/ of letters, digits, ``.``, ``_``, ``-`` and ``/``.
_MOUNT_PATH = re.compile(r"/mnt(/[A-Za-z0-9._-]{1,255})+")
_REGION = re.compile(r"[a-z]{2}(-[a-z]+)+-\d")
_S3_FOLDER = re.compile(r"s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/[^/]+)+/?")
_S3_OBJECT = re.compile(r"s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/[^/]+)+")
# type -> (required fields, optional fields) of a sandbox resource.
_SANDBOX_RESOURCES = {
    "s3_mount": (("s3_uri", "mount_path", "region", "mount_as"), ("is_output",)),
    "s3_object": (("s3_uri", "mount_path", "region"), ()),
    "sandbox_path": (("path",), ("is_output",)),
}
SANDBOX_RESOURCE_TYPES = frozenset(_SANDBOX_RESOURCES)


def _mount_path(value: Any, where: str, *, folder: bool) -> str:
    path = _string(value, where)
    segments = path.split("/")[2:]
    if not _MOUNT_PATH.fullmatch(path) or len(path) > 1024 or {".", ".."} & set(segments):
        raise _invalid(f"{where}: a path under /mnt/ of letters, digits, '.', '_', '-' and '/'")
    if path == _DEFAULT_WORKING_DIRECTORY or (
        folder and path.startswith(_DEFAULT_WORKING_DIRECTORY + "/")
    ):
        raise _invalid(f"{where}: {path!r} is the session's working area")
    return path


def sandbox_resource(
    spec: Mapping[str, Any], where: str, tools: list[dict[str, Any]]
) -> dict[str, Any]:
    """An S3 folder or object, or a path the sandbox already holds, checked as Bedrock does;
    ``{session_id}`` in an ``s3_uri`` is filled in when the session is made."""
    kind = spec["type"]
    required, optional = _SANDBOX_RESOURCES[kind]
    _object(spec, where.rstrip("."), {"type", "description", "instructions", *required, *optional})
    resource: dict[str, Any] = {"type": kind}
    for key, limit in (("description", 1024), ("instructions", 4096)):
        text = spec.get(key)
        if text is not None and (not isinstance(text, str) or len(text) > limit):
            raise _invalid(f"{where}{key}: a string of at most {limit} characters")
        resource[key] = text
    if kind == "sandbox_path":
        path = _string(spec.get("path"), f"{where}path")
        if (
            not path.startswith("/")
            or len(path) > 1024
            or not _PRINTABLE.fullmatch(path)
            or ".." in path.split("/")
            or "{" in path
        ):
            raise _invalid(f"{where}path: an absolute path of printable ASCII, no '..'")
        resource["path"] = path
    else:
        uri = _string(spec.get("s3_uri"), f"{where}s3_uri")
        pattern = _S3_FOLDER if kind == "s3_mount" else _S3_OBJECT
        if not pattern.fullmatch(uri) or len(uri) > 1024:
            shape = "s3://bucket/folder/" if kind == "s3_mount" else "s3://bucket/name"
            raise _invalid(f"{where}s3_uri: must look like {shape}")
        resource["s3_uri"] = uri.rstrip("/") + "/" if kind == "s3_mount" else uri
        resource["mount_path"] = _mount_path(
            spec.get("mount_path"), f"{where}mount_path", folder=kind == "s3_mount"
        )
        region = _string(spec.get("region"), f"{where}region")
        if not _REGION.fullmatch(region):
            raise _invalid(f"{where}region: not an AWS region name")
        resource["region"] = region
    if kind == "s3_mount":
        if spec.get("mount_as") not in ("read_write", "read_only"):
            raise _invalid(f"{where}mount_as: Input should be 'read_write' or 'read_only'")
        resource["mount_as"] = spec["mount_as"]
    if "is_output" in optional:
        resource["is_output"] = bool(spec.get("is_output") or False)
        if resource["is_output"] and resource.get("mount_as") == "read_only":
            raise _invalid(f"{where}is_output: needs mount_as 'read_write'")
    if not _reads(tools):
        raise _invalid(f"{where}type: a {kind} resource needs the agent's 'read' tool enabled")
    return resource


def check_resource_counts(resources: list[Any]) -> None:
    """At most 8 memory stores and 20 resources of the other kinds."""
    stores = sum(isinstance(r, dict) and r.get("type") == "memory_store" for r in resources)
    if stores > 8 or len(resources) - stores > 20:
        raise _invalid("resources: at most 8 memory_store entries and 20 others")


def placed(resource: dict[str, Any], session: Mapping[str, Any], index: int) -> dict[str, Any]:
    """A checked sandbox resource as the session holds it: an id, times, the session's id."""
    placed = dict(resource)
    if "s3_uri" in placed:
        placed["s3_uri"] = placed["s3_uri"].replace("{session_id}", session["id"])
    digest = hashlib.sha256(f"{session['id']}/{index}".encode()).hexdigest()
    placed["id"] = f"sesrsc_{digest[:24]}"
    placed["created_at"] = placed["updated_at"] = session["created_at"]
    return placed


def _reads(tools: list[dict[str, Any]]) -> bool:
    return any(
        config["name"] == "read" and config["enabled"]
        for tool in tools
        if tool.get("type") == "agent_toolset_20260401"
        for config in tool["configs"]
    )


# --- answers -------------------------------------------------------------------------------


def _owned(record: dict[str, Any]) -> dict[str, Any]:
    """An agent, session or store with its creator and ARN (null: the emulator names none)."""
    record["created_by"] = copy.deepcopy(CALLER)
    record["resource_arn"] = None
    return record


def _agent_item(agent: dict[str, Any]) -> dict[str, Any]:
    keys = ("id", "archived_at", "created_at", "name", "type", "updated_at", "version")
    item = {key: agent[key] for key in keys}
    return {**item, "model": {"id": agent["model"]["id"]}, "resource_arn": None}


def _snapshot(agent: dict[str, Any]) -> dict[str, Any]:
    """An agent as a session or thread shows it: no execution identity, its roster's too."""
    agent.pop("execution_identity", None)
    multiagent = agent.get("multiagent")
    if multiagent is not None:
        for member in multiagent["agents"]:
            member.pop("execution_identity", None)
    return agent


def _memory_resource(session: dict[str, Any], resource: dict[str, Any]) -> dict[str, Any]:
    """A mounted memory store: Bedrock gives it an id and times and mounts it itself."""
    digest = hashlib.sha256(f"{session['id']}/{resource['memory_store_id']}".encode())
    resource.pop("mount_path", None)
    resource["id"] = f"sesrsc_{digest.hexdigest()[:24]}"
    resource.setdefault("created_at", session["created_at"])
    resource.setdefault("updated_at", session["created_at"])
    return resource


def _session(session: dict[str, Any]) -> dict[str, Any]:
    _snapshot(session["agent"])
    session["resources"] = [
        _memory_resource(session, r) if r["type"] == "memory_store" else r
        for r in session["resources"]
    ]
    return _owned(session)


def _session_item(session: dict[str, Any]) -> dict[str, Any]:
    keys = ("id", "archived_at", "created_at", "status", "title", "type", "updated_at")
    item = {key: session[key] for key in keys}
    resources = [
        _memory_resource(session, copy.deepcopy(r))
        for r in session["resources"]
        if r["type"] == "memory_store"
    ]
    usage = session["usage"]
    return {
        **item,
        "agent": {"id": session["agent"]["id"], "version": session["agent"]["version"]},
        "created_by_me": True,
        "resource_arn": None,
        "resources": [
            {"id": r["id"], "memory_store_id": r["memory_store_id"], "type": r["type"]}
            for r in resources
        ],
        "usage": {"input_tokens": usage["input_tokens"], "output_tokens": usage["output_tokens"]},
    }


def _thread(thread: dict[str, Any]) -> dict[str, Any]:
    thread.pop("workflow_run_id", None)
    _snapshot(thread["agent"])
    return thread


def _memory_store(store: dict[str, Any]) -> dict[str, Any]:
    store.setdefault("backend", {"type": "managed"})
    return _owned(store)


def _memory_store_item(store: dict[str, Any]) -> dict[str, Any]:
    keys = ("id", "archived_at", "created_at", "name", "type", "updated_at")
    return {**{key: store[key] for key in keys}, "created_by_me": True, "resource_arn": None}


def _memory_version(version: dict[str, Any]) -> dict[str, Any]:
    """A version written or redacted over REST is the caller's doing."""
    for key in ("created_by", "redacted_by"):
        if isinstance(version.get(key), dict) and version[key]["type"] == "api_actor":
            version[key] = copy.deepcopy(CALLER)
    return version


def _each(shape: Callable[[dict[str, Any]], dict[str, Any]]) -> Callable[[Any], Any]:
    def shaped(page: dict[str, Any]) -> dict[str, Any]:
        return {**page, "data": [shape(item) for item in page["data"]]}

    return shaped


_AGENT = f"/v1/agents/{ID}"
_THREADS = f"{SESSION_PATH}/threads"
_STORE = f"/v1/memory_stores/{ID}"
_VERSION = f"{_STORE}/memory_versions/{ID}"
# How each route's answer is shaped, by its method and path.
_SHAPES: dict[tuple[str, str], Callable[[Any], Any]] = {
    **dict.fromkeys(
        [("POST", "/v1/agents"), ("GET", _AGENT), ("POST", _AGENT), ("POST", f"{_AGENT}/archive")],
        _owned,
    ),
    ("GET", "/v1/agents"): _each(_agent_item),
    ("GET", f"{_AGENT}/versions"): _each(_agent_item),
    **dict.fromkeys(
        [
            ("POST", "/v1/sessions"),
            ("GET", SESSION_PATH),
            ("POST", SESSION_PATH),
            ("POST", f"{SESSION_PATH}/archive"),
        ],
        _session,
    ),
    ("GET", "/v1/sessions"): _each(_session_item),
    **dict.fromkeys([("GET", f"{_THREADS}/{ID}"), ("POST", f"{_THREADS}/{ID}/archive")], _thread),
    ("GET", _THREADS): _each(_thread),
    **dict.fromkeys(
        [
            ("POST", "/v1/memory_stores"),
            ("GET", _STORE),
            ("POST", _STORE),
            ("POST", f"{_STORE}/archive"),
        ],
        _memory_store,
    ),
    ("GET", "/v1/memory_stores"): _each(_memory_store_item),
    **dict.fromkeys([("GET", _VERSION), ("POST", f"{_VERSION}/redact")], _memory_version),
    ("GET", f"{_STORE}/memory_versions"): _each(_memory_version),
}


def _shaped(route: Callable[..., Any], shape: Callable[[Any], Any]) -> Callable[..., Any]:
    @functools.wraps(route)
    def answer(*args: Any) -> Any:
        payload = route(*args)
        return None if payload is None else shape(payload)

    return answer


def bedrock_routes(routes: list[Route]) -> list[Route]:
    """The routes with every answer in the Bedrock shape."""
    served: list[Route] = []
    for method, path, route in routes:
        shape = _SHAPES.get((method, path))
        served.append((method, path, route if shape is None else _shaped(route, shape)))
    return served
