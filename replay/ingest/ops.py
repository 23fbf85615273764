"""Normalised tool operations: what a tool call does (read, write, edit, …) and to which file.

Every harness names its tools differently: Claude Code's Read/Write/Edit, Codex's
shell and apply_patch, SWE-agent's and OpenHands' ``str_replace_editor`` commands,
mini-swe-agent's bare shell commands.  A call that writes the agent's todo list or plan
(Claude Code's TodoWrite, Codex's update_plan, Gemini CLI's write_todos, ...) is ``todo``: what
a summarise tier re-inserts (``reinsert: [todo]``), so no tier needs to know tool names.  ``classify`` maps a tool name and its
arguments to one ``Op`` and the target path; shell command lines are read by
``classify_shell``.  Unknown tools are ``other``.

Not here: pairing calls with results (``replay.ingest.parsers.builder``).
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from replay.shell_line import (
    WRAPPERS,
    ShellCommand,
    closed,
    command_start,
    commands,
    recorded_command,
    shell_words,
)


class OpPath(NamedTuple):
    """The normalised operation of one call and the file it targets ('' when none)."""

    op: str
    path: str


_new = tuple.__new__
"""``OpPath``'s values made as ``_new(OpPath, (op, path))``: the same tuple, without the
Python frame of a named tuple's ``__new__`` (a classification makes one: ~1,500 instructions
less each)."""


_READERS = {"cat", "head", "tail", "less", "more", "nl", "bat", "view", "open", "xxd", "wc"}
_SEARCHERS = {"grep", "egrep", "fgrep", "rg", "ag", "ack", "git-grep", "search_dir",
              "search_file", "find_file"}
_LISTERS = {"ls", "tree", "find", "fd", "dir", "du"}
_SHELL_TOOLS = {"bash", "shell", "exec_command", "execute_bash", "run", "terminal",
                "local_shell", "container.exec", "cmd", "run_command", "bash_command"}
_EDITOR_TOOLS = {"str_replace_editor", "str_replace_based_edit_tool", "edit_file", "editor",
                 "text_editor", "file_editor"}
_EDITOR_COMMANDS = {"view": "read", "create": "write", "str_replace": "edit", "insert": "edit",
                    "undo_edit": "edit", "edit": "edit", "write": "write", "append": "edit"}
_NAMED = {
    "read": "read", "read_file": "read", "readfile": "read", "view_file": "read", "cat": "read",
    "write": "write", "write_file": "write", "create_file": "write", "writefile": "write",
    "edit": "edit", "multiedit": "edit", "notebookedit": "edit", "apply_patch": "edit",
    "replace": "edit", "patch": "edit",
    "grep": "search", "search": "search", "websearch": "search", "web_search": "search",
    "codebase_search": "search", "search_file_content": "search", "find_file": "search",
    "open": "read", "goto": "read", "scroll_up": "read", "scroll_down": "read",
    "create": "write", "search_dir": "search", "search_file": "search",
    "glob": "list", "ls": "list", "list_dir": "list", "list_directory": "list", "list_files": "list",
}
_TODO_TOOLS = frozenset({"todowrite", "update_plan", "todo_write", "write_todos"})
"""Tools that write the agent's todo list or plan (names lowercased)."""
_PATH_KEYS = ("file_path", "path", "notebook_path", "filename", "file", "target_file",
              "absolute_path")
