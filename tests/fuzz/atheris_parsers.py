"""Coverage-guided fuzzing of every parser with atheris (libFuzzer); not collected by pytest.

Each fuzz input is one byte choosing the format, then the file's bytes.  The corpus starts from
the same trimmed real seeds as the hypothesis suite (``tests/fuzz/seeds.py``), written to a
temporary folder; libFuzzer mutates them, guided by the branches it reaches in
``replay.ingest.parsers`` and ``replay.ingest.ops``.  Every input goes through ``harness.check``: each sniffer
answers a bool, the format's parser and ``parse_file`` (detected and forced format) raise
nothing, their issues and runs pass the schema checks, nothing takes over 5 s.  A failure
stops the run and libFuzzer writes the input to ``crash-*``; turn it into a pinned test in
``tests/fuzz/test_fuzz_pinned.py``.

Run from the repository root (``pip install atheris`` first)::

    python tests/fuzz/atheris_parsers.py -atheris_runs=200000
    python tests/fuzz/atheris_parsers.py -max_total_time=600 my_corpus/   # keep the corpus

Any libFuzzer flag works (``-jobs``, ``-max_len``, ``-only_ascii``, …).
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

import atheris

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

with atheris.instrument_imports(include=["replay"]):
    from replay.ingest.parsers import PARSERS
    from tests.conftest import SAMPLES
    from tests.fuzz.harness import check
    from tests.fuzz.seeds import build_seeds

FORMATS = sorted(PARSERS)
NAMES = {"claude_code": "session.jsonl", "codex": "rollout.jsonl", "swe_agent": "run.traj",
         "mini_swe_agent": "run.traj.json", "openhands": "events.json", "chat": "chat.json"}
WORKDIR = Path(tempfile.mkdtemp(prefix="ctxreplay-atheris-"))


def test_one_input(raw: bytes) -> None:
    if not raw:
        return
    fmt = FORMATS[raw[0] % len(FORMATS)]
    check(fmt, NAMES[fmt], raw[1:], WORKDIR)


def _dictionary(seeds: list[bytes], path: Path) -> None:
    """A libFuzzer dictionary of the seeds' JSON keys and short string values (``"role":``,
    ``"tool_use"``, …), so mutations can splice in the tokens the parsers branch on."""
    tokens: set[bytes] = {b"{", b"}", b"[", b"]", b"null", b"true", b"false", b"\\u0000",
                          b"\\ud800", b"\xff", b"\x00"}
    for data in seeds:
        for key in re.findall(rb'"([A-Za-z_][A-Za-z0-9_.-]{0,30})"\s*:', data):
            tokens.add(b'"%s":' % key)
        for value in re.findall(rb':\s*"([A-Za-z_][A-Za-z0-9_.<>-]{0,30})"', data):
            tokens.add(b'"%s"' % value)
    lines = ['"' + "".join(f"\\x{b:02x}" for b in t) + '"' for t in sorted(tokens)]
    path.write_text("\n".join(lines) + "\n", encoding="ascii")


def main() -> None:
    corpus = Path(tempfile.mkdtemp(prefix="ctxreplay-atheris-seeds-"))
    seeds = build_seeds(SAMPLES).values()
    for seed in seeds:
        (corpus / seed.name).write_bytes(bytes([FORMATS.index(seed.fmt)]) + seed.data)
    args = [*sys.argv, str(corpus)]  # a corpus folder given first keeps the new inputs
    if not any(a.startswith("-max_len") for a in args):
        args.append("-max_len=65536")
    if not any(a.startswith("-dict") for a in args):
        _dictionary([s.data for s in seeds], corpus.parent / f"{corpus.name}.dict")
        args.append(f"-dict={corpus.parent / f'{corpus.name}.dict'}")
    atheris.Setup(args, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
