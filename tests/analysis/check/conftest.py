"""The ``replay check`` tests' fixtures: the checked run ingested once, its corpus, the two
policies, their measured baseline (each built once for the package), and the baseline and
policies as files in a fresh folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from analysis.check.baseline import Baseline, measure, write_baseline
from replay.corpus import Corpus, open_corpus
from replay.policy import Policy, load_policy, policy_to_dict
from tests.analysis.check.check_helpers import LOG, _reserve_exact


@pytest.fixture(scope="package")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run ingested once into a dataset directory (the CLI takes it as PATH)."""
    out = tmp_path_factory.mktemp("check") / "dataset"
    open_corpus([LOG], cache_dir=out)
    return out


@pytest.fixture(scope="package")
def corpus(store: Path) -> Corpus:
    return open_corpus([store])


@pytest.fixture(scope="package")
def policies() -> list[Policy]:
    return [_reserve_exact(), load_policy("two-tier-corrected")]


@pytest.fixture(scope="package")
def baseline(corpus: Corpus, policies: list[Policy]) -> Baseline:
    return measure(corpus, policies)


@pytest.fixture
def files(tmp_path: Path, baseline: Baseline, policies: list[Policy]) -> dict[str, Path]:
    """A baseline file and the policies as YAML files, in a fresh folder."""
    out = {"baseline": tmp_path / "baseline.json"}
    write_baseline(out["baseline"], baseline)
    for p in policies:
        out[p.name] = tmp_path / f"{p.name}.yaml"
        out[p.name].write_text(yaml.safe_dump(policy_to_dict(p)))
    return out
