"""A shell command line as the shell reads it: its simple commands and their words.

One definition for both readers of a recorded shell call: the ingest's classifier
(``replay.ingest.ops``: which file a command reads or edits, from the first meaningful command)
and the engine's need evidence (``replay.engine.need_evidence``: which files the commands of a
later call use).  Pure, no I/O.

``commands`` cuts a line: backslash-newline continuations joined; each heredoc's body lifted out
of the line and given to the command holding its operator (a commit message in ``git commit -F -
<<EOF`` is git's text, a script in ``python - <<EOF`` python's, not commands of their own); the
rest cut at ``&&``, ``||``, ``;``, ``|`` and newlines outside quotes and escapes (a pipe written
without blanks too: ``nl -ba a.py|head``).  An unclosed quote runs to the end of the line.
``shell_split`` cuts one command into its words.

Not the standard library's ``shlex`` for the cut: ``shlex.shlex(punctuation_chars=True)`` reads
a newline as a blank (not a separator), knows no heredoc, gives the words unquoted (not the text
as written, which the engine searches for file names) and cuts ``2>&1`` into punctuation; and it
reads a character at a time in Python, where one regular expression finds the separators.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from typing import Any, NamedTuple


class ShellCommand(NamedTuple):
    """One simple command of a line."""

    text: str
    """The command as written, its heredocs' bodies lifted out (the operators stay:
    ``cat > f.py <<'EOF'``)."""
    bodies: tuple[str, ...]
    """The bodies of its heredocs, in the order of their operators (lines joined by newlines,
    the terminating line left out)."""
    piped: bool
    """Whether its output goes on to the next command through a pipe (``|``)."""

    @property
    def script(self) -> str:
        """Its heredocs' bodies as one text ('' when none)."""
        return "\n".join(self.bodies)

    @property
    def whole(self) -> str:
        """The command with each heredoc's body in its operator's place, after the ``<<``
        (``cat <<EOF`` + ``x`` → ``cat <<x``): all the text the command holds."""
        if not self.bodies:
            return self.text
        bodies = iter(self.bodies)
        return HEREDOC.sub(lambda m: "<<" + next(bodies, ""), self.text)


_new = tuple.__new__


HEREDOC = re.compile(r"<<(?<!<<<)(-?)[ \t]*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\2")
"""A heredoc operator (``<<WORD``, ``<<-'WORD'``; not a ``<<<`` here-string): its body is the
lines after its line up to the one holding WORD alone (blanks around it allowed).  (The ``<``
before is looked for behind the ``<<``: a pattern that opens with its literal is searched in C.)"""
_COMMAND = re.compile(r"""(?:[^'"\\;&|\n]+|'[^']*'|"[^"\\]*(?:\\.[^"\\]*)*"|\\.|\\\Z|&(?!&))*+""",
                      re.DOTALL)
"""A simple command up to its separator: plain characters, quoted strings and escaped
characters whole (a separator in them does not cut), a lone ``&``.  It stops at a separator
(``&&``, ``||``, ``;``, ``|``, a newline), at the end, or at a quote never closed (the rest of
the line is then the last command's); one match a command, the quotes passed over in C."""

_PLAIN = re.compile(r"[^;&|\n'\"\\<]*")
"""A line with nothing the cut looks at (no separator, quote, escape or heredoc)."""


def commands(line: str) -> Iterator[ShellCommand]:
    """The simple commands of a shell command line, in order, one at a time (a reader that
    wants only the first meaningful one stops there); see the module's docstring."""
    if _PLAIN.fullmatch(line):
        yield _new(ShellCommand, (line, (), False))  # nothing to cut: one command
        return
    if "\\" in line and "\\\n" in line:  # (a search for one character first: much faster)
        line = line.replace("\\\n", "")
    bodies: list[str] = []
    if "<<" in line:
        line = _lift_heredocs(line, bodies)
    start, owned = 0, 0  # owned: the bodies handed out so far
    while True:
        m = _COMMAND.match(line, start)  # (always a match: it may be empty)
        end = m.end() if m else start
        sep = line[end:end + 2]
        if not sep or sep[0] == "'" or sep[0] == '"':  # the end, or a quote never closed
            yield _new(ShellCommand, (line[start:], tuple(bodies[owned:]) if bodies else (), False))
            return
        if sep != "&&" and sep != "||":
            sep = sep[0]
        text = line[start:end]
        if bodies:
            k = len(HEREDOC.findall(text))
            yield _new(ShellCommand, (text, tuple(bodies[owned:owned + k]), sep == "|"))
            owned += k
        else:
            yield _new(ShellCommand, (text, (), sep == "|"))
        start = end + len(sep)


