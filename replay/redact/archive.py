"""``redact``: log files → a shareable archive in their own format that re-ingests like them.

Per file: the original is parsed as ingest parses it (figures per block under every tokenizer
of the schema); each record is redacted (``replay.redact.leaves``) with draft markers; the
draft is parsed again to see which markers each block shows; each block's figures go into its
markers (the whole block's figures into one of them, zeros into the others: a marker shared by
blocks, the same text shown twice, gets the figures once); the file is written with exact
markers (``replay.ingest.redaction.format_exact``) and parsed a last time to check every block, request
and event reads as the original's (paths as their hashes, timestamps shifted).  Whatever
differs is an issue naming the file and the column.  A file where the secret check
(``replay.redact.secrets``) finds anything is not written.

Every format is supported (``replay.redact.payload.SUPPORTED``), one record a line, one
document, or an Inspect ``.eval`` zip of documents, as the file is: mini-swe-agent's action
blocks keep their fence around a stand-in command, a SWE-agent step's action keeps its tool name
(or becomes a stand-in command) so it still matches its history call, OpenHands' event kinds
and ATIF's compaction words are kept.  A marker that blocks of other sizes share is split by
block (``replay.redact.marker_sizes.split_by_block``: one more draft, read twice).  A file
whose redacted copy would not read as the same blocks is refused (an issue for that file,
which is not written), and so is a zip that breaks a rule of ``replay.redact.eval_zip``.

Not here: which leaves are redacted (``replay.redact.leaves``), the figures each marker carries
(``replay.redact.marker_sizes``), reading the copy back (``replay.redact.readback``).
"""

from __future__ import annotations

import os
import re
import secrets
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from replay.atomic_files import atomic_write_bytes, make_output_dir
from replay.errors import OutputError, ReplayError
from replay.ingest.discover import discover, relative_source, sources
from replay.ingest.input_files import Unreadable, as_utf8, read_input
from replay.ingest.parse_file import parse_file
from replay.ingest.parsers import detect_format
from replay.ingest.parsers.json_depth import ROOM, on_own_stack
from replay.ingest.parsers.source import SNIFF_BYTES, Issue
from replay.ingest.redaction import ExactSizes, format_exact
from replay.ingest.schema import TOKENIZERS
from replay.layout import cache_root
from replay.output_targets import Target, check_targets
from replay.redact.leaves import DRAFT, Redactor
from replay.redact.marker_sizes import (
    assign_figures,
    block_figures,
    probe_split,
    split_by_block,
    text_lengths,
)
from replay.redact.own_copies import not_a_copy, others
from replay.redact.payload import SUPPORTED, Unredactable, read_payload
from replay.redact.readback import block_texts, verify_copy
from replay.redact.secrets import scan
from replay.redact.time_shift import MAX_SHIFT_DAYS, ShiftOutOfRange


@dataclass(frozen=True, slots=True)
class RedactedFile:
    """What became of one input file."""

    source: str
    format: str
    written: bool
    archived_as: str
    """Where the copy is (or would be) in the archive: ``source`` with its folder and file
    names redacted (``replay.redact.leaves.Redactor.file_path``)."""
    n_runs: int
    n_blocks: int
    n_markers: int
    issues: tuple[Issue, ...]


@dataclass(frozen=True, slots=True)
class RedactReport:
    """What ``redact`` did: one entry per file found, and the paths it hashed."""

    out: Path
    files: tuple[RedactedFile, ...]
    n_paths: int
    n_stand_ins: int
    """Ids, enums and timestamps that could not be kept as written, each given a stand-in
    (``replay.redact.leaves.Redactor.ident``), and attachment hashes: distinct, in the copies
    written (a refused file's are in none)."""
    salt_given: bool
    """Whether the caller gave the salt; else a random one, used for this archive only and
    kept nowhere."""
    others: tuple[str, ...] = ()
    """The files under ``out`` this redact did not write (``own_copies.others``): an earlier
    archive's under another salt, the user's; read with the archive by whoever reads it."""

    @property
    def ok(self) -> bool:
        """Every file written, with no issue."""
        return all(f.written and not f.issues for f in self.files)

    @property
    def issues(self) -> list[Issue]:
        return [i for f in self.files for i in f.issues]


