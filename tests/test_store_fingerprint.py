"""``benchmarks/store_fingerprint.py``: what stands behind "the stores are identical" in a
change's figures.  The same inputs give the same digests (``SAME``, exit 0); an entry whose
stored tables differ is listed (exit 1)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO.parent / "shared" / "logs-sample" / "claude-code" / "short.jsonl"


def _script() -> ModuleType:
    """The script as ``python benchmarks/store_fingerprint.py`` runs it: its folder on
    ``sys.path`` (for ``fingerprint_file``) while it is loaded."""
    spec = importlib.util.spec_from_file_location("store_fingerprint",
                                                  REPO / "benchmarks" / "store_fingerprint.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    return module


def test_the_same_store_is_same_another_is_listed(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    fp = _script()
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.jsonl").write_bytes(SAMPLE.read_bytes())
    assert fp.main([str(logs), "--out", str(tmp_path / "ref.json")]) == 0
    ref = json.loads((tmp_path / "ref.json").read_text())
    assert list(ref) == ["logs/a.jsonl"]
    assert fp.main([str(logs), "--against", str(tmp_path / "ref.json")]) == 0
    assert capsys.readouterr().out.rstrip().endswith("SAME")
    lines = SAMPLE.read_text(encoding="utf-8").splitlines()  # one record fewer: other tables
    (logs / "a.jsonl").write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")
    assert fp.main([str(logs), "--against", str(tmp_path / "ref.json")]) == 1
    assert "CHANGED (1):\n  logs/a.jsonl" in capsys.readouterr().out
