"""Hand-built runs that replay through the real engine, each shaped like one case of DESIGN §6.

A ``RunBuilder`` writes store rows directly (``replay.ingest.schema`` dataclasses), with
token counts chosen by the test, so the answer is known by construction:

- ``write_heavy_run`` — large write/edit arguments, small results: under the
  original two-tier settings tier one never shrinks them, the context reaches
  the summary trigger, and the 24 messages kept verbatim hold ~12 writes, so it
  fires again soon after (the 15-summaries-in-236-calls case);
- ``late_big_output_run`` — the context grows to just under the original's
  summary trigger, then one test prints a 24,000-token output (the 32,769-token
  rejection case: an after-send check cannot stop it);
- ``reread_after_trim_run`` — a file is read, five more files of 3,000 tokens
  follow (more than the original's 12,000-token protected range), and the first
  file is read again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from replay.corpus import Corpus
from replay.ingest.schema import Message, Request, Run, to_table


def _text(tokens: int) -> str:
    """Filler whose o200k count is close to ``tokens`` (4 characters a token)."""
    return "abc " * tokens


@dataclass
class RunBuilder:
    """Appends messages and requests of one run; ``tokens_o200k`` is set from the caller."""

    run_id: str
    messages: list[Message] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    n_calls: int = 0

    @property
    def next_msg(self) -> int:
        """Index of the next message."""
        return self.messages[-1].msg + 1 if self.messages else 0

    def block(self, msg: int, block: int, role: str, kind: str, tokens: int, *, call_id: str = "",
              tool: str = "", op: str = "", path: str = "", text: str | None = None,
              is_error: bool = False) -> None:
        """Append one content block."""
        body = text if text is not None else _text(tokens)
        self.messages.append(Message(
            run_id=self.run_id, msg=msg, block=block, role=role, kind=kind, call_id=call_id,
            tool=tool, op=op, path=path, text=body, n_bytes=len(body.encode()),
            n_chars=len(body), n_lines=body.count("\n") + 1, tokens_o200k=tokens,
            tokens_cl100k=None, is_error=is_error, is_harness_summary=False, ts="", agent=""))

    def user(self, tokens: int) -> None:
        """A user text message."""
        self.block(self.next_msg, 0, "user", "text", tokens)

    def call(self, tool: str, op: str, path: str, *, args_tokens: int, result_tokens: int,
             is_error: bool = False, args_text: str | None = None) -> None:
        """One request: an assistant tool call, then its result in a tool message."""
        cid = f"c{self.n_calls}"
        self.n_calls += 1
        m = self.next_msg
        self.requests.append(Request(
            run_id=self.run_id, request=len(self.requests), output_msg=m, input_tokens=None,
            cache_read_tokens=None, cache_write_tokens=None, output_tokens=50,
            reasoning_tokens=None, model="m", ts=""))
        self.block(m, 0, "assistant", "tool_call", args_tokens, call_id=cid, tool=tool, op=op,
                   path=path, text=args_text)
        self.block(m + 1, 0, "tool", "tool_result", result_tokens, call_id=cid, tool=tool, op=op,
                   path=path, is_error=is_error)

    def run_row(self) -> Run:
        """The run's row for the ``runs`` table."""
        return Run(run_id=self.run_id, format="hand", source=f"{self.run_id}.jsonl", model="m",
                   harness="hand", parent_run_id="", agent="",
                   n_messages=self.next_msg, n_blocks=len(self.messages),
                   n_requests=len(self.requests), n_tool_calls=self.n_calls,
                   n_tool_results=self.n_calls, n_orphan_results=0, n_harness_compactions=0,
                   recorded_input_tokens=None, recorded_output_tokens=None, sha256="0" * 64)


def corpus_of(*builders: RunBuilder) -> Corpus:
    """A corpus holding the given runs, as ``open_corpus`` would return it."""
    return Corpus.from_tables(to_table([b.run_row() for b in builders], "runs"),
                  to_table([m for b in builders for m in b.messages], "messages"),
                  to_table([r for b in builders for r in b.requests], "requests"))


def write_heavy_run(n_steps: int = 150, write_tokens: int = 3000) -> RunBuilder:
    """A task, then ``n_steps`` edits of 3,000-token arguments with 40-token results."""
    b = RunBuilder("write-heavy")
    b.user(200)
    for i in range(n_steps):
        b.call("Edit", "edit", f"src/m{i % 10}.py", args_tokens=write_tokens, result_tokens=40)
    return b


def late_big_output_run() -> RunBuilder:
    """27 edits (~83k true tokens, under the 80k-estimate trigger), then a 24k-token output."""
    b = RunBuilder("late-big-output")
    b.user(200)
    for i in range(27):
        b.call("Edit", "edit", f"src/m{i % 10}.py", args_tokens=3000, result_tokens=40)
    b.call("Bash", "exec", "", args_tokens=30, result_tokens=24_000)
    for _ in range(3):
        b.call("Bash", "exec", "", args_tokens=30, result_tokens=100)
    return b


def reread_after_trim_run() -> RunBuilder:
    """Read a.py, read five other 3,000-token files, read a.py again."""
    b = RunBuilder("reread-after-trim")
    b.user(200)
    b.call("Read", "read", "a.py", args_tokens=20, result_tokens=3000,
           args_text='{"file_path": "a.py"}')
    for name in ("b.py", "c.py", "d.py", "e.py", "f.py"):
        b.call("Read", "read", name, args_tokens=20, result_tokens=3000,
               args_text=f'{{"file_path": "{name}"}}')
    b.call("Read", "read", "a.py", args_tokens=20, result_tokens=3000,
           args_text='{"file_path": "a.py"}')
    b.call("Bash", "exec", "", args_tokens=20, result_tokens=50)
    return b