def redact(paths: list[Path], out: Path, *, shift_days: int = 0, salt: str | None = None,
           salt_file: Path | None = None,
           on_file: Callable[[str], None] | None = None) -> RedactReport:
    """Write a redacted copy of every log file under ``paths`` into ``out`` (relative paths
    mirrored, their names redacted); ``on_file`` is called with each file's source name when
    it is done.

    ``salt`` is mixed into every hash of a path or a name; None (the default): a random salt
    for this archive alone, written nowhere, so its hashes link to nothing outside it.  Give
    the same salt to make two archives' hashes agree (and keep it out of both).  A salt of
    nothing but white space is refused: its hashes are those of no salt, which anyone can
    recompute from a guessed path.  ``salt_file``: the salt kept in that file (``read_salt``:
    created with a random salt when missing), read once ``out`` is known to be a folder this
    command may write (a refused ``out`` leaves no new salt file behind).

    Raises:
        OutputError: ``out`` is an input, inside an input folder, or holds an input; or
            cannot be created; or ``salt_file`` is inside it, unreadable or empty, or is to be
            created where no output may go (inside an input folder, the project cache).
        ReplayError: ``shift_days`` moves every date out of range, ``salt`` is empty, or both
            ``salt`` and ``salt_file`` are given.
    """
    if salt is not None and salt_file is not None:
        raise ReplayError("--salt and --salt-file: give one")
    if salt is not None and not salt.strip():
        raise ReplayError("--salt: an empty salt (or one of white space) hashes as no salt: "
                          "anyone could recompute a path's hash; give a secret, or leave "
                          "--salt out for a random one")
    if abs(shift_days) > MAX_SHIFT_DAYS:
        raise ReplayError(f"--shift-days {shift_days}: moves every date outside the years "
                          f"1-9999 (at most ±{MAX_SHIFT_DAYS:,} days)")
    new_salt = salt_file is not None and not os.path.lexists(salt_file)
    check_targets([Target(out, "--out", folder=True),  # a salt file created is an output too
                   *([Target(salt_file, "--salt-file")] if salt_file and new_salt else [])],
                  inputs=paths, cache=cache_root(None, writing=False))
    if salt_file is not None:
        salt = read_salt(salt_file, out)
    found = discover(paths)
    out = make_output_dir(out)
    redactor = Redactor(salt=secrets.token_hex(SALT_BYTES) if salt is None else salt,
                        shift_days=shift_days)
    files, written = [], set()
    for (path, _root), rel in zip(found, archive_names(paths, found)):
        redactor.used.clear()
        try:  # with room for a file nested as deep as ingest reads (json_depth.MAX_DEPTH)
            files.append(on_own_stack(_one, (path, rel, out, redactor), ROOM))
        except ShiftOutOfRange as exc:
            files.append(RedactedFile(rel, "", False, "", 0, 0, 0,
                                      (Issue(str(path), 0, f"not written: {exc}"),)))
        if files[-1].written:  # a refused file's hashes and stand-ins are in no copy
            written |= redactor.used
        if on_file:
            on_file(rel)
    n_paths = sum(k.startswith("path\0") for k in written)
    copies = [f.archived_as for f in files if f.written]
    return RedactReport(out, tuple(files), n_paths, len(written) - n_paths, salt is not None,
                        tuple(others(out, copies)))


SALT_BYTES = 16


_SALT_LIMIT = ("of a salt file", "")
"""What bounds a salt file's read (4 KiB), as its refusal says it: a fixed limit, no variable
raises it (the line named ``CTXREPLAY_MAX_FILE_BYTES``, which does not)."""


