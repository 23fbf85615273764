"""``replay redact``: the archive re-ingests and replays like the original, holds no secret,
hashes paths stably, and stays inside ``--out``.

The replay comparison runs every preset over ``logs/`` and every sample (Claude Code, Codex,
mini-swe-agent, SWE-agent, OpenHands),
both sides through the normal API (``open_corpus`` + ``run``).  A preset with no content
dependence (``replay.redact.fidelity``) must give every summary figure equal; a preset with one
must give equal request counts, and equal figures for every run where it created no text
(no summary, no trim).  The measured figures are in the README (``replay redact``).
"""

from __future__ import annotations

import json
import shutil
import zipfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from analysis.per_run.rollup import ROLLUP_METRICS, RUN_ROLLUP
from replay.apply_policy import run
from replay.cli import app
from replay.ingest.discover import discover
from replay.ingest.parse_file import parse_file
from replay.ingest.redaction import ExactSizes, exact, format_exact
from replay.policy import Policy, load_policy, presets
from replay.redact import redact
from replay.redact.fidelity import content_dependence
from replay.redact.secrets import scan
from tests.conftest import REPO, corpus_kept_prepared
from tests.preset_runs import PresetRun
from tests.shared_results import SharedResults

_FIGURES = ROLLUP_METRICS
_AKIA = "AKIA" + "IOSFODNN7EXAMPLE"
_GHP = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
_KEY = "-----BEGIN RSA " + "PRIVATE KEY-----"
_MAIL = "alice.smith" + "@example.com"
_SECRETS = (_AKIA, _GHP, _KEY, _MAIL)


def test_exact_marker_declares_the_blocks_figures() -> None:
    one = ExactSizes(120, 130, 4, (("cl100k_base", 31), ("o200k_base", 30)))
    two = ExactSizes(5, 5, 1, (("cl100k_base", 2), ("o200k_base", 2)))
    text = (f'{{"a": "{format_exact(1, one)}", "b": "{format_exact(2, two)}", '
            f'"c": "{format_exact(1, one)}", "d": "{format_exact(3, None)}"}}')
    got = exact(text)
    assert got is not None  # the repeated marker counts once, the bare one not at all
    assert (got.n_chars, got.n_bytes, got.n_lines) == (125, 135, 5)
    assert got.tokens_for("o200k_base") == 32 and got.tokens_for("r50k_base") is None
    assert exact(format_exact(7, None)) is None and exact("no marker") is None


@pytest.fixture(scope="module")
def archive(shared_results: SharedResults,
            samples: Path) -> tuple[Path, Path, dict[str, str]]:
    """(the originals, their redacted copy, each original's name in the copy): ``logs/`` and
    every sample (Claude Code, Codex, mini-swe-agent, SWE-agent, OpenHands); made once for the
    session by one xdist worker (``tests/shared_results.py``), read only by the tests."""
    root = shared_results.files("redact-archive")

    def make() -> tuple[Path, Path, dict[str, str]]:
        originals = root / "originals"
        shutil.copytree(REPO / "logs", originals / "logs")
        for name in ("claude-code", "codex", "mini-swe-agent", "swe-agent", "openhands"):
            shutil.copytree(samples / name, originals / name)
        report = redact([originals], root / "redacted")
        assert report.ok, [str(i) for i in report.issues]
        assert len(report.files) == len(discover([originals]))
        return originals, root / "redacted", {f.source: f.archived_as for f in report.files}

    return shared_results.get("redact-archive", make)


def test_redacted_archive_replays_like_the_original(
        archive: tuple[Path, Path, dict[str, str]], tmp_path: Path,
        preset_run: Callable[[str, Policy], PresetRun]) -> None:
    """The originals' side is ``preset_run``'s replays of ``logs/`` and the samples (the same
    logs as the archive's originals, each run replayed on its own): a source ``s`` of ``logs/``
    is ``logs/s`` in the archive, a sample's source is the same."""
    originals, redacted, names = archive
    after = corpus_kept_prepared(redacted, tmp_path / "b")  # every run kept prepared: 16 presets
    assert after.report is not None
    assert len(after.report.parsed) == len(discover([originals])) == len(names)
    prefix = {"logs": "logs/", "samples": ""}
    exact_presets = 0
    for name in presets():
        policy = load_policy(name)
        was = {names[prefix[which] + r["source"]]: r  # the copy's source names are redacted
               for which in prefix for r in preset_run(which, policy).result.rollup}
        now = {r["source"]: r for r in run(after, policy, rollup=RUN_ROLLUP).rollup}
        assert was.keys() == now.keys()
        depends = content_dependence(policy)
        exact_presets += not depends
        for source, row in was.items():
            created = row["n_summaries"] or row["n_trims"]
            compared = ("n_requests",) if depends and created else _FIGURES
            for col in compared:
                assert now[source][col] == row[col], (name, source, col, depends)
    assert exact_presets > 0


