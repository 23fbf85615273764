"""The tool calls a ``replay.synth.generate`` agent makes on the fake repo, and what they return.

``Workspace`` is the fake repo plus what the agent has seen of it; it turns an
action kind into one ``Call``: the tool input, the text the model sees, and the
harness's structured ``toolUseResult``.  Read/Write/Edit/Grep/Glob act on the
repo consistently; Bash runs give long pytest outputs with failures and
tracebacks, ``git status`` or ``ls -la``.  ``lean`` strips a ``toolUseResult`` of
its bulky copies.  Everything is drawn from the ``random.Random`` it is given.

Not here: the repo's files and edits (``replay.synth.repo``), the assistant's and
the human's text (``replay.synth.prose``), JSONL records, ids, timestamps, usage
(``replay.synth.generate``).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from replay.synth.repo import ADJS, EXCS, NOUNS, VERBS, FakeRepo, edit_chunks, ident, python_source

if TYPE_CHECKING:
    from replay.synth.scenario import Scenario

TODO_DONE = ("Todos have been modified successfully. Ensure that you continue to use the todo list "
             "to track your progress. Please proceed with the current tasks if applicable")


def numbered(text: str, start: int = 1) -> str:
    """Claude Code's Read rendering: ``{n:>6}→{line}`` per line."""
    return "\n".join(f"{i:>6}\u2192{line}" for i, line in enumerate(text.split("\n"), start))


