"""A run with no recorded request is never dropped silently: ``replay run`` named it; ``sweep``,
``diff``, ``check`` and the report counted only the others ("2 settings × 1 run") without a
word.  Now every command names it (``replay.corpus.not_replayed_note``), escaped as any label
from a file is, and their ``--json`` lists it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replay.cli import app

_TASK = "start the \x1b[31mserver"
"""The only prompt of the file with no request (a label's title: a terminal escape in it)."""


@pytest.fixture(scope="module")
def logs(samples: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """short.jsonl (one request) and a Claude Code file of one user prompt and no reply."""
    folder = tmp_path_factory.mktemp("logs")
    (folder / "short.jsonl").write_bytes((samples / "claude-code" / "short.jsonl").read_bytes())
    prompt = {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s1",
              "timestamp": "2026-02-10T21:11:56.906Z", "isSidechain": False,
              "message": {"role": "user", "content": _TASK}}
    (folder / "asked.jsonl").write_text(json.dumps(prompt) + "\n")
    assert all(json.loads(line)["type"] != "assistant"  # (the independent reading: no reply)
               for line in (folder / "asked.jsonl").read_text().splitlines())
    return folder


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def _said(out: str) -> bool:
    flat = " ".join(out.split())
    return ("note: 1 run(s) with no recorded request not replayed: asked.jsonl" in flat
            and "`replay inspect FILE` says why" in flat and "\x1b" not in out)


def _listed(out: str, key: str = "not_replayed") -> list[str]:
    labels: list[str] = json.loads(out[out.index("{"):])[key]
    return labels


def test_sweep_names_the_run_it_could_not_replay(logs, tmp_path) -> None:  # type: ignore[no-untyped-def]
    args = ["sweep", "-q", str(logs), "-p", "none", "--axis", "server.reserve_tokens=0,4096",
            "--no-plots", "--jobs", "1", "--cache-dir", str(tmp_path / "c"),
            "--out", str(tmp_path / "o")]
    code, out = _cli(*args)
    assert code == 0, out
    assert _said(out) and "2 settings × 1 run" in out
    code, out = _cli(*args, "--json")
    assert _listed(out) == [f"asked.jsonl — {_TASK}"] and "\x1b" not in out  # (JSON escapes it)


def test_diff_names_the_run_it_could_not_replay(logs, tmp_path) -> None:  # type: ignore[no-untyped-def]
    args = ["diff", "-q", str(logs), "-p", "none", "-p", "observation-masking",
            "--cache-dir", str(tmp_path / "c")]
    code, out = _cli(*args)
    assert code == 0 and _said(out), out
    assert [x.split(" ")[0] for x in _listed(_cli(*args, "--json")[1])] == ["asked.jsonl"]
    # runs named with --run: only those were asked for
    code, out = _cli(*args, "--run", "short.jsonl")
    assert code == 0 and "not replayed" not in out, out


def test_check_names_the_run_it_could_not_replay(logs, tmp_path) -> None:  # type: ignore[no-untyped-def]
    args = ["check", str(logs), "-p", "none", "--baseline", str(tmp_path / "b.json"),
            "--cache-dir", str(tmp_path / "c")]
    code, out = _cli(*args, "--update-baseline")
    assert code == 0 and _said(out), out
    junit = tmp_path / "j.xml"
    code, out = _cli(*args, "--junit", str(junit))
    assert code == 0 and _said(out), out
    assert "no recorded request not replayed: asked.jsonl" in junit.read_text()
    notes = json.loads((out := _cli(*args, "--json")[1])[out.index("{"):])["notes"]
    assert any(n.startswith("1 run(s) with no recorded request not replayed: asked.jsonl")
               for n in notes)


def test_the_report_names_the_run_it_could_not_replay(logs, tmp_path) -> None:  # type: ignore[no-untyped-def]
    code, out = _cli("report", "-q", str(logs), "-p", "none", "--cache-dir",
                     str(tmp_path / "c"), "--out", str(tmp_path / "r"))
    assert code == 0, out
    md = (tmp_path / "r" / "report.md").read_text()
    html = (tmp_path / "r" / "report.html").read_text()
    for text in (md, html):
        assert "1 run(s) with no recorded request not replayed: asked.jsonl" in text
        assert "\x1b" not in text