def test_runs_read_back_with_the_original_figures_and_paths(
        archive: tuple[Path, Path, dict[str, str]]) -> None:
    originals, redacted, names = archive
    n_files = 0
    for path, _root in discover([originals]):
        rel = path.relative_to(originals)
        a = parse_file(path, tokenizers=("o200k_base", "cl100k_base")).tables
        b = parse_file(redacted / names[rel.as_posix()],
                       tokenizers=("o200k_base", "cl100k_base")).tables
        assert a is not None and b is not None
        for col in ("kind", "role", "tool", "op", "n_chars", "n_bytes", "n_lines",
                    "tokens_o200k", "tokens_cl100k", "tokens_estimated", "is_error"):
            assert b.messages[col].to_pylist() == a.messages[col].to_pylist(), (rel, col)
        assert b.requests.drop(["run_id"]).equals(a.requests.drop(["run_id"])), rel
        # re-reads and writes: the same blocks target the same (hashed) file
        assert _repeats(b.messages) == _repeats(a.messages), rel
        assert not any(p and p in b.messages["path"].to_pylist()
                       for p in a.messages["path"].to_pylist()), rel
        n_files += 1
    assert n_files == len(discover([originals]))


def _repeats(messages) -> list[int]:  # type: ignore[no-untyped-def]
    """Per block: how many earlier read/write/edit blocks targeted its file."""
    seen: Counter[str] = Counter()
    out = []
    for op, path in zip(messages["op"].to_pylist(), messages["path"].to_pylist()):
        out.append(seen[path] if path and op in ("read", "write", "edit") else -1)
        if path and op in ("read", "write", "edit"):
            seen[path] += 1
    return out


def _claude_session() -> list[dict]:  # type: ignore[type-arg]
    base = {"isSidechain": False, "userType": "external", "sessionId": "s-1",
            "cwd": f"/home/{_MAIL}/proj", "gitBranch": f"fix-{_AKIA}", "version": "2.1.39"}
    usage = {"input_tokens": 10, "cache_creation_input_tokens": 100,
             "cache_read_input_tokens": 0, "output_tokens": 20}
    recs = [
        {"type": "user", "message": {"role": "user", "content": f"deploy with {_AKIA} and mail "
                                                                 f"{_MAIL}"}},
        {"type": "assistant", "requestId": "r1", "message": {
            "model": "claude-opus-4-6", "id": "msg_1", "type": "message", "role": "assistant",
            "usage": usage, "content": [
                {"type": "thinking", "thinking": f"the token is {_GHP}", "signature": "sig"},
                {"type": "tool_use", "id": "t1", "name": "Bash",
                 "input": {"command": f"export GITHUB_TOKEN={_GHP} && cat ~/.ssh/id_rsa",
                           "description": f"read the key of {_MAIL}"}}]}},
        {"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": f"{_KEY}\nMIIE...\n"}]},
         "toolUseResult": {"stdout": f"{_KEY}\nMIIE", "stderr": ""}},
        {"type": "assistant", "requestId": "r2", "message": {
            "model": "claude-opus-4-6", "id": "msg_2", "type": "message", "role": "assistant",
            "usage": usage, "content": [
                {"type": "tool_use", "id": "t2", "name": "Read",
                 "input": {"file_path": f"/home/{_MAIL}/id_rsa"}},
                {"type": "tool_use", "id": "t3", "name": "Write",
                 "input": {"file_path": "/srv/app/key.pem", "content": f"{_KEY}\nabc\n"}}]}},
        {"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t2", "content": f"AWS_KEY={_AKIA}"},
            {"type": "tool_result", "tool_use_id": "t3", "content": "written"}]}},
    ]
    out, parent = [], None
    for i, rec in enumerate(recs):
        uuid = f"u{i}"
        out.append({"parentUuid": parent, **base, **rec, "uuid": uuid,
                    "timestamp": f"2026-01-15T10:4{i}:00.000Z"})
        parent = uuid
    snapshot = {"type": "file-history-snapshot", "messageId": "u0", "isSnapshotUpdate": False,
                "snapshot": {"messageId": "u0", "timestamp": "2026-01-15T10:40:00.000Z",
                             "trackedFileBackups": {f"/home/{_MAIL}/deploy.py": {
                                 "backupFileName": None, "version": 1}}}}
    return [snapshot, *out]


