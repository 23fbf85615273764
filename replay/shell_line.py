"""A shell command line as the shell reads it: its simple commands and their words.

One definition for both readers of a recorded shell call: the ingest's classifier
(``replay.ingest.ops``: which file a command reads or edits, from the first meaningful command)
and the engine's need evidence (``replay.engine.need_evidence``: which files the commands of a
later call use).  Pure, no I/O.

``commands`` cuts a line: backslash-newline continuations joined; each heredoc's body lifted out
of the line and given to the command holding its operator (a commit message in ``git commit -F -
<<EOF`` is git's text, a script in ``python - <<EOF`` python's, not commands of their own); the
rest cut at ``&&``, ``||``, ``;``, ``|`` and newlines outside quotes and escapes (a pipe written
without blanks too: ``nl -ba a.py|head``).  An unclosed quote runs to the end of the line; a
``<<WORD`` inside quotes is no heredoc, and the line after a heredoc's body is read in the
quotes open at its operator (``replay.heredoc``).  ``shell_split`` cuts one command into its
words (``shell_words``: an unclosed quote read as closed at the end, ``closed``);
``command_start`` finds its command past the wrappers that run it (``WRAPPERS``: ``timeout
30s``, ``sudo -u x``, ``env -i A=1``, ``VAR=value`` ...); ``unwrap_argv`` makes a line of a
recorded argument vector.

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

from replay.heredoc import count_operators, heredoc_operators, lift_heredocs


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
        text, at = self.text, 0
        out: list[str] = []
        for op in heredoc_operators(text):
            out += (text[at:op.start()], "<<", next(bodies, ""))
            at = op.end()
        return "".join(out) + text[at:]


_new = tuple.__new__


_COMMAND = re.compile(r"""(?:[^'"\\;&|\n]+|'[^']*'|"[^"\\]*(?:\\.[^"\\]*)*"|\\.|\\\Z|&(?!&))*+""",
                      re.DOTALL)
"""A simple command up to its separator: plain characters, quoted strings and escaped
characters whole (a separator in them does not cut), a lone ``&``.  It stops at a separator
(``&&``, ``||``, ``;``, ``|``, a newline), at the end, or at a quote never closed (the rest of
the line is then the last command's); one match a command, the quotes passed over in C."""

_PLAIN = re.compile(r"[^;&|\n\\<]*")
"""A line with nothing the cut looks at (no separator, escape or heredoc, in quotes or not):
one command, the whole line (a quote in it, closed or not, holds no separator to pass over)."""


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
        line = lift_heredocs(line, bodies)
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
            k = count_operators(text)
            yield _new(ShellCommand, (text, tuple(bodies[owned:owned + k]), sep == "|"))
            owned += k
        else:
            yield _new(ShellCommand, (text, (), sep == "|"))
        start = end + len(sep)


_PIECES = re.compile(r"""[ \t\r\n]+|'[^']*'|"(?:[^"\\]|\\.)*"|\\.|[^ \t\r\n'"\\]+|.""",
                     re.DOTALL)
"""The pieces of a POSIX shell word list, each whole: blanks, a single-quoted string, a
double-quoted string, an escaped character, plain characters; last, one character none of
them takes (an unclosed quote, a backslash at the end: one character, where every other piece
that opens with a quote or a backslash has two or more)."""
_SINGLE_QUOTED_WORD = re.compile(r"(?:[^ \t\r\n']+|'[^']*')+")
"""A word of a line that holds no double quote and no backslash: plain characters and
single-quoted strings, whose quotes are all it has to drop (``shell_split``)."""
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
    if '"' not in line and "\\" not in line:  # (no quote but single ones: read at once)
        if line.count("'") % 2:  # (the quotes pair up in turn: an odd one is never closed)
            raise ValueError("No closing quotation")
        parts = line.split("'")  # (outside and inside the quotes in turn)
        for quoted in parts[1::2]:
            if not quoted or " " in quoted:
                break
        else:  # every quoted string holds something and no blank (``sed -n '1,9p' f``,
            # ``<<'EOF'``): the words are the line's without its quotes, split at its blanks
            plain = "".join(parts)  # (printable: no blank but the space, which is shlex's
            if plain.isprintable():  # and ``str.split``'s alike; half the instructions)
                return plain.split()
        return [w.replace("'", "") if "'" in w else w for w in _SINGLE_QUOTED_WORD.findall(line)]
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


def shell_words(command: str) -> list[str]:
    """The words of one command as the shell reads them (``shell_split``), tolerant: a quote
    never closed is read as closed at the end, a backslash at the end is dropped (``closed``);
    a command with nothing to unquote is split at blanks."""
    if not ("'" in command or '"' in command or "\\" in command):
        return command.split()
    try:
        return shell_split(command)
    except ValueError:  # (the rare command that needs closing: no search for it before)
        return shell_split(closed(command))


_CLOSED_PART = re.compile(r"""(?:[^'"\\]++|'[^']*+'|"(?:[^"\\]++|\\.)*+"|\\.)*+""", re.DOTALL)
"""The start of a command up to its first quote never closed or its backslash at the end (the
whole command when it has neither): plain characters, quoted strings and escapes as
``shell_split`` reads them."""
_DOUBLE_QUOTED_REST = re.compile(r'(?:[^"\\]++|\\.)*+', re.DOTALL)
"""The text of a double-quoted string never closed, up to a backslash at the end (if any)."""


def closed(command: str) -> str:
    """``command`` as ``shell_words`` reads it: ``shell_split`` reads it without an error.  A
    quote never closed is closed at the end (``grep "a b`` is ``grep "a b"``; a backslash at
    the end of a double-quoted one dropped first, or it would escape the closing quote), a
    backslash at the end (outside quotes) is dropped; any other command is itself.  (One
    definition for the words and for the ingest's search of them as written:
    ``replay.ingest.ops``.)  The shell itself refuses such a line (it runs nothing); it is
    read as it would run if closed there."""
    start = _CLOSED_PART.match(command)  # (it matches every text, if only empty)
    at = start.end() if start else 0
    if at == len(command):
        return command
    if command[at] == "'":
        return command + "'"
    if command[at] == "\\":  # (an escape anywhere else is passed over: this is the last
        return command[:-1]  # character)
    rest = _DOUBLE_QUOTED_REST.match(command, at + 1)  # (matches, if only empty)
    return (command if rest and rest.end() == len(command) else command[:-1]) + '"'


WRAPPERS: dict[str, tuple[str, frozenset[str]]] = {
    "sudo": ("CDghprRTtUu", frozenset(("--chdir", "--group", "--host", "--prompt", "--role",
                                         "--type", "--command-timeout", "--other-user",
                                         "--user", "--close-from"))),
    "env": ("CSu", frozenset(("--chdir", "--split-string", "--unset"))),
    "timeout": ("ks", frozenset(("--kill-after", "--signal"))),
    "time": ("fo", frozenset(("--format", "--output"))),
    "nohup": ("", frozenset()),
    "stdbuf": ("eio", frozenset(("--error", "--input", "--output"))),
    "nice": ("n", frozenset(("--adjustment",))),
}
"""Commands that run the command after them (and their options, ``VAR=value`` words and, for
``timeout``, its duration): name → (its short options that take a value, its long ones).  A
short option's value is the rest of its word or the next word (``-uroot``, ``-u root``, ``-iu
root``), a long one's after ``=`` or the next word; ``--`` ends the options.  The one
definition for the ingest's classifier and the engine's need rules (``command_start``)."""
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
"""A shell variable assignment word (``VAR=value``, ``PATH+=:x``) before a command."""


def command_start(words: list[str]) -> int:
    """Where the command of a simple command's ``words`` begins: past ``VAR=value`` words and
    the wrappers (``WRAPPERS``: ``sudo -u x``, ``env -i A=1``, ``timeout -s KILL 30s``, ``nice
    -n 5``, ``time -p``, ``nohup``, ``stdbuf -oL``) with their options; ``len(words)`` when
    nothing is left (``env``, ``VAR=1``).  0 when the first word is not a wrapper's name and
    holds neither ``=`` nor ``/`` (a caller in a hot loop may test that first)."""
    i, n = 0, len(words)
    while i < n:
        word = words[i]
        if "=" in word and _ASSIGNMENT.match(word):
            i += 1
            continue
        name = word.rsplit("/", 1)[-1] if "/" in word else word
        wrapper = WRAPPERS.get(name)
        if wrapper is None:
            return i
        short, long = wrapper
        i += 1
        while i < n and words[i].startswith("-"):
            option = words[i]
            i += 1
            if option == "--":
                break
            if option.startswith("--"):
                if "=" not in option and option in long:
                    i += 1
                continue
            for k, letter in enumerate(option[1:], 2):
                if letter in short:
                    i += k == len(option)  # the value is the next word
                    break
        if name == "timeout" and i < n and words[i][:1].isdigit():
            i += 1  # its duration
    return i


COMMAND_KEYS = ("command", "cmd", "code")
"""The keys a shell call's recorded arguments hold its command under, the first present one
read (Claude Code's Bash ``command``; Codex's shell ``command``, often an argument vector, and
exec ``cmd``; a code tool's ``code``): the one definition for the ingest's classifier and the
engine's need rules (``recorded_command``)."""


def recorded_command(args: dict[str, Any]) -> str:
    """The command line of a shell call's recorded arguments: the value of the first of
    ``COMMAND_KEYS`` present ('' when none), an argument vector unwrapped (``unwrap_argv``)."""
    for key in COMMAND_KEYS:
        if key in args:
            got = args[key]
            return unwrap_argv(got) if isinstance(got, list) else str(got)
    return ""


def unwrap_argv(argv: list[Any]) -> str:
    """The command line of a call recorded as an argument vector: the script of ``bash -lc
    SCRIPT`` (``sh``, ``zsh``; ``-c``), else the words quoted and joined."""
    if len(argv) >= 3 and str(argv[1]) in ("-lc", "-c") \
            and str(argv[0]).rsplit("/", 1)[-1] in ("bash", "sh", "zsh"):
        return str(argv[2])  # (most calls: no list of the words made)
    return " ".join([shlex.quote(str(a)) for a in argv])
