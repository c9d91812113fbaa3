"""Read the output of `ntp-toolkit <https://github.com/cmu-l3/ntp-toolkit>`_ (LeanHammer's data).

An ntp-toolkit output directory (e.g. ``Examples/mathlib``) holds, per Lean module ``M``:

- ``Declarations/M.jsonl``: one declaration per line (``name``, ``kind``, ``type``, ``typeArgs`` or
  ``args``, ``typeBody``, ``doc``, ``signature``, ``line``, ``column``, ``isProp``,
  ``isHumanTheorem``, ...). These are the premises.
- ``Imports/M.jsonl``: one imported module per line, ``{"name": module, "isDirect": bool}``; the
  list is transitive.
- ``TrainingDataWithPremises/M.jsonl``: one tactic state per line (``declName``, ``state``,
  ``nextTactic``, ``srcUpToTactic``, ``nextTacticHammerRecommendation``,
  ``declHammerRecommendation``); each recommendation is a list of ``"(Name, simpAllHint)"``
  strings.

and once: ``HammerBlacklist.jsonl`` (one JSON object ``{"hammerBlacklist": [names]}``: very basic
logic lemmas never used as premises) and ``revision`` (the Lean/Mathlib revision extracted).
An optional ``Modules.jsonl`` (``{"name": module}`` per line) lists modules that may have no
declarations.

:func:`read_ntp_toolkit` turns such a directory into a :class:`~lean_dojo_v2.data.Corpus` (one
:class:`PremiseFile` per module, path = module name, imports from ``Imports``) and plain training
records (:class:`NtpState`); the trainer side turns those into ``RetrievalQuery`` objects. Layer 0:
no torch, nothing from ``models``.

Rules (documented in ``docs/premise_selector.md``, each tested):

- **Lines that are not JSON** (ntp-toolkit prints debug lines such as ``Processing tactic ...``
  when debug output is on) are skipped; each skip is counted in :class:`NtpReadReport` and one
  warning per file names the file and the first line numbers.
- **A JSON line that lacks a required field** (or has one of the wrong type) raises
  :class:`NtpToolkitFormatError` naming the file, the 1-based line and the field. Required:
  ``name`` in Declarations; ``name`` in Imports; ``declName``, ``state`` and at least one of the
  two recommendation lists in TrainingDataWithPremises. A recommendation entry that is neither
  ``"(Name, hint)"`` nor a bare name is a format error too.
- **Missing files**: a directory without ``Declarations/``, ``Imports/``,
  ``TrainingDataWithPremises/``, ``HammerBlacklist.jsonl`` or ``revision`` raises
  :class:`NtpToolkitLayoutError`, which names the directory and every missing part.
- **Blacklist** (``use_blacklist=True``, the default, part of LeanHammer's ``--filter``):
  blacklisted names are left out of the corpus and out of every state's premises (both counted).
- **LeanHammer's name filters** (``use_filters=True``, the default, the rest of its ``--filter``;
  :func:`hammer_filter_reason`): a declaration whose module has a component in
  :data:`MODULE_BLACKLIST` (``Aesop``, ``Lean``, ``Tactic``, ...), whose name has a component in
  :data:`NAME_BLACKLIST` (``Lean``, ``Lake``, ``Qq``), or whose ``type`` starts with ``Lean.``
  (:data:`TYPE_PREFIX_BLACKLIST`) is left out of the corpus and out of every state's premises
  (counted per rule). Its module stays in the corpus (possibly empty), so its states still count.
- **Mathlib only** (``mathlib_only=True``, LeanHammer's ``--mathlib_only``): declarations and
  training states of modules whose name does not start with ``Mathlib.`` are not read; their
  premises named by Mathlib states are dropped and counted (``non_mathlib_premise_uses``).
- **Nameless** (``nameless=True``, LeanHammer's ``--nameless``): the premise text leaves out the
  premise's own name (``kind args : type``; from a ``signature``, its first occurrence of the
  name is cut). A declaration with neither ``type`` nor ``signature`` has no nameless text and
  raises :class:`NtpToolkitFormatError`.
- **A premise named in training data but absent from Declarations** (or blacklisted) is dropped
  from that state's premises and counted (``unknown_premise_uses``, with examples); a state left
  without premises is kept in :attr:`NtpToolkitData.states` but yields no retrieval example.
- **Duplicate declaration names**: the first one is kept (LeanHammer does the same), later ones
  counted.
- **Imports of modules that have no Declarations file** (``Init.*`` in a Mathlib extraction that
  only covers Mathlib, for instance) are dropped and counted: the corpus only holds modules it
  has premises for.
- **Positions**: a declaration's ``line``/``column`` (Lean: 1-based line, 0-based column) become
  its ``Premise.start`` (and ``end``: ntp-toolkit gives no end). When some declaration of a
  module lacks them, every declaration of that module gets its order in the file instead
  (``Pos(i + 1, 0)``; declarations are printed in source order), counted in
  ``modules_without_positions``. A state's position is the position of its own declaration
  (``declName`` in the same module), so its own theorem and everything after it are not
  accessible, as in LeanHammer's evaluator; without that, its ``srcUpToTactic`` gives the tactic's
  position; without either, the position is ``None`` (every premise of its module is accessible).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from ..errors import DataFormatError, LeanDojoError
from .corpus import Corpus
from .jsonio import loads
from .model import Pos, Premise, PremiseFile

logger = logging.getLogger(__name__)

T = TypeVar("T")

DECLARATIONS = "Declarations"
IMPORTS = "Imports"
TRAINING_DATA = "TrainingDataWithPremises"
BLACKLIST = "HammerBlacklist.jsonl"
REVISION = "revision"
MODULES = "Modules.jsonl"

_EXPECTED = {
    DECLARATIONS: "a folder of <Module>.jsonl files, one declaration per line (lake exe declarations)",
    IMPORTS: "a folder of <Module>.jsonl files, one imported module per line (lake exe imports)",
    TRAINING_DATA: "a folder of <Module>.jsonl files, one tactic state with its premises per line "
    "(lake exe training_data_with_premises)",
    BLACKLIST: 'a file holding {"hammerBlacklist": [names]} (lake exe update_hammer_blacklist)',
    REVISION: "a text file with the Lean/Mathlib revision extracted",
}

SIMP_ALL_HINTS = frozenset(
    {
        "notInSimpAll",
        "unmodified",
        "simpErase",
        "simpPreOnly",
        "simpPostOnly",
        "backwardOnly",
        "simpPreAndBackward",
        "simpPostAndBackward",
    }
)
_RECOMMENDATION = re.compile(r"^\((?P<name>.+), (?P<hint>[A-Za-z]+)\)$")

# LeanHammer's name/module/type filters (LeanHammer-training models.py, ``Corpus``), applied with
# its ``--filter`` (our ``use_filters``): a premise is left out when any dot-separated component of
# its module is in MODULE_BLACKLIST, any component of its name is in NAME_BLACKLIST, or its type
# starts with a TYPE_PREFIX_BLACKLIST entry.
MODULE_BLACKLIST = frozenset(
    {
        "Aesop",
        "Auto",
        "Cli",
        "CodeAction",
        "DocGen4",
        "Duper",
        "ImportGraph",
        "Lake",
        "Lean",
        "LeanSearchClient",
        "Linter",
        "Mathport",
        "MD4Lean",
        "Plausible",
        "ProofWidgets",
        "Qq",
        "QuerySMT",
        "Tactic",
        "TacticExtra",
        "Test",
        "Testing",
        "UnicodeBasic",
        "Util",
    }
)
NAME_BLACKLIST = frozenset({"Lean", "Lake", "Qq"})
TYPE_PREFIX_BLACKLIST = ("Lean.",)
MATHLIB_PREFIX = "Mathlib."

PremiseSource = Literal["declaration", "next_tactic"]


class NtpToolkitLayoutError(LeanDojoError, FileNotFoundError):
    """An ntp-toolkit output directory lacks a part :func:`read_ntp_toolkit` needs.

    ``path`` is the directory, ``missing`` the absent parts (``Declarations``, ``revision``...).
    """

    def __init__(self, path: str | Path, missing: Sequence[str]) -> None:
        self.path = str(path)
        self.missing = list(missing)
        parts = "; ".join(f"{m} ({_EXPECTED.get(m, 'required')})" for m in self.missing)
        super().__init__(
            f"{self.path} is not a complete ntp-toolkit output directory: missing {parts}. "
            "Point --data-dir at the folder ntp-toolkit wrote (e.g. Examples/mathlib), produced "
            "with --declarations --imports --training_data_with_premises, plus "
            "HammerBlacklist.jsonl and revision"
        )

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.path, self.missing))


class NtpToolkitFormatError(DataFormatError):
    """A JSON line of an ntp-toolkit file lacks a required field or has one of the wrong type.

    ``file`` and ``line`` (1-based) say where; ``field`` which field.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.line = line
        super().__init__(message, file=file, field=field)

    def _render(self) -> str:
        where = []
        if self.file is not None:
            where.append(f"file {self.file}")
        if getattr(self, "line", None) is not None:
            where.append(f"line {self.line}")
        if self.field is not None:
            where.append(f"field {self.field!r}")
        text = f"{', '.join(where)}: {self.reason}" if where else self.reason
        return text + "; fix or remove that line, or re-run ntp-toolkit for this module"

    def __reduce__(self) -> tuple[object, ...]:
        return (
            _rebuild_format_error,
            (type(self), self.reason, self.file, self.line, self.field),
        )


