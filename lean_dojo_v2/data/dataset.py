"""Reader and writer for datasets in the LeanDojo Benchmark layout::

    <dst>/
      random/{train,val,test}.json
      novel_premises/{train,val,test}.json
      corpus.jsonl          one premise file per line, imports before importers
      traced_files.jsonl    {"traced_file_path": ...} per line
      metadata.json

Files are written with LeanDojo's serialisation (see :mod:`.jsonio`). A directory is written into
a temporary sibling and renamed into place, so a failure never leaves a half-written dataset, and
only a directory this library wrote is replaced (see :mod:`.output_dir`).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import (
    DataFormatError,
    DatasetNotFoundError,
    IncompleteDatasetError,
)
from .corpus import Corpus
from .jsonio import (
    dumps,
    gc_paused,
    iter_jsonl,
    iter_jsonl_records,
    read_json,
    read_json_list,
    write_json,
    write_json_list,
    write_jsonl,
)
from .model import PremiseFile, Theorem
from .output_dir import check_output_dir, staged_output_dir
from .splits import (
    SPLIT_NAMES,
    STRATEGIES,
    SplitSpec,
    TheoremRegistry,
    check_unique_theorems,
    split_theorems,
)

CORPUS_FILE = "corpus.jsonl"
TRACED_FILES_FILE = "traced_files.jsonl"
METADATA_FILE = "metadata.json"
DATASET_NAME = "lean-dojo-v2 dataset"


def dataset_parts() -> list[str]:
    """The files a complete dataset holds: every split file of both strategies and the corpus."""
    return [f"{s}/{n}.json" for s in STRATEGIES for n in SPLIT_NAMES] + [CORPUS_FILE]


def missing_dataset_parts(path: str | Path) -> list[str]:
    """The parts of the dataset directory ``path`` that are absent (or not regular files), as
    relative paths such as ``random/val.json`` or ``corpus.jsonl``; empty when it is complete.

    Raises :class:`DatasetNotFoundError` when ``path`` is not a directory at all.
    """
    path = Path(path)
    if not path.is_dir():
        raise DatasetNotFoundError(f"no dataset directory at {path}")
    return [part for part in dataset_parts() if not (path / part).is_file()]


def require_complete_dataset(path: str | Path, *, partial: bool = False) -> None:
    """Raise :class:`IncompleteDatasetError` naming what is missing, unless the dataset at
    ``path`` is complete or the caller accepts a partial one (``partial=True``)."""
    missing = missing_dataset_parts(path)
    if missing and not partial:
        not_files = [m for m in missing if (Path(path) / m).exists()]
        raise IncompleteDatasetError(path, missing, not_files)


def _traced_file_from_dict(d: object) -> str:
    if not isinstance(d, Mapping) or not isinstance(d.get("traced_file_path"), str):
        raise DataFormatError('expected {"traced_file_path": <path>}', field="traced_file_path")
    return d["traced_file_path"]


def read_theorems(path: str | Path) -> list[Theorem]:
    """Theorems of one split file (a JSON list of LeanDojo theorem records).

    A theorem that appears twice in the file is a :class:`DuplicateTheoremError`.
    """
    theorems = read_json_list(path, Theorem.from_dict)
    check_unique_theorems(theorems, path)
    return theorems


def write_theorems(path: str | Path, theorems: Iterable[Theorem]) -> int:
    """Write a split file atomically; returns how many theorems were written."""
    return write_json_list(path, theorems, Theorem.to_dict)


class _EncodedTheorems:
    """JSON text of theorems written more than once (each strategy writes every theorem), encoded
    once. Keyed by identity; the theorem is kept with its text so an id cannot be reused."""

    def __init__(self) -> None:
        self._cache: dict[int, tuple[Theorem, str]] = {}

    def __call__(self, theorem: Theorem) -> str:
        hit = self._cache.get(id(theorem))
        if hit is not None and hit[0] is theorem:
            return hit[1]
        text = dumps(theorem.to_dict())
        self._cache[id(theorem)] = (theorem, text)
        return text


@dataclass
class Dataset:
    """A LeanDojo-layout dataset in memory. ``splits[strategy][split]`` is a list of theorems."""

    splits: dict[str, dict[str, list[Theorem]]]
    corpus: list[PremiseFile] = field(default_factory=list)
    traced_files: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    def theorems(self, strategy: str = "random") -> list[Theorem]:
        """Every theorem once: the union of one strategy's train, val and test."""
        return [t for name in SPLIT_NAMES for t in self.splits.get(strategy, {}).get(name, [])]

    def get_corpus(self) -> Corpus:
        return Corpus(self.corpus)


