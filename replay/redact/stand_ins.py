"""Stand-ins for what an agent ran: a shell line, a SWE-agent action, a mini-swe-agent answer's
action block, a patch — each redacted to a marker and the same operation on the hashed path, so
a redacted copy still parses to the same kinds of calls (``replay.ingest.ops`` classifies them).

Each takes how a path is hashed and how a text becomes a marker (``replay.redact.leaves.Redactor``
gives its own), so the names stay the archive's.

Not here: which leaves are redacted (``replay.redact.leaves``).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from replay.ingest.ops import PATCH_FILE, classify_shell
from replay.ingest.parsers.mini_swe_agent import action_blocks

EDITOR_COMMANDS = frozenset({"view", "create", "str_replace", "insert", "undo_edit", "edit",
                             "write", "append"})
"""Editor sub-commands: kept as written (an enum, no data)."""
_VERB = {"read": "cat", "write": "tee", "edit": "patch", "list": "ls", "search": "grep",
         "exec": "run"}
"""``classify_shell``'s operation → the command its stand-in names."""

Text = Callable[[str], str]
"""A text → its marker."""


def command_stand_in(line: str, path_hash: Text, text: Text) -> str:
    """A shell line naming the same operation on the hashed path, with a marker."""
    if not line.strip():
        return line
    op, path = classify_shell(line)
    verb = _VERB.get(op, "run")
    target = f" {path_hash(path)}" if path else ""
    return f"echo {text(line)}; {verb}{target}"


def swe_action_stand_in(action: str, tools: frozenset[str], path_hash: Text, text: Text,
               shell: Text) -> str:
    """A SWE-agent step's action: an editor call keeps its sub-command and hashed path, a
    call of a named tool keeps the name (the history call it matches holds the rest), any
    other command becomes a stand-in naming the same operation (``shell``)."""
    words = action.split()
    if not words:
        return action
    if words[0] == "str_replace_editor" and len(words) >= 3 and words[1] in EDITOR_COMMANDS:
        return f'{words[0]} {words[1]} {path_hash(words[2])} --ctxreplay "{text(action)}"'
    if words[0] in tools and words[0] != "bash":
        return f"{words[0]} {text(action)}"
    return shell(action)


def answer_stand_in(answer: str, fenced: re.Pattern[str], text: Text, shell: Text) -> str:
    """A mini-swe-agent answer: its thought as a marker, then as many action blocks as it
    had, each command a stand-in (``shell``; one block: the call the harness ran)."""
    found = action_blocks(fenced, answer)
    if len(found) != 1:  # no call: the whole text is one block, the fences stay empty
        return "\n".join([text(answer), *["```bash\nrun\n```"] * len(found)])
    thought = (answer[:found[0].start()] + answer[found[0].end():]).strip()
    line = shell(found[0].group(1).strip())
    return "\n".join([text(thought), f"```bash\n{line}\n```"]) if thought \
        else f"```bash\n{line}\n```"


def patch_stand_in(text_of_patch: str, path_hash: Text, text: Text) -> str:
    """A patch with only its file lines (paths hashed) and a marker."""
    lines = [f"*** {action} File: {path_hash(path.strip())}"
             for action, path in PATCH_FILE.findall(text_of_patch)]
    return "\n".join(["*** Begin Patch", *lines, text(text_of_patch), "*** End Patch"])