def _rebuild_format_error(cls, reason, file, line, field):  # noqa: ANN001
    return cls(reason, file=file, line=line, field=field)


@dataclass(frozen=True, slots=True)
class NtpDeclaration:
    """One line of ``Declarations/<module>.jsonl``: a premise candidate."""

    name: str
    module: str
    kind: str | None
    text: str
    """What an encoder reads: ``signature`` when present, else ``kind name args : type`` (with
    the docstring in front), else the name."""
    line: int | None
    column: int | None
    is_prop: bool | None = None
    is_human_theorem: bool | None = None
    doc: str | None = None


@dataclass(frozen=True, slots=True)
class NtpState:
    """One line of ``TrainingDataWithPremises/<module>.jsonl``: a tactic state and its premises.

    ``premises`` are the kept premise names (in the corpus, not blacklisted), in order, for the
    ``premise_source`` chosen at reading; ``dropped`` the names that were named but not kept.
    """

    module: str
    index: int
    """0-based index among the states of its module (file order)."""
    decl_name: str
    state: str
    next_tactic: str | None
    premises: tuple[str, ...]
    next_tactic_premises: tuple[str, ...]
    decl_premises: tuple[str, ...]
    pos: Pos | None
    tactic_idx: int
    """0-based index of this state among its declaration's states."""
    dropped: tuple[str, ...] = ()
    source_line: int = 0

    @property
    def state_name(self) -> str:
        """LeanHammer's identifier of a state: ``<module>#<index>``."""
        return f"{self.module}#{self.index}"