def _codex_session() -> list[dict]:  # type: ignore[type-arg]
    def line(i: int, kind: str, payload: dict) -> dict:  # type: ignore[type-arg]
        return {"timestamp": f"2026-02-23T12:19:4{i}.000Z", "type": kind, "payload": payload}

    return [
        line(0, "session_meta", {"id": "019c8a70-dda7-7f33-98ea-f30553347322",
                                 "timestamp": "2026-02-23T12:19:38.535Z",
                                 "cwd": f"/home/{_MAIL}", "originator": "codex_cli_rs",
                                 "cli_version": "0.104.0", "model_provider": "openai",
                                 "base_instructions": {"text": f"owner {_MAIL}"},
                                 "git": {"repository_url": f"https://{_GHP}@github.com/a/b"}}),
        line(1, "response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": f"use {_AKIA}"}]}),
        line(2, "response_item", {"type": "reasoning", "summary": [
            {"type": "summary_text", "text": f"found {_GHP}"}], "content": None,
            "encrypted_content": "gAAAA"}),
        line(3, "response_item", {"type": "function_call", "name": "shell", "call_id": "c1",
                                  "arguments": json.dumps({"command": [
                                      "bash", "-lc", f"cat /home/{_MAIL}/id_rsa"]})}),
        line(4, "event_msg", {"type": "token_count", "info": {"last_token_usage": {
            "input_tokens": 500, "cached_input_tokens": 0, "output_tokens": 30}}}),
        line(5, "response_item", {"type": "function_call_output", "call_id": "c1",
                                  "output": json.dumps({"output": f"{_KEY}\nxyz",
                                                        "metadata": {"exit_code": 0}})}),
        line(6, "response_item", {"type": "custom_tool_call", "name": "apply_patch",
                                  "call_id": "c2", "input": "*** Begin Patch\n*** Update File: "
                                  f"/home/{_MAIL}/id_rsa\n+{_AKIA}\n*** End Patch"}),
        line(7, "response_item", {"type": "custom_tool_call_output", "call_id": "c2",
                                  "output": "done"}),
        line(8, "response_item", {"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": f"mailed {_MAIL}"}]}),
        line(9, "event_msg", {"type": "token_count", "info": {"last_token_usage": {
            "input_tokens": 900, "cached_input_tokens": 500, "output_tokens": 40}}}),
    ]


def _mini_trajectory() -> dict:  # type: ignore[type-arg]
    def answer(text: str, n: int) -> dict:  # type: ignore[type-arg]
        return {"role": "assistant", "content": text, "extra": {"response": {
            "model": "gpt-5", "choices": [{"message": {"content": text}}],
            "usage": {"prompt_tokens": 100 * n, "completion_tokens": 10}}}}

    return {"trajectory_format": "mini-swe-agent-1", "info": {"mini_version": "1.15.0"},
            "messages": [
                {"role": "system", "content": f"You work for {_MAIL}"},
                {"role": "user", "content": f"Fix it; the key is {_AKIA}"},
                answer(f"THOUGHT: read it\n\n```bash\ncat /home/{_MAIL}/id_rsa\n```", 1),
                {"role": "user", "content": f"{_KEY}\nMIIE"},
                answer(f"THOUGHT: token {_GHP}\n\n```bash\necho {_GHP} > /srv/app/t.txt\n```",
                       2),
                {"role": "user", "content": "done"}]}


