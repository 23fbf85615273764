"""Need evidence: a run's fetched blocks indexed by file name and call, and the tests that say a
later block depends on one (``EVIDENCE``, named by each rule of ``replay.engine.needs``) or
fetches its content again (``refetched_keys``).  Pure, deterministic, no I/O.

Not here: the rules, the needs they find and the unmet-need queries (``replay.engine.needs``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from replay.engine.prepared import PreparedRun
from replay.shell_line import command_start, commands, recorded_command, shell_words

FETCH_OPS = frozenset({"read", "search", "list", "exec", "other"})
"""Operation kinds whose result is content the agent could fetch again."""
TEXT_OP = "text"
"""The operation kind of a need found in an assistant message (not a call)."""
USER_OP = "user"
"""The operation kind of a need found in a user-role message: the user's words, or a notice the
harness writes in the user's turn (a background task's completion naming its output file)."""


@dataclass(frozen=True, slots=True)
class Fetched:
    """A fetched block: its call, operation kind, content key, and for a read the file's path
    and name."""

    block: int
    call: int
    op: str
    key: str
    path: str
    name: str


@dataclass(slots=True)
class FetchedIndex:
    """The run's fetched blocks, indexed for the evidence tests."""

    run: PreparedRun
    by_name: dict[str, list[Fetched]]
    """File name → the first fetched read of each file (key) with that name, ascending by
    block: a read's evidence is of its file, whichever of its reads it finds (the key's blocks
    in a request's context are those from the first request holding them on)."""
    by_call: dict[str, list[Fetched]]
    """Call key → fetched non-read blocks with that key, ascending by block."""

    _name_rx: dict[str, re.Pattern[str]] = field(default_factory=dict)
    _result_of: dict[int, int] | None = None
    _paths: dict[str, list[tuple[str, str, int]]] | None = None
    """File name → (key, path, first block) of each path read under that name (``refetched_keys``)."""

    def names_in(self, text: str) -> set[str]:
        """The fetched files' names that ``text`` names as a path's last component (a substring
        search first, the word boundaries checked only where it is found)."""
        out = set()
        for name in self.by_name:
            if name in text:
                rx = self._name_rx.get(name)
                if rx is None:
                    rx = self._name_rx[name] = re.compile(
                        r"(?:(?<=/)|(?<![\w.~/-]))" + re.escape(name) + r"/*(?![\w.~/-])")
                if rx.search(text):
                    out.add(name)
        return out

    def held(self, found: list[Fetched], r: int) -> list[Fetched]:
        """Those of ``found`` in request ``r``'s context."""
        n = self.run.req_blocks[r]
        return [f for f in found if f.block < n]


def fetched_block(run: PreparedRun, b: int) -> Fetched | None:
    """Block ``b`` as fetched content (None: not a tool result of a fetch)."""
    if run.kind[b] != "tool_result":
        return None
    call = run.call_of[b]
    if call < 0 or run.is_error[b]:
        return None
    op = run.op[call]
    if op not in FETCH_OPS:
        return None
    path = norm_path(run.path[call])
    if op == "read":
        if not path:
            return None
        return Fetched(b, call, op, f"path:{path}", path, path.rsplit("/", 1)[-1])
    return Fetched(b, call, op, _call_key(run, call), "", "")


def _call_key(run: PreparedRun, call: int) -> str:
    return f"call:{run.tool[call]}\x00{run.text[call]}"


def refetched_keys(index: FetchedIndex, b: int, r: int) -> list[str]:
    """The keys of the contents in request ``r``'s context that call ``b`` fetches again: of
    a read, each file read before under a path ``same_file`` takes for the call's; of another
    call, its own key.  A content is in the context when its first fetched block is (every
    block of a key is one of its fetches: the fetched blocks in ``r``'s context that ``b``
    fetches again are those of these keys there).  One lookup a path read under the call's
    file name, not one a fetched block (a file read hundreds of times in a long run)."""
    run = index.run
    if run.kind[b] != "tool_call":
        return []
    held = run.req_blocks[r]
    if run.op[b] != "read":
        found = index.by_call.get(_call_key(run, b))
        return [found[0].key] if found and found[0].block < held else []
    path = norm_path(run.path[b])
    if not path:
        return []
    if index._paths is None:
        paths: dict[str, dict[str, tuple[str, str, int]]] = {}
        for name, reads in index.by_name.items():
            for f in reads:  # (the first block of each key)
                paths.setdefault(name, {}).setdefault(f.key, (f.key, f.path, f.block))
        index._paths = {name: list(keys.values()) for name, keys in paths.items()}
    return [key for key, other, first in index._paths.get(path.rsplit("/", 1)[-1], ())
            if first < held and same_file(other, path)]


def op_of(run: PreparedRun, b: int) -> str | None:
    kind, role = run.kind[b], run.role[b]
    if kind == "tool_call":
        return run.op[b] or "other"
    if kind == "text" and role in ("assistant", "user"):
        return TEXT_OP if role == "assistant" else USER_OP
    return None


