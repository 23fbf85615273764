"""A plain walk of a raw Claude Code JSONL with one compaction: the files read before it, read
again after it, and those the need rules predict — written here without the parser or the
rules' code, as the independent count the re-read fidelity tests check against."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from replay.engine.prepared import PreparedRun

_SHELL_READ = re.compile(r"^(?:cat|head|tail)(?: -\S+)* ([^\s|]+)(?:\s*\|.*)?$", re.DOTALL)
_KEEPS_FILES = {"git", "rm", "mv", "cp", "chmod", "ls", "mkdir", "touch"}


def read_path(call: dict[str, Any]) -> str | None:
    """The file a Read, or a Bash ``cat``/``head``/``tail`` of one file (after any ``cd ... &&``,
    piped on or not), reads (as written: a shell read may name it relative)."""
    if call["name"] == "Read":
        return str(call["input"]["file_path"])
    if call["name"] == "Bash":
        command = call["input"]["command"].strip()
        while command.startswith("cd ") and "&&" in command:
            command = command.split("&&", 1)[1].strip()
        m = _SHELL_READ.match(command)
        return m.group(1) if m else None
    return None


def same(path: str | None, files: set[str]) -> str | None:
    """The file of ``files`` that ``path`` names (equal, or a relative path ending it)."""
    if path is None:
        return None
    return next((f for f in sorted(files) if f == path or f.endswith("/" + path)), None)


def _names(text: str, path: str) -> bool:
    name = re.escape(path.rsplit("/", 1)[-1])
    return re.search(r"(?<![\w.~-])" + name + r"(?![\w.~-])", text) is not None


def raw_rereads(path: Path) -> dict[str, Any]:
    """Files read before the session's one compaction, those read again after it, and those a
    later call depends on (naive: any non-read call names the file; rules: an edit or write of
    it, a search or a glob naming it, a call naming it other than an edit or write of another
    file, a todo or a command that only stages / moves / lists / removes files, an assistant
    message naming it, or a user-role message naming it — the user's words or a harness notice,
    not the compaction's summary).  A read after it whose result is an error is not a re-read:
    ``failed`` holds the files read again only so."""
    calls, texts, errors, after = [], [], set(), False
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("type") == "system" and rec.get("subtype") == "compact_boundary":
            after = True
        content = (rec.get("message") or {}).get("content")
        if (isinstance(content, str) and rec.get("type") == "user" and after
                and not rec.get("isCompactSummary")):
            texts.append(content)
        for part in content if isinstance(content, list) else []:
            if part.get("type") == "tool_use":
                calls.append({**part, "after": after})
            elif (part.get("type") == "text" and after and rec.get("type") in ("assistant", "user")
                  and not rec.get("isCompactSummary")):
                texts.append(part["text"])
            elif part.get("type") == "tool_result" and part.get("is_error"):
                errors.add(part["tool_use_id"])
    removed = {p for c in calls if not c["after"] and c["id"] not in errors
               and (p := read_path(c))}
    later = [c for c in calls if c["after"]]
    recorded = {p for c in later if c["id"] not in errors and (p := same(read_path(c), removed))}
    failed = {p for c in later if c["id"] in errors
              and (p := same(read_path(c), removed))} - recorded
    naive, rules = set(), set()
    for c in later:
        if read_path(c) is not None:
            continue
        text = json.dumps(c["input"])
        for p in removed:
            if not _names(text, p):
                continue
            naive.add(p)
            if c["name"] in ("Edit", "Write"):
                if c["input"].get("file_path") == p:
                    rules.add(p)
            elif c["name"] in ("Grep", "Glob"):
                rules.add(p)
            elif c["name"] == "Bash":
                parts = re.split(r"&&|\|\||;|\n|\|", c["input"]["command"])
                if any(_names(s, p) and s.split() and s.split()[0] not in _KEEPS_FILES
                       for s in parts):
                    rules.add(p)
            elif c["name"] != "TodoWrite":
                rules.add(p)
    rules |= {p for p in removed for t in texts if _names(t, p)}
    return {"removed": removed, "recorded": recorded, "naive": naive, "rules": rules,
            "errors": errors, "failed": failed}


def raw_calls(path: Path) -> list[dict[str, Any]]:
    """Every tool_use of the raw file in order, marked after the compaction or not."""
    calls, after = [], False
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("type") == "system" and rec.get("subtype") == "compact_boundary":
            after = True
        content = (rec.get("message") or {}).get("content")
        for part in content if isinstance(content, list) else []:
            if part.get("type") == "tool_use":
                calls.append({**part, "after": after})
    return calls


def raw_results(path: Path) -> dict[str, str]:
    """Every tool_result's text (its text parts joined) by the id of its call."""
    out = {}
    for line in path.read_text().splitlines():
        content = (json.loads(line).get("message") or {}).get("content")
        for part in content if isinstance(content, list) else []:
            if part.get("type") == "tool_result":
                got = part.get("content")
                if isinstance(got, list):
                    got = "".join(p.get("text", "") for p in got if isinstance(p, dict))
                out[part["tool_use_id"]] = str(got or "")
    return out


_NUMBERED = re.compile(r" *\d+(?:→|\t)")


def raw_tokens(run: PreparedRun, path: Path, raw: dict[str, Any]) -> tuple[int, int]:
    """(recorded, predicted) re-read tokens of the raw walk ``raw`` of ``path``, each block's
    tokens and characters taken from ``run`` by call id: each recorded file's first re-read
    result; each predicted file whole as known at the boundary — its newest whole read (no
    offset/limit, or cat) or Write before it, else its largest part read (by characters) — with
    the Edits and MultiEdits of it since applied (characters and lines of new minus old text),
    a Write's text and the edits' lines rendered with the line-number prefix of the file's
    newest read result; tokens scaled by characters from the whole read itself, or for a Write
    from the file's newest read result (else the Write call).  Failed calls change nothing."""
    tokens, chars = run.tokens["o200k_base"], run.n_chars
    result_of = {run.call_id[b]: b for b in range(run.n_blocks) if run.kind[b] == "tool_result"}
    call_of = {run.call_id[b]: b for b in range(run.n_blocks) if run.kind[b] == "tool_call"}
    texts = raw_results(path)
    first_after: dict[str, int] = {}
    files: dict[str, dict[str, Any]] = {}
    for c in raw_calls(path):
        res = result_of.get(c["id"])
        file, name, args = read_path(c), c["name"], c["input"]
        if c["after"]:
            named = (same(file, raw["removed"])
                     if res is not None and c["id"] not in raw["errors"] else None)
            if named is not None:
                first_after.setdefault(named, tokens[res])
            continue
        if c["id"] in raw["errors"]:
            continue
        if name in ("Write", "Edit", "MultiEdit"):
            f = files.setdefault(args["file_path"], {"whole": False, "prefix": 0, "read": None})
            if name == "Write":
                text = args["content"]
                f.update(whole=True, base=call_of[c["id"]], chars=len(text), dc=0, dl=0,
                         lines=text.count("\n") + (not text.endswith("\n")))
            elif f["whole"]:
                for e in [args, *args.get("edits", [])]:
                    if "old_string" in e:
                        f["dc"] += len(e["new_string"]) - len(e["old_string"])
                        f["dl"] += e["new_string"].count("\n") - e["old_string"].count("\n")
        elif file is not None and res is not None:
            f = files.setdefault(file, {"whole": False, "prefix": 0, "read": None})
            numbered = _NUMBERED.match(texts.get(c["id"], ""))
            f["prefix"], f["read"] = (numbered.end() if numbered else 0), res
            part = ("offset" in args or "limit" in args
                    or name == "Bash" and args["command"].split()[0] in ("head", "tail"))
            if not part:
                f.update(whole=True, base=res, chars=chars[res], lines=0, dc=0, dl=0)
            elif not f["whole"] and ("base" not in f or chars[res] > chars[f["base"]]):
                f.update(base=res, chars=chars[res], lines=0, dc=0, dl=0)

    def predicted(file: str) -> int:
        f = files.get(file)
        if f is None or "base" not in f:
            return 0
        n = f["chars"] + f["prefix"] * (f["lines"] + f["dl"]) + f["dc"]
        block = f["read"] if f["lines"] and f["read"] is not None else f["base"]
        if n == chars[block]:
            return int(tokens[block])
        return int((tokens[block] * n + chars[block] // 2) // chars[block])

    return (sum(first_after[p] for p in raw["recorded"]), sum(predicted(p) for p in raw["rules"]))