PATCH_FILE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+)$", re.MULTILINE)
"""A file line of an apply_patch body: (action, path) (redact rewrites the same lines)."""
_LINE_RANGE = re.compile(r"^\d+:\d+$")
_REDIRECT = re.compile(r"(?<![0-9&])>{1,2}\s*([^\s|;&]+)")
"""A shell redirect into a file (``> f``, ``>> f``; not ``2>`` or ``&>``): the file written
(searched in the line with its quoted strings masked: ``_unquoted``)."""
_QUOTED = re.compile(r"""'[^']*'|"(?:[^"\\]|\\.)*"|\\.""", re.DOTALL)
"""A quoted string or an escaped character (a ``>`` in it is no redirect)."""
_REDIRECTION = re.compile(r"(.*?)([0-9]*|&)(<<<|<<-?|<>|<&|>&|>>|>\||<|>)(.*)", re.DOTALL)
"""A redirection in a word (``<``, ``2>``, ``>>``, ``&>``, ``2>&1``, ``<<EOF``, ``<<<``; after
an operand written against it, ``a.py>out``): (the operand, the descriptor, the operator, the
target written in the same word — or empty: the next word is the target)."""
_WRITERS = frozenset(("cat", "echo", "printf", "tee"))
"""Commands whose redirected output is a file written (``cat > f <<EOF``, ``echo x >> f``)."""


def classify(tool: str, args: Any) -> OpPath:
    """The operation and target path of a call to ``tool`` with ``args``.

    Args:
        tool: the tool name as recorded.
        args: the arguments: a dict, a raw string (a shell line, a patch), or None.
    """
    name = tool.strip().lower()
    if name in _TODO_TOOLS:
        return _new(OpPath, ("todo", ""))
    if name.startswith("mcp__"):
        name = name.rsplit("__", 1)[-1]
    if isinstance(args, dict):
        if name in _EDITOR_TOOLS or ("command" in args and "path" in args
                                     and str(args.get("command")) in _EDITOR_COMMANDS):
            op = _EDITOR_COMMANDS.get(str(args.get("command", "")), "other")
            path = str(args.get("path", ""))
            if op == "read" and path and not _looks_like_file(path):
                op = "list"
            return _new(OpPath, (op, path))
        if name == "apply_patch":
            return _classify_patch(str(args.get("input", args.get("patch", ""))))
        if name in _SHELL_TOOLS or name.endswith("shell") or "cmd" in args and name not in _NAMED:
            return classify_shell(recorded_command(args))
        op = _NAMED.get(name, "other")
        for key in _PATH_KEYS:  # (a loop, not next() over a generator: no frame a call)
            if isinstance(value := args.get(key), str):
                return _new(OpPath, (op, str(value)))
        return _new(OpPath, (op, ""))
    text = "" if args is None else str(args)
    if name == "apply_patch" or text.startswith("*** Begin Patch"):
        return _classify_patch(text)
    if name in _EDITOR_TOOLS or text.startswith("str_replace_editor "):
        words = shell_words(text)
        if words and words[0] == "str_replace_editor":
            words = words[1:]
        if len(words) >= 2 and words[0] in _EDITOR_COMMANDS:
            return classify(name or "str_replace_editor", {"command": words[0], "path": words[1]})
    if name in _SHELL_TOOLS or name in ("", "action"):
        return classify_shell(text)
    return _new(OpPath, (_NAMED.get(name, "other"), ""))


def classify_shell(command: str) -> OpPath:
    """The operation and path of a shell command line (the first meaningful command counts)."""
    if "*** Begin Patch" in command and "apply_patch" in command:  # apply_patch <<'PATCH' heredoc
        return _classify_patch(command)
    head = _LINE_HEAD.match(command)
    if head:
        name = head.group(1).rsplit("/", 1)[-1]
        if name not in _TOLD_APART:
            return _EXEC  # what the cut below finds for it, without cutting the line
        if name in _SEARCHERS:  # (the line's first command, a search whatever its operands)
            return _SEARCH
    first = _first_command(command)
    if first is None:
        return _new(OpPath, ("exec" if command.strip() else "other", ""))
    words, line, _, text = first
    return _classify_words(words, line, text)


PART_READERS = frozenset({"head", "tail", "sed", "awk", "grep"})
"""Shell readers that print part of a file (a range of lines, the lines that match)."""


