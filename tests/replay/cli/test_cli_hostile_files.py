"""The CLI against hostile files given as options or beside the logs: a file that is no
policy, tolerances or grid file is refused without a word of its content, and a dataset given
beside log paths is refused, never dropped.  (Moved as they were from test_cli_hostile.py,
which had grown past ~400 lines; its helpers are shared.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from replay.cli import app
from tests.replay.cli.test_cli_hostile import (
    COMMANDS,
    _baseline,
    _chat_log,
    _command,
    _policy,
    runner,
)


def test_a_file_that_is_not_a_policy_is_never_echoed_through_extends(tmp_path: Path) -> None:
    """``extends: /etc/shadow`` quoted the file's first line back as an unknown key: the check
    that a file is a policy at all looked at the merged document only, which held ``name``."""
    secret = "root:$6$s3cr3tHASH:19000:0:99999:7:::"
    base = _policy(tmp_path, f"{secret}\ndaemon:*:19000:0:99999:7:::\n", "shadow")
    for text in (f"extends: {base}\n", f"extends: {base}\nname: mine\n",
                 f"extends: {base}\nserver: {{window_tokens: 1000}}\n"):
        result = runner.invoke(app, ["show-policy", str(_policy(tmp_path, text, "p.yaml"))])
        assert result.exit_code == 2, (text, result.output)
        assert "s3cr3t" not in result.output and "daemon" not in result.output, result.output
        assert f"{base}: not a policy" in result.stderr


@pytest.mark.parametrize("option", ["--tolerances", "--grid"])
def test_a_file_that_is_no_tolerances_or_grid_is_never_echoed(tmp_path: Path, option: str) -> None:
    """``--tolerances /etc/shadow`` printed its first line back (``root:$6$…: '' is not a
    tolerance``), ``--grid`` its second (``daemon:…: unknown key``), and a secrets file's value
    (``api_key: 'sk-live-…' is not a tolerance``): as a policy file, such a file is refused
    without a word of its content."""
    logs = tmp_path / "logs"
    _chat_log(logs / "good.json")
    baseline = _baseline(tmp_path, logs)
    for i, text in enumerate(["root:$6$s3cr3tHASH:19000:0:99999:7:::\ndaemon:*:s3cr3t:0:::\n",
                              "api_key: sk-live-s3cr3t\n"]):
        path = _policy(tmp_path, text, f"s{i}")
        argv = (["check", str(logs), "-p", "none", "--baseline", str(baseline)]
                if option == "--tolerances" else
                ["sweep", str(logs), "-p", "observation-masking", "--no-plots", "--jobs", "1"])
        result = runner.invoke(app, [*argv, option, str(path), "--out", str(tmp_path / "o"),
                                     "-q"])
        assert result.exit_code == 2, (text, result.output)
        assert "s3cr3t" not in result.output, result.output
        assert f"{path}: not a {'tolerances' if option == '--tolerances' else 'grid'} file" \
            in result.stderr


@pytest.mark.parametrize("name", [*COMMANDS, "redact"])
def test_a_dataset_given_beside_logs_is_refused_not_dropped(tmp_path: Path, name: str) -> None:
    """``replay run -p none DATASET logs/`` replayed logs/ alone, exit 0: the folder walk
    leaves a store's files out, so the dataset's runs were dropped without a word (so were
    ``ingest``'s and ``redact``'s)."""
    _chat_log(tmp_path / "a" / "one.json")
    _chat_log(tmp_path / "b" / "two.json", model="other")
    dataset = tmp_path / "ds"
    assert runner.invoke(app, ["ingest", str(tmp_path / "a"), "--out", str(dataset)]
                         ).exit_code == 0
    baseline = _baseline(tmp_path, tmp_path / "b") if name == "check" else None
    argv = (["redact", "--out", str(tmp_path / "out"), "-q"] if name == "redact" else
            _command(name, tmp_path / "b", tmp_path / "out", baseline))
    result = runner.invoke(app, [*argv, str(dataset)])
    assert result.exit_code == 2, result.output
    assert f"{dataset}: a dataset" in result.stderr, result.stderr
    assert not (tmp_path / "out").exists() or name == "check"


def test_a_grid_file_whose_keys_are_only_near_grid_keys_is_never_echoed(tmp_path: Path) -> None:
    """A short key merely close to a grid key (``need``, near ``seed``) made the file pass as a
    grid with a typo, and its other key, content of a file named by mistake, was quoted back
    as an unknown key: only exact names make a file a grid (``safe_yaml.named_by_mistake``)."""
    logs = tmp_path / "logs"
    _chat_log(logs / "good.json")
    path = _policy(tmp_path, "need: 1\nroot_s3cr3t_hash: 2\n", "g.yaml")
    result = runner.invoke(app, ["sweep", str(logs), "-p", "observation-masking", "--no-plots",
                                 "--jobs", "1", "--grid", str(path), "--out",
                                 str(tmp_path / "o"), "-q"])
    assert result.exit_code == 2, result.output
    assert "s3cr3t" not in result.output and "need" not in result.output, result.output
    assert f"{path}: not a grid file" in result.stderr