@dataclass
class NtpReadReport:
    """Counts of everything :func:`read_ntp_toolkit` skipped, dropped or filled in."""

    non_json_lines: int = 0
    non_json_examples: list[str] = field(default_factory=list)
    declarations: int = 0
    duplicate_declarations: int = 0
    blacklisted_declarations: int = 0
    filtered_declarations: dict[str, int] = field(default_factory=dict)
    """Declarations left out by LeanHammer's filters, per rule (``module``, ``name``, ``type``)."""
    non_mathlib_declarations: int = 0
    modules: int = 0
    modules_without_positions: list[str] = field(default_factory=list)
    imports_dropped: int = 0
    states: int = 0
    states_without_premises: int = 0
    states_without_position: int = 0
    states_outside_corpus: int = 0
    premise_uses: int = 0
    blacklisted_premise_uses: int = 0
    filtered_premise_uses: int = 0
    non_mathlib_states: int = 0
    non_mathlib_premise_uses: int = 0
    unknown_premise_uses: int = 0
    unknown_premise_examples: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            k: (list(v) if isinstance(v, list) else dict(v) if isinstance(v, dict) else v)
            for k, v in self.__dict__.items()
        }


@dataclass
class NtpToolkitData:
    """An ntp-toolkit directory read: the corpus, the declarations and the training states."""

    path: Path
    revision: str
    corpus: Corpus
    declarations: dict[str, NtpDeclaration]
    states: list[NtpState]
    blacklist: frozenset[str]
    report: NtpReadReport
    premise_source: PremiseSource = "declaration"
    filtered: frozenset[str] = frozenset()
    """Names left out by LeanHammer's name/module/type filters."""
    nameless: bool = False
    mathlib_only: bool = False

    @property
    def modules(self) -> list[str]:
        return [f.path for f in self.corpus.files]

    def states_with_premises(self) -> list[NtpState]:
        return [s for s in self.states if s.premises]