def _write_jsonl(path: Path, records: list[dict]) -> None:  # type: ignore[type-arg]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_planted_secrets_are_not_in_the_archive(tmp_path: Path) -> None:
    src = tmp_path / "in"
    _write_jsonl(src / "claude" / "session.jsonl", _claude_session())
    _write_jsonl(src / "codex" / "rollout-2026-02-23T12-19-38-019c8a70.jsonl", _codex_session())
    (src / "mini" / "task.traj.json").parent.mkdir()
    (src / "mini" / "task.traj.json").write_text(json.dumps(_mini_trajectory(), indent=2))
    for f, _ in discover([src]):
        assert set(scan(f.read_bytes())) >= {"AWS access key id", "e-mail address"}
    report = redact([src], tmp_path / "out")
    assert report.ok, [str(i) for i in report.issues]
    written = [f for f, _ in discover([tmp_path / "out"])]
    original = {f.archived_as: f.source for f in report.files}
    assert sorted(f.relative_to(tmp_path / "out").as_posix() for f in written) == sorted(original)
    assert sorted(original.values()) == [
        "claude/session.jsonl", "codex/rollout-2026-02-23T12-19-38-019c8a70.jsonl",
        "mini/task.traj.json"]
    for f in written:
        data = f.read_bytes()
        assert scan(data) == [], f
        for secret in (*_SECRETS, "id_rsa", "MIIE", "/home/", "/srv/app"):
            assert secret.encode() not in data, (f, secret)
        a = parse_file(src / original[f.relative_to(tmp_path / "out").as_posix()]).tables
        b = parse_file(f).tables
        assert a is not None and b is not None
        assert b.messages["tokens_o200k"].to_pylist() == a.messages["tokens_o200k"].to_pylist()
        assert b.messages["op"].to_pylist() == a.messages["op"].to_pylist()
        assert b.requests["input_tokens"].to_pylist() == a.requests["input_tokens"].to_pylist()


def test_a_path_hashes_the_same_everywhere(tmp_path: Path) -> None:
    src = tmp_path / "in"
    _write_jsonl(src / "claude" / "session.jsonl", _claude_session())
    _write_jsonl(src / "codex" / "rollout-2026-02-23T12-19-38-019c8a70.jsonl", _codex_session())

    def paths(out: Path, salt: str) -> dict[str, list[str]]:
        report = redact([src], out, salt=salt)
        assert report.ok
        return {Path(f.source).name: list(dict.fromkeys(  # each file once, in order
            p for p in parse_file(out / f.archived_as).tables.messages["path"].to_pylist()
            if p)) for f in report.files}

    one, again, salted = (paths(tmp_path / "a", "k"), paths(tmp_path / "b", "k"),
                          paths(tmp_path / "c", "s3cret"))
    assert one == again  # stable between archives
    claude, codex = one["session.jsonl"], one["rollout-2026-02-23T12-19-38-019c8a70.jsonl"]
    # one file named by a Claude Code Read, a Codex shell `cat` and a Codex patch: one hash
    assert len(codex) == 1 and claude[1] == codex[0] and codex[0].startswith("p")
    assert claude[2].endswith(".pem")  # the extension is kept: a file stays a file
    assert not any(p.startswith(("/", "~")) for p in claude + codex)
    assert salted["session.jsonl"] != claude


def test_timestamps_shift_by_whole_days(tmp_path: Path) -> None:
    src = tmp_path / "in"
    _write_jsonl(src / "session.jsonl", _claude_session())
    _write_jsonl(src / "rollout-2026-02-23T12-19-38-019c8a70.jsonl", _codex_session())
    report = redact([src], tmp_path / "out", shift_days=-400)
    assert report.ok
    codex = parse_file(tmp_path / "out" / "rollout-2025-01-19T12-19-38-019c8a70.jsonl").tables
    assert codex is not None
    assert {t[:10] for t in codex.requests["ts"].to_pylist()} == {"2025-01-19"}
    a = parse_file(src / "session.jsonl").tables
    [session] = [f.archived_as for f in report.files if f.source == "session.jsonl"]
    b = parse_file(tmp_path / "out" / session).tables
    assert a is not None and b is not None
    assert [t[:10] for t in b.messages["ts"].to_pylist()] == ["2024-12-11"] * a.messages.num_rows
    assert [t[10:] for t in b.messages["ts"].to_pylist()] == \
        [t[10:] for t in a.messages["ts"].to_pylist()]


