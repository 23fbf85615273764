"""The seeded fake repository ``replay.synth.generate`` runs act on, and the words it is made of.

``NOUNS``/``VERBS``/``ADJS`` and ``ident``/``camel``/``gerund`` name things (also in the
prose and tool output); ``python_source`` builds a Python-looking module from
templates; ``FakeRepo`` holds the files, generated lazily from per-file seeds and
changed by writes and edits; ``edit_chunks`` cuts an Edit's ``old_string`` from a
file's current text, so later reads show the edit.  Everything is drawn from the
``random.Random`` it is given.

Not here: the tool calls acting on the repo and their output (``replay.synth.tools``),
the assistant's and the human's text (``replay.synth.prose``), JSONL records
(``replay.synth.generate``).  The code only has to look like code; it is never run.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

NOUNS = ("block", "ledger", "item", "account", "window", "token", "cache", "request", "session",
         "event", "chunk", "schema", "rule", "report", "metric", "span", "frame", "buffer",
         "shard", "record", "config", "queue", "worker", "result", "snapshot", "budget")
VERBS = ("load", "parse", "merge", "split", "validate", "render", "compute", "flush", "resolve",
         "normalise", "collect", "apply", "build", "encode", "decode", "filter", "group", "emit",
         "trim", "count", "restore", "rotate")
ADJS = ("pending", "stale", "empty", "partial", "sorted", "cached", "raw", "merged", "active",
        "expired", "default", "nested")
EXCS = ("ValueError", "KeyError", "TypeError", "RuntimeError", "IndexError")
_TYPES = ("int", "str", "float", "bool", "list[str]", "dict[str, int]", "bytes")
_DEFAULTS = {"int": "0", "str": '""', "float": "0.0", "bool": "False", "list[str]": "[]",
             "dict[str, int]": "{}", "bytes": 'b""'}
_DOUBLED = ("split", "emit", "trim")


def ident(rng: random.Random) -> str:
    """A ``verb_noun`` function name."""
    return f"{rng.choice(VERBS)}_{rng.choice(NOUNS)}"


def camel(rng: random.Random) -> str:
    """An ``AdjNoun`` class name."""
    return rng.choice(ADJS).capitalize() + rng.choice(NOUNS).capitalize()


def gerund(verb: str) -> str:
    """``parse`` → ``parsing``, ``split`` → ``splitting``."""
    return verb + verb[-1] + "ing" if verb in _DOUBLED else verb.removesuffix("e") + "ing"


def _statement(rng: random.Random, var: str, ind: str) -> list[str]:
    n, other, num = rng.choice(NOUNS), rng.choice(NOUNS), rng.choice((0, 1, 2, 8, 16, 32, 64, 100))
    k = rng.randrange(9)
    if k == 0:
        return [f"{ind}if {var} is None:", f"{ind}    return {rng.choice(('None', '[]', '{}'))}"]
    if k == 1:
        return [f"{ind}{n}s = {ident(rng)}({var}, limit={num})"]
    if k == 2:
        return [f"{ind}for {n} in {var}:", f"{ind}    if {n}.{rng.choice(NOUNS)}_count > {num}:",
                f"{ind}        {other}s.append({n})"]
    if k == 3:
        return [f"{ind}try:", f"{ind}    {n} = {ident(rng)}({var})",
                f"{ind}except {rng.choice(EXCS)} as exc:", (f'{ind}    raise {camel(rng)}Error('
                f'f"cannot {rng.choice(VERBS)} {n}: {{exc}}") from exc')]
    if k == 4:
        return [f"{ind}{other}s: list[{camel(rng)}] = []"]
    if k == 5:
        return [f'{ind}logger.debug("{rng.choice(VERBS)} %d {n}s in %.2fs", len({var}), elapsed)']
    if k == 6:
        return [f"{ind}{n}_total = sum({n}.size for {n} in {var} if not {n}.{rng.choice(ADJS)})"]
    if k == 7:
        return [f"{ind}with self._lock:", f"{ind}    self._{n}s[{var}.key] = {var}"]
    return [(f"{ind}# {rng.choice(VERBS).capitalize()} the {rng.choice(ADJS)} {n}s first "
             f"(see {rng.choice(NOUNS)}.py).")]


def _function(rng: random.Random, ind: str = "") -> list[str]:
    name, arg, typ = ident(rng), rng.choice(NOUNS), rng.choice(_TYPES)
    verb, noun = name.split("_", 1)
    lines = [(f"{ind}def {name}({'self, ' if ind else ''}{arg}s: list[{camel(rng)}], *, "
              f"limit: int = {rng.choice((8, 16, 64, 256))}) -> {typ}:"),
             f'{ind}    """{verb.capitalize()} the {rng.choice(ADJS)} {noun}s of ``{arg}s``.', "",
             f"{ind}    Args:", f"{ind}        {arg}s: the {arg}s to {rng.choice(VERBS)}.",
             f"{ind}        limit: at most this many {noun}s.", "", f"{ind}    Raises:",
             f"{ind}        {rng.choice(EXCS)}: a {arg} is {rng.choice(ADJS)}.", f'{ind}    """']
    for _ in range(rng.randint(2, 7)):
        lines += _statement(rng, f"{arg}s", ind + "    ")
    return lines + [f"{ind}    return {_DEFAULTS[typ]}", ""]


def _class(rng: random.Random) -> list[str]:
    lines = ["@dataclass(slots=True)", f"class {camel(rng)}:", (f'    """A {rng.choice(ADJS)} '
             f'{rng.choice(NOUNS)} kept by the {rng.choice(NOUNS)} {rng.choice(NOUNS)}."""'), ""]
    for _ in range(rng.randint(2, 6)):
        typ = rng.choice(_TYPES)
        default = f"field(default_factory={typ.split('[')[0]})" if "[" in typ else _DEFAULTS[typ]
        attr = f"{rng.choice(NOUNS)}_{rng.choice(('id', 'count', 'size', 'name', 'ts'))}"
        lines.append(f"    {attr}: {typ} = {default}")
    lines.append("")
    for _ in range(rng.randint(1, 2)):
        lines += _function(rng, "    ")
    return lines


