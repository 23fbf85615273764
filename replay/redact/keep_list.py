"""The keep-list: which string values and keys of a log survive ``replay redact`` as written,
which are hashed, and which subtrees are the user's data (one definition, read by
``replay.redact.leaves`` when it redacts and by the leak test when it checks).

Kept: values under ``KEEP_KEYS`` (ids, enums, tool and model names, timestamps) when they have
the shape of one and not of a path or an e-mail address (``keeps``), a format's own enums (``enum_keys``: OpenHands' event kinds,
Inspect's step ``action``), and inside a tool input only a closed vocabulary of the format's
(``INPUT_ENUMS``: Codex's web search action types).  A value under those keys of another shape
gets a stand-in (``replay.redact.leaves.Redactor.ident``), never a text marker.  Hashed: paths
(``PATH_KEYS``), the keys of objects keyed by paths (``PATH_KEYED``) or ids (``ID_KEYED``).
Data subtrees (``data_keys``): every string replaced, every key hashed, but ``READ_IN_DATA``.

Not here: the walk that applies it (``replay.redact.leaves``).
"""

from __future__ import annotations

import re

from replay.redact.time_shift import MOMENT

KEEP_KEYS = frozenset({
    "type", "subtype", "role", "name", "id", "uuid", "parentUuid", "logicalParentUuid",
    "leafUuid", "tool_use_id", "call_id", "item_id", "sessionId", "session_id", "agentId",
    "requestId", "timestamp", "model", "stop_reason", "version", "cli_version", "originator",
    "userType", "level", "trigger", "status", "media_type", "headUuid", "tailUuid", "uuids",
    "compactedToolIds", "toolUseID", "parentToolUseID", "promptId", "isSidechain", "effort",
    "record_type", "model_provider", "forked_from_id", "parent_thread_id", "turn_id",
    "hookEvent", "permissionMode", "source", "service_tier", "speed", "tool_name",
    "model_name", "mini_version", "trajectory_format", "interrupt_type", "action_regex",
    "swe_agent_version", "tool_call_id", "function_name", "source_call_id", "trajectory_id",
    "schema_version", "callID", "messageID", "modelID", "providerID", "tool", "mime", "event",
    "function", "span_id", "parent_id", "kind", "inspect_ai", "task", "$rewindTo",
    "window_id", "previous_window_id", "first_window_id", "rolloutIds", "threadId",
    "agent_thread_id",
})
"""Keys whose string values are ids, enums, names or timestamps: kept as written, when the value
has the shape of one (``KEPT_VALUE``) and is not inside a tool input or a ``DATA_KEYS``
subtree (``keeps`` is the one rule); a value of another shape is replaced by its stand-in
(``Redactor.ident``), never by a text marker: parsers pair and order records by these
values, and a text marker would merge an id with a text that reads the same."""
INPUT_ENUMS: dict[str, frozenset[str]] = {
    "type": frozenset({"search", "open_page", "openPage", "find_in_page", "findInPage",
                       "other", "exec", "command"}),
}
"""Inside a tool input, values kept because they are a closed vocabulary of the log format's own
(Codex's ``web_search_call`` ``action.type``, a ``local_shell_call``'s ``exec``, a guardian
assessment's ``command``), not the user's text."""
ATTACHMENT = "attachment://"
"""How an Inspect text that stands for an attachment begins (``attachment://<hash>``, the hash a
key of the sample's ``attachments``): the hash gets its stand-in (``Redactor.ident``) in the
reference and as the key, so the reference still resolves (the hash is the content's, and
would let one confirm a guess of it)."""
ID_KEYED = frozenset({"attachments"})
"""Keys whose object is keyed by ids (Inspect's ``attachments``): every key gets its stand-in."""
PATH_KEYED = frozenset({"changes"})
"""Keys whose object is keyed by file paths (Codex's ``patch_apply_end`` ``changes``): every key
of it is hashed like a path, whatever it looks like (``Makefile`` too), and stays present."""
KEPT_VALUE = re.compile(r"[^\s\x00-\x1f\x7f]{1,128}")
"""The shape of a value kept under ``KEEP_KEYS``: one token of at most 128 characters (an id, an
enum, a tool or model name); text with a space (a title, a prompt) is never kept, whatever its
key.  A timestamp (``MOMENT``, the whole value) is kept too."""
USERS_VALUE = re.compile(r"[~/\\]|[A-Za-z]:[\\/]|file:|[A-Za-z][A-Za-z0-9+.-]*://"
                         r"|.*@[^@\s]+\.[A-Za-z]{2,}$|[^@\s]+(?:@|%40)[A-Za-z]"
                         r"|[^@\s]+@(?:\d{1,3}\.){3}\d{1,3}(?![\d.])|[^@\s]+@\["
                         r"|(?:[^\s]*[/\\])?(?:home|Users)[/\\]|-(?:home|Users)-"
                         r"|(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?$"
                         r"|(?=[0-9A-Fa-f:]*[0-9A-Fa-f])[0-9A-Fa-f:]*::[0-9A-Fa-f:]*$"
                         r"|(?:[A-Za-z0-9-]+\.)+(?i:internal|local|lan|corp|intranet|localdomain"
                         r"|home\.arpa|com|net|org|io|dev|cloud)(?::\d+)?$")