def shell_reads_part(command: str) -> bool:
    """Whether a shell read prints only part of its file: its reader is one of
    ``PART_READERS`` (``sed -n '1,200p' f``, ``head -50 f``), or its output is piped on to
    another command (``nl -ba f | sed -n '583,600p'``, ``cat f | grep x``)."""
    first = _first_command(command)
    if first is None:
        return False
    words, _, piped, _ = first
    return piped or words[0].rsplit("/", 1)[-1] in PART_READERS


def _first_command(command: str) -> tuple[list[str], str, bool, str] | None:
    """The first meaningful command of a line, cut by ``replay.shell_line.commands``: of the
    first pipeline whose first command is not skipped (wrappers with their options and
    ``VAR=value`` skipped: ``replay.shell_line.command_start``;
    ``cd``, ``export``, ``echo`` ... without a redirect in the pipeline skipped), that first
    command's words, the pipeline's text (its commands joined by ``|``; heredoc bodies left
    out), whether it is piped on, and that first command's text.  A pipeline whose first
    command is only a wrapper (``env | grep …``) is an empty command, piped."""
    pipeline: list[ShellCommand] = []  # the pipeline's commands before this one
    for simple in commands(command):
        if simple.piped:
            pipeline.append(simple)
            continue
        if pipeline:
            pipeline.append(simple)
            first, line = pipeline[0].text, "|".join([c.text for c in pipeline])
        else:
            first = line = simple.text
        head = _PLAIN_HEAD.match(first) if len(first) > 200 else None
        if head and head.group(1).rsplit("/", 1)[-1] not in _TOLD_APART:
            words = [head.group(1)]  # all the classifier reads of a long command: its name
        else:
            words = shell_words(first.strip())
            if words and (words[0] in WRAPPERS or "=" in words[0] or "/" in words[0]):
                words = words[command_start(words):]  # (else it is 0: no call, no copy)
        if not words and pipeline:
            return words, line, True, first
        if not words or words[0] in _SKIPPED and (">" not in line or ">" not in _unquoted(line)):
            pipeline = []
            continue
        return words, line, bool(pipeline), first
    return None


_SKIPPED = frozenset(("cd", "source", ".", "export", "set", "pushd", "echo"))
"""Commands passed over for the next one unless they redirect output (``echo x > f``)."""
_TOLD_APART = frozenset((*_READERS, *_SEARCHERS, *_LISTERS, *_WRITERS, *WRAPPERS, *_SKIPPED,
                         "sed", "awk", "git", "goto", "scroll_up", "scroll_down", "create",
                         "touch", "edit", "patch"))
"""The commands ``_classify_words`` tells apart; any other is ``exec`` whatever its arguments."""
_LINE_HEAD = re.compile(r"[ \t\r\n]*([^\s;&|'\"\\<>=]+)(?:[ \t\r\n]|\Z)")
"""A command line's first word when nothing in it is read by the cut into commands or words (no
separator, quote, escape, heredoc, redirection or ``=``) and a blank the shell splits at ends
it: the name of the line's first meaningful command (``_first_command`` passes over empty
commands, wrappers and skipped ones only, all named in ``_TOLD_APART``).  When
``_classify_words`` does not tell it apart (most commands), the line is ``exec``, and when it is
one of ``_SEARCHERS`` (``rg -n "a|b" src``) a search, without being cut into commands and
words."""
_PLAIN_HEAD = re.compile(r"\s*([^\s'\"\\=]+)(?:[ \t\r\n]|\Z)")
"""A command's first word when it is plain (no quote, escape or ``=``; ended by a blank the
shell splits at): the command's name, read without cutting the rest into words (a long
quoted argument, ``gh pr create --body "…"``, need not be unquoted to be ``exec``; a short
command is cut into words at once, the cheaper way for it)."""


_EXEC = OpPath("exec", "")
_SEARCH = OpPath("search", "")
"""The outcomes of most commands, made once (an ``OpPath`` is immutable)."""


