"""``replay redact``: a shareable archive of log files, in their own format, that re-ingests
with the original's figures (``replay.redact.archive``); which leaves are kept, hashed or
replaced (``replay.redact.leaves``); the secret check on what is written
(``replay.redact.secrets``)."""

from replay.redact.archive import RedactedFile, RedactReport, read_salt, redact
from replay.redact.payload import SUPPORTED

__all__ = ["SUPPORTED", "RedactReport", "RedactedFile", "read_salt", "redact"]