"""Values of that shape that are still the user's, whatever their key: an absolute or home path
(``/home/alice/x``, ``~/x``, ``C:\\Users\\alice``, ``file:///…``), one that lost its root
(``home/alice/x``, ``Users\\alice``, Claude Code's folder name ``-home-alice-x``), a URL
(``https://github.com/alice/x``, ``ssh://alice@box/x``: it may name a user or a host), an
e-mail address or a user at a host (``alice@devbox``, ``git@github.com:alice/x``, its ``@``
URL-encoded ``alice%40devbox``, a host by its address ``root@10.0.0.5``, ``alice@[fe80::1]``),
or a host alone: an IPv4 or IPv6 address (``10.0.0.5``, ``10.0.0.5:8080``, ``fe80::1``) or a
host name in a domain (``devbox.corp.example.com``, ``build-01.internal``: a name ending in a
private suffix or one of the common top-level domains; a tool's dotted name, ``web.run``,
``container.exec``, ends in neither).
Never
kept (a stand-in instead): no id, enum, tool or model name of the formats read has that shape
(a model name may hold a slash inside: ``openai/gpt-4o``, and a version after an ``@``:
``claude-3-5-sonnet-v2@20241022``, both kept)."""
PRODUCT_KEYS = frozenset({"originator"})
"""Keys of ``KEEP_KEYS`` whose value is a product name of up to three words (Codex's
``originator``: ``Codex Desktop``), kept when it has that shape (``PRODUCT_NAME``)."""
PRODUCT_NAME = re.compile(r"[A-Za-z0-9_.-]{1,24}(?: [A-Za-z0-9_.-]{1,24}){0,2}")
DATA_KEYS = frozenset({"toolUseResult", "metadata", "dataset", "task_args", "model_args",
                       "solver_args", "model_roles", "model_generate_config", "env", "store",
                       "scores", "sample_metadata", "plan", "tags", "revision",
                       "trackedFileBackups"})
"""Keys whose subtree is the harness's or the user's own data, not the log's structure (a Claude
Code tool's result object and file-history backups, Inspect's dataset, metadata and task
arguments): inside, every string is replaced and every key is hashed, except
``READ_IN_DATA``."""
FORMAT_DATA_KEYS: dict[str, frozenset[str]] = {"codex": DATA_KEYS - {"metadata"}}
"""Formats whose records use a ``DATA_KEYS`` key for their own structure: Codex's ``metadata``
holds the item's ``turn_id`` (and an exec output's exit code), not the user's data."""


def data_keys(fmt: str) -> frozenset[str]:
    """The data-subtree keys of format ``fmt`` (``DATA_KEYS`` unless ``FORMAT_DATA_KEYS``)."""
    return FORMAT_DATA_KEYS.get(fmt, DATA_KEYS)


READ_IN_DATA = frozenset({"trigger", "summary", "exit_code"})
"""Keys a parser reads inside a data subtree (Inspect's compaction trigger and summary flag, an
exit code): kept; their numbers and booleans too, their strings only as ``keeps_in_data``
says."""
ENUMS_IN_DATA = frozenset({"trigger"})
"""Keys of ``READ_IN_DATA`` whose string value a parser reads as an enum (a compaction's
``trigger``: ``auto``, ``manual``); a string under the others (``summary``, ``exit_code``: a
flag and a number when a parser reads them) is the user's data."""


def keeps_in_data(key: str, value: str) -> bool:
    """Whether a string ``value`` under ``key`` inside a data subtree is kept as written: an
    enum a parser reads there (``ENUMS_IN_DATA``) of one token (``KEPT_VALUE``)."""
    return (key in ENUMS_IN_DATA and KEPT_VALUE.fullmatch(value) is not None
            and USERS_VALUE.match(value) is None)


FILE_NAMED = frozenset({"parsed_cmd"})
"""Keys whose items' ``name`` is a file's, not a tool's (Codex's ``parsed_cmd``: ``{"type":
"read", "cmd": …, "name": "app.py"}``): given a stand-in (``Redactor.ident``), as a value of a
keep-list key of another shape is; no parser reads it."""
PATH_KEYS = frozenset({"file_path", "path", "notebook_path", "filename", "file", "target_file",
                       "absolute_path", "cwd", "filePath", "workdir"})
"""Keys whose string values are paths: hashed."""
FORMAT_ENUM_KEYS: dict[str, frozenset[str]] = {
    "openhands": frozenset({"action", "observation", "function_name", "tool_call_id",
                            "response_id"}),
    "inspect_ai": frozenset({"action"}),
}
"""Keys whose values a format uses as enums or ids, besides ``KEEP_KEYS`` (OpenHands' event
kinds and the ids pairing its calls, results and responses; Inspect's ``step`` events'
``action``, ``begin`` / ``end``, by which its parser finds scorer steps)."""


def enum_keys(fmt: str) -> frozenset[str]:
    """Format ``fmt``'s own enum keys (``FORMAT_ENUM_KEYS``)."""
    return FORMAT_ENUM_KEYS.get(fmt, frozenset())


def keeps(key: str, value: str, extra: frozenset[str] = frozenset()) -> bool:
    """Whether a string ``value`` under ``key`` (outside tool inputs and data subtrees) is kept
    as written: the key is on the keep-list (``KEEP_KEYS``, or ``extra``: a format's own enums)
    and the value is one token or a timestamp.  The one definition of what survives redaction
    besides structure (keys outside data subtrees), numbers, booleans and nulls."""
    return (key in KEEP_KEYS or key in extra) and USERS_VALUE.match(value) is None and (
        KEPT_VALUE.fullmatch(value) is not None or MOMENT.fullmatch(value) is not None
        or key in PRODUCT_KEYS and PRODUCT_NAME.fullmatch(value) is not None)
