"""Small real seeds for the fuzz tests, built in memory from the real samples
(``tests/conftest.SAMPLES``): the first lines or steps of one sample per layout, every string
over ``_MAX_STR`` characters cut, written back in the format's own layout (compact JSON Lines,
or an indented document).  Nothing is copied into the repository.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_MAX_STR = 300
SEEDS_AT_IMPORT = ("claude_short", "claude_tools", "codex_small", "codex_2025", "codex_legacy",
                   "swe_fc", "swe_v0", "mini", "mini_v1", "openhands_interactions",
                   "openhands_basic", "chat_object", "chat_list", "chat_jsonl", "chat_requests")
"""The names ``build_seeds`` gives, in order, known at import so that tests can be parametrized
by them (the ``seeds`` fixture checks them)."""


@dataclass(frozen=True, slots=True, repr=False)
class Seed:
    """One small real input: its format, the file name it is written under, its bytes."""

    name: str
    fmt: str
    filename: str
    data: bytes
    jsonl: bool
    """One JSON object per line (every line is a record) rather than one JSON document."""

    def __repr__(self) -> str:
        return f"<seed {self.name}: {self.fmt}, {len(self.data):,} bytes>"


class Seeds(dict[str, Seed]):
    """The seeds by name (a short repr: hypothesis prints the test's arguments)."""

    def __repr__(self) -> str:
        return f"<{len(self)} seeds: {', '.join(self)}>"


def _trim(value: Any, keep: tuple[str, ...] = ()) -> Any:
    if isinstance(value, str):
        return value if len(value) <= _MAX_STR else value[:_MAX_STR]
    if isinstance(value, list):
        return [_trim(v, keep) for v in value]
    if isinstance(value, dict):
        return {k: v if k in keep else _trim(v, keep) for k, v in value.items()}
    return value


_SURROGATE = re.compile("[\ud800-\udfff]")


def _utf8(text: str) -> bytes:
    """JSON text as UTF-8, lone surrogates (from parsed ``\\ud800`` escapes) escaped again."""
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text).encode("utf-8")


def dump_line(obj: Any) -> bytes:
    """One JSON Lines record as the seeds write it."""
    return _utf8(json.dumps(obj, ensure_ascii=False, separators=(",", ":")))


def dump_doc(obj: Any) -> bytes:
    """One JSON document as the seeds write it."""
    return _utf8(json.dumps(obj, ensure_ascii=False, indent=2)) + b"\n"


def _jsonl(records: list[Any]) -> bytes:
    return b"".join(dump_line(r) + b"\n" for r in records)


def _lines(path: Path, n: int) -> list[Any]:
    out = []
    with path.open("rb") as f:
        for raw in f:
            if len(out) == n:
                break
            out.append(_trim(json.loads(raw)))
    return out


