"""A shell command line cut into its simple commands as the shell cuts them.

Continuations joined, split at ``&&``, ``||``, ``;``, ``|`` and newlines outside quotes, each
heredoc's body kept with the command holding its operator.  Used by the need rules
(``replay.engine.need_evidence``: which command of a line names a file); pure, no I/O.

Not here: what a command does to a file (``replay.ingest.ops``, which reads a recorded call at
ingest with its own faster, line-at-a-time cut).
"""

from __future__ import annotations

import re

_HEREDOC = re.compile(r"(?<!<)<<(-?)[ \t]*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\2")
"""A heredoc operator (``<<WORD``, ``<<-'WORD'``; not a ``<<<`` here-string): its body is the
lines after its line up to the one holding WORD alone."""
_BODY = re.compile("\x00([0-9]+)\x00")


def simple_commands(command: str) -> list[str]:
    """The simple commands of a shell command line, as the shell cuts them: backslash-newline
    continuations joined, split at ``&&``, ``||``, ``;``, ``|`` and newlines outside quotes (a
    quoted string spanning lines stays in its command), and each heredoc's body kept with the
    command that holds its operator (a commit message written by ``git commit -F - <<EOF`` or
    ``-m "$(cat <<'EOF' …)"`` is the git command's text, not commands of its own; a script fed
    to ``python - <<EOF`` is the python command's). Unbalanced quotes run to the end."""
    return [part for part, _ in commands_with_bodies(command)]


def commands_with_bodies(command: str) -> list[tuple[str, str]]:
    """``simple_commands``, each with the text of its heredoc bodies alone ('' when none)."""
    lines = command.replace("\\\n", "").split("\n")
    bodies: list[str] = []
    kept: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        ops = list(_HEREDOC.finditer(line))
        for m in reversed(ops):  # markers in place of the operators, bodies in line order
            line = f"{line[:m.start()]}<<\x00{len(bodies) + ops.index(m)}\x00{line[m.end():]}"
        for m in ops:
            word, body = m.group(3), []
            while i < len(lines):
                i += 1
                if lines[i - 1].strip() == word:
                    break
                body.append(lines[i - 1])
            bodies.append("\n".join(body))
        kept.append(line)
    parts = _split_outside_quotes("\n".join(kept))
    if not bodies:
        return [(p, "") for p in parts]
    return [(_BODY.sub(lambda m: bodies[int(m.group(1))], p),
             "\n".join(bodies[int(i)] for i in _BODY.findall(p))) for p in parts]


def _split_outside_quotes(text: str) -> list[str]:
    """``text`` cut at ``&&``, ``||``, ``;``, ``|`` and newlines that are not quoted or
    escaped."""
    parts: list[str] = []
    start, quote, j, n = 0, "", 0, len(text)
    while j < n:
        c = text[j]
        if quote:
            if c == quote:
                quote = ""
            elif c == "\\" and quote == '"':
                j += 1
        elif c == "'" or c == '"':
            quote = c
        elif c == "\\":
            j += 1
        elif c in ";|\n" or c == "&" and text.startswith("&&", j):
            parts.append(text[start:j])
            j += 2 if text.startswith(("&&", "||"), j) else 1
            start = j
            continue
        j += 1
    parts.append(text[start:])
    return parts