class DatasetDir:
    """Lazy access to a dataset directory: reads only the files asked for.

    Readers of a whole dataset (:meth:`all_theorems`, :meth:`load`) refuse one that lacks a split
    file or ``corpus.jsonl`` (:class:`IncompleteDatasetError`) unless ``partial`` is true; they
    refuse a theorem that appears twice within one strategy's splits
    (:class:`DuplicateTheoremError`). Each theorem appears once per strategy.
    """

    def __init__(self, path: str | Path, *, partial: bool = False) -> None:
        self.path = Path(path)
        self.partial = partial
        if not self.path.is_dir():
            raise DatasetNotFoundError(f"no dataset directory at {self.path}")
        if not any((self.path / s).is_dir() for s in STRATEGIES):
            raise DatasetNotFoundError(
                f"{self.path} is not a LeanDojo dataset: it has neither random/ nor novel_premises/"
            )

    def split_path(self, strategy: str = "random", split: str = "train") -> Path:
        if strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
        if split not in SPLIT_NAMES:
            raise ValueError(f"split must be one of {SPLIT_NAMES}, got {split!r}")
        return self.path / strategy / f"{split}.json"

    def theorems(self, strategy: str = "random", split: str = "train") -> list[Theorem]:
        return read_theorems(self.split_path(strategy, split))

    def require_complete(self) -> None:
        """Raise :class:`IncompleteDatasetError` if a part is missing (unless ``partial``)."""
        require_complete_dataset(self.path, partial=self.partial)

    def all_theorems(self, strategy: str = "random") -> Iterator[Theorem]:
        """Every theorem once (the union of one strategy's splits), one split file at a time."""
        self.split_path(strategy)
        self.require_complete()
        return self._strategy_theorems(strategy)

    def _strategy_theorems(self, strategy: str) -> Iterator[Theorem]:
        for _, theorems in self._read_splits(strategy):
            yield from theorems

    def strategy_splits(self, strategy: str = "random") -> dict[str, list[Theorem]]:
        """The split files of one strategy that exist, by split name (no completeness check; a
        theorem in two of them is a :class:`DuplicateTheoremError`)."""
        return dict(self._read_splits(strategy))

    def _read_splits(self, strategy: str) -> Iterator[tuple[str, list[Theorem]]]:
        """Existing split files of ``strategy``, one at a time, checked for duplicates across."""
        registry = TheoremRegistry()
        for split in SPLIT_NAMES:
            path = self.split_path(strategy, split)
            if path.exists():
                # One registry checks within each file and across the strategy's files.
                theorems = read_json_list(path, Theorem.from_dict)
                registry.add(theorems, path)
                yield split, theorems

    def corpus_files(self) -> Iterator[PremiseFile]:
        path = self.path / CORPUS_FILE
        if not path.exists():
            return iter(())
        return iter_jsonl(path, PremiseFile.from_dict)

    def corpus(self) -> Corpus:
        return Corpus(self.corpus_files())

    def corpus_paths(self) -> list[str]:
        """The file paths listed in ``corpus.jsonl`` (premises are not parsed); [] without one."""
        path = self.path / CORPUS_FILE
        if not path.exists():
            return []
        paths = []
        for i, raw in iter_jsonl_records(path):
            if not isinstance(raw, Mapping) or not isinstance(raw.get("path"), str):
                raise DataFormatError("expected an object with a text 'path'", file=path, record=i)
            paths.append(raw["path"])
        return paths

    def traced_files(self) -> list[str]:
        path = self.path / TRACED_FILES_FILE
        return list(iter_jsonl(path, _traced_file_from_dict)) if path.exists() else []

    def metadata(self) -> dict[str, Any]:
        path = self.path / METADATA_FILE
        if not path.exists():
            return {}
        data = read_json(path)
        if not isinstance(data, dict):
            raise DataFormatError("expected a JSON object", file=path)
        return data

    def load(self) -> Dataset:
        self.require_complete()
        splits = {
            strategy: self.strategy_splits(strategy)
            for strategy in STRATEGIES
            if (self.path / strategy).is_dir()
        }
        return Dataset(splits, list(self.corpus_files()), self.traced_files(), self.metadata())


def read_dataset(path: str | Path, *, partial: bool = False) -> Dataset:
    """Read a whole dataset directory into memory (``partial``: see :class:`DatasetDir`)."""
    return DatasetDir(path, partial=partial).load()


