"""Heredocs in a shell command line: where each operator is (outside quotes) and its body.

``heredoc_operators`` finds the operators (``<<WORD``, ``<<-'WORD'``; not a ``<<<`` here-string,
not one in quotes: ``grep "<<EOF" f``); ``lift_heredocs`` takes each body out of the line (the
lines after its operator's line up to its terminator), reading the line after a body in the
quotes open at its operator: in ``git commit -m "$(cat <<'EOF'`` … ``EOF`` … ``)" -m "<<x"`` the
``)"`` closes the substitution and the string, so ``"<<x"`` is text.  Used by
``replay.shell_line.commands``, which gives each body to the command holding its operator.
Pure, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

HEREDOC = re.compile(r"<<(?<!<<<)(-?)[ \t]*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\2")
"""A heredoc operator (``<<WORD``, ``<<-'WORD'``; not a ``<<<`` here-string): its body is the
lines after its line up to the one holding WORD alone (blanks around it allowed).  (The ``<``
before is looked for behind the ``<<``: a pattern that opens with its literal is searched in C.)"""
_UNQUOTED_STOP = re.compile(r"""<<|['"\\()]""")
"""Outside quotes, what can change how the rest is read: a heredoc operator, a quote, an
escape, a parenthesis (``$(`` opens a command substitution, ``(`` a subshell)."""
_DOUBLE_QUOTED_STOP = re.compile(r'["\\]|\$\(')
"""In double quotes, what can end them or open a command of its own: the closing quote, an
escape, a command substitution (``$(``)."""
_DOUBLE_QUOTED = re.compile(r'"(?:[^"\\$]|\\.|\$(?!\())*"', re.DOTALL)
"""A double-quoted string without a command substitution in it (one with ``$(`` holds a command
of its own, whose heredoc is one: ``git commit -m "$(cat <<'EOF' …``): passed over whole."""

Quoting = list[str]
"""Where a scan of a line stands: the quotes and groups open there, innermost last (``'`` a
single-quoted string, ``"`` a double-quoted one, ``)`` a command substitution or a subshell);
empty outside all."""


def heredoc_operators(line: str, pos: int = 0,
                      endpos: int | None = None) -> Iterator[re.Match[str]]:
    """The heredoc operators (``HEREDOC`` matches) of ``line[pos:endpos]`` outside quotes and
    escapes (``pos`` outside quotes): ``grep "<<EOF" f`` and ``echo 'a <<EOF'`` have none
    (``_operators``)."""
    return _operators(line, pos, len(line) if endpos is None else endpos, [])


def count_operators(text: str) -> int:
    """How many heredoc operators ``text`` holds outside quotes."""
    if "<<" not in text:
        return 0
    return sum(1 for _ in _operators(text, 0, len(text), []))


def _operators(line: str, pos: int, end: int, quoting: Quoting,
               to_end: bool = False) -> Iterator[re.Match[str]]:
    """The heredoc operators of ``line[pos:end]`` outside quotes and escapes, read from the
    quotes ``quoting`` says are open at ``pos``; ``quoting`` is kept up to date as the scan
    goes (at each operator yielded; at ``end`` once exhausted when ``to_end``, else the scan
    stops past the last ``<<``), so that a scan stopped at a heredoc's line and resumed after
    its body reads the rest in the quotes it was in (``"$(cat <<'EOF'`` … ``EOF`` … ``)" -m
    "<<x"``: the ``)"`` closes the substitution and the string).  Read left to right, past
    what cannot change the reading: a single-quoted string (one never closed runs to the end),
    a double-quoted string without ``$(`` (passed whole, ``_DOUBLE_QUOTED``), an escaped
    character; inside a command substitution (``$(`` in double quotes or not) or a subshell
    the line is read as outside quotes up to its ``)``.  (Stops are found by searches in C,
    each character looked at a bounded number of times.)"""
    last = end if to_end else line.rfind("<<", pos, end)
    while pos <= last and pos < end:
        inner = quoting[-1] if quoting else ""
        if inner == "'":
            close = line.find("'", pos, end)
            if close < 0:
                return
            quoting.pop()
            pos = close + 1
        elif inner == '"':
            stop = _DOUBLE_QUOTED_STOP.search(line, pos, end)
            if stop is None:
                return
            ch, pos = line[stop.start()], stop.end()
            if ch == '"':
                quoting.pop()
            elif ch == "\\":
                pos += 1
            else:
                quoting.append(")")
        else:
            stop = _UNQUOTED_STOP.search(line, pos, end)
            if stop is None:
                return
            at = stop.start()
            ch, pos = line[at], stop.end()
            if ch == "<":
                op = HEREDOC.match(line, at, end)
                if op is not None and (at == 0 or line[at - 1] != "<"):  # not ``<<<``
                    pos = op.end()
                    yield op
            elif ch == "'":
                quoting.append("'")
            elif ch == '"':
                string = _DOUBLE_QUOTED.match(line, at, end)
                if string is not None:
                    pos = string.end()
                else:
                    quoting.append('"')
            elif ch == "\\":
                pos += 1
            elif ch == "(":
                quoting.append(")")
            elif inner:  # ``)`` closes the innermost substitution or subshell
                quoting.pop()


def lift_heredocs(line: str, bodies: list[str]) -> str:
    """``line`` without its heredocs' bodies (each body with its terminating line taken out,
    the operator's line joined to the line after the terminator); the bodies appended to
    ``bodies`` in the order of their operators.  The line after a body is read in the quotes
    open at the end of the operator's line (``_operators``).  A body without its terminator
    runs to the end of the line; an operator on the last line has an empty body."""
    kept: list[str] = []
    pos, n = 0, len(line)
    quoting: Quoting = []
    while True:
        first = next(_operators(line, pos, n, quoting), None)
        if first is None:
            kept.append(line[pos:])
            break
        eol = line.find("\n", first.end())
        if eol < 0:
            kept.append(line[pos:])
            bodies.extend("" for _ in (first, *_operators(line, first.end(), n, quoting)))
            break
        kept.append(line[pos:eol])
        pos = eol + 1
        operators = _operators(line, first.end(), eol, quoting, True)  # the line's others
        op: re.Match[str] | None = first
        while op is not None:
            word, op = op.group(3), next(operators, None)
            if pos > n:
                bodies.append("")
                continue
            end = _terminator(line, word, pos)
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
