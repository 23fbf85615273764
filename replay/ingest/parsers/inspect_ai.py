"""Inspect AI eval logs (``.eval``, a zip of JSON files; ``.json``, one document): one run
per sample and epoch.

A ``.json`` log is ``{version, status, eval, plan, results, stats, samples[]}``; a ``.eval``
log is a zip holding ``header.json`` (or ``_journal/start.json``) and one
``samples/<id>_epoch_<n>.json`` per sample, read within bounds by
``replay.ingest.parsers.inspect_eval_zip``; a truncated log keeps its whole samples
(``replay.ingest.parsers.inspect_ai_damaged``).  A sample has ``messages`` (the final conversation), ``events`` (the
transcript) and ``attachments`` (``attachment://<hash>`` strings stand for long texts).

One sample's walk (its model calls, their usage, its compactions):
``replay.ingest.parsers.inspect_ai_sample``.

Coverage types: ``sample``, ``event/<type>`` (``event/model``, ``event/compaction``, …; span,
state, store, score, sandbox and other bookkeeping events skipped), ``model (scorer)``,
``model (compaction summary call)``, ``model (input rewritten)``, ``zip/<entry kind>``.

Checked against: Inspect's own test logs (log format versions 2 and 3, 2024-11 to 2025-10,
OpenAI and hard-coded models, pooled ``input_refs``) and the event and compaction models of
UKGovernmentBEIS/inspect_ai at 499e615 (2026-08); the compaction fixture is hand-made.
"""

from __future__ import annotations

import re
from typing import Any

from msgspec import UNSET

from replay.ingest.parsers.builder import RunBuilder
from replay.ingest.parsers.content_text import kept_as_json
from replay.ingest.parsers.inspect_ai_damaged import MissingOutputs, rebuilt_zip, salvage_json
from replay.ingest.parsers.inspect_ai_sample import Sample
from replay.ingest.parsers.inspect_eval_zip import ZIP_MAGIC, read_eval_zip
from replay.ingest.parsers.json_text import json_text
from replay.ingest.parsers.jsonl import as_obj as _obj
from replay.ingest.parsers.jsonl import load_json
from replay.ingest.parsers.run_draft import RunDraft
from replay.ingest.parsers.run_text import run_text
from replay.ingest.parsers.source import Issue, Source

NAME = "inspect_ai"

_ZIP_NAMES = re.compile(rb"header\.json|_journal/start\.json|samples/[^/\x00]{1,200}_epoch_\d+\.json")
"""Entry names of an Inspect zip (its local file headers show them in the head)."""
_JSON_EVAL = re.compile(rb'"eval"\s*:\s*\{\s*"(?:eval_set_id|eval_id|run_id|task|created)"')
"""The eval header's first key (``EvalSpec``'s first fields; ``eval_set_id``, first of all in
Inspect's current ``EvalSpec``, is written only for a log of an eval set)."""


def sniff(filename: str, head: bytes) -> bool:
    """True for a zip holding Inspect's entries, or a JSON document with an ``eval`` header.

    Args:
        filename: the file name.
        head: the first 64 KiB of the file.
    """
    if head.startswith(ZIP_MAGIC):
        return filename.endswith(".eval") or _ZIP_NAMES.search(head) is not None
    text = head.lstrip()
    return text.startswith(b"{") and _JSON_EVAL.search(text) is not None \
        and b'"status"' in text


def evidence(filename: str, head: bytes) -> str:
    """What of an Inspect log the head shows: Inspect's zip entries, or its ``eval`` header."""
    if head.startswith(ZIP_MAGIC):
        found = _ZIP_NAMES.search(head)
        return f"a zip with the entry {found.group().decode(errors='replace')}" if found else ""
    return "an eval header (eval_id / run_id / task)" if _JSON_EVAL.search(head) else ""


def parse(src: Source, issues: list[Issue]) -> list[RunDraft]:
    """One run per sample (and epoch); problems go to ``issues``.

    Args:
        src: the source file.
        issues: collects what is wrong in the file (line 0: a zip or a document).
    """
    damaged = False
    if src.data.startswith(ZIP_MAGIC):
        samples: object
        zipped, damaged = rebuilt_zip(src, issues)
        header, samples = read_eval_zip(zipped, issues)
    else:
        doc = load_json(src, issues)
        if doc is None:
            doc, damaged = salvage_json(src, issues), True
        if not isinstance(doc, dict):
            if doc is not None:
                issues.append(Issue(src.path, 0, "not an Inspect log: not a JSON object"))
            return []
        header, samples = doc, doc.get("samples")
    if not isinstance(samples, list) or not samples:
        issues.append(Issue(src.path, 0, "no whole sample left in the damaged file" if damaged
                            else "Inspect log without samples (logged with log_samples off, "
                                 "or not finished)"))
        return []
    ev = _obj(header.get("eval"))
    model = run_text(ev.get("model", UNSET), "eval.model", src.path, issues)
    version = run_text(_obj(ev.get("packages")).get("inspect_ai", UNSET),
                       "eval.packages.inspect_ai", src.path, issues)
    task = run_text(ev.get("task", UNSET), "eval.task", src.path, issues)
    harness = " ".join(x for x in ("inspect_ai", version, f"({task})" if task else "") if x)
    drafts: list[RunDraft] = []
    missing = MissingOutputs()
    for k, sample in enumerate(samples):
        src.coverage.modelled("sample")
        if not isinstance(sample, dict):
            issues.append(Issue(src.path, 0, f"samples[{k}] is not an object (skipped)"))
            continue
        sid = _label_part(sample.get("id"), f"samples[{k}].id", src.path, issues)
        agent = f"sample {sid} epoch " + _label_part(sample.get("epoch"), f"samples[{k}].epoch",
                                                     src.path, issues)
        b = RunBuilder(src, len(drafts), NAME, issues, model=model, harness=harness, agent=agent)
        try:
            Sample(b, sample, missing).read()
        except (TypeError, ValueError, AttributeError, KeyError, IndexError) as exc:
            issues.append(Issue(src.path, 0, f"{agent}: {exc} (rest of the sample skipped)"))
        drafts.append(b.build())
    missing.report(src, issues)
    return drafts


def _label_part(value: Any, field: str, path: str, issues: list[Issue]) -> str:
    """A sample's id or epoch as its run's label writes it: a string or an integer as it is
    (Inspect writes ``int | str`` ids, ``int`` epochs); any other value (a float, a boolean, a
    list, an object; null, or absent, which reads as null) its JSON (``true``, never Python's
    ``True``), said as one issue (``content_text.kept_as_json``: ``samples[0].id is float, not
    a string (kept as its JSON)``)."""
    if value.__class__ is str or value.__class__ is int:
        return str(value)
    issues.append(Issue(path, 0, kept_as_json(value, field)))
    return json_text(value)