def read_salt(path: Path, out: Path) -> str:
    """The salt kept in ``path`` (``--salt-file``), which must lie outside ``out``; a missing
    file is created holding a new random salt (readable by its owner only).

    Raises:
        OutputError: ``path`` is inside ``out``, or cannot be read or created.
    """
    if out.resolve() in path.resolve().parents:
        raise OutputError(f"{path}: --salt-file must lie outside --out (the salt would be "
                          "shared with the archive)")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        try:
            text = read_input(path, 4096, limit=_SALT_LIMIT).decode("utf-8").strip()
        except (Unreadable, UnicodeDecodeError) as why:
            raise OutputError(f"{path}: cannot read the salt ({why})") from None
        if not text:
            raise OutputError(f"{path}: the salt file is empty")
        return text
    except OSError as exc:
        raise OutputError(f"{path}: cannot create the salt file ({exc.strerror or exc})") from None
    salt = secrets.token_hex(SALT_BYTES)
    with os.fdopen(fd, "w") as f:
        f.write(salt + "\n")
    return salt


def archive_names(paths: list[Path], found: list[tuple[Path, Path]]) -> list[str]:
    """Where each discovered file's copy goes inside ``--out``: with one input folder, its path
    relative to it (``sources``); with several, under a folder named after its input
    (``a/x.jsonl``, ``b/sub/y.jsonl``; a second input of the same name gets ``-2``), so each
    input keeps its own layout and none is merged into another.  A file named directly goes at
    the top."""
    folders = [p for p in paths if p.is_dir()]
    if len(folders) <= 1:
        return sources(found)
    prefix: dict[Path, str] = {}
    for p in folders:
        base = p.resolve().name or "input"
        name, k = base, 1
        while name in prefix.values():
            k += 1
            name = f"{base}-{k}"
        prefix[p] = name
    names: list[str] = []
    for path, root in found:
        rel = relative_source(path, root)
        name = f"{prefix[root]}/{rel}" if root in prefix else rel
        base, k = name, 1
        while name in names:  # a file named directly whose name an input folder took
            k += 1
            name = f"{Path(base).stem}-{k}{Path(base).suffix}"
        names.append(name)
    return names


def _dest(out: Path, rel: str, redactor: Redactor) -> Path | None:
    """Where the copy of ``rel`` goes (its folder and file names redacted), or None when
    ``rel`` would leave ``out``."""
    parts = Path(rel).parts
    if not parts or Path(rel).is_absolute() or any(p in ("..", "") for p in parts):
        return None
    return out / redactor.file_path("/".join(parts))  # a symlink on the way: refused when
    # written (``replay.atomic_files``)