def test_cli_refuses_out_inside_an_input_and_unsupported_formats(tmp_path: Path) -> None:
    src = tmp_path / "in"
    _write_jsonl(src / "session.jsonl", _claude_session())
    runner = CliRunner()
    inside = runner.invoke(app, ["redact", str(src), "--out", str(src / "shared"), "-q"])
    assert inside.exit_code == 2 and "apart from the inputs" in inside.output
    assert not (src / "shared").exists()
    zipped = tmp_path / "hostile" / "log.eval"  # a member leaving the zip: refused
    zipped.parent.mkdir()
    with zipfile.ZipFile(zipped, "w") as z:
        z.writestr("header.json", json.dumps({"eval": {"task": "t"}, "status": "success"}))
        z.writestr("samples/1_epoch_1.json", json.dumps({"id": 1, "epoch": 1, "messages": [
            {"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}))
        z.writestr("samples/../../escape.json", json.dumps({"id": 2}))
    other = runner.invoke(app, ["redact", str(zipped.parent), "--out", str(tmp_path / "o"),
                                "-q"])
    assert other.exit_code == 1
    assert "not a relative path inside the zip" in other.output
    assert not [p for p in (tmp_path / "o").rglob("*") if p.is_file()]
    done = runner.invoke(app, ["redact", str(src), "--out", str(tmp_path / "ok"), "-q"])
    assert done.exit_code == 0, done.output
    assert "1 of 1 files written" in done.output


def test_several_input_folders_keep_their_own_layout(tmp_path: Path) -> None:
    """``replay redact a/ b/ --out r`` (issue #25 item 9): r/a/… and r/b/…, each input's
    relative layout kept; before, both were merged into r/ (b's clash renamed)."""
    a, b = tmp_path / "a", tmp_path / "b"
    _write_jsonl(a / "session.jsonl", _claude_session())
    _write_jsonl(a / "deep" / "more.jsonl", _claude_session())
    _write_jsonl(b / "session.jsonl", _claude_session())
    out = tmp_path / "r"
    done = CliRunner().invoke(app, ["redact", str(a), str(b), "--out", str(out), "-q", "--json"])
    assert done.exit_code == 0, done.output
    names = {f["source"]: f["archived_as"] for f in json.loads(done.stdout)["files"]}
    assert sorted(names) == ["a/deep/more.jsonl", "a/session.jsonl", "b/session.jsonl"]
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.jsonl"))
    assert written == sorted(names.values())
    # each input under its own (redacted) folder, its layout kept
    top = {k: v.split("/") for k, v in names.items()}
    assert top["a/session.jsonl"][0] == top["a/deep/more.jsonl"][0] != top["b/session.jsonl"][0]
    assert [len(top[k]) for k in sorted(top)] == [3, 2, 2]
    one = tmp_path / "r1"
    alone = CliRunner().invoke(app, ["redact", str(a), "--out", str(one), "-q", "--json"])
    assert alone.exit_code == 0
    assert sorted(f["source"] for f in json.loads(alone.stdout)["files"]) == [
        "deep/more.jsonl", "session.jsonl"]
    assert sorted(len(p.relative_to(one).parts) for p in one.rglob("*.jsonl")) == [1, 2]


def test_redact_says_which_presets_replay_its_archive_to_the_original_figures(
        tmp_path: Path) -> None:
    """The command said only that the archive "re-ingests with the original's figures", while
    a policy that reads the log's text replays it a little differently: it now says so, and
    the presets it names as exact are the ones ``content_dependence`` finds none in."""
    from typer.testing import CliRunner

    from replay.cli import app
    from replay.cli.redact_command import REPLAY_NOTE

    exact = [n for n in presets() if not content_dependence(load_policy(n))]
    assert f"(of the presets: {', '.join(exact)})" in REPLAY_NOTE
    log = Path(__file__).resolve().parents[3] / "logs" / "write-heavy.jsonl"
    text = CliRunner().invoke(app, ["redact", str(log), "--out", str(tmp_path / "a"), "-q"])
    assert text.exit_code == 0, text.output
    assert f"note: {REPLAY_NOTE}" in " ".join(text.output.split("\n"))
    as_json = CliRunner().invoke(app, ["redact", str(log), "--out", str(tmp_path / "b"), "-q",
                                       "--json"])
    assert json.loads(as_json.stdout)["notes"] == [REPLAY_NOTE]
