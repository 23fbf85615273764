"""The fuzz tests' fixtures: the seeds built once per session, and a folder to write inputs to."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fuzz.seeds import SEEDS_AT_IMPORT, Seed, build_seeds


@pytest.fixture(scope="session")
def seeds(samples: Path) -> dict[str, Seed]:
    built = build_seeds(samples)
    assert tuple(built) == SEEDS_AT_IMPORT
    return built


@pytest.fixture(scope="session")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")