def pytest_output(rng: random.Random, repo: FakeRepo, n_lines: int, fail: bool, n_items: int,
                  only: str = "", verbose: bool = False) -> tuple[str, int, int]:
    """A run of ``n_items`` tests (of file ``only``, or all) in about ``n_lines`` lines.

    Returns:
        ``(text, n_failed, n_passed)``.
    """
    tests = [only] if only else [p for p in repo.paths if "/tests/" in p] or repo.paths[:3]
    srcs = [p for p in repo.paths if "/src/" in p] or tests
    out = ["=" * 29 + " test session starts " + "=" * 30,
           "platform linux -- Python 3.11.9, pytest-8.3.2, pluggy-1.5.0", f"rootdir: {repo.root}",
           "configfile: pyproject.toml", "plugins: hypothesis-6.112.0",
           f"collected {n_items} items", ""]
    if verbose:
        while len(out) < n_lines * 0.6:
            status = "FAILED" if fail and rng.random() < 0.08 else "PASSED"
            name = f"test_{ident(rng)}_{rng.choice(ADJS)}"
            out.append(f"{repo.rel(rng.choice(tests))}::{name} {status}"
                       f"{' ' * rng.randint(1, 12)}[{rng.randint(1, 99):>3}%]")
    else:
        for t in rng.sample(tests, min(len(tests), max(2, n_lines // 6))):
            marks = "".join("F" if fail and rng.random() < 0.04 else "."
                            for _ in range(rng.randint(5, 60)))
            out.append(f"{repo.rel(t)} {marks:<50} [{rng.randint(1, 100):>3}%]")
    summary: list[str] = []
    if fail:
        out += ["", "=" * 35 + " FAILURES " + "=" * 35]
    while fail and (len(out) < n_lines - 4 - len(summary) or not summary):
        t, name, exc = rng.choice(tests), f"test_{ident(rng)}_{rng.choice(ADJS)}", rng.choice(EXCS)
        a, b, src = rng.randint(0, 500), rng.randint(0, 500), repo.rel(rng.choice(srcs))
        out += ["_" * 20 + f" {name} " + "_" * 20, ""]
        if rng.random() < 0.5:
            exc = "AssertionError"
            out += [f"    def {name}():",
                    (f"        {rng.choice(NOUNS)} = {ident(rng)}([{a}, {b}], "
                     f"limit={rng.randint(1, 64)})"),
                    f">       assert {rng.choice(NOUNS)}.total == {a + b}",
                    f"E       AssertionError: assert {a + b + rng.randint(1, 9)} == {a + b}", "",
                    f"{repo.rel(t)}:{rng.randint(10, 400)}: AssertionError"]
        else:
            out += [f"{repo.rel(t)}:{rng.randint(10, 400)}: in {name}",
                    f"    result = {ident(rng)}(payload, window={rng.randint(2, 128)})",
                    f"{src}:{rng.randint(10, 600)}: in {ident(rng)}",
                    f"    {rng.choice(NOUNS)}s = {ident(rng)}({rng.choice(NOUNS)}, limit=limit)",
                    f"{src}:{rng.randint(10, 600)}: in {ident(rng)}",
                    f'    raise {exc}(f"{rng.choice(NOUNS)} {{key}} is {rng.choice(ADJS)}")',
                    (f"E   {exc}: {rng.choice(NOUNS)} {rng.randint(1, 9999)} is "
                     f"{rng.choice(ADJS)} (expected <= {rng.randint(1, 4096)})"), ""]
        summary.append(f"FAILED {repo.rel(t)}::{name} - {exc}")
    if summary:
        out += ["=" * 27 + " short test summary info " + "=" * 28, *summary]
    n_failed = len(summary)
    result = (f"{n_failed} failed, {n_items - n_failed} passed" if n_failed
              else f"{n_items} passed") \
        + f", {rng.randint(0, 12)} warnings in {rng.uniform(1.5, 95.0):.2f}s"
    return "\n".join(out + [f"{'=' * 10} {result} {'=' * 10}"]), n_failed, n_items - n_failed


def git_status(repo: FakeRepo, branch: str) -> str:
    """``git status`` over the files the run changed."""
    out = [f"On branch {branch}"]
    if repo.modified:
        out += ["Changes not staged for commit:",
                '  (use "git add <file>..." to update what will be committed)',
                *(f"\tmodified:   {repo.rel(p)}" for p in repo.modified), ""]
    if repo.created:
        out += ["Untracked files:",
                '  (use "git add <file>..." to include in what will be committed)',
                *(f"\t{repo.rel(p)}" for p in repo.created), ""]
    return "\n".join(out if len(out) > 1 else out + ["nothing to commit, working tree clean"])


def ls_output(rng: random.Random, repo: FakeRepo, folder: str) -> str:
    """``ls -la`` of one folder of the repo."""
    names = sorted(p[len(folder) + 1:] for p in repo.paths if p.rsplit("/", 1)[0] == folder)
    return "\n".join([f"total {8 * (len(names) + 2)}", "drwxr-xr-x  5 dev dev  4096 Jan 12 09:00 .",
                      "drwxr-xr-x 12 dev dev  4096 Jan 12 09:00 .."]
                     + [f"-rw-r--r--  1 dev dev {len(repo.text(f'{folder}/{n}')):>5} Jan 12 "
                        f"{rng.randint(9, 17):02d}:{rng.randint(0, 59):02d} {n}" for n in names])


@dataclass(slots=True)
class Call:
    """One tool call: its input, the text the model saw, and the harness's ``toolUseResult``."""

    name: str
    input: dict[str, Any]
    content: str
    result: Any
    is_error: bool = False
    what: str = ""
    """What the call does, for the assistant's prose ("read `src/x.py`")."""


_BULKY = frozenset({"content", "originalFile", "oldString", "newString", "structuredPatch",
                    "stdout", "oldTodos", "newTodos"})


def lean(result: Any) -> Any:
    """A ``toolUseResult`` without its bulky copies: fields holding file contents or output are
    left out (recursively) and a plain-text result keeps its first line."""
    if isinstance(result, dict):
        return {k: lean(v) for k, v in result.items() if k not in _BULKY}
    if isinstance(result, str):
        return result.split("\n", 1)[0]
    return result


def _bash_result(out: str) -> dict[str, Any]:
    return {"stdout": out, "stderr": "", "interrupted": False, "isImage": False,
            "noOutputExpected": False}


class Workspace:
    """The fake repo plus what the agent has seen of it; ``call(kind)`` makes one tool call."""

    def __init__(self, rng: random.Random, s: Scenario, tok: Callable[[str], int]) -> None:
        self.rng, self.s, self.tok = rng, s, tok
        pkg = f"{rng.choice(NOUNS)}{rng.choice(('kit', 'box', 'lib', 'ops', 'flow'))}"
        self.repo = FakeRepo.make(rng, pkg, s.n_files, s.file_lines_min, s.file_lines_max)
        self.branch = f"feature/{ident(rng).replace('_', '-')}"
        self.unread = list(self.repo.paths)
        rng.shuffle(self.unread)
        self.seen: list[str] = []
        self.reads: dict[str, int] = {}
        self.errors: list[str] = []
        self.n_tests = rng.randint(150, 900)
        self.passed = 0
        self.burst_path = ""
        """The re-read burst's target: the smallest module when the burst starts."""

    def call(self, kind: str, r: int) -> Call:
        """One call of ``kind`` (read, edit, write, test, grep, glob, bash) at request ``r``."""
        if kind == "read" or (kind == "edit" and not self.seen):
            return self.read(self._pick())
        makers: dict[str, Callable[[], Call]] = {
            "edit": self.edit, "write": self.write, "grep": self.grep, "glob": self.glob,
            "bash": self.bash, "test": lambda: self.test(r)}
        return makers[kind]()

    def burst_read(self) -> Call:
        """One read of the re-read burst: always the same whole file, never an error."""
        if not self.burst_path:
            src = [p for p in self.repo.paths if "/src/" in p] or self.repo.paths
            pick = max if self.s.reread_burst_target == "largest" else min
            self.burst_path = pick(src, key=lambda p: len(self.repo.text(p)))
        return self.read(self.burst_path, plain=True)

    def _pick(self) -> str:
        if self.unread and (not self.seen or self.rng.random() >= self.s.p_reread):
            return self.unread.pop()
        return self.rng.choice(self.seen)

    def _saw(self, path: str) -> None:
        if path not in self.seen:
            self.seen.append(path)
        if path in self.unread:
            self.unread.remove(path)

    def read(self, path: str, plain: bool = False) -> Call:
        """Read ``path``: sometimes a part or a missing file (``plain``: whole, no error)."""
        rng, s, repo = self.rng, self.s, self.repo
        if not plain and rng.random() < s.p_error:
            missing = f"{repo.root}/src/{repo.pkg}/{rng.choice(NOUNS)}s.py"  # never generated
            self.errors.append(f"Read {repo.rel(missing)}: file does not exist")
            return Call("Read", {"file_path": missing}, "<tool_use_error>File does not exist."
                        "</tool_use_error>", "Error: File does not exist.", True, "read the module")
        lines = repo.text(path).split("\n")
        args: dict[str, Any] = {"file_path": path}
        start, sel = 1, lines
        if not plain and len(lines) > 120 and rng.random() < s.p_partial_read:
            start, limit = rng.randint(1, len(lines) - 60), rng.choice((50, 80, 100, 150))
            sel, args = lines[start - 1:start - 1 + limit], dict(args, offset=start, limit=limit)
        self.reads[path] = self.reads.get(path, 0) + 1
        self._saw(path)
        body = "\n".join(sel)
        return Call("Read", args, numbered(body, start), {"type": "text", "file": {
            "filePath": path, "content": body, "numLines": len(sel), "startLine": start,
            "totalLines": len(lines)}}, what=f"read `{repo.rel(path)}`")

    def edit(self) -> Call:
        """Edit a recently seen file; sometimes the string is not found."""
        rng, s, repo = self.rng, self.s, self.repo
        path = rng.choice(self.seen[-8:])
        text = repo.text(path)
        n_new = rng.randint(max(1, s.write_lines_min // 4), max(2, s.write_lines_max // 3))
        chunk = edit_chunks(rng, text, n_new)
        what = f"update `{repo.rel(path)}`"
        if chunk is None or rng.random() < s.p_error:
            old = (chunk[0] if chunk else text.split("\n")[0]) \
                + f"\n    # {rng.choice(VERBS)} first"
            msg = f"String to replace not found in file.\nString: {old}"
            self.errors.append(f"Edit {repo.rel(path)}: string to replace not found")
            args = {"file_path": path, "old_string": old, "new_string": chunk[1] if chunk else old}
            return Call("Edit", args, f"<tool_use_error>{msg}</tool_use_error>", f"Error: {msg}",
                        True, what)
        old, new, line = chunk
        repo.put(path, text.replace(old, new, 1))
        o, n = old.split("\n"), new.split("\n")
        patch = [{"oldStart": line, "oldLines": len(o), "newStart": line, "newLines": len(n),
                  "lines": [f"-{x}" for x in o] + [f"+{x}" for x in n]}]
        return Call("Edit", {"file_path": path, "old_string": old, "new_string": new},
                    f"The file {path} has been updated successfully.",
                    {"filePath": path, "oldString": old, "newString": new, "originalFile": text,
                     "structuredPatch": patch, "userModified": False, "replaceAll": False},
                    what=what)

    def write(self) -> Call:
        """Write a new module or test, or rewrite a seen file."""
        rng, s, repo = self.rng, self.s, self.repo
        if self.seen and rng.random() < 0.35:
            path = rng.choice(self.seen)
        else:
            stem = f"{rng.choice(NOUNS)}_{rng.choice(ADJS)}"
            path = f"{repo.root}/tests/test_{stem}.py" if rng.random() < 0.4 \
                else f"{repo.root}/src/{repo.pkg}/{stem}.py"
        original = repo.text(path) if path in repo.seeds else None
        n = rng.randint(s.write_lines_min, s.write_lines_max)
        content = python_source(rng, path.rsplit("/", 1)[1][:-3], n)
        repo.put(path, content)
        self._saw(path)
        msg = f"File created successfully at: {path}" if original is None else \
            f"The file {path} has been updated successfully."
        return Call("Write", {"file_path": path, "content": content}, msg,
                    {"type": "create" if original is None else "update", "filePath": path,
                     "content": content, "structuredPatch": [], "originalFile": original},
                    what=f"write `{repo.rel(path)}`")

    def test(self, r: int, big: bool = False) -> Call:
        """Run pytest; ``big``: one verbose run of about ``s.big_output_tokens`` tokens."""
        rng, s, repo = self.rng, self.s, self.repo
        fail = big or rng.random() < s.p_test_fail * (1 - 0.6 * r / s.n_requests)
        suite = self.n_tests + 6 * sum("/tests/" in p for p in repo.created)
        if big:
            n = max(40, s.big_output_tokens // 18)
            for _ in range(4):
                text, n_failed, n_passed = pytest_output(rng, repo, n, True, suite, verbose=True)
                got = self.tok(text)
                if abs(got - s.big_output_tokens) < 0.05 * s.big_output_tokens:
                    break
                n = max(40, int(n * s.big_output_tokens / got))
            cmd = "python -m pytest tests/ -v 2>&1"
        else:
            tests = [p for p in self.seen if "/tests/" in p]
            only = rng.choice(tests) if tests and rng.random() < 0.4 else ""
            n_lines = rng.randint(s.test_output_lines_min, s.test_output_lines_max)
            n_items = 8 + repo.seeds[only][0] % 50 if only else suite
            text, n_failed, n_passed = pytest_output(rng, repo, n_lines, fail, n_items, only)
            cmd = f"python -m pytest {repo.rel(only) if only else 'tests/'} -q"
        if not n_failed:
            self.passed = n_passed if n_passed >= self.n_tests else self.passed
            return Call("Bash", {"command": cmd, "description": "Run the tests"}, text,
                        _bash_result(text), what="run the tests")
        self.errors.append(f"`{cmd}`: {text.rsplit(chr(10), 1)[1].strip('= ')}")
        return Call("Bash", {"command": cmd, "description": "Run the tests"},
                    f"Exit code 1\n{text}", f"Error: Exit code 1\n{text}", True, "run the tests")

    def grep(self) -> Call:
        """Grep the repo for a function defined in a file already seen."""
        rng, repo = self.rng, self.repo
        src = repo.text(rng.choice(self.seen or repo.paths)).split("\n")
        defs = [x.split("def ", 1)[1].split("(", 1)[0] for x in src
                if x.lstrip().startswith("def ")]
        pattern = rng.choice(defs) if defs else ident(rng)
        hits = repo.grep(pattern)
        files = list(dict.fromkeys(p for p, _, _ in hits))
        what = f"find where `{pattern}` is used"
        if rng.random() < 0.5:
            out = "\n".join(f"{p}:{i}:{x}" for p, i, x in hits) or "No matches found"
            args = {"pattern": pattern, "path": repo.root, "output_mode": "content", "-n": True}
            return Call("Grep", args, out, {"mode": "content", "numFiles": len(files),
                                            "filenames": [], "content": out,
                                            "numLines": len(hits)}, what=what)
        out = f"Found {len(files)} files\n" + "\n".join(files) if files else "No files found"
        return Call("Grep", {"pattern": pattern, "path": repo.root}, out,
                    {"mode": "files_with_matches", "filenames": files, "numFiles": len(files)},
                    what=what)

    def glob(self) -> Call:
        """Glob one folder of the repo."""
        rng, repo = self.rng, self.repo
        folder = rng.choice((f"{repo.root}/src/{repo.pkg}", f"{repo.root}/tests"))
        noun = rng.choice(NOUNS) if rng.random() < 0.5 else ""
        files = [p for p in repo.paths
                 if p.startswith(folder + "/") and noun in p.rsplit("/", 1)[1]]
        return Call("Glob", {"pattern": f"**/*{noun}*.py" if noun else "**/*.py", "path": folder},
                    "\n".join(files) or "No files found",
                    {"filenames": files, "durationMs": rng.randint(5, 400), "numFiles": len(files),
                     "truncated": False}, what="list the matching files")

    def bash(self) -> Call:
        """``git status`` or ``ls -la`` of a folder."""
        rng, repo = self.rng, self.repo
        if rng.random() < 0.5:
            cmd, out = "git status", git_status(repo, self.branch)
        else:
            folder = rng.choice((f"{repo.root}/src/{repo.pkg}", f"{repo.root}/tests"))
            cmd, out = f"ls -la {repo.rel(folder)}", ls_output(rng, repo, folder)
        return Call("Bash", {"command": cmd, "description": "Inspect the working tree"}, out,
                    _bash_result(out), what="check the working tree")
