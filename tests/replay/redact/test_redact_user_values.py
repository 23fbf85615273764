"""A one-token value under a keep-list key is kept only when it can be an id, an enum, a tool or
model name or a timestamp: an absolute or home path or an e-mail address is the user's, whatever
its key (``keep_list.USERS_VALUE``)."""

from __future__ import annotations

import json

import pytest

from replay.redact.keep_list import KEEP_KEYS, keeps
from replay.redact.leaves import Redactor

USERS = ["/home/alice/projects/x", "~/alice-notes", "C:\\Users\\alice\\x", "\\\\fileserver\\alice",
         "file:///home/alice/x", "alice.smith@example.com", "d:/alice/x",
         # a user at a host without a dotted domain, a URL naming a user or a host, a home
         # folder written relative (a path that lost its root)
         "alice@devbox", "ssh://alice@devbox/srv/x", "git@github.com:alice/repo",
         "https://github.com/alice/repo", "vscode-remote://ssh-remote+alice-box/x",
         "home/alice/projects/x", "Users\\alice\\x", "-home-alice-projects-x",
         # a user at a host by its address, an address URL-encoded (kept before: no letter
         # after the @; the secret scan's e-mail shape wants a domain)
         "alice@10.0.0.5", "git@192.168.1.20:alice/repo", "alice@[fe80::1]",
         "alice%40example.com", "alice%40devbox",
         # a host alone: by its address, or by a name in a domain (kept before: one token)
         "10.0.0.5", "192.168.1.20:8080", "fe80::1", "alice-box.corp.example.com",
         "alice-build.internal", "ALICE.LOCAL"]
KEPT = ["openai/gpt-4o", "google/gemini-3-pro-preview", "claude-3-5-sonnet-v2@20241022",
        "model@2024.10.22",
        "toolu_01ABCdef", "Read", "inspect_ai/accuracy", "2026-08-03T10:48:56Z",
        # dotted names and versions that are no host
        "web.run", "container.exec", "gpt-4.1", "claude-3.5-sonnet", "0.139.0", "2.1.3"]


@pytest.mark.parametrize("key", sorted(KEEP_KEYS))
def test_a_path_or_address_under_any_keep_key_does_not_survive(key: str) -> None:
    for value in USERS:
        assert not keeps(key, value), (key, value)
        for rec in ({key: value}, {"message": {key: value}}, {key: [value]}):
            copy = json.dumps(Redactor(salt="s").record(rec))
            assert "alice" not in copy, (rec, copy)


def test_ids_enums_and_model_names_are_still_kept() -> None:
    for value in KEPT:
        assert keeps("model", value) and keeps("id", value), value
        assert json.dumps(Redactor(salt="s").record({"model": value})) == json.dumps(
            {"model": value})


def test_a_chat_participants_name_gets_a_stand_in_a_tools_name_is_kept() -> None:
    """OpenAI's chat messages may carry the participant's ``name`` (a user's, a system's): the
    person's, not a tool's; a tool message's ``name`` is its tool's and is kept."""
    redactor = Redactor(salt="s")
    for role in ("user", "system", "developer", "assistant"):
        copy = redactor.record({"role": role, "name": "alice_smith", "content": "x"})
        assert copy["name"] != "alice_smith" and copy["name"] == redactor.ident("alice_smith")
    for role in ("tool", "function"):
        assert redactor.record({"role": role, "name": "bash", "content": "x"})["name"] == "bash"


def test_the_file_name_of_a_codex_parsed_command_is_hashed() -> None:
    """Codex's ``parsed_cmd`` items name the file a command reads (``name``, with or without
    its ``path``): a file's name, not a tool's; a stand-in, never kept."""
    redactor = Redactor(salt="s")
    for item in ({"type": "read", "cmd": "cat alice-salaries.xlsx", "name": "alice-salaries.xlsx"},
                 {"type": "read", "cmd": "cat d/alice.py", "name": "alice.py", "path": "d/alice.py"}):
        rec = {"type": "event_msg", "payload": {"type": "exec_command_begin", "call_id": "c1",
                                                "parsed_cmd": [item]}}
        copy = redactor.record(rec)
        assert "alice" not in json.dumps(copy), copy
        got = copy["payload"]["parsed_cmd"][0]
        assert got["name"] == redactor.ident(item["name"]) and got["type"] == "read"


def test_a_folder_named_by_a_digest_of_a_path_is_hashed_with_the_salt() -> None:
    """Gemini CLI keeps a project's sessions under ``tmp/<sha256 of the project's path>/``: a
    hash anyone can recompute from a guessed path (``/home/alice/secret``), kept as written as
    if it were an id; any bare digest (32 hex digits or more) is hashed with the salt, as the
    ``projectHash`` inside the file is replaced.  Ids (uuids, ``agent-<hex>``) are kept."""
    import hashlib
    digest = hashlib.sha256(b"/home/alice/secret").hexdigest()
    redactor = Redactor(salt="s")
    copy = redactor.file_path(f"tmp/{digest}/chats/session-2026-08-20T09-14-3f2b9c1e.jsonl")
    assert digest not in copy and digest[:16] not in copy, copy
    assert copy.endswith("/session-2026-08-20T09-14-3f2b9c1e.jsonl")
    for kept in ("3f2b9c1e-7a4d-4e1b-9a0c-5d6e7f8a9b0c.jsonl", "agent-a1b2c3d.jsonl"):
        assert redactor.file_path(kept) == kept