def _openai_chat(mini: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A mini-swe-agent chat as an OpenAI tool-calling transcript (bash blocks → tool calls)."""
    block = re.compile(r"```(?:bash|mswea_bash_command)\s*\n(.*?)\n```", re.DOTALL)
    out: list[dict[str, Any]] = []
    pending = None
    for i, m in enumerate(mini):
        content = m.get("content") if isinstance(m.get("content"), str) else ""
        if m["role"] == "assistant":
            found = block.findall(content)
            msg: dict[str, Any] = {"role": "assistant", "content": block.sub("", content).strip()}
            resp = (m.get("extra") or {}).get("response") or {}
            if isinstance(resp.get("usage"), dict):
                msg["usage"] = resp["usage"]
            if isinstance(resp.get("model"), str):
                msg["model"] = resp["model"]
            pending = f"call_{i}" if len(found) == 1 else None
            if pending:
                msg["tool_calls"] = [{"id": pending, "type": "function", "function": {
                    "name": "bash", "arguments": json.dumps({"command": found[0]})}}]
            out.append(msg)
        elif m["role"] == "user" and pending:
            out.append({"role": "tool", "tool_call_id": pending, "content": content})
            pending = None
        else:
            out.append({"role": m["role"], "content": content})
    return out


def _request_log(chat: list[dict[str, Any]]) -> list[dict[str, Any]]:
    plain = [{k: v for k, v in m.items() if k not in ("usage", "model")} for m in chat]
    return [{"messages": plain[:k], "response": {
        "id": f"resp-{k}", "model": m.get("model", ""), "created": 1763510154 + k,
        "choices": [{"index": 0, "message": plain[k]}], "usage": m.get("usage")}}
        for k, m in enumerate(chat) if m["role"] == "assistant"]


def build_seeds(samples: Path) -> Seeds:
    """Every seed, by name, built from the sample logs folder."""
    seeds: list[Seed] = []

    def add(name: str, fmt: str, filename: str, data: bytes, jsonl: bool) -> None:
        seeds.append(Seed(name, fmt, filename, data, jsonl))

    cc = samples / "claude-code"
    add("claude_short", "claude_code", "short.jsonl", _jsonl(_lines(cc / "short.jsonl", 15)), True)
    add("claude_tools", "claude_code", "tool_heavy.jsonl",
        _jsonl(_lines(cc / "tool_heavy.jsonl", 24)), True)
    cx = samples / "codex"
    small = next(cx.glob("rollout-2026-02-23T13-19-38-*.jsonl"))
    add("codex_small", "codex", small.name, _jsonl(_lines(small, 19)), True)
    modern = next(cx.glob("rollout-2025-11-17T15-30-28-*.jsonl"))
    add("codex_2025", "codex", modern.name, _jsonl(_lines(modern, 40)), True)
    add("codex_legacy", "codex", "rollout-legacy.jsonl",
        _jsonl(_lines(cx / "example-legacy-2025-09-10.jsonl", 30)), True)

    swe = json.loads((samples / "swe-agent" / "v1fc_gpt4__sweagenttestrepo-1c2844.traj")
                     .read_text(encoding="utf-8"))
    swe["trajectory"] = swe["trajectory"][:3]
    swe["history"] = swe["history"][:7]
    add("swe_fc", "swe_agent", "sweagenttestrepo.traj", dump_doc(_trim(swe, ("replay_config",))),
        False)
    v0 = json.loads((samples / "swe-agent" / "v0_gpt4__pydicom__pydicom-1458.traj")
                    .read_text(encoding="utf-8"))
    v0["trajectory"] = v0["trajectory"][:3]
    v0["history"] = v0["history"][:8]
    add("swe_v0", "swe_agent", "pydicom.traj", dump_doc(_trim(v0, ("replay_config",))), False)

    mini_path = samples / "mini-swe-agent" / "minirepo_test_github_issue.traj.json"
    mini = json.loads(mini_path.read_text(encoding="utf-8"))
    add("mini", "mini_swe_agent", mini_path.name, dump_doc(_trim(mini)), False)
    mini_v1 = json.loads((samples / "mini-swe-agent" / "django__django-11163.traj.json")
                         .read_text(encoding="utf-8"))
    mini_v1["messages"] = mini_v1["messages"][:7]
    add("mini_v1", "mini_swe_agent", "django__django-11163.traj.json", dump_doc(_trim(mini_v1)),
        False)

    oh = samples / "openhands"
    add("openhands_interactions", "openhands", "basic_interactions.json",
        dump_doc(_trim(json.loads((oh / "basic_interactions.json").read_text(encoding="utf-8")))),
        False)
    add("openhands_basic", "openhands", "basic.json",
        dump_doc(_trim(json.loads((oh / "basic.json").read_text(encoding="utf-8")))), False)

    chat = _trim(_openai_chat(mini))
    add("chat_object", "chat", "chat.json", dump_doc({"model": "gpt-x", "messages": chat}), False)
    add("chat_list", "chat", "chat-list.json", dump_doc(chat), False)
    add("chat_jsonl", "chat", "chat.jsonl", _jsonl(chat), True)
    add("chat_requests", "chat", "requests.jsonl", _jsonl(_request_log(chat[:9])), True)
    return Seeds((s.name, s) for s in seeds)


NEW_FORMAT_SEEDS: dict[str, tuple[str, str]] = {
    "atif": ("atif", "terminus2-linear-history.trajectory.json"),
    "atif_tools": ("atif", "openhands-hello-world.trajectory.json"),
    "gemini_jsonl": ("gemini_cli", "session-2026-08-21T13-02-0a9b8c7d.jsonl"),
    "gemini_json": ("gemini_cli", "session-2025-09-03T16-40-8c1d2e3f.json"),
    "opencode": ("opencode", "rebuild-errors.export.json"),
    "opencode_run": ("opencode", "run-list.events.jsonl"),
    "inspect_json": ("inspect_ai", "hand-made-compaction.json"),
    "inspect_eval": ("inspect_ai", "log_message_deduplication.eval"),
}
"""The ATIF, Gemini CLI, OpenCode and Inspect AI seeds: (format, file name) under
``tests/fixtures/<format>/``, by name."""
