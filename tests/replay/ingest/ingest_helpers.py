"""The ingest tests' shared pieces: a generated Claude Code transcript (``_claude``), writing it,
reading a store back (directly and through ``replay runs --json``), the call/result pairing
walked independently of the parser, and a store's bytes.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from replay.cli import app
from replay.ingest import store


def _claude(n_steps: int, *, tag: str = "s", orphan_step: int | None = None,
            texts: list[str] | None = None) -> list[str]:
    """A Claude Code transcript: a prompt, ``n_steps`` × (Read call, its result), a final answer.

    Expected: ``n_steps + 1`` requests, ``n_steps`` calls and results; result ``orphan_step``
    points at a call id that was never made.
    """
    texts = texts or []

    def rec(i: int, typ: str, message: dict[str, Any]) -> str:
        return json.dumps({"parentUuid": None if i == 0 else f"{tag}-u{i - 1}",
                           "isSidechain": False, "sessionId": f"session-{tag}",
                           "version": "2.1.38", "type": typ, "uuid": f"{tag}-u{i}",
                           "timestamp": f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}Z",
                           "message": message})

    def usage(k: int) -> dict[str, int]:
        return {"input_tokens": 100 + k, "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0, "output_tokens": 7}

    lines = [rec(0, "user", {"role": "user", "content": f"task {tag}: fix the bug"})]
    i = 1
    for k in range(n_steps):
        call = f"toolu_{tag}_{k}"
        lines.append(rec(i, "assistant", {
            "id": f"msg_{tag}_{k}", "type": "message", "role": "assistant", "model": "claude-x",
            "content": [{"type": "tool_use", "id": call, "name": "Read",
                         "input": {"file_path": f"/repo/f{k}.py"}}], "usage": usage(k)}))
        i += 1
        body = texts[k % len(texts)] if texts else f"contents of f{k}.py\nline 2"
        lines.append(rec(i, "user", {"role": "user", "content": [
            {"type": "tool_result", "content": body,
             "tool_use_id": f"toolu_{tag}_never_called" if k == orphan_step else call}]}))
        i += 1
    lines.append(rec(i, "assistant", {
        "id": f"msg_{tag}_end", "type": "message", "role": "assistant", "model": "claude-x",
        "content": [{"type": "text", "text": "done"}], "usage": usage(n_steps)}))
    return lines


def _write(path: Path, lines: list[str], *, end: str = "\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + end, encoding="utf-8")
    return path


def _runs(out: Path) -> list[dict[str, Any]]:
    return store.read_store(out).runs.to_pylist()


def _cli(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def _cli_runs(out: Path) -> list[dict[str, Any]]:
    result = _cli("runs", str(out), "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _pairing_violations(messages: list[dict[str, Any]]) -> Counter[str]:
    """Per run: tool_result rows without exactly one earlier tool_call of the same call_id."""
    bad: Counter[str] = Counter()
    calls: dict[str, Counter[str]] = {}
    for m in messages:  # store order is context order within a run
        seen = calls.setdefault(m["run_id"], Counter())
        if m["kind"] == "tool_call":
            seen[m["call_id"]] += 1
        elif m["kind"] == "tool_result" and seen[m["call_id"]] != 1:
            bad[m["run_id"]] += 1
    return bad


def _store_bytes(out: Path) -> dict[str, bytes]:
    files = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert "manifest.json" in files and any(k.endswith(".parquet") for k in files)
    return files
