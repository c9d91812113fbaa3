"""Layer 0 (data): the LeanProgress JSONL, one training example of a steps-remaining model per
traced tactic: :class:`ProgressExample`, :func:`write_progress_jsonl`, :func:`iter_progress_jsonl`,
:func:`read_progress_jsonl`.

Each line is an object with the fields of the upstream format::

    {"goal": "<state before the tactic>", "prefix": "<tactics before it, one per line>",
     "tactic": "<the tactic>", "steps_remaining": <int >= 0>}

``goal`` is the tactic's ``state_before`` as a model sees it (:func:`lean_dojo_v2.data.clean_state`);
``prefix`` and ``steps_remaining`` follow the rule of :mod:`lean_dojo_v2.lean_progress.labels`.
Rows written here also carry ``theorem`` and ``file_path`` (which proof the row comes from: the
trainer keeps the rows of one proof on the same side of its train/eval split); readers accept rows
without them, and any other extra field is kept in :attr:`ProgressExample.extra`. The rows are
made from traced theorems by :func:`lean_dojo_v2.lean_progress.progress_examples` and trained on by
``ProgressTrainer``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import DataFormatError, DatasetNotFoundError
from .jsonio import atomic_write, loads

FIELDS = ("goal", "prefix", "tactic", "steps_remaining")
"""The fields of a LeanProgress row, in the order they are written."""


@dataclass(slots=True)
class ProgressExample:
    """One LeanProgress row. ``theorem``/``file_path`` say which proof it comes from (``None``
    when unknown); ``extra`` keeps any other field of a row that was read."""

    goal: str
    prefix: str
    tactic: str
    steps_remaining: int
    theorem: str | None = None
    file_path: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def group(self) -> str | None:
        """The proof this row belongs to (for splitting by proof), or None."""
        if self.theorem is None:
            return None
        return f"{self.file_path or ''}::{self.theorem}"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "goal": self.goal,
            "prefix": self.prefix,
            "tactic": self.tactic,
            "steps_remaining": self.steps_remaining,
        }
        if self.theorem is not None:
            d["theorem"] = self.theorem
        if self.file_path is not None:
            d["file_path"] = self.file_path
        d.update(self.extra)
        return d

    @classmethod
    def from_dict(cls, d: object) -> ProgressExample:
        """A row from a parsed JSON object; :class:`DataFormatError` (with the field) when it is
        not a LeanProgress row."""
        if not isinstance(d, Mapping):
            raise DataFormatError(f"expected a JSON object, got {type(d).__name__}")
        for key in ("goal", "tactic"):
            if key not in d:
                raise DataFormatError("missing field", field=key)
            if not isinstance(d[key], str):
                raise DataFormatError(f"expected text, got {type(d[key]).__name__}", field=key)
        prefix = d.get("prefix", "")
        if prefix is None:
            prefix = ""
        if not isinstance(prefix, str):
            raise DataFormatError(f"expected text, got {type(prefix).__name__}", field="prefix")
        if "steps_remaining" not in d:
            raise DataFormatError("missing field", field="steps_remaining")
        steps = d["steps_remaining"]
        if isinstance(steps, float) and steps.is_integer():
            steps = int(steps)
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
            raise DataFormatError(
                f"expected a whole number >= 0, got {steps!r}", field="steps_remaining"
            )
        optional = {}
        for key in ("theorem", "file_path"):
            value = d.get(key)
            if value is not None and not isinstance(value, str):
                raise DataFormatError(f"expected text, got {type(value).__name__}", field=key)
            optional[key] = value
        extra = {k: v for k, v in d.items() if k not in FIELDS and k not in optional}
        return cls(d["goal"], prefix, d["tactic"], steps, extra=extra, **optional)


def write_progress_jsonl(
    path: str | Path, examples: Iterable[ProgressExample], *, force: bool = False
) -> int:
    """Write ``examples`` as LeanProgress JSONL (UTF-8, one object per line), atomically; returns
    how many rows. An existing file is refused with
    :class:`~lean_dojo_v2.errors.OutputExistsError` unless ``force``."""
    from ..errors import OutputExistsError

    path = Path(path)
    if path.is_dir():
        raise OutputExistsError(f"{path} is a directory; give the path of a .jsonl file to write")
    if path.exists() and not force:
        raise OutputExistsError(
            f"{path} exists; choose another path, or pass --force (force=True) to replace it"
        )
    n = 0
    with atomic_write(path) as fh:
        for ex in examples:
            fh.write(json.dumps(ex.to_dict(), ensure_ascii=False))
            fh.write("\n")
            n += 1
    return n


def iter_progress_jsonl(path: str | Path) -> Iterator[ProgressExample]:
    """The rows of a LeanProgress JSONL file, lazily; blank lines are skipped. A bad line is a
    :class:`DataFormatError` naming the file and the (1-based) line."""
    path = Path(path)
    if path.is_dir():
        raise DataFormatError("is a directory; give the path of a .jsonl file", file=path)
    if not path.is_file():
        raise DatasetNotFoundError(
            f"no LeanProgress data file at {path}; write one with `python -m "
            "lean_dojo_v2.lean_progress.create_sample_dataset --output PATH`"
        )
    with path.open("rb") as fh:
        for i, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DataFormatError(
                    f"line {i}: not UTF-8 text ({exc.reason}); re-encode the file as UTF-8",
                    file=path,
                ) from None
            try:
                obj = loads(text, record=i)
            except DataFormatError as exc:
                raise DataFormatError(f"line {i}: {exc.reason}", file=path) from None
            try:
                yield ProgressExample.from_dict(obj)
            except DataFormatError as exc:
                where = f" (field {exc.field!r})" if exc.field else ""
                raise DataFormatError(f"line {i}{where}: {exc.reason}", file=path) from None


def read_progress_jsonl(path: str | Path) -> list[ProgressExample]:
    """Every row of a LeanProgress JSONL file (see :func:`iter_progress_jsonl`)."""
    return list(iter_progress_jsonl(path))


__all__ = [
    "FIELDS",
    "ProgressExample",
    "iter_progress_jsonl",
    "read_progress_jsonl",
    "write_progress_jsonl",
]
