"""The data model: positions, premise uses, traced tactics, theorems, premises, repositories.

The dictionaries these classes read and write are the LeanDojo Benchmark 4 records, field for field:
``Theorem.from_dict(d).to_dict() == d`` for every real record (key order included), so datasets
written by this library are byte-compatible with LeanDojo's own files.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

from ..errors import DataFormatError
from .goals import is_no_goals
from .marks import remove_marks
from .sorry import find_sorry_tokens

_POS_STRING = re.compile(r"^\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)\s*$")
_MISSING = object()
T = TypeVar("T")


class Pos(NamedTuple):
    """A 1-based (line, column) position in a Lean file.

    A named tuple: cheap to create (datasets hold millions), ordered, hashable.
    """

    line_nb: int
    column_nb: int

    @classmethod
    def parse(cls, value: object, field_name: str = "pos") -> Pos:
        """Accepts ``[l, c]`` (the dataset form), ``(l, c)`` tuples, ``"(l, c)"`` strings
        (the upstream dynamic-database form) and ``Pos`` itself."""
        if type(value) is list and len(value) == 2:
            a, b = value
            if type(a) is int and type(b) is int:
                return cls(a, b)
        if isinstance(value, Pos):
            return value
        if isinstance(value, str):
            m = _POS_STRING.match(value)
            if m:
                return cls(int(m.group(1)), int(m.group(2)))
        elif (
            isinstance(value, (list, tuple))
            and len(value) == 2
            and all(isinstance(x, int) and not isinstance(x, bool) for x in value)
        ):
            return cls(value[0], value[1])
        raise DataFormatError(
            f"expected a position [line, column] of two integers, got {value!r}", field=field_name
        )

    def to_list(self) -> list[int]:
        return [self.line_nb, self.column_nb]

    def __repr__(self) -> str:
        # The upstream JSON database stores positions in this form.
        return f"({self.line_nb}, {self.column_nb})"


def _require(d: Mapping[str, Any], key: str, kind: type[T]) -> T:
    # Fast path: the common, well-formed case costs one lookup and one type check.
    if type(d) is dict:
        value = d.get(key, _MISSING)
        if type(value) is kind:
            return value
    if not isinstance(d, Mapping):
        raise DataFormatError(f"expected an object, got {type(d).__name__}")
    if key not in d:
        raise DataFormatError("missing field", field=key)
    value = d[key]
    if not isinstance(value, kind):
        raise DataFormatError(f"expected {kind.__name__}, got {type(value).__name__}", field=key)
    return value


_new_tuple = tuple.__new__


def _pos(d: Mapping[str, Any], key: str) -> Pos:
    value = d.get(key, _MISSING)
    if type(value) is list and len(value) == 2:
        a, b = value
        if type(a) is int and type(b) is int:
            return _new_tuple(Pos, (a, b))
    if value is _MISSING:
        raise DataFormatError("missing field", field=key)
    return Pos.parse(value, key)


def _parse_list(items: list[Any], parse: Callable[[Any], T], prefix: str) -> list[T]:
    """``[parse(x) for x in items]``; an error's field gets ``prefix[i].`` in front."""
    out = []
    for i, item in enumerate(items):
        try:
            out.append(parse(item))
        except DataFormatError as exc:
            raise exc.nested(f"{prefix}[{i}]") from None
    return out


@dataclass(slots=True)
class Annotation:
    """One premise use inside a tactic: which constant, and where it is defined."""

    full_name: str
    def_path: str
    def_pos: Pos
    def_end_pos: Pos

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Annotation:
        return cls(
            _require(d, "full_name", str),
            _require(d, "def_path", str),
            _pos(d, "def_pos"),
            _pos(d, "def_end_pos"),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "full_name": self.full_name,
            "def_path": self.def_path,
            "def_pos": self.def_pos.to_list(),
            "def_end_pos": self.def_end_pos.to_list(),
        }


@dataclass(slots=True)
class TracedTactic:
    """A tactic with the goals before and after it.

    ``annotated_tactic`` is the tactic text with each resolved identifier wrapped in ``<a>…</a>``
    (LeanDojo may indent multi-line text differently from ``tactic``); ``annotations`` has one entry
    per mark, in order, repeats included.
    """

    tactic: str
    annotated_tactic: str
    annotations: list[Annotation]
    state_before: str
    state_after: str

    @property
    def premises(self) -> list[str]:
        """Distinct full names of the premises this tactic uses, in order of first use."""
        return list(dict.fromkeys(a.full_name for a in self.annotations))

    @property
    def is_finishing(self) -> bool:
        return is_no_goals(self.state_after)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TracedTactic:
        tactic = _require(d, "tactic", str)
        annotated = _require(d, "annotated_tactic", list)
        if (
            len(annotated) != 2
            or not isinstance(annotated[0], str)
            or not isinstance(annotated[1], list)
        ):
            raise DataFormatError("expected [marked_text, provenances]", field="annotated_tactic")
        return cls(
            tactic,
            annotated[0],
            _parse_list(annotated[1], Annotation.from_dict, "annotated_tactic[1]"),
            _require(d, "state_before", str),
            _require(d, "state_after", str),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "tactic": self.tactic,
            "annotated_tactic": [self.annotated_tactic, [a.to_dict() for a in self.annotations]],
            "state_before": self.state_before,
            "state_after": self.state_after,
        }

    @classmethod
    def unannotated(cls, tactic: str, state_before: str, state_after: str) -> TracedTactic:
        """A tactic without premise provenance (e.g. recorded by a prover rather than the tracer)."""
        return cls(tactic, tactic, [], state_before, state_after)

    @property
    def plain_annotated_tactic(self) -> str:
        return remove_marks(self.annotated_tactic)


