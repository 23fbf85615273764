"""How a shell line is read for the file a command works on (replay.ingest.ops): redirections,
quotes, pipes written without blanks, heredocs and continuations, a quote never closed and a
command over 64 KiB.

Not here: which operation a tool call or a command is, and the fast paths that classify a line
by its first name (tests/replay/ingest/test_ops.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.ingest.ops import classify, classify_shell, shell_reads_part


def test_a_redirection_is_not_the_file_a_command_works_on() -> None:
    """``wc -l < f`` reads f (it was recorded as a read of the path "<"); a redirection's
    operator or target is never taken for the file read or edited, written apart from the
    operator or against it (``2>/dev/null``, ``> out``, ``<<EOF``, ``a.py>out``)."""
    shell = [
        ("wc -l < src/a.py", ("read", "src/a.py")),
        ("wc -c<src/a.py", ("read", "src/a.py")),
        ("sed -n 1,5p < notes.txt", ("read", "notes.txt")),
        ("cat 0< a.py", ("read", "a.py")),
        ("cat 3< a.py", ("read", "")),  # another descriptor: not what cat reads
        ("cat 2>/dev/null a.py", ("read", "a.py")),
        ("cat 2> err.txt a.py", ("read", "a.py")),
        ("head -n 3 a.py > /tmp/o.txt", ("read", "a.py")),
        ("tail -f log.txt 2>&1", ("read", "log.txt")),
        ("sed -i 's/a/b/' src/x.py 2>/dev/null", ("edit", "src/x.py")),
        ("sed -i 's/a/b/' src/x.py &> /dev/null", ("edit", "src/x.py")),
        ("cat << 'EOF'\nhello\nEOF", ("read", "")),
        ("cat <<EOF\nhello\nEOF", ("read", "")),
        ("cat > f.py <<EOF\nx\nEOF", ("write", "f.py")),
        ("cat a.py>o.txt", ("write", "o.txt")),
    ]
    for command, want in shell:
        assert tuple(classify("Bash", {"command": command})) == want, command


_REDIRECTIONS = ["2>/dev/null", "2>&1", "> out.log", ">>out.log", "&>/dev/null", "2> err.txt",
                 "< in.txt", "<<<word", "1>&2"]


@given(st.sampled_from(["head -n 5 {}", "tail -20 {}", "nl -ba {}", "wc -l {}", "less {}",
                        "sed -n 2,9p {}", "sed -i s/x/y/ {}", "awk NR==1 {}"]),
       st.sampled_from(["src/app.py", "README.md", "/abs/x.ts"]),
       st.lists(st.sampled_from(_REDIRECTIONS), max_size=3), st.integers(0, 3))
def test_redirections_leave_the_file_operand(template: str, path: str, redirs: list[str],
                                              at: int) -> None:
    """A command with its file written as an operand classifies the same with redirections
    added before or after that operand."""
    words = template.format(path).split()
    at = min(max(at, 1), len(words))
    redirected = " ".join(words[:at] + redirs + words[at:])
    assert classify("Bash", {"command": redirected}) == classify("Bash", {"command": " ".join(words)})


def test_a_quoted_script_or_an_unclosed_quote_keeps_the_words() -> None:
    """A quoted script that spans lines stays in its command, and a quote never closed runs to
    the end of the line: the words are read with the quote closed there, unquoted (the path was
    the quoted word, quotes and all)."""
    script = 'bun -e "\nconst x = 1;\nconsole.log(x);\n"'
    shell = [
        (f'cat "/logs/a b.jsonl" | head -1 | {script}', ("read", "/logs/a b.jsonl")),
        ("head -5 'src/app.py' | python -c '\nimport sys\nprint(1)\n'", ("read", "src/app.py")),
        ('wc -l < "notes.txt" \\', ("read", "notes.txt")),
    ]
    for command, want in shell:
        assert tuple(classify("Bash", {"command": command})) == want, command


@given(st.sampled_from(["nl -ba {}", "cat {}", "head -n 5 {}", "sed -n 2,9p {}", "wc -l {}",
                        "grep -n x {}", "ls {}"]),
       st.sampled_from(["src/app.py", "README.md", "'a b.txt'"]),
       st.sampled_from(["head -3", "sed -n 1,3p", "wc -l", "grep 'a|b'"]))
def test_a_pipe_written_without_blanks_is_a_pipe(template: str, path: str, then: str) -> None:
    """``nl -ba a.py|sed -n 1,3p`` reads a.py and is piped, as with blanks around the pipe (the
    path was ``a.py|sed`` and the read taken for a whole one); a quoted ``|`` stays in its word."""
    first = template.format(path)
    spaced, tight = f"{first} | {then}", f"{first}|{then}"
    assert classify("Bash", {"command": tight}) == classify("Bash", {"command": spaced})
    assert shell_reads_part(tight) == shell_reads_part(spaced)


def test_a_quoted_pipe_stays_in_its_word() -> None:
    assert tuple(classify("Bash", {"command": 'cat "a|b.txt"'})) == ("read", "a|b.txt")
    assert tuple(classify("Bash", {"command": "cat 'x|y.md'|head"})) == ("read", "x|y.md")


@pytest.mark.parametrize(("command", "expected"), [
    ("cat 'my file.py'", ("read", "my file.py")),
    ('sed -n "1,20p" "src/a b.py"', ("read", "src/a b.py")),
    ("grep -rn \"def x\" .", ("search", "")),
    # a quote never closed runs to the end (replay.shell_line.closed): the '>' is in it
    ("echo 'unclosed > out.txt", ("exec", "")),
])
def test_commands_with_quotes_are_classified_on_their_words(command: str,
                                                            expected: tuple[str, str]) -> None:
    assert tuple(classify_shell(command)) == expected


def test_quotes_heredocs_and_continuations_are_read_as_the_shell_reads_them() -> None:
    """A separator or ``>`` inside quotes does not cut the command or write a file (a sed or awk
    script with ``;`` read no file; a piped script's ``s.length > 2`` was a write of
    ``s.length``), a heredoc's body holds no command, a continuation keeps the file in its
    command, and a quoted redirect target is read unquoted."""
    shell = [
        ("sed -n '40,50p;80,90p' django/forms/models.py", ("read", "django/forms/models.py")),
        ("awk '/^id/{a=1; b=0} {if(a && !b) print}' conf.toml", ("read", "conf.toml")),
        ('cat t.json | bun -e "\nconst n = s.length > 2;\n"', ("read", "t.json")),
        ("echo hi > 'a b.txt'", ("write", "a b.txt")),
        ('echo "x > y" ; cat a.py', ("read", "a.py")),
        ("echo start <<EOF\ncat a.py\nEOF", ("exec", "")),
        ("sed -n 1,5p \\\n  f.py", ("read", "f.py")),
    ]
    for command, want in shell:
        assert tuple(classify("Bash", {"command": command})) == want, command
    assert shell_reads_part("cat a.py \\\n | wc -l") and not shell_reads_part("cat 'a|b.py'")


def test_a_heredoc_operator_in_quotes_does_not_hide_the_next_lines() -> None:
    """``echo "<<EOF"`` opens no heredoc: the command on the next line is read."""
    assert tuple(classify_shell('echo "usage: x <<EOF"\ncat src/app.py')) == ("read",
                                                                            "src/app.py")
    assert tuple(classify_shell("echo start <<EOF\ncat a.py\nEOF")) == ("exec", "")
    # nor after a heredoc in a quoted substitution: its `)"` closes the string (it opened one)
    assert tuple(classify_shell("echo \"$(cat <<'E'\nx\nE\n)\" \"<<B\"\ncat a.py\nB")) == (
        "read", "a.py")


_QUOTED_OPERATORS = [">", "<", ">>", "2>", "<div>", "a > b", "<<<"]
"""Patterns and separators holding redirection operators, written quoted in a command."""


@pytest.mark.parametrize(("command", "want"), [
    ("awk -F'>' '{print $2}' page.html", ("read", "page.html")),
    ('awk -F">" "{print $1}" page.html', ("read", "page.html")),
    ("sed -i 's/a/b/' '>' src/app.py", ("edit", "src/app.py")),
    ("tee -a '>' notes.txt", ("write", "notes.txt")),
    ("cat '>' a.py", ("read", ">")),  # cat reads a file named '>' first
    ('grep -n "<" a.py > hits.txt', ("search", "")),
    ('cat "a b.py">out.txt', ("write", "out.txt")),
    ('wc -l < "a b.txt"', ("read", "a b.txt")),
    ("cat <<'EOF' > f.py\nx\nEOF", ("write", "f.py")),
])
def test_a_quoted_operator_is_no_redirection(command: str, want: tuple[str, str]) -> None:
    """Only an operator outside quotes redirects (the words were read unquoted, so ``-F'>'``
    took the awk program for its output file and ``'>' src/app.py`` swallowed the file edited),
    as a Claude Code Bash call and a Codex shell call alike; a quoted operand or target of an
    unquoted operator is read unquoted."""
    assert tuple(classify("Bash", {"command": command})) == want
    assert tuple(classify("shell", {"command": ["bash", "-lc", command]})) == want


@given(st.sampled_from(["grep -n {} {}", "sed -i {} {}", "awk -F{} 'NR==1' {}", "tee -a {} {}",
                        "head -n 3 {1} {0}", "sed -n {} {} 2>/dev/null"]),
       st.sampled_from(_QUOTED_OPERATORS), st.sampled_from(["'", '"']),
       st.sampled_from(["src/app.py", "README.md", "'a b.txt'"]))
def test_a_quoted_operator_reads_as_any_quoted_word(template: str, pattern: str, quote: str,
                                                    path: str) -> None:
    """A command with a quoted pattern classifies the same whether the pattern holds ``<`` or
    ``>`` or not."""
    plain = classify("Bash", {"command": template.format(f"{quote}x{quote}", path)})
    quoted = classify("Bash", {"command": template.format(quote + pattern + quote, path)})
    assert quoted == plain


_LONG = "PAD='" + "x " * 40_000 + "' "
"""A ``VAR=value`` word that makes a command longer than 64 KiB (the words of a longer one were
split at blanks, quotes and all: a quoted operator was read as one)."""


@pytest.mark.parametrize(("command", "want"), [
    ("cat '>' a.py 'x", ("read", ">")),
    ("awk -F'>' '{print $2}' page.html \"x y", ("read", "page.html")),
    ("echo \"a > b.txt", ("exec", "")),
    ('echo "a > b.txt" \\', ("exec", "")),
    (_LONG + "sed -i 's/a/b/' '>' src/app.py", ("edit", "src/app.py")),
    (_LONG + "awk -F'>' '{print $2}' page.html", ("read", "page.html")),
    (_LONG + "tee -a '>' notes.txt", ("write", "notes.txt")),
    (_LONG + "cat 'a b.py' > out.txt", ("write", "out.txt")),
], ids=lambda x: x[-40:] if isinstance(x, str) else None)
def test_a_quoted_operator_is_no_redirection_in_a_long_or_unclosed_command(
        command: str, want: tuple[str, str]) -> None:
    """A quote never closed (read as closed at the end, as the words are:
    ``replay.shell_line.closed``) and a command over 64 KiB have their quoted operators read as
    quoted too (both were read as if unquoted: ``'>' src/app.py`` took the file for the
    redirection's target, ``echo "a > b.txt`` wrote b.txt)."""
    assert tuple(classify("Bash", {"command": command})) == want


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["grep -n {} {}", "sed -i {} {}", "awk -F{} 'NR==1' {}", "tee -a {} {}",
                        "head -n 3 {1} {0}", "sed -n {} {} 2>/dev/null"]),
       st.sampled_from(_QUOTED_OPERATORS), st.sampled_from(["'", '"']),
       st.sampled_from(["src/app.py", "README.md", "'a b.txt'"]),
       st.sampled_from([("", " 'open"), ("", ' "open a'), ("", ' "x\\'), ("", " \\"),
                        (_LONG, ""), (_LONG, " 'open")]))
def test_a_quoted_operator_reads_as_any_quoted_word_in_any_command(
        template: str, pattern: str, quote: str, path: str, around: tuple[str, str]) -> None:
    """``test_a_quoted_operator_reads_as_any_quoted_word`` for a command over 64 KiB and for
    one that ends in a quote never closed or a backslash."""
    head, tail = around
    plain = classify("Bash", {"command": head + template.format(f"{quote}x{quote}", path) + tail})
    quoted = classify("Bash",
                      {"command": head + template.format(quote + pattern + quote, path) + tail})
    assert quoted == plain