def _classify_words(words: list[str], line: str, text: str) -> OpPath:
    if not words:  # `env | grep …`: the first command was only a wrapper
        return _EXEC
    cmd = words[0]
    if "/" in cmd:
        cmd = cmd.rsplit("/", 1)[-1]
    if cmd not in _TOLD_APART:  # (most commands: nothing below tells them apart)
        return _EXEC
    if cmd in _SEARCHERS:  # (a search whatever its operands: no reader, writer or sed)
        return _SEARCH
    operands, stdin = _operands(words[1:], text)  # (the command's words after its name)
    args = [w for w in operands  # (":" first: a plain word is no line range, no regex run)
            if not w.startswith("-") and not (":" in w and _LINE_RANGE.match(w))]
    if stdin and not any(_looks_like_file(a) for a in args):
        args.append(stdin)  # `wc -l < f`, `sed -n 1,5p < f`: the file read is the input's
    written = _written(line) if cmd in _WRITERS else ""
    if cmd == "sed":
        for w in operands:
            if w.startswith("-i"):  # (-i, -i.bak)
                return _new(OpPath, ("edit", args[-1] if args else ""))
    if cmd == "tee" or written and written != "/dev/null":
        return _new(OpPath, ("write", written or (args[-1] if args else "")))
    if cmd == "sed" or cmd == "awk":
        files = [a for a in args[1:] if _looks_like_file(a)]
        return _new(OpPath, ("read", files[-1] if files else ""))
    if cmd in _READERS:
        files = [a for a in args if not a.isdigit()]
        return _new(OpPath, ("read", files[0] if files else ""))
    if cmd in ("python", "python3") and len(operands) > 1 and operands[0] == "-c":
        return _EXEC
    if cmd == "git" and operands and operands[0] == "grep":
        return _SEARCH
    if cmd in _LISTERS:
        if cmd == "find" and ("-exec" in operands or "-delete" in operands):
            return _EXEC
        return _new(OpPath, ("list", args[0] if args else ""))
    if cmd in ("goto", "scroll_up", "scroll_down"):
        return _new(OpPath, ("read", ""))
    if cmd in ("create", "touch"):
        return _new(OpPath, ("write", args[0] if args else ""))
    if cmd in ("edit", "patch"):
        return _new(OpPath, ("edit", args[0] if args else ""))
    return _EXEC


def _unquoted(line: str) -> str:
    """``line`` with each quoted string and escaped character masked (as many ``_`` as it has
    characters: a match in it is where it is in ``line``); a quote never closed stays."""
    if not ("'" in line or '"' in line or "\\" in line):
        return line
    return _QUOTED.sub(lambda m: "_" * len(m.group()), line)


def _closed_masked(line: str) -> tuple[str, str]:
    """``line`` as the shell words read it (``replay.shell_line.closed``: a quote never closed
    closed at the end, a backslash at the end dropped) and it masked (``_unquoted``); the line
    is closed only when its masking leaves a quote or an escape (one that nothing closes)."""
    masked = _unquoted(line)
    if "'" in masked or '"' in masked or "\\" in masked:
        line = closed(line)
        masked = _unquoted(line)
    return line, masked


def _written(line: str) -> str:
    """The file the first redirect of ``line`` outside quotes writes (``_REDIRECT``), as the
    shell reads its name (``> "a b.txt"``: ``a b.txt``); '' when none."""
    if ">" not in line:
        return ""
    line, masked = _closed_masked(line)  # (a '>' in a quote never closed is no redirect)
    found = _REDIRECT.search(masked)
    if found is None:
        return ""
    target = line[found.start(1):found.end(1)]
    if not ("'" in target or '"' in target or "\\" in target):
        return target
    words = shell_words(target)
    return words[0] if len(words) == 1 else target