def norm_path(path: str) -> str:
    """A recorded path as compared: stripped, without ``./`` prefixes or a trailing slash."""
    p = path.strip()
    while p.startswith("./"):
        p = p[2:]
    return p.rstrip("/") if len(p) > 1 else p


def same_file(a: str, b: str) -> bool:
    """Whether two normalised paths name the same file (one may be relative to an unknown
    working directory: equal, or one ends with ``/`` + the other)."""
    if not a or not b:
        return False
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


_PATHLIKE = re.compile(r"[\w.~/-]+")


def path_names(text: str) -> set[str]:
    """File names a text names: the last component of every path-like word in it."""
    return {w.rstrip("/").rsplit("/", 1)[-1] for w in _PATHLIKE.findall(text)} - {""}


def _names_path(index: FetchedIndex, b: int, r: int) -> list[Fetched]:
    """Fetched reads in context whose file the block's text names (``named_in``)."""
    return index.held(named_in(index, index.run.text[b]), r)


def named_in(index: FetchedIndex, text: str, cwd: str = "") -> list[Fetched]:
    """The fetched reads whose file ``text`` names: by its path where the text writes one with
    a directory (``cli/lib/x.ts``, ``/home/u/repo/x.ts``: a file of the same name in another
    directory, another checkout, is another file; compared by ``same_file``, a leading ``~/``,
    ``./`` or ``../`` dropped), by its file name where the text writes the bare name — resolved
    against ``cwd`` when it is known (a command after ``cd DIR``) — or a path that does not
    begin as a path does (after a ``$VAR``, a glob's ``*``: ``**/x.ts``)."""
    out: list[Fetched] = []
    names = index.names_in(text)
    if not names:
        return out
    for name in names:
        wanted = [_loose(w if w.startswith("/") or not cwd else f"{cwd}/{w}")
                  for w in _written(text, name)]
        found = index.by_name[name]
        if name in wanted:
            out += found
        else:
            out += [f for f in found if any(same_file(_loose(f.path), w) for w in wanted)]
    return out


def _written(text: str, name: str) -> list[str]:
    """How ``text`` writes each path-like word (``_PATHLIKE``) whose last component is
    ``name``: the word, or the bare name where the word does not begin as a path does.  A JSON
    escape before it (``\\nsrc/x.ts`` in recorded arguments) is not part of it."""
    out: list[str] = []
    if not _PATHLIKE.fullmatch(name):
        return out  # not a path-like word itself ("<" from a recorded "wc -l < f")
    i, n = text.find(name), len(text)
    while i >= 0:
        start, stop = i, i + len(name)
        while start and _pathlike(text[start - 1]):
            start -= 1
        while stop < n and _pathlike(text[stop]):
            stop += 1
        if start < i and text[start - 1] == "\\" and text[start] in "ntr":
            start += 1  # an escaped newline, tab or return
            before = " "
        else:
            before = text[start - 1] if start else " "
        word = text[start:stop].rstrip("/")
        if word.rsplit("/", 1)[-1] == name:
            out.append(word if before in _PATH_STARTS else name)
        i = text.find(name, stop)
    return out


def _pathlike(c: str) -> bool:
    """Whether ``c`` is a character of a path-like word (``_PATHLIKE``)."""
    return c.isalnum() or c in "_.~/-"


_PATH_STARTS = frozenset(" \t\n\"'`=(:,[<>|;&")
"""Characters after which a path-like word is written as a path (a word after ``$``, ``}`` or
``*`` is the tail of a variable or a glob: only its file name counts)."""


def _loose(path: str) -> str:
    """A path compared by its tail: leading ``~/``, ``./`` and ``../`` dropped."""
    while path.startswith(("~/", "./", "../")):
        path = path.split("/", 1)[1]
    return path


def _names_file_name(index: FetchedIndex, b: int, r: int) -> list[Fetched]:
    """Fetched reads in context whose file name the block's text names, in any directory (the
    naive rule's test)."""
    out: list[Fetched] = []
    for name in index.names_in(index.run.text[b]):
        out += index.held(index.by_name.get(name, []), r)
    return out


def _same_file(index: FetchedIndex, b: int, r: int) -> list[Fetched]:
    """Fetched reads in context of the file the call ``b`` edits or writes."""
    path = norm_path(index.run.path[b])
    found = index.by_name.get(path.rsplit("/", 1)[-1], []) if path else []
    return index.held([f for f in found if same_file(f.path, path)], r)


BOOKKEEPING = frozenset({"git", "hg", "jj", "svn", "rm", "mv", "cp", "chmod", "chown", "mkdir",
                         "touch", "ln", "ls", "stat", "du", "file", "rmdir"})
"""Commands that stage, move, list or remove files without using what they hold."""
RUNNERS = frozenset({"python", "python3", "node", "bun", "deno", "tsx", "ts-node", "npx",
                     "bunx", "npm", "pnpm", "yarn", "uv", "poetry", "pytest", "jest", "vitest",
                     "mocha", "tsc", "mypy", "pyright", "ruff", "eslint", "prettier", "black",
                     "go", "cargo", "rustc", "make", "cmake", "gcc", "cc", "clang", "javac",
                     "java", "ruby", "rake", "mix", "elixir", "iex", "php", "sh", "bash",
                     "zsh"})