# --------------------------------------------------------------------------- reading lines


def iter_ntp_jsonl(path: Path, report: NtpReadReport | None = None) -> Iterator[tuple[int, Any]]:
    """``(line_number, value)`` for every JSON line of ``path`` (1-based line numbers).

    Blank lines are ignored; a line that is not JSON is skipped, counted in ``report`` and named
    in one warning per file. Bytes that are not UTF-8 raise :class:`NtpToolkitFormatError`.
    """
    skipped: list[int] = []
    try:
        fh = path.open("r", encoding="utf-8")
    except OSError as exc:
        raise NtpToolkitFormatError(f"cannot read: {exc.strerror}", file=path) from None
    with fh:
        lineno = 0
        while True:
            try:
                raw = fh.readline()
            except UnicodeDecodeError as exc:
                raise NtpToolkitFormatError(
                    f"not UTF-8 ({exc.reason}); re-encode the file as UTF-8",
                    file=path,
                    line=lineno + 1,
                ) from None
            if not raw:
                break
            lineno += 1
            text = raw.strip()
            if not text:
                continue
            try:
                value = loads(text)
            except ValueError:
                skipped.append(lineno)
                continue
            yield lineno, value
    if skipped:
        if report is not None:
            report.non_json_lines += len(skipped)
            room = 20 - len(report.non_json_examples)
            report.non_json_examples.extend(f"{path}:{n}" for n in skipped[: max(room, 0)])
        shown = ", ".join(str(n) for n in skipped[:5]) + (" ..." if len(skipped) > 5 else "")
        logger.warning(
            "%s: skipped %d line(s) that are not JSON (ntp-toolkit debug output?): line %s",
            path,
            len(skipped),
            shown,
        )


def _object(value: object, path: Path, lineno: int) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise NtpToolkitFormatError(
            f"expected a JSON object, got {type(value).__name__}", file=path, line=lineno
        )
    return value


