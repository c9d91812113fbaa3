"""One traced Lean file: the extractor's JSON (trace schema 2, ``docs/tracing.md``; schema 1 is read
too) plus the source.

The extractor (``ExtractData.lean``) only reports what Lean knows — ranges of commands,
declarations, tactic steps with their goals, constants used in the source and where they are
defined. Everything the LeanDojo layout needs on top of that is computed here, without Lean:

- tactic text (re-read from the source; continuation lines lose the tactic's indentation, as in
  LeanDojo) and the annotated text with ``<a>…</a>`` around premises and their provenances;
- theorem records (``theorem_statement`` for tactic proofs, tactics filtered and de-duplicated the
  way LeanDojo does);
- the file's corpus entry (premises with their code and kind; imports as file paths);
- theorems whose proof uses ``sorry`` (from Lean's own warning, or a ``sorry`` token in the source).

Positions in the JSON are Lean's (1-based line, 0-based column in code points). LeanDojo positions
are 1-based in both, so columns get ``+ 1`` on the way out. Older tracers wrote byte offsets (a
number or ``{"byteIdx": n}``); those are accepted too.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeGuard, TypeVar, overload

from ..data import Annotation, Pos, Premise, PremiseFile, Theorem, TracedTactic
from ..data.sorry import find_sorry_tokens, strip_comments
from .errors import TraceFormatError

SCHEMA = "lean_dojo_v2.trace"
SCHEMA_VERSION = 2
NO_GOALS = "no goals"
SORRY_WARNING = "declaration uses 'sorry'"
# Lean's wording, with either quoting style (newer Lean quotes names with backticks).
_SORRY_WARNING = re.compile(r"declaration uses ['`]sorry['`]")
# The parent sequence of the per-rule steps of ``rw [a, b]`` (not LeanDojo records).
REWRITE_SEQ = "Lean.Parser.Tactic.rewriteSeq"

# (line, column) with Lean's conventions: 1-based line, 0-based column in code points.
LeanPos = tuple[int, int]
T = TypeVar("T")
# Maps a module name (and the .olean path Lean found for it, or "") to the file's path relative to
# the repository root, LeanDojo style; None when it cannot be placed.
ModuleResolver = Callable[[str, str], str | None]


@dataclass(frozen=True, slots=True)
class TraceCommand:
    kind: str
    start: LeanPos
    end: LeanPos
    value_starts: tuple[LeanPos, ...] = ()


@dataclass(frozen=True, slots=True)
class TraceDeclaration:
    name: str
    kind: str
    start: LeanPos
    end: LeanPos
    name_start: LeanPos
    name_end: LeanPos
    private: bool = False


@dataclass(frozen=True, slots=True)
class TraceTactic:
    """One tactic step. ``seq`` is the kind of the sequence it is a step of (schema 2;
    ``…rewriteSeq`` for a rule of ``rw [a, b]``); ``error`` says why its goals could not be
    printed (then both states are empty and the step is not recorded)."""

    start: LeanPos
    end: LeanPos
    state_before: str
    state_after: str
    kind: str | None = None
    seq: str | None = None
    error: str | None = None

    @property
    def is_rewrite_rule(self) -> bool:
        return self.seq == REWRITE_SEQ


@dataclass(frozen=True, slots=True)
class TracePremise:
    name: str
    start: LeanPos
    end: LeanPos
    module: str | None = None
    def_start: LeanPos | None = None
    def_end: LeanPos | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class TraceMessage:
    severity: str
    start: LeanPos
    text: str
    end: LeanPos | None = None


class SourceText:
    """A file's text with conversions between Lean positions, byte offsets and string indices."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._line_starts = [0]
        for m in re.finditer("\n", text):
            self._line_starts.append(m.end())
        self._byte_index: list[int] | None = None

    @property
    def num_lines(self) -> int:
        return len(self._line_starts)

    def index(self, pos: LeanPos) -> int:
        """String index of a Lean position (clamped to the line, as Lean's FileMap is)."""
        line, col = pos
        if line < 1 or line > len(self._line_starts):
            raise IndexError(f"line {line} is outside the file (1..{len(self._line_starts)})")
        start = self._line_starts[line - 1]
        stop = self._line_starts[line] - 1 if line < len(self._line_starts) else len(self.text)
        return min(start + col, stop)

    def position(self, index: int) -> LeanPos:
        line = bisect.bisect_right(self._line_starts, index)
        return (line, index - self._line_starts[line - 1])

    def from_bytes(self, offset: int) -> LeanPos:
        """Lean position of a UTF-8 byte offset (the form older tracers wrote)."""
        if self._byte_index is None:
            # byte offset at the start of each character, for bisection
            acc, index = 0, []
            for ch in self.text:
                index.append(acc)
                acc += len(ch.encode("utf-8"))
            index.append(acc)
            self._byte_index = index
        return self.position(bisect.bisect_left(self._byte_index, offset))

    def slice(self, start: LeanPos, end: LeanPos) -> str:
        return self.text[self.index(start) : self.index(end)]


