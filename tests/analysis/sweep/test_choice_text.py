"""chosen.yaml's comment block: every value a grid or a policy file gave it is escaped, so no
line break of any kind ends a comment and starts a key of the policy."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.sweep.choice import chosen_yaml
from analysis.sweep.grid import load_spec, settings
from replay.policy import load_policy, policy_to_dict
from tests.analysis.sweep.small_grid import BASE


@pytest.mark.parametrize("sep", ["\n", "\r", "\u2028", "\u2029", "\x85"])
def test_a_name_with_a_line_break_does_not_inject_a_key_into_chosen_yaml(
        tmp_path: Path, sep: str) -> None:
    """A swept name holding U+2028 (a line break to YAML, kept raw by the old comment escape)
    ended the comment and made its rest a key: ``provider: anthropic`` made the file
    unreadable (the key given twice); a key the policy does not write would have changed it."""
    name = f"x{sep}provider: anthropic{sep}\x1b[2J\u202e"
    grid = tmp_path / "g.yaml"
    grid.write_text('grid:\n  name: ["' + name.encode("unicode_escape").decode() + '"]\n')
    (setting,) = settings(load_policy(BASE), load_spec(grid))
    text = chosen_yaml((setting,), setting.id)
    head = text[:text.index("\nname:")]
    assert not any(c in head for c in "\r\u2028\u2029\x85\x1b\u202e")
    assert head.count("\n") == 3  # its three comment lines, each one line
    path = tmp_path / "chosen.yaml"
    path.write_text(text)
    back = load_policy(path)
    assert back.name == f"{name}-{setting.id[:8]}"
    assert policy_to_dict(back) == {**policy_to_dict(setting.policy), "name": back.name}
