"""Fixtures for the database tests: real LeanDojo Benchmark 4 records, replicated under other
repository urls where a test needs several repositories."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from lean_dojo_v2.data import DatasetDir, PremiseFile, Theorem, sample_dataset_path, write_dataset
from lean_dojo_v2.database import DynamicDatabase

SAMPLE_URL = "https://github.com/leanprover-community/mathlib4"
SAMPLE_COMMIT = "29dcec074de168ac2bf835a77ef68bbe069194c5"


def record_key(d: dict[str, Any]) -> tuple:
    return (d["url"], d["commit"], d["file_path"], d["full_name"], tuple(d["start"]))


@pytest.fixture(scope="session")
def records(b4_records_path: Path) -> list[dict[str, Any]]:
    return json.loads(b4_records_path.read_text())


@pytest.fixture(scope="session")
def sample_corpus() -> list[PremiseFile]:
    return list(DatasetDir(sample_dataset_path()).corpus_files())


@pytest.fixture
def db(tmp_path: Path):
    with DynamicDatabase(tmp_path / "db.sqlite") as database:
        yield database


def replicate(
    records: Sequence[dict[str, Any]],
    url: str,
    commit: str,
    copies: int = 1,
    tag: str = "",
) -> list[dict[str, Any]]:
    """The real records under another repository (url, commit); with ``copies`` > 1 each copy gets
    its own file path and name (``_c<k>``) so theorems stay distinct."""
    out = []
    for k in range(copies):
        for r in records:
            d = dict(r, url=url, commit=commit)
            if copies > 1 or tag:
                suffix = f"{tag}_c{k}"
                d["file_path"] = r["file_path"].replace(".lean", f"{suffix}.lean")
                d["full_name"] = f"{r['full_name']}{suffix}"
            out.append(d)
    return out


@pytest.fixture
def make_dataset(tmp_path: Path, sample_corpus: list[PremiseFile]) -> Callable[..., Path]:
    counter = iter(range(10_000))

    def make(
        recs: Sequence[dict[str, Any]],
        *,
        corpus: Sequence[PremiseFile] | None = None,
        traced: Sequence[str] | None = None,
        metadata: dict[str, Any] | None = None,
        name: str | None = None,
    ) -> Path:
        dst = tmp_path / (name or f"dataset{next(counter)}")
        theorems = [Theorem.from_dict(r) for r in recs]
        n = len(theorems)
        splits = {"train": theorems[: n - n // 5], "val": theorems[n - n // 5 : n - n // 10]}
        splits["test"] = theorems[n - n // 10 :]
        meta = metadata
        if meta is None and recs:
            meta = {"from_repo": {"url": recs[0]["url"], "commit": recs[0]["commit"]}}
        write_dataset(
            dst,
            {"random": splits},
            sample_corpus if corpus is None else corpus,
            sorted({t.file_path for t in theorems}) if traced is None else traced,
            meta or {},
        )
        return dst

    return make