THEOREM_KEYS = (
    # the keys of a LeanDojo theorem record, in the order they are written
    "url",
    "commit",
    "file_path",
    "full_name",
    "theorem_statement",
    "start",
    "end",
    "traced_tactics",
)


@dataclass(slots=True)
class Theorem:
    """A theorem of a traced repository, as in the LeanDojo Benchmark split files.

    ``theorem_statement`` is optional in the format (LeanDojo Benchmark 4 has none): ``None`` with
    ``has_statement_field`` false means the key was absent, so ``to_dict`` leaves it out again.
    Unknown keys are kept in ``extra`` and written back after the known ones.
    """

    url: str
    commit: str
    file_path: str
    full_name: str
    start: Pos
    end: Pos
    traced_tactics: list[TracedTactic] = field(default_factory=list)
    theorem_statement: str | None = None
    has_statement_field: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str, str, str, Pos]:
        """Identity of a theorem: repository, commit, file, name and start."""
        return (self.url, self.commit, self.file_path, self.full_name, self.start)

    @property
    def has_tactic_proof(self) -> bool:
        return bool(self.traced_tactics)

    @property
    def num_tactics(self) -> int:
        return len(self.traced_tactics)

    @property
    def annotations(self) -> Iterator[Annotation]:
        for t in self.traced_tactics:
            yield from t.annotations

    @property
    def premises(self) -> list[str]:
        """Distinct full names of the premises used by the proof, in order of first use."""
        return list(dict.fromkeys(a.full_name for a in self.annotations))

    @property
    def has_sorry(self) -> bool:
        """True when a recorded tactic contains a ``sorry`` token (``sorry``, ``exact sorry``…)."""
        return any("sorry" in t.tactic and find_sorry_tokens(t.tactic) for t in self.traced_tactics)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Theorem:
        if not isinstance(d, Mapping):
            raise DataFormatError(f"expected a theorem object, got {type(d).__name__}")
        tactics = _parse_list(
            _require(d, "traced_tactics", list), TracedTactic.from_dict, "traced_tactics"
        )
        has_statement = "theorem_statement" in d
        statement = d.get("theorem_statement")
        if statement is not None and not isinstance(statement, str):
            raise DataFormatError(
                f"expected str or null, got {type(statement).__name__}", field="theorem_statement"
            )
        extra = {k: v for k, v in d.items() if k not in THEOREM_KEYS}
        return cls(
            url=_require(d, "url", str),
            commit=_require(d, "commit", str),
            file_path=_require(d, "file_path", str),
            full_name=_require(d, "full_name", str),
            start=_pos(d, "start"),
            end=_pos(d, "end"),
            traced_tactics=tactics,
            theorem_statement=statement,
            has_statement_field=has_statement,
            extra=extra,
        )

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "url": self.url,
            "commit": self.commit,
            "file_path": self.file_path,
            "full_name": self.full_name,
        }
        if self.has_statement_field or self.theorem_statement is not None:
            d["theorem_statement"] = self.theorem_statement
        d["start"] = self.start.to_list()
        d["end"] = self.end.to_list()
        d["traced_tactics"] = [t.to_dict() for t in self.traced_tactics]
        if self.extra:
            d.update(self.extra)
        return d


@dataclass(slots=True)
class Premise:
    """A definition in the premise corpus (one entry of a ``corpus.jsonl`` line's ``premises``)."""

    path: str
    full_name: str
    code: str
    start: Pos
    end: Pos
    kind: str

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], path: str) -> Premise:
        return cls(
            path,
            _require(d, "full_name", str),
            _require(d, "code", str),
            _pos(d, "start"),
            _pos(d, "end"),
            _require(d, "kind", str),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "full_name": self.full_name,
            "code": self.code,
            "start": self.start.to_list(),
            "end": self.end.to_list(),
            "kind": self.kind,
        }


@dataclass(slots=True)
class PremiseFile:
    """One Lean file of the corpus: its imports (paths) and the premises it defines."""

    path: str
    imports: list[str]
    premises: list[Premise]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PremiseFile:
        path = _require(d, "path", str)
        imports = _require(d, "imports", list)
        for i, imp in enumerate(imports):
            if not isinstance(imp, str):
                raise DataFormatError(
                    f"expected a file path, got {type(imp).__name__}", field=f"imports[{i}]"
                )
        premises = _parse_list(
            _require(d, "premises", list), lambda p: Premise.from_dict(p, path), "premises"
        )
        return cls(path=path, imports=list(imports), premises=premises)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "imports": list(self.imports),
            "premises": [p.to_dict() for p in self.premises],
        }


def repo_name_from_url(url: str) -> str:
    """``https://github.com/owner/name(.git)`` or a local path → ``name``."""
    tail = url.rstrip("/").rsplit("/", 1)[-1]
    return tail[:-4] if tail.endswith(".git") else tail


@dataclass(slots=True)
class Repository:
    """A traced repository at one commit: its theorems, premise corpus and traced files."""

    url: str
    commit: str
    lean_version: str | None = None
    name: str = ""
    theorems: list[Theorem] = field(default_factory=list)
    premise_files: list[PremiseFile] = field(default_factory=list)
    traced_files: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.name:
            self.name = repo_name_from_url(self.url)

    @property
    def proven_theorems(self) -> list[Theorem]:
        return [t for t in self.theorems if t.has_tactic_proof and not t.has_sorry]

    @property
    def sorry_theorems(self) -> list[Theorem]:
        return [t for t in self.theorems if t.has_sorry]

    @property
    def num_premises(self) -> int:
        return sum(len(f.premises) for f in self.premise_files)
