"""Nothing is lost or silently skipped: incomplete datasets, duplicated theorems, unreadable input.

Uses the bundled real sample (``sample_dataset_path()``), copied into ``tmp_path`` before damage.
"""

from __future__ import annotations

import pickle
import shutil

import pytest

from lean_dojo_v2.data import DatasetDir, read_dataset, sample_dataset_path
from lean_dojo_v2.data.corpus import theorem_files_missing_from_corpus
from lean_dojo_v2.data.dataset import missing_dataset_parts, require_complete_dataset
from lean_dojo_v2.errors import (
    DatasetNotFoundError,
    IncompleteDatasetError,
    LeanDojoError,
)


@pytest.fixture
def sample_copy(tmp_path):
    dst = tmp_path / "ds"
    shutil.copytree(sample_dataset_path(), dst)
    return dst


def test_missing_dataset_parts_names_absent_split_and_corpus(sample_copy):
    assert missing_dataset_parts(sample_copy) == []
    require_complete_dataset(sample_copy)
    (sample_copy / "random" / "val.json").unlink()
    (sample_copy / "corpus.jsonl").unlink()
    assert missing_dataset_parts(sample_copy) == ["random/val.json", "corpus.jsonl"]
    with pytest.raises(IncompleteDatasetError) as info:
        require_complete_dataset(sample_copy)
    err = info.value
    assert isinstance(err, LeanDojoError) and isinstance(err, FileNotFoundError)
    assert err.missing == ["random/val.json", "corpus.jsonl"]
    assert "random/val.json" in str(err) and "corpus.jsonl" in str(err) and "--partial" in str(err)
    require_complete_dataset(sample_copy, partial=True)
    assert str(pickle.loads(pickle.dumps(err))) == str(err)


def test_missing_dataset_parts_counts_a_directory_corpus_as_missing(sample_copy):
    (sample_copy / "corpus.jsonl").unlink()
    (sample_copy / "corpus.jsonl").mkdir()
    with pytest.raises(IncompleteDatasetError, match=r"corpus.jsonl \(not a file\)"):
        require_complete_dataset(sample_copy)
    with pytest.raises(DatasetNotFoundError):
        missing_dataset_parts(sample_copy / "nowhere")


def test_dataset_reader_refuses_dataset_missing_a_split_file(sample_copy):
    (sample_copy / "random" / "val.json").unlink()
    with pytest.raises(IncompleteDatasetError, match="random/val.json"):
        list(DatasetDir(sample_copy).all_theorems())
    with pytest.raises(IncompleteDatasetError, match="random/val.json"):
        read_dataset(sample_copy)
    partial = list(DatasetDir(sample_copy, partial=True).all_theorems())
    assert 0 < len(partial) < 100


def test_dataset_reader_refuses_dataset_missing_its_corpus(sample_copy):
    (sample_copy / "corpus.jsonl").unlink()
    with pytest.raises(IncompleteDatasetError, match="corpus.jsonl"):
        DatasetDir(sample_copy).load()
    assert DatasetDir(sample_copy, partial=True).load().corpus == []


def test_theorem_files_missing_from_corpus_lists_each_file_once():
    d = DatasetDir(sample_dataset_path())
    corpus = d.corpus()
    paths = [f.path for f in corpus.files]
    assert theorem_files_missing_from_corpus(["B.lean", "A.lean", "B.lean"], corpus) == [
        "A.lean",
        "B.lean",
    ]
    assert theorem_files_missing_from_corpus(["A.lean", paths[0]], [paths[0]]) == ["A.lean"]
    assert theorem_files_missing_from_corpus(["A.lean", paths[0]], corpus.files) == ["A.lean"]