def _lift_heredocs(line: str, bodies: list[str]) -> str:
    """``line`` without its heredocs' bodies (each body with its terminating line taken out,
    the operator's line joined to the line after the terminator); the bodies appended to
    ``bodies`` in the order of their operators.  A body without its terminator runs to the end
    of the line; an operator on the last line has an empty body."""
    kept: list[str] = []
    pos, n = 0, len(line)
    while True:
        first = HEREDOC.search(line, pos)
        if first is None:
            kept.append(line[pos:])
            break
        eol = line.find("\n", first.end())
        if eol < 0:
            kept.append(line[pos:])
            bodies.extend("" for _ in HEREDOC.finditer(line, first.start()))
            break
        kept.append(line[pos:eol])
        pos = eol + 1
        for op in HEREDOC.finditer(line, first.start(), eol):
            if pos > n:
                bodies.append("")
                continue
            end = _terminator(line, op.group(3), pos)
            if end is None:
                bodies.append(line[pos:])
                pos = n + 1
                continue
            bodies.append(line[pos:end[0]])
            pos = end[1] + 1
        if pos > n:
            break
    return "\n".join(kept)


def _terminator(line: str, word: str, pos: int) -> tuple[int, int] | None:
    """Where the heredoc opened with ``word`` whose body starts at ``pos`` ends: the first line
    from ``pos`` on holding ``word`` alone, blanks around it, as (the newline before it, the
    end of the line); None when no line does.  Found by ``str.find`` (faster than a regular
    expression that opens with a newline)."""
    at, size = line.find(word, pos), len(word)
    while at >= 0:
        start = line.rfind("\n", pos - 1, at)  # line[pos - 1] is the newline before the body
        end = line.find("\n", at + size)
        if end < 0:
            end = len(line)
        if start >= 0 and not line[start + 1:at].strip() and not line[at + size:end].strip():
            return start, end
        at = line.find(word, end)
    return None


_PIECES = re.compile(r"""[ \t\r\n]+|'[^']*'|"(?:[^"\\]|\\.)*"|\\.|[^ \t\r\n'"\\]+|.""",
                     re.DOTALL)
"""The pieces of a POSIX shell word list, each whole: blanks, a single-quoted string, a
double-quoted string, an escaped character, plain characters; last, one character none of
them takes (an unclosed quote, a backslash at the end: one character, where every other piece
that opens with a quote or a backslash has two or more)."""
_BLANK = frozenset(" \t\r\n")
_DQ_ESCAPE = re.compile(r'\\(["\\])')


def shell_split(line: str) -> list[str]:
    """``shlex.split(line, comments=False)``, exactly (POSIX rules: words split at space, tab,
    CR and LF; single quotes literal; in double quotes a backslash escapes only ``"`` and
    ``\\``; outside quotes it escapes any character; ``''`` is an empty word), by one regular
    expression instead of shlex's character-at-a-time reader (about 10x less CPU on the
    samples' commands), every piece found by one ``findall`` (no match object a piece).
    tests/replay/test_shell_line.py checks it against shlex.

    Raises:
        ValueError: an unclosed quote or a backslash at the end, as shlex raises.
    """
    words: list[str] = []
    word: list[str] | None = None  # the word being read (None: between words)
    for piece in _PIECES.findall(line):
        first = piece[0]
        if first in _BLANK:
            if word is not None:
                words.append("".join(word))
                word = None
            continue
        if first == "'" or first == '"' or first == "\\":
            if len(piece) == 1:  # an unclosed quote, or a backslash with nothing after it
                raise ValueError("No closing quotation" if first != "\\" else
                                 "No escaped character")
            piece = piece[1] if first == "\\" else piece[1:-1] if first == "'" else \
                _DQ_ESCAPE.sub(r"\1", piece[1:-1])
        if word is None:
            word = [piece]
        else:
            word.append(piece)
    if word is not None:
        words.append("".join(word))
    return words


def unwrap_argv(argv: list[Any]) -> str:
    """The command line of a call recorded as an argument vector: the script of ``bash -lc
    SCRIPT`` (``sh``, ``zsh``; ``-c``), else the words quoted and joined."""
    parts = [str(a) for a in argv]
    if len(parts) >= 3 and parts[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh") and parts[1] in (
        "-lc", "-c"
    ):
        return parts[2]
    return " ".join(shlex.quote(p) for p in parts)