def _req(d: dict[str, Any], key: str, kind: type[T], path: Path, lineno: int) -> T:
    if key not in d:
        raise NtpToolkitFormatError("missing required field", file=path, line=lineno, field=key)
    value = d[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise NtpToolkitFormatError(
            f"expected {kind.__name__}, got {type(value).__name__}",
            file=path,
            line=lineno,
            field=key,
        )
    return value


def _opt(d: dict[str, Any], key: str, kind: type[T], path: Path, lineno: int) -> T | None:
    value = d.get(key)
    if value is None:
        return None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise NtpToolkitFormatError(
            f"expected {kind.__name__} or null, got {type(value).__name__}",
            file=path,
            line=lineno,
            field=key,
        )
    return value


def parse_recommendation(
    entry: object, *, file: Path | None = None, line: int | None = None, field: str = ""
) -> tuple[str, str | None]:
    """``"(Nat.add_comm, unmodified)"`` -> ``("Nat.add_comm", "unmodified")``; a bare name (older
    extractions) -> ``(name, None)``."""
    if not isinstance(entry, str) or not entry.strip():
        raise NtpToolkitFormatError(
            f"expected a premise string like '(Name, hint)', got {entry!r}",
            file=file,
            line=line,
            field=field,
        )
    m = _RECOMMENDATION.match(entry)
    if m is not None and m["hint"] in SIMP_ALL_HINTS:
        return m["name"], m["hint"]
    if entry.startswith("(") or " " in entry:
        raise NtpToolkitFormatError(
            f"cannot parse premise {entry!r}: expected '(Name, hint)' with hint one of "
            f"{', '.join(sorted(SIMP_ALL_HINTS))}, or a bare name",
            file=file,
            line=line,
            field=field,
        )
    return entry, None


def _strip_name(signature: str, name: str) -> str | None:
    """``signature`` without the first whole-token occurrence of ``name`` (else of its last
    component); ``None`` when neither occurs."""
    for candidate in (name, name.rsplit(".", 1)[-1]):
        if not candidate:
            continue
        m = re.search(rf"(?<![\w.'])({re.escape(candidate)})(?![\w.'])", signature)
        if m is not None:
            head, tail = signature[: m.start()], signature[m.end() :]
            if head.endswith(" ") and tail.startswith(" "):
                tail = tail[1:]
            return head + tail
    return None


def declaration_text(d: dict[str, Any], *, nameless: bool = False) -> str:
    """The text an encoder reads for a declaration line (see :class:`NtpDeclaration`).

    ``nameless`` (LeanHammer's ``--nameless``): the same without the declaration's own name;
    raises ``ValueError`` when the line has neither a ``type`` nor a ``signature`` (nothing but
    the name to show)."""
    name = d.get("name", "")
    signature = d.get("signature")
    kind = d.get("kind")
    typ = d.get("typeBody") if isinstance(d.get("typeBody"), str) else d.get("type")
    args = d.get("typeArgs") if isinstance(d.get("typeArgs"), list) else d.get("args")
    if isinstance(signature, str) and signature.strip():
        if not nameless:
            return signature
        stripped = _strip_name(signature, name) if name else signature
        if stripped is not None:
            return stripped
        if not (isinstance(typ, str) and typ):
            return signature  # the name does not occur in it: already nameless
    if isinstance(typ, str) and typ:
        head = " ".join(
            [p for p in (kind if isinstance(kind, str) else None, None if nameless else name) if p]
            + [a for a in (args or []) if isinstance(a, str)]
        )
        text = f"{head} : {typ}"
        doc = d.get("doc")
        if isinstance(doc, str) and doc.strip():
            text = f"/-- {doc.strip()} -/\n{text}"
        return text
    if nameless:
        raise ValueError(
            "nameless premise text needs the declaration's type or signature, and this line "
            "has neither (only its name)"
        )
    return name


def hammer_filter_reason(name: str, module: str, type_: str | None = None) -> str | None:
    """Which of LeanHammer's filters leaves a declaration out: ``"module"`` (a component of its
    module is in :data:`MODULE_BLACKLIST`), ``"name"`` (a component of its name is in
    :data:`NAME_BLACKLIST`), ``"type"`` (its type starts with ``Lean.``), or ``None`` (kept)."""
    if any(part in MODULE_BLACKLIST for part in module.split(".")):
        return "module"
    if any(part in NAME_BLACKLIST for part in name.split(".")):
        return "name"
    if type_ is not None and type_.startswith(TYPE_PREFIX_BLACKLIST):
        return "type"
    return None


def is_mathlib_module(module: str) -> bool:
    """LeanHammer's ``--mathlib_only`` test: the module name starts with ``Mathlib.``."""
    return module.startswith(MATHLIB_PREFIX)


def _modules_in(folder: Path) -> list[tuple[str, Path]]:
    return sorted(
        (p.name[: -len(".jsonl")], p)
        for p in folder.iterdir()
        if p.name.endswith(".jsonl") and p.is_file()
    )


# --------------------------------------------------------------------------- the directory


def missing_ntp_toolkit_parts(path: str | Path) -> list[str]:
    """The required parts absent from ``path`` (empty when it looks complete)."""
    path = Path(path)
    missing = []
    for d in (DECLARATIONS, IMPORTS, TRAINING_DATA):
        if not (path / d).is_dir():
            missing.append(d)
    for f in (BLACKLIST, REVISION):
        if not (path / f).is_file():
            missing.append(f)
    return missing


def read_blacklist(path: str | Path) -> frozenset[str]:
    """Names in ``HammerBlacklist.jsonl`` (one object ``{"hammerBlacklist": [...]}``; several
    such lines are merged; non-JSON lines are skipped like everywhere else)."""
    path = Path(path)
    names: set[str] = set()
    for lineno, value in iter_ntp_jsonl(path):
        obj = _object(value, path, lineno)
        items = _req(obj, "hammerBlacklist", list, path, lineno)
        for i, item in enumerate(items):
            if not isinstance(item, str):
                raise NtpToolkitFormatError(
                    f"expected a name, got {type(item).__name__}",
                    file=path,
                    line=lineno,
                    field=f"hammerBlacklist[{i}]",
                )
            names.add(item)
    return frozenset(names)


def _position_from_source(src: str) -> Pos:
    # Lean positions: 1-based line, 0-based column in codepoints.
    last = src.rfind("\n")
    return Pos(src.count("\n") + 1, len(src) - (last + 1))


def read_ntp_toolkit(
    path: str | Path,
    *,
    use_blacklist: bool = True,
    premise_source: PremiseSource = "declaration",
    use_filters: bool = True,
    mathlib_only: bool = False,
    nameless: bool = False,
) -> NtpToolkitData:
    """Read an ntp-toolkit output directory (see the module docstring for every rule).

    ``use_blacklist`` and ``use_filters`` together are LeanHammer's ``--filter`` (explicit
    blacklist; module/name/type filters); ``mathlib_only`` and ``nameless`` are its options of
    the same names.

    ``premise_source``: ``"declaration"`` (LeanHammer's default) takes each state's premises from
    ``declHammerRecommendation`` (everything its declaration's proof uses); ``"next_tactic"``
    from ``nextTacticHammerRecommendation`` (what the next tactic uses).
    """
    if premise_source not in ("declaration", "next_tactic"):
        raise ValueError(
            f"premise_source must be 'declaration' or 'next_tactic', not {premise_source!r}"
        )
    path = Path(path)
    if not path.is_dir():
        raise NtpToolkitLayoutError(
            path, [DECLARATIONS, IMPORTS, TRAINING_DATA, BLACKLIST, REVISION]
        )
    missing = missing_ntp_toolkit_parts(path)
    if missing:
        raise NtpToolkitLayoutError(path, missing)
    report = NtpReadReport()
    revision = (path / REVISION).read_text("utf-8").strip()
    blacklist = read_blacklist(path / BLACKLIST) if use_blacklist else frozenset()

    # Declarations -> premises per module.
    declarations: dict[str, NtpDeclaration] = {}
    per_module: dict[str, list[NtpDeclaration]] = {}
    filtered: set[str] = set()
    non_mathlib: set[str] = set()
    for module, file in _modules_in(path / DECLARATIONS):
        if mathlib_only and not is_mathlib_module(module):
            for lineno, value in iter_ntp_jsonl(file, report):
                d = _object(value, file, lineno)
                non_mathlib.add(_req(d, "name", str, file, lineno))
                report.non_mathlib_declarations += 1
            continue
        decls = per_module.setdefault(module, [])
        for lineno, value in iter_ntp_jsonl(file, report):
            d = _object(value, file, lineno)
            name = _req(d, "name", str, file, lineno)
            line = _opt(d, "line", int, file, lineno)
            column = _opt(d, "column", int, file, lineno)
            row_module = _opt(d, "module", str, file, lineno) or module
            if row_module != module:
                raise NtpToolkitFormatError(
                    f"declaration of module {row_module!r} in the file of module {module!r}",
                    file=file,
                    line=lineno,
                    field="module",
                )
            report.declarations += 1
            if name in blacklist:
                report.blacklisted_declarations += 1
                continue
            if use_filters:
                type_ = d.get("type")
                reason = hammer_filter_reason(
                    name, module, type_ if isinstance(type_, str) else None
                )
                if reason is not None:
                    report.filtered_declarations[reason] = (
                        report.filtered_declarations.get(reason, 0) + 1
                    )
                    filtered.add(name)
                    continue
            if name in declarations:
                report.duplicate_declarations += 1
                continue
            is_prop = d.get("isProp")
            human = d.get("isHumanTheorem")
            try:
                text = declaration_text(d, nameless=nameless)
            except ValueError as exc:
                raise NtpToolkitFormatError(
                    f"{exc}; run without --nameless, or re-extract with ntp-toolkit's "
                    "declarations (which print type and args)",
                    file=file,
                    line=lineno,
                    field="type",
                ) from None
            decl = NtpDeclaration(
                name=name,
                module=module,
                kind=d.get("kind") if isinstance(d.get("kind"), str) else None,
                text=text,
                line=line,
                column=column,
                is_prop=is_prop if isinstance(is_prop, bool) else None,
                is_human_theorem=human if isinstance(human, bool) else None,
                doc=d.get("doc") if isinstance(d.get("doc"), str) else None,
            )
            declarations[name] = decl
            decls.append(decl)

    modules = set(per_module)
    if (path / MODULES).is_file():
        for lineno, value in iter_ntp_jsonl(path / MODULES, report):
            obj = _object(value, path / MODULES, lineno)
            name = _req(obj, "name", str, path / MODULES, lineno)
            if not mathlib_only or is_mathlib_module(name):
                modules.add(name)

    # Imports (transitive lists; keep those the corpus has).
    imports: dict[str, list[str]] = {m: [] for m in modules}
    for module, file in _modules_in(path / IMPORTS):
        seen: set[str] = set()
        for lineno, value in iter_ntp_jsonl(file, report):
            obj = _object(value, file, lineno)
            name = _req(obj, "name", str, file, lineno)
            _opt(obj, "isDirect", bool, file, lineno)
            if module not in modules:
                continue
            if name == module or name in seen:
                continue
            seen.add(name)
            if name in modules:
                imports[module].append(name)
            else:
                report.imports_dropped += 1

    # Premises with positions.
    decl_pos: dict[str, Pos] = {}
    files: list[PremiseFile] = []
    for module in sorted(modules):
        decls = per_module.get(module, [])
        positioned = all(d.line is not None and d.column is not None for d in decls)
        if not positioned:
            report.modules_without_positions.append(module)
        premises = []
        for i, decl in enumerate(decls):
            if positioned and decl.line is not None and decl.column is not None:
                start = Pos(decl.line, decl.column)
            else:
                start = Pos(i + 1, 0)
            decl_pos[decl.name] = start
            premises.append(
                Premise(module, decl.name, decl.text, start, start, decl.kind or "unknown")
            )
        files.append(PremiseFile(module, sorted(imports.get(module, [])), premises))
    report.modules = len(files)
    corpus = Corpus(files)

    # Training states.
    states: list[NtpState] = []
    for module, file in _modules_in(path / TRAINING_DATA):
        index = 0
        per_decl: dict[str, int] = {}
        if mathlib_only and not is_mathlib_module(module):
            report.non_mathlib_states += sum(1 for _ in iter_ntp_jsonl(file, report))
            continue
        for lineno, value in iter_ntp_jsonl(file, report):
            d = _object(value, file, lineno)
            decl_name = _req(d, "declName", str, file, lineno)
            state = _req(d, "state", str, file, lineno)
            next_tactic = _opt(d, "nextTactic", str, file, lineno)
            src = _opt(d, "srcUpToTactic", str, file, lineno)
            if "nextTacticHammerRecommendation" not in d and "declHammerRecommendation" not in d:
                raise NtpToolkitFormatError(
                    "missing required field (one of nextTacticHammerRecommendation, "
                    "declHammerRecommendation)",
                    file=file,
                    line=lineno,
                    field="declHammerRecommendation",
                )
            lists: dict[str, tuple[str, ...]] = {}
            for key in ("nextTacticHammerRecommendation", "declHammerRecommendation"):
                raw = _opt(d, key, list, file, lineno) or []
                names = [
                    parse_recommendation(e, file=file, line=lineno, field=f"{key}[{i}]")[0]
                    for i, e in enumerate(raw)
                ]
                lists[key] = tuple(dict.fromkeys(names))
            if "declHammerRecommendation" not in d:
                lists["declHammerRecommendation"] = lists["nextTacticHammerRecommendation"]
            chosen = lists[
                "declHammerRecommendation"
                if premise_source == "declaration"
                else "nextTacticHammerRecommendation"
            ]
            kept: list[str] = []
            dropped: list[str] = []
            outside = module not in modules
            if outside:
                # Training data for a module without a Declarations file: it has no corpus entry
                # to be accessible from, so its states cannot be queried.
                report.states_outside_corpus += 1
            for name in chosen:
                report.premise_uses += 1
                if outside:
                    dropped.append(name)
                elif name in blacklist:
                    report.blacklisted_premise_uses += 1
                    dropped.append(name)
                elif name in filtered and corpus.get_premise(name) is None:
                    report.filtered_premise_uses += 1
                    dropped.append(name)
                elif name in non_mathlib and corpus.get_premise(name) is None:
                    report.non_mathlib_premise_uses += 1
                    dropped.append(name)
                elif corpus.get_premise(name) is None:
                    report.unknown_premise_uses += 1
                    if len(report.unknown_premise_examples) < 20:
                        report.unknown_premise_examples.append(f"{name} ({file}:{lineno})")
                    dropped.append(name)
                elif name == decl_name:
                    dropped.append(name)  # a declaration is never its own premise
                else:
                    kept.append(name)
            own = None if outside else corpus.get_premise(decl_name)
            pos: Pos | None
            if outside:
                pos = None
            elif own is not None and own.path == module:
                pos = decl_pos[decl_name]
            elif src is not None and module not in report.modules_without_positions:
                pos = _position_from_source(src)
            else:
                pos = None
                report.states_without_position += 1
            tactic_idx = per_decl.get(decl_name, 0)
            per_decl[decl_name] = tactic_idx + 1
            states.append(
                NtpState(
                    module=module,
                    index=index,
                    decl_name=decl_name,
                    state=state,
                    next_tactic=next_tactic,
                    premises=tuple(kept),
                    next_tactic_premises=lists["nextTacticHammerRecommendation"],
                    decl_premises=lists["declHammerRecommendation"],
                    pos=pos,
                    tactic_idx=tactic_idx,
                    dropped=tuple(dropped),
                    source_line=lineno,
                )
            )
            index += 1
            report.states += 1
            if not kept:
                report.states_without_premises += 1
    if report.unknown_premise_uses:
        logger.warning(
            "%s: %d premise use(s) name a constant that is not in Declarations (dropped), e.g. %s",
            path,
            report.unknown_premise_uses,
            ", ".join(report.unknown_premise_examples[:3]),
        )
    return NtpToolkitData(
        path=path,
        revision=revision,
        corpus=corpus,
        declarations=declarations,
        states=states,
        blacklist=blacklist,
        report=report,
        premise_source=premise_source,
        filtered=frozenset(filtered),
        nameless=nameless,
        mathlib_only=mathlib_only,
    )


# --------------------------------------------------------------------------- split


@dataclass(frozen=True)
class ModuleSplit:
    """Modules per split; every module with a usable state is in exactly one."""

    train: tuple[str, ...]
    valid: tuple[str, ...]
    test: tuple[str, ...]

    def of(self, module: str) -> str | None:
        for name in ("train", "valid", "test"):
            if module in getattr(self, name):
                return name
        return None

    def to_dict(self) -> dict[str, list[str]]:
        return {"train": list(self.train), "valid": list(self.valid), "test": list(self.test)}


def split_modules(
    modules: Sequence[str], *, valid: float = 0.1, test: float = 0.1, seed: int = 0
) -> ModuleSplit:
    """Split ``modules`` into train/valid/test, deterministically.

    Modules are sorted, shuffled with ``random.Random(seed)``; the first ``round(test * n)`` go to
    test, the next ``round(valid * n)`` to valid, the rest to train. With at least three modules,
    each of valid and test gets at least one when its fraction is positive (and train keeps one).
    The same modules, fractions and seed always give the same split.
    """
    import random

    if not (0 <= valid < 1 and 0 <= test < 1 and valid + test < 1):
        raise ValueError(f"valid ({valid}) and test ({test}) must be fractions summing below 1")
    names = sorted(set(modules))
    random.Random(seed).shuffle(names)
    n = len(names)
    n_test = round(test * n)
    n_valid = round(valid * n)
    if n >= 3:
        n_test = max(n_test, 1 if test > 0 else 0)
        n_valid = max(n_valid, 1 if valid > 0 else 0)
        while n_test + n_valid > n - 1:
            if n_valid >= n_test and n_valid > 0:
                n_valid -= 1
            else:
                n_test -= 1
    test_m = sorted(names[:n_test])
    valid_m = sorted(names[n_test : n_test + n_valid])
    train_m = sorted(names[n_test + n_valid :])
    return ModuleSplit(tuple(train_m), tuple(valid_m), tuple(test_m))