"""Commands that run, build, test, lint or type-check the files they name (an interpreter, a
test runner, a compiler, a package manager's script; a versioned name like ``python3.12`` too):
the file's text goes to a program, not to the model.  Not when the run failed (its result an
error: a failing test, a build error): the agent reads the error against what the file says.
A script fed to them in a heredoc that opens a file prints what it holds: a use."""
DELEGATES = frozenset({"task", "agent"})
"""Tools (lowercased) that hand a prompt to a subagent: a file the prompt names is read in the
subagent's own context, not used from this one's."""
def _names_path_in_use(index: FetchedIndex, b: int, r: int) -> list[Fetched]:
    """``_names_path`` of a call that uses the files it names: not a call to a subagent
    (``DELEGATES``); of a shell command, the files named by its simple commands that do not
    keep books (``BOOKKEEPING``; a command's name is past wrappers and ``VAR=value``:
    ``replay.shell_line.command_start``), each resolved against the directory a ``cd`` before
    it in the line entered; of a runner's (``RUNNERS``), only those its heredoc script names,
    unless the call failed."""
    run = index.run
    if run.tool[b].strip().lower() in DELEGATES:
        return []
    if run.op[b] != "exec":
        return _names_path(index, b, r)
    if not index.names_in(run.text[b]):
        return []  # names no fetched file: nothing to cut the line for
    found: list[Fetched] = []
    cwd = ""
    for command in commands(_command(run.text[b])):
        part, script = command.whole, command.script
        words = shell_words(command.text)
        words = words[command_start(words):]
        if not words:
            continue
        cmd = words[0].rsplit("/", 1)[-1]
        if cmd in ("cd", "pushd"):
            to = words[1] if len(words) > 1 else ""
            cwd = to.rstrip("/") if to.startswith("/") else f"{cwd}/{to}" if cwd and to else ""
        elif cmd in BOOKKEEPING:
            continue
        elif _RUNNER_VERSION.sub("", cmd) in RUNNERS and not call_failed(index, b):
            found += named_in(index, script, cwd) if script else []
        else:
            found += named_in(index, part, cwd)
    return index.held(list(dict.fromkeys(found)), r)


_RUNNER_VERSION = re.compile(r"[0-9.]+$")
"""A versioned interpreter's suffix (``python3.12``)."""


def call_failed(index: FetchedIndex, call: int) -> bool:
    """Whether the call's recorded result is an error."""
    if index._result_of is None:
        run = index.run
        index._result_of = {run.call_of[x]: x for x in range(run.n_blocks) if run.call_of[x] >= 0}
    got = index._result_of.get(call)
    return got is not None and bool(index.run.is_error[got])


NOTICES = ("<task-notification>", "<bash-notification>")
"""How a harness notice in the user's turn begins (Claude Code's, of a background task or
subagent that finished)."""
NOTICE_FILES = re.compile(r"<output-file>(.*?)</output-file>", re.DOTALL)
"""The part of a notice that points the agent at a file to open: the task's output file.  The
rest (a subagent's report of the files it touched) is the subagent's account, not a file this
context must read."""


def _names_path_noticed(index: FetchedIndex, b: int, r: int) -> list[Fetched]:
    """``_names_path`` of a user-role message; of a harness notice (``NOTICES``), only the
    files it points the agent at (``NOTICE_FILES``)."""
    text = index.run.text[b]
    if not text.lstrip().startswith(NOTICES):
        return _names_path(index, b, r)
    return index.held([f for m in NOTICE_FILES.finditer(text) for f in named_in(index, m.group(1))], r)


def _names_path_at_work(index: FetchedIndex, b: int, r: int) -> list[Fetched]:
    """``_names_path`` of an assistant message in a response that also makes a call (the agent
    names the file as it works on it: "Now register it in application.ex:"); not of a response
    that is only text, which ends the turn (a report to the user naming what was done)."""
    lo, hi = index.run.req_output_blocks[r]
    kind = index.run.kind
    if not any(kind[x] == "tool_call" for x in range(lo, hi)):
        return []
    return _names_path(index, b, r)


def _command(text: str) -> str:
    """The command line of a shell call's recorded arguments (JSON or a raw line), read as the
    ingest reads it (``recorded_command``: the keys it is under, Codex's ``["bash", "-lc",
    "cat x"]`` is ``cat x``)."""
    try:
        args = json.loads(text)
    except ValueError:
        return text
    return recorded_command(args) if isinstance(args, dict) else text


EVIDENCE: dict[str, Callable[[FetchedIndex, int, int], list[Fetched]]] = {
    "names_file_name": _names_file_name,
    "names_path": _names_path,
    "names_path_in_use": _names_path_in_use,
    "names_path_at_work": _names_path_at_work,
    "names_path_noticed": _names_path_noticed,
    "same_file": _same_file,
}
"""Evidence name → the fetched blocks in context that block ``b`` of request ``r`` depends on."""