def _operands(words: list[str], text: str) -> tuple[list[str], str]:
    """A command's words without its redirections (``2>/dev/null``, ``> out.txt``, ``2>&1``,
    ``<<EOF``: not files it works on), and the file its input is redirected from ('' if none).
    ``words`` are the last words of the command ``text`` (unquoted): only an operator
    outside quotes redirects (``grep ">" a.py`` greps a.py), found in the words as written
    (``_written_words``)."""
    joined = "\x00".join(words)  # (one look at every word in C, no generator a word)
    if "<" not in joined and ">" not in joined:
        return words, ""
    written = _written_words(text, len(words)) if _QUOTED_OPERATOR.match(text) else None
    kept: list[str] = []
    stdin = ""
    i, n = 0, len(words)
    while i < n:
        word = words[i]
        i += 1
        m = _REDIRECTION.fullmatch(word)
        if m is None:
            kept.append(word)
            continue
        if written is None or written[i - 1] == word:  # (no quote in the word)
            operand, fd, operator, target = m.groups()
        else:
            parts = _quoted_redirection(written[i - 1])
            if parts is None:
                kept.append(word)
                continue
            operand, fd, operator, target = parts
        if operand:
            kept.append(operand)
        if not target and i < n:
            target = words[i]
            i += 1
        if operator in ("<", "<>") and fd in ("", "0"):  # `< f`, `0< f`; not `3< f`
            stdin = target
    return kept, stdin


_QUOTED_OPERATOR = re.compile(
    r"""(?:[^'"\\]++|'[^'<>]*+'|"(?:[^"\\<>]++|\\[^<>])*+"|\\[^<>])*+['"\\]""", re.DOTALL)
"""Matches a command line that may hold a quoted or escaped ``<`` or ``>`` (``grep ">" f``): past
its plain characters and its quoted strings and escapes without one, a quote or an escape is
left (a string holding one, or a quote never closed).  Else every ``<`` and ``>`` in it is an
operator and its words are read as they are (one search in C, where masking the quoted strings
cost 2.5 % of the classifier on the samples)."""
_MASKED_WORD = re.compile(r"[^ \t\r\n]+")
"""A word of a command line whose quoted strings are masked (``_unquoted``): blanks are left only
where the shell splits words."""


def _written_words(text: str, n: int) -> list[str] | None:
    """The last ``n`` words of the command ``text`` as written (quotes kept), read as
    ``shell_words`` reads them (a quote never closed closed at the end, a backslash at the end
    dropped: ``replay.shell_line.closed``); None when ``text`` has no quote or escape: its
    words are as written (and may have been split at other blanks: ``str.split``)."""
    text, masked = _closed_masked(text.strip())
    if masked is text:
        return None
    spans = [m.span() for m in _MASKED_WORD.finditer(masked)]
    if len(spans) < n:  # (never: the words are these, less the command's leading ones)
        return None
    return [text[a:b] for a, b in spans[len(spans) - n:]]


def _quoted_redirection(word: str) -> tuple[str, str, str, str] | None:
    """The redirection (``_REDIRECTION``'s groups) of a ``word`` as written that holds quotes:
    its operator outside them, its operand and target unquoted (``"a b">out``, ``2>"c d"``,
    ``<<'EOF'``); None when every ``<`` and ``>`` in it is quoted (``">"``, ``'<div>'``)."""
    m = _REDIRECTION.fullmatch(_unquoted(word))  # (masked: its positions are the word's)
    if m is None:
        return None
    operand = "".join(shell_words(word[:m.start(2)]))
    return operand, m.group(2), m.group(3), "".join(shell_words(word[m.start(4):]))


def _classify_patch(patch: str) -> OpPath:
    first = PATCH_FILE.search(patch)  # (the first file line: not every file line of the patch)
    if first is None:
        return _new(OpPath, ("edit", ""))
    action, path = first.groups()
    return _new(OpPath, ("write" if action == "Add" else "edit", path.strip()))


def _looks_like_file(path: str) -> bool:
    tail = path.rstrip("/").rsplit("/", 1)[-1]
    return "." in tail.lstrip(".") and not path.endswith("/")