def load_theorems(
    path: str | Path, strategy: str = "random", *, partial: bool = False
) -> list[Theorem]:
    """Theorems from a split file, or every theorem of a dataset directory (one strategy's splits;
    ``partial``: see :class:`DatasetDir`)."""
    path = Path(path)
    if path.is_file():
        return read_theorems(path)
    if path.is_dir():
        return list(DatasetDir(path, partial=partial).all_theorems(strategy))
    raise DatasetNotFoundError(f"no split file or dataset directory at {path}")


def default_metadata(**extra: object) -> dict[str, object]:
    """``metadata.json`` of a dataset this library writes: LeanDojo v1's keys (``dataset_name``,
    ``creation_time``, ``leandojo_version``: the writer's version, as v1 and upstream LeanDojo-v2
    write it; ``from_repo`` comes in ``extra`` where there is one repository), our own
    ``lean_dojo_v2_version``, then ``extra``."""
    from ..version import __version__

    meta: dict[str, object] = {
        "dataset_name": DATASET_NAME,
        "creation_time": str(_dt.datetime.now()),
        "lean_dojo_v2_version": __version__,
        "leandojo_version": __version__,
    }
    meta.update(extra)
    return meta


def write_dataset(
    path: str | Path,
    splits: Mapping[str, Mapping[str, Iterable[Theorem]]],
    corpus: Iterable[PremiseFile] = (),
    traced_files: Iterable[str] = (),
    metadata: Mapping[str, Any] | None = None,
    *,
    force: bool = False,
    sources: Iterable[str | Path] = (),
) -> Path:
    """Write a dataset directory atomically.

    ``splits`` maps strategy → split → theorems (iterables are streamed). ``corpus`` is written in
    dependency order (each file after its imports), as LeanDojo's loader expects.

    ``path`` may be absent, an empty directory or a dataset this library wrote, which is replaced;
    anything else raises :class:`~lean_dojo_v2.errors.OutputExistsError` unless ``force``.
    ``path`` never equals, contains or lies inside one of ``sources`` (the inputs), even with
    ``force``. See :func:`~lean_dojo_v2.data.output_dir.staged_output_dir`.
    """
    path = Path(path)
    with staged_output_dir(path, force=force, sources=sources) as stage, gc_paused():
        _write_contents(stage, splits, corpus, traced_files, metadata)
    return path


def _write_contents(
    tmp: Path,
    splits: Mapping[str, Mapping[str, Iterable[Theorem]]],
    corpus: Iterable[PremiseFile],
    traced_files: Iterable[str],
    metadata: Mapping[str, Any] | None,
) -> None:
    # With several strategies the same theorems are written again; encode each once.
    reuse = _EncodedTheorems() if len(splits) > 1 else None
    for strategy, by_split in splits.items():
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown split strategy {strategy!r}; expected one of {STRATEGIES}")
        for split, theorems in by_split.items():
            if split not in SPLIT_NAMES:
                raise ValueError(f"unknown split {split!r}; expected one of {SPLIT_NAMES}")
            out = tmp / strategy / f"{split}.json"
            if reuse is not None and isinstance(theorems, (list, tuple)):
                write_json_list(out, theorems, encode=reuse)
            else:
                write_theorems(out, theorems)
    files = list(corpus)
    ordered = Corpus(files).files if files else []
    write_jsonl(tmp / CORPUS_FILE, ordered, PremiseFile.to_dict)
    write_jsonl(tmp / TRACED_FILES_FILE, traced_files, lambda p: {"traced_file_path": p})
    write_json(tmp / METADATA_FILE, dict(metadata) if metadata is not None else default_metadata())


def write_split_dataset(
    path: str | Path,
    theorems: Iterable[Theorem],
    spec: SplitSpec | None = None,
    corpus: Iterable[PremiseFile] = (),
    traced_files: Iterable[str] = (),
    metadata: Mapping[str, Any] | None = None,
    previous: Mapping[str, Mapping[str, Iterable[Theorem]]] | None = None,
    *,
    force: bool = False,
    sources: Iterable[str | Path] = (),
) -> dict[str, dict[str, int]]:
    """Split theorems both ways and write the whole layout; returns the split sizes.

    ``previous`` (e.g. ``DatasetDir(old).load().splits``) keeps already placed theorems where they
    were (see :func:`~lean_dojo_v2.data.splits.split_novel_premises`). ``force`` and ``sources``:
    see :func:`write_dataset`; the output is checked before the theorems are split.
    """
    check_output_dir(path, force=force, sources=sources)
    splits = split_theorems(theorems, spec, previous)
    write_dataset(path, splits, corpus, traced_files, metadata, force=force, sources=sources)
    return {s: {k: len(v) for k, v in by.items()} for s, by in splits.items()}