def to_dojo(pos: LeanPos) -> Pos:
    """Lean position → LeanDojo ``Pos`` (both 1-based)."""
    return Pos(pos[0], pos[1] + 1)


# ------------------------------------------------------------------------------------ parsing


class _Reader:
    """Field access with errors that name the file and the field."""

    def __init__(self, where: str, source: SourceText) -> None:
        self.where = where
        self.source = source

    def fail(self, reason: str, field_: str) -> TraceFormatError:
        return TraceFormatError(f"{self.where}: {field_}: {reason}")

    def get(self, d: Mapping[str, Any], key: str, kind: type[T], at: str) -> T:
        if key not in d:
            raise self.fail("missing", f"{at}.{key}")
        value = d[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise self.fail(f"expected {kind.__name__}, got {type(value).__name__}", f"{at}.{key}")
        return value

    def opt(self, d: Mapping[str, Any], key: str, kind: type[T], at: str) -> T | None:
        if d.get(key) is None:
            return None
        return self.get(d, key, kind, at)

    @overload
    def pos(
        self, d: Mapping[str, Any], key: str, at: str, optional: Literal[False] = False
    ) -> LeanPos: ...

    @overload
    def pos(self, d: Mapping[str, Any], key: str, at: str, optional: bool) -> LeanPos | None: ...

    def pos(
        self, d: Mapping[str, Any], key: str, at: str, optional: bool = False
    ) -> LeanPos | None:
        value = d.get(key)
        if value is None:
            if optional:
                return None
            raise self.fail("missing", f"{at}.{key}")
        return self.pos_value(value, f"{at}.{key}")

    def pos_value(self, value: object, at: str) -> LeanPos:
        if isinstance(value, dict):
            if "line" in value and "column" in value:
                line, col = value["line"], value["column"]
                if _is_nat(line) and _is_nat(col) and line >= 1:
                    return (line, col)
                raise self.fail(f"bad position {value!r}", at)
            if "byteIdx" in value:
                return self.pos_value(value["byteIdx"], at)
            if isinstance(value.get("raw"), dict):
                return self.pos_value(value["raw"], at)
        elif _is_nat(value):
            return self.source.from_bytes(value)
        raise self.fail(
            f"expected a position ({{line, column}} or a byte offset), got {value!r}", at
        )

    def items(self, data: Mapping[str, Any], key: str) -> list[tuple[str, dict[str, Any]]]:
        values = data.get(key, [])
        if not isinstance(values, list):
            raise self.fail(f"expected a list, got {type(values).__name__}", key)
        out = []
        for i, v in enumerate(values):
            if not isinstance(v, dict):
                raise self.fail(f"expected an object, got {type(v).__name__}", f"{key}[{i}]")
            out.append((f"{key}[{i}]", v))
        return out


def _is_nat(v: object) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


# ------------------------------------------------------------------------------------ the file


@dataclass
class TracedFile:
    """A traced Lean file. ``path`` is relative to the repository root (dependencies under
    ``.lake/packages/<name>/``, Lean core under ``.lake/packages/lean4/src/lean/``)."""

    path: str
    module: str
    source: SourceText
    lean_version: str | None = None
    imports: list[str] = field(default_factory=list)
    import_paths: list[str] = field(default_factory=list)
    commands: list[TraceCommand] = field(default_factory=list)
    declarations: list[TraceDeclaration] = field(default_factory=list)
    tactics: list[TraceTactic] = field(default_factory=list)
    premises: list[TracePremise] = field(default_factory=list)
    premise_paths: dict[str, str] = field(default_factory=dict)  # module → file path
    messages: list[TraceMessage] = field(default_factory=list)
    # Items the extractor could not read (schema 2): ``{"what", "name"?, "text"}``, plus one
    # entry per tactic or premise that carries an ``error``.
    item_errors: list[dict[str, str]] = field(default_factory=list)
    # The package's Lean options the file was elaborated with (``NAME TYPE VALUE`` …).
    lean_options: list[str] = field(default_factory=list)
    # Lookup tables, built on first use.
    _primary: list[TraceDeclaration] | None = field(default=None, repr=False, compare=False)
    _command_starts: list[LeanPos] | None = field(default=None, repr=False, compare=False)
    _premise_starts: list[LeanPos] | None = field(default=None, repr=False, compare=False)
    _tactic_starts: list[LeanPos] | None = field(default=None, repr=False, compare=False)

    # -- loading ---------------------------------------------------------------------------

    @classmethod
    def from_json(
        cls,
        data: object,
        source: str,
        path: str,
        resolve: ModuleResolver | None = None,
        where: str | None = None,
    ) -> TracedFile:
        """Check ``data`` against the schema and build the file. ``resolve`` places modules
        (imports and where premises are defined) as files; without it only the file's own
        module is placed."""
        src = SourceText(source)
        r = _Reader(where or path, src)
        if not isinstance(data, dict):
            raise r.fail(f"expected a JSON object, got {type(data).__name__}", "(top)")
        schema = data.get("schema")
        version = data.get("schema_version")
        if schema != SCHEMA:
            raise r.fail(
                f"not a lean-dojo-v2 trace (schema {schema!r}, expected {SCHEMA!r})", "schema"
            )
        if not _is_nat(version) or version > SCHEMA_VERSION:
            raise r.fail(
                f"trace schema version {version!r} is not supported (this library reads up to "
                f"{SCHEMA_VERSION}); upgrade lean-dojo-v2 or re-trace",
                "schema_version",
            )
        module = r.get(data, "module", str, "")
        imports = r.get(data, "imports", list, "")
        for i, imp in enumerate(imports):
            if not isinstance(imp, str):
                raise r.fail(f"expected a module name, got {imp!r}", f"imports[{i}]")
        module_files = data.get("module_files", {})
        if not isinstance(module_files, dict) or not all(
            isinstance(v, str) for v in module_files.values()
        ):
            raise r.fail("expected an object of module name → .olean path", "module_files")

        commands = []
        for at, d in r.items(data, "commands"):
            if d.get("kind") == "Lean.Parser.Command.eoi":
                continue  # schema 1 wrote the end of input as a command
            starts = d.get("value_starts")
            if starts is None:
                single = d.get("value_start")
                starts = [] if single is None else [single]
            if not isinstance(starts, list):
                raise r.fail("expected a list of positions", f"{at}.value_starts")
            commands.append(
                TraceCommand(
                    kind=r.get(d, "kind", str, at),
                    start=r.pos(d, "start", at),
                    end=r.pos(d, "end", at),
                    value_starts=tuple(
                        r.pos_value(v, f"{at}.value_starts[{j}]") for j, v in enumerate(starts)
                    ),
                )
            )
        declarations = [
            TraceDeclaration(
                name=r.get(d, "name", str, at),
                kind=r.get(d, "kind", str, at),
                start=r.pos(d, "start", at),
                end=r.pos(d, "end", at),
                name_start=r.pos(d, "name_start", at),
                name_end=r.pos(d, "name_end", at),
                private=bool(d.get("private", False)),
            )
            for at, d in r.items(data, "declarations")
        ]
        item_errors: list[dict[str, str]] = []
        tactics = []
        for at, d in r.items(data, "tactics"):
            error = r.opt(d, "error", str, at)
            if error is not None:
                item_errors.append({"what": "tactic", "at": at, "text": error})
            tactics.append(
                TraceTactic(
                    start=r.pos(d, "start", at),
                    end=r.pos(d, "end", at),
                    state_before=("" if error is not None else r.get(d, "state_before", str, at)),
                    state_after=("" if error is not None else r.get(d, "state_after", str, at)),
                    kind=r.opt(d, "kind", str, at),
                    seq=r.opt(d, "seq", str, at),
                    error=error,
                )
            )
        premises = []
        for at, d in r.items(data, "premises"):
            error = r.opt(d, "error", str, at)
            if error is not None:
                item_errors.append(
                    {"what": "premise", "name": r.get(d, "name", str, at), "text": error}
                )
            premises.append(
                TracePremise(
                    name=r.get(d, "name", str, at),
                    start=r.pos(d, "start", at),
                    end=r.pos(d, "end", at),
                    module=r.opt(d, "module", str, at),
                    def_start=r.pos(d, "def_start", at, optional=True),
                    def_end=r.pos(d, "def_end", at, optional=True),
                    error=error,
                )
            )
        for at, d in r.items(data, "errors"):
            entry = {"what": r.get(d, "what", str, at), "text": r.get(d, "text", str, at)}
            name = r.opt(d, "name", str, at)
            if name is not None:
                entry["name"] = name
            item_errors.append(entry)
        lean_options = data.get("lean_options", [])
        if not isinstance(lean_options, list) or not all(isinstance(o, str) for o in lean_options):
            raise r.fail("expected a list of strings", "lean_options")
        messages = [
            TraceMessage(
                severity=r.get(d, "severity", str, at),
                start=r.pos(d, "start", at),
                text=r.get(d, "text", str, at),
                end=r.pos(d, "end", at, optional=True),
            )
            for at, d in r.items(data, "messages")
        ]
        for at, values in (
            ("commands", [(c.start, c.end) for c in commands]),
            ("declarations", [(d.start, d.end) for d in declarations]),
            ("tactics", [(t.start, t.end) for t in tactics]),
            ("premises", [(p.start, p.end) for p in premises]),
        ):
            for i, (s, e) in enumerate(values):
                if s > e or e[0] > src.num_lines:
                    raise r.fail(
                        f"range {s}–{e} does not fit the source ({src.num_lines} lines); is the "
                        "trace older than the file?",
                        f"{at}[{i}]",
                    )

        def place(mod: str) -> str | None:
            if mod == module:
                return path
            if resolve is None:
                return None
            return resolve(mod, module_files.get(mod, ""))

        import_paths = []
        for mod in imports:
            p = place(mod)
            if p is not None:
                import_paths.append(p)
        premise_paths = {}
        for mod in {p.module for p in premises if p.module}:
            p = place(mod)
            if p is not None:
                premise_paths[mod] = p
        version_text = data.get("lean_version")
        return cls(
            path=path,
            module=module,
            source=src,
            lean_version=version_text if isinstance(version_text, str) else None,
            imports=list(imports),
            import_paths=list(dict.fromkeys(import_paths)),
            commands=sorted(commands, key=lambda c: c.start),
            declarations=sorted(declarations, key=lambda d: (d.start, d.name)),
            tactics=sorted(tactics, key=lambda t: (t.start, t.end)),
            premises=sorted(premises, key=lambda p: (p.start, p.end)),
            premise_paths=premise_paths,
            messages=messages,
            item_errors=item_errors,
            lean_options=list(lean_options),
        )

    # -- declarations ----------------------------------------------------------------------

    def primary_declarations(self) -> list[TraceDeclaration]:
        """Declarations that are not inside another one (constructors, structure fields and
        ``where`` helpers are), one per name — the entries LeanDojo puts in the corpus."""
        if self._primary is None:
            # Outermost first: by start, and at equal starts the longest first.
            ordered = sorted(self.declarations, key=lambda d: (d.start, -d.end[0], -d.end[1]))
            out: list[TraceDeclaration] = []
            seen: set[str] = set()
            outer: TraceDeclaration | None = None
            for d in ordered:
                nested = (
                    outer is not None
                    and d.end <= outer.end
                    and (d.start, d.end) != (outer.start, outer.end)
                )
                if nested or d.name in seen:
                    continue
                seen.add(d.name)
                out.append(d)
                if outer is None or d.end > outer.end:
                    outer = d
            self._primary = sorted(out, key=lambda d: (d.start, d.name))
        return self._primary

    def command_of(self, decl: TraceDeclaration) -> TraceCommand | None:
        """The top-level command holding the declaration's name."""
        if self._command_starts is None:
            self._command_starts = [c.start for c in self.commands]
        i = bisect.bisect_right(self._command_starts, decl.name_start) - 1
        if i >= 0 and self.commands[i].start <= decl.name_start <= self.commands[i].end:
            return self.commands[i]
        return None

    def value_start(self, decl: TraceDeclaration) -> LeanPos | None:
        """Where the declaration's value (``:= …``, equations, ``where``) begins."""
        cmd = self.command_of(decl)
        if cmd is None:
            return None
        for v in cmd.value_starts:
            if decl.name_end <= v <= decl.end:
                return v
        return None

    def is_tactic_proof(self, decl: TraceDeclaration) -> bool:
        v = self.value_start(decl)
        if v is None:
            return False
        rest = strip_comments(self.source.text[self.source.index(v) : self.source.index(decl.end)])
        return re.match(r"\s*:=\s*by\b", rest) is not None

    def kind_of(self, decl: TraceDeclaration) -> str:
        """LeanDojo's ``kind`` of a corpus entry: the command's syntax kind without
        ``Lean.Parser.``, dots removed, lower case (``commanddeclaration``,
        ``mathlibtacticlemma``)."""
        cmd = self.command_of(decl)
        kind = cmd.kind if cmd is not None else "Lean.Parser.Command.declaration"
        if kind == "Lean.Parser.Command.mutual":
            kind = "Lean.Parser.Command.declaration"
        kind = kind.removeprefix("Lean.Parser.")
        return kind.replace(".", "").replace("_", "").lower()

    def code_of(self, decl: TraceDeclaration) -> str:
        """The declaration's source without comments; theorems stop before their proof."""
        end = decl.end
        if decl.kind == "theorem":
            v = self.value_start(decl)
            if v is not None:
                end = v
        return remove_comments(self.source.slice(decl.start, end))

    def premise_file(self, keep_import: Callable[[str], bool] | None = None) -> PremiseFile:
        """This file's ``corpus.jsonl`` entry. ``keep_import`` filters imports (e.g. to files that
        are in the corpus)."""
        premises = [
            Premise(
                full_name=d.name,
                code=self.code_of(d),
                start=to_dojo(d.start),
                end=to_dojo(d.end),
                kind=self.kind_of(d),
                path=self.path,
            )
            for d in self.primary_declarations()
        ]
        imports = [p for p in self.import_paths if keep_import is None or keep_import(p)]
        return PremiseFile(path=self.path, imports=imports, premises=premises)

    # -- tactics ---------------------------------------------------------------------------

    def tactic_text(self, t: TraceTactic) -> str:
        """The tactic's source with continuation lines dedented by its column (LeanDojo's
        ``tactic``; ``annotated_tactic`` keeps the raw indentation)."""
        return dedent_continuation(self.source.slice(t.start, t.end), t.start[1])

    def annotate(self, t: TraceTactic) -> tuple[str, list[Annotation]]:
        """The tactic's raw text with ``<a>…</a>`` around each premise it names, and their
        provenances in the same order."""
        raw = self.source.slice(t.start, t.end)
        base = self.source.index(t.start)
        spans = []
        for p in self._premises_in(t.start, t.end):
            s, e = self.source.index(p.start) - base, self.source.index(p.end) - base
            text = raw[s:e]
            if text.startswith("@"):
                s, text = s + 1, text[1:]
            if not _names(text, p.name):
                continue
            def_path = self.premise_paths.get(p.module or "")
            if def_path is None or p.def_start is None or p.def_end is None:
                continue
            # A constant at its own declaration is not a use (LeanDojo drops these too).
            if def_path == self.path and p.def_start == p.start:
                continue
            ann = Annotation(
                full_name=p.name,
                def_path=def_path,
                def_pos=to_dojo(p.def_start),
                def_end_pos=to_dojo(p.def_end),
            )
            spans.append((s, s + len(text), ann))
        return mark(raw, spans)

    def _premises_in(self, start: LeanPos, end: LeanPos) -> Iterable[TracePremise]:
        if self._premise_starts is None:
            self._premise_starts = [p.start for p in self.premises]
        starts = self._premise_starts
        i = bisect.bisect_left(starts, start)
        while i < len(self.premises) and self.premises[i].start < end:
            p = self.premises[i]
            if p.end <= end:
                yield p
            i += 1

    def steps_of(self, decl: TraceDeclaration) -> list[TraceTactic]:
        """The declaration's steps as LeanDojo's records take them: one per source range (when a
        step ran several times — ``all_goals``, ``iterate`` — the last run, as LeanDojo keeps the
        last info it sees for a range), without the rule steps of ``rw [a, b]`` and without
        steps whose goals could not be printed; in source order."""
        if self._tactic_starts is None:
            self._tactic_starts = [t.start for t in self.tactics]
        first = bisect.bisect_left(self._tactic_starts, decl.start)
        last = bisect.bisect_right(self._tactic_starts, decl.end)
        by_range: dict[tuple[LeanPos, LeanPos], TraceTactic] = {}
        for t in self.tactics[first:last]:  # sorted by range, extractor order within a range
            if t.end > decl.end or t.is_rewrite_rule:
                continue
            by_range[(t.start, t.end)] = t
        return [t for t in by_range.values() if t.error is None]

    def traced_tactics(self, decl: TraceDeclaration) -> list[TracedTactic]:
        """The declaration's tactic steps as LeanDojo records them (:meth:`steps_of`): without
        steps that start from no goals or change nothing, without focusing dots ``·``, and each
        (state before, tactic, state after) once."""
        out: list[TracedTactic] = []
        seen: set[tuple[str, str, str]] = set()
        for t in self.steps_of(decl):
            if t.state_before == NO_GOALS or t.state_before == t.state_after:
                continue
            text = self.tactic_text(t)
            if "·" in text:
                continue
            key = (t.state_before, text, t.state_after)
            if key in seen:
                continue
            seen.add(key)
            marked, annotations = self.annotate(t)
            out.append(
                TracedTactic(
                    tactic=text,
                    annotated_tactic=marked,
                    state_before=t.state_before,
                    state_after=t.state_after,
                    annotations=annotations,
                )
            )
        return out

    # -- theorems --------------------------------------------------------------------------

    def theorem_declarations(self) -> list[TraceDeclaration]:
        return [d for d in self.primary_declarations() if d.kind == "theorem"]

    def statement_of(self, decl: TraceDeclaration) -> str | None:
        """Source from the start of the theorem to its ``:= by``, without comments; None for
        proofs that are not tactic blocks (as LeanDojo-v2 writes it)."""
        if not self.is_tactic_proof(decl):
            return None
        v = self.value_start(decl)
        assert v is not None
        return remove_comments(self.source.slice(decl.start, v))

    def theorems(self, url: str, commit: str) -> list[Theorem]:
        return [
            Theorem(
                url=url,
                commit=commit,
                file_path=self.path,
                full_name=d.name,
                start=to_dojo(d.start),
                end=to_dojo(d.end),
                traced_tactics=self.traced_tactics(d),
                theorem_statement=self.statement_of(d),
                has_statement_field=True,
            )
            for d in self.theorem_declarations()
        ]

    def sorry_declarations(self) -> list[TraceDeclaration]:
        """Declarations whose proof uses ``sorry``: Lean's ``declaration uses 'sorry'`` warning
        points into them, or a ``sorry`` token lies in their source."""
        warned = [m.start for m in self.messages if _SORRY_WARNING.search(m.text)]
        # find_sorry_tokens gives 1-based columns; Lean's are 0-based.
        tokens = (
            [(line, col - 1) for line, col in find_sorry_tokens(self.source.text)]
            if "sorry" in self.source.text
            else []
        )
        out = []
        for d in self.primary_declarations():
            if any(d.start <= p <= d.end for p in warned) or any(
                d.start <= p < d.end for p in tokens
            ):
                out.append(d)
        return out

    def errors(self) -> list[TraceMessage]:
        return [m for m in self.messages if m.severity == "error"]


# --------------------------------------------------------------------------------- helpers


def dedent_continuation(text: str, column: int) -> str:
    """Remove up to ``column`` leading spaces from every line after the first."""
    if "\n" not in text or column <= 0:
        return text
    first, *rest = text.split("\n")
    out = [first]
    for line in rest:
        n = len(line) - len(line.lstrip(" "))
        out.append(line[min(n, column) :])
    return "\n".join(out)


def mark(raw: str, spans: list[tuple[int, int, Annotation]]) -> tuple[str, list[Annotation]]:
    """Wrap each span in ``<a>…</a>``; overlapping spans keep the earliest (outermost)."""
    spans = sorted(spans, key=lambda s: (s[0], -s[1]))
    parts: list[str] = []
    annotations: list[Annotation] = []
    last = 0
    for s, e, ann in spans:
        if s < last or e <= s:
            continue
        parts.append(raw[last:s])
        parts.append(f"<a>{raw[s:e]}</a>")
        annotations.append(ann)
        last = e
    parts.append(raw[last:])
    return "".join(parts), annotations


_IDENT = re.compile(r"[^\s()\[\]{},:;⟨⟩]+")


def _names(text: str, full_name: str) -> bool:
    """Does source ``text`` name the constant ``full_name`` (the whole name, or a suffix at a
    namespace boundary — ``add_comm`` under ``open Nat``; ``_root_.`` and «» allowed)?"""
    if not text or _IDENT.fullmatch(text) is None:
        return False
    name = text.removeprefix("_root_.").replace("«", "").replace("»", "")
    full = full_name.replace("«", "").replace("»", "")
    return full == name or full.endswith("." + name)


def remove_comments(text: str) -> str:
    """``text`` without comments: comment-only lines go, trailing blanks go, ends are stripped."""
    blanked = strip_comments(text)
    original = text.split("\n")
    lines = []
    for before, after in zip(original, blanked.split("\n"), strict=True):
        stripped = after.rstrip()
        if stripped or not before.strip():
            lines.append(stripped)
    return "\n".join(lines).strip()


def load_trace(
    json_path: str | Path,
    source_path: str | Path,
    path: str,
    resolve: ModuleResolver | None = None,
) -> TracedFile:
    """Read an extractor output and its source file."""
    from ..data.jsonio import read_json
    from ..errors import DataFormatError

    try:
        data = read_json(json_path)
    except DataFormatError as exc:
        raise TraceFormatError(f"{json_path}: {exc}") from exc
    try:
        source = Path(source_path).read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise TraceFormatError(f"{json_path}: its source {source_path} does not exist") from exc
    return TracedFile.from_json(data, source, path, resolve, where=str(json_path))