def python_source(rng: random.Random, module: str, n_lines: int) -> str:
    """A Python module of about ``n_lines`` lines (whole blocks, so a few more)."""
    lines = [(f'"""{module.replace("_", " ").capitalize()}: {rng.choice(VERBS)} and '
              f'{rng.choice(VERBS)} {rng.choice(NOUNS)}s."""'), "",
             "from __future__ import annotations", "", "import logging",
             "from dataclasses import dataclass, field", "",
             f"from .{rng.choice(NOUNS)} import {camel(rng)}, {ident(rng)}", "",
             "logger = logging.getLogger(__name__)",
             f"MAX_{rng.choice(NOUNS).upper()}S = {rng.choice((32, 128, 1024, 4096))}", "", ""]
    while len(lines) < n_lines:
        lines += (_class(rng) if rng.random() < 0.3 else _function(rng)) + [""]
    return "\n".join(lines).rstrip("\n") + "\n"


@dataclass(slots=True)
class FakeRepo:
    """A fake repository: files generated lazily from per-file seeds, changed by writes/edits."""

    root: str
    pkg: str
    paths: list[str]
    seeds: dict[str, tuple[int, int]]
    files: dict[str, str] = field(default_factory=dict)
    modified: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)

    @classmethod
    def make(cls, rng: random.Random, pkg: str, n_files: int, lines_min: int,
             lines_max: int) -> FakeRepo:
        """``n_files`` modules under ``src/<pkg>/`` and ``tests/``, each with a seed and a size."""
        root = f"/home/dev/work/{pkg}"
        seeds: dict[str, tuple[int, int]] = {}
        while len(seeds) < n_files:
            stem = rng.choice(NOUNS) + (f"_{rng.choice(NOUNS)}" if rng.random() < 0.5 else "")
            p = f"{root}/tests/test_{stem}.py" if rng.random() < 0.3 \
                else f"{root}/src/{pkg}/{stem}.py"
            seeds.setdefault(p, (rng.getrandbits(64), rng.randint(lines_min, lines_max)))
        return cls(root=root, pkg=pkg, paths=list(seeds), seeds=seeds)

    def text(self, path: str) -> str:
        """The current content of ``path``."""
        if path not in self.files:
            seed, n = self.seeds[path]
            self.files[path] = python_source(random.Random(seed), path.rsplit("/", 1)[1][:-3], n)
        return self.files[path]

    def rel(self, path: str) -> str:
        """``path`` relative to the repo root."""
        return path.removeprefix(self.root + "/")

    def put(self, path: str, text: str) -> None:
        """Set ``path``'s content (a Write or an applied Edit)."""
        if path not in self.seeds:
            self.seeds[path] = (0, 0)
            self.paths.append(path)
            self.created.append(path)
        elif path not in self.modified and path not in self.created:
            self.modified.append(path)
        self.files[path] = text

    def grep(self, pattern: str, limit: int = 60) -> list[tuple[str, int, str]]:
        """``(path, line number, line)`` of lines containing ``pattern``, at most ``limit``."""
        hits = [(p, i, x) for p in self.paths for i, x in enumerate(self.text(p).split("\n"), 1)
                if pattern in x]
        return hits[:limit]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip()) if line.strip() else 0


def edit_chunks(rng: random.Random, text: str, new_lines: int) -> tuple[str, str, int] | None:
    """An edit inside one function body of ``text``: ``(old_string, new_string, first line)``.

    ``old_string`` is unique in ``text``; the new string changes one line and inserts about
    ``new_lines`` statements at the body's indentation.  None when ``text`` has no function.
    """
    lines = text.split("\n")
    defs = [i for i, x in enumerate(lines) if x.lstrip().startswith("def ") and x.endswith(":")]
    if not defs:
        return None
    d = rng.choice(defs)
    begin = next((i + 1 for i in range(d + 2, len(lines)) if lines[i].strip() == '"""'), d + 1)
    end = next((i for i in range(begin, len(lines)) if not lines[i].strip()), len(lines))
    lo = rng.randrange(begin, max(begin + 1, end - 2))
    hi = min(end, lo + rng.randint(2, 8))
    while lo > d and text.count("\n".join(lines[lo:hi])) != 1:
        lo -= 1
    old_lines = lines[lo:hi]
    old = "\n".join(old_lines)
    if not old_lines or text.count(old) != 1:
        return None
    var = lines[d].split("(", 1)[1].removeprefix("self, ").split(":", 1)[0]
    base = _indent(lines[begin]) if begin < end else _indent(lines[d]) + 4
    ext = old_lines + [lines[hi] if hi < len(lines) else ""]
    cuts = [k for k in range(1, len(old_lines) + 1)
            if _indent(ext[k]) <= base and ext[k].strip() != '"""'
            and not old_lines[k - 1].rstrip().endswith((":", "(", ","))
            and not old_lines[k - 1].lstrip().startswith(("return", "raise"))]
    added: list[str] = []
    while len(added) < new_lines:
        added += _statement(rng, var, " " * base)
    changed = list(old_lines)
    j = rng.randrange(len(changed))
    changed[j] = changed[j].replace(rng.choice(NOUNS), rng.choice(NOUNS))
    cut = rng.choice(cuts) if cuts else len(changed)
    return old, "\n".join(changed[:cut] + added + changed[cut:]), lo + 1