def _one(job: tuple[Path, str, Path, Redactor]) -> RedactedFile:
    path, rel, out, redactor = job
    where = str(path)
    dest = _dest(out, rel, redactor)
    archived = dest.relative_to(out).as_posix() if dest is not None else ""

    def failed(reason: str, fmt: str = "", line: int = 0) -> RedactedFile:
        return RedactedFile(rel, fmt, False, archived, 0, 0, 0, (Issue(where, line, reason),))

    if dest is None:
        return failed(f"cannot mirror its path {rel!r} inside --out; not written")
    if why := not_a_copy(dest):  # (redact replaces only the copies it wrote)
        return failed(f"not written: {dest}: {why}; redact replaces only its own copies: "
                      "move it, or name another --out")
    original = parse_file(path, rel=rel, tokenizers=TOKENIZERS)
    fmt = original.format
    if original.tables is None:
        why = "; ".join(i.reason for i in original.issues) or "no runs"
        return failed(f"not redacted: it does not ingest ({why})", fmt)
    if fmt not in SUPPORTED:
        return failed(f"not redacted: {fmt} logs are not supported by redact yet (supported: "
                      f"{', '.join(SUPPORTED)})", fmt)
    try:  # (a UTF-16 or UTF-32 log is read as its text, as ingest reads it: written as UTF-8)
        data, _, _ = as_utf8(read_input(path).removeprefix(b"\xef\xbb\xbf"))
    except Unreadable as why:
        return failed(str(why), fmt)
    try:
        payload = read_payload(data, fmt, path.suffix, redactor)
    except Unredactable as why:
        return failed(str(why), fmt, why.line)
    messages = original.tables.messages
    originals = messages["text"].to_pylist()
    want = block_figures(messages)

    def drafted() -> tuple[list[str], list[str] | None]:
        texts = payload.render(redactor)
        return texts, block_texts(path, rel, fmt, payload.pack(texts))

    redactor.split = {}
    lines, draft_texts = drafted()
    if draft_texts is None or len(draft_texts) != messages.num_rows:
        return failed(f"not redacted: the redacted copy reads as "
                      f"{0 if draft_texts is None else len(draft_texts)} blocks, the original "
                      f"as {messages.num_rows}", fmt)
    figures, unsized, shared = assign_figures(draft_texts, originals, want,
                                              text_lengths(redactor.occurrences, {}))
    if shared:  # markers shared by blocks of other sizes: split them by block, when it helps
        lines, draft_texts, figures, unsized = _split(
            drafted, redactor, (lines, draft_texts, figures, unsized), shared, originals, want)
    idents: dict[str, int] = {}

    def final_marker(m: re.Match[str]) -> str:
        ident = idents.setdefault(m.group(1), len(idents) + 1)
        return format_exact(ident, figures.get(m.group(1)))

    texts = [DRAFT.sub(final_marker, line) for line in lines]
    final = payload.pack(texts)
    issues = [Issue(where, 0, f"{n} blocks carry no marker and read with other sizes than the "
                              f"original ({why})") for why, n in unsized.items()]
    if fmt != detect_format(dest.name, final[:SNIFF_BYTES]):
        issues.append(Issue(where, 0, f"the redacted copy is not recognised as {fmt}"))
    issues += verify_copy(path, rel, fmt, final, original, redactor)
    if found := scan(payload.plain(texts)) or scan(archived.encode("utf-8", "surrogatepass")):
        return RedactedFile(rel, fmt, False, archived, 0, 0, 0, (*issues, Issue(
            where, 0, f"not written: the redacted copy still holds a secret-like string "
                      f"({', '.join(found)})")))
    try:
        atomic_write_bytes(dest, final, within=out)
    except OutputError as exc:  # a symlink inside --out: never followed
        return RedactedFile(rel, fmt, False, archived, 0, 0, 0, (*issues, Issue(
            where, 0, f"not written: {exc}")))
    except OSError as exc:  # a full disk: this file is not written (no partial copy is left)
        return RedactedFile(rel, fmt, False, archived, 0, 0, 0, (*issues, Issue(
            where, 0, f"not written: {exc.strerror or exc} (no partial copy left)")))
    return RedactedFile(rel, fmt, True, archived, original.tables.runs.num_rows,
                        messages.num_rows,
                        sum(1 for v in figures.values() if v is not None), tuple(issues))


_Drafted = tuple[list[str], list[str], dict[str, ExactSizes | None], Counter[str]]


def _split(drafted: Callable[[], tuple[list[str], list[str] | None]], redactor: Redactor,
           first: _Drafted, shared: list[int], originals: list[str],
           want: list[ExactSizes]) -> _Drafted:
    """The draft again with the markers of the ``shared`` blocks split by block
    (``replay.redact.marker_sizes.split_by_block``), when its copy reads as the same blocks
    and fewer blocks lack their figures; else ``first``."""
    keys = {k for b in shared for k in DRAFT.findall(first[1][b])}
    redactor.split = probe = probe_split(redactor.occurrences, redactor.places,
                                         redactor.units, keys)
    _, probe_texts = drafted()
    if probe_texts is None or len(probe_texts) != len(originals):
        redactor.split = {}
        return first
    redactor.split = split_by_block(redactor.occurrences, probe, probe_texts, originals)
    lines, texts = drafted()
    if texts is None or len(texts) != len(originals):
        redactor.split = {}
        return first
    figures, unsized, still = assign_figures(
        texts, originals, want, text_lengths(redactor.occurrences, redactor.split))
    if len(still) >= len(shared):
        redactor.split = {}
        return first
    return lines, texts, figures, unsized
