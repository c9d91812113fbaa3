#!/usr/bin/env python3
"""A fake Pantograph REPL: speaks the wire protocol of ``pantograph-repl`` (0.3.15 shapes, or
v0.3.4's with ``FAKE_PANTOGRAPH_VERSION=0.3.4``) on stdin/stdout, with goal states taken only
from transitions recorded by real Lean runs.

Run it like the real binary::

    python tests/fake_pantograph/fake_repl.py [--key=value ...] [Module ...]
    python tests/fake_pantograph/fake_repl.py --version

See ``README.md`` beside this file for the environment switches and the magic tactics.
Protocol reference: ``shared/docs/pantograph_and_tracing.md`` §1.
"""

from __future__ import annotations

import bisect
import json
import os
import random
import re
import sys
import time
import traceback
from pathlib import Path
from typing import Any

# What `--version` prints. Pantograph's Version.lean holds a bare "0.3.x" at v0.3.4 and again from
# 0.3.9 on (PyPantograph 0.3.15's test expects "0.3.15"); 0.3.5-0.3.8 printed "0.3.7/v4.21.0".
DEFAULT_VERSION = "0.3.15"
# The newest server whose shapes differ from the newest: <= this behaves as Pantograph v0.3.4.
LEGACY_MAX = (0, 3, 4)
SLEEP_FOREVER = 3600.0


def write_stdout(text: str) -> None:
    try:
        sys.stdout.buffer.write(text.encode("utf-8"))
        sys.stdout.buffer.flush()
    except BrokenPipeError:
        os._exit(0)


def write_stderr(text: str) -> None:
    try:
        sys.stderr.buffer.write(text.encode("utf-8"))
        sys.stderr.buffer.flush()
    except BrokenPipeError:
        pass


def _toolchain_here(want: str) -> bool:
    """True when ``want`` is the toolchain elan would pick here: named by LEAN_SYSROOT's
    directory name or by a ``lean-toolchain`` file in the working directory or above."""
    if os.environ.get("LEAN_SYSROOT"):
        return True
    here = Path.cwd()
    for d in (here, *here.parents):
        f = d / "lean-toolchain"
        if f.is_file():
            return f.read_text(encoding="utf-8").strip() == want.strip()
    return False


def sleep_forever() -> None:
    while True:
        time.sleep(SLEEP_FOREVER)


def fake_version() -> str:
    return os.environ.get("FAKE_PANTOGRAPH_VERSION", DEFAULT_VERSION)


def version_tuple(text: str) -> tuple[int, ...]:
    m = re.match(r"\s*v?(\d+(?:\.\d+)*)", text)
    return tuple(int(x) for x in m.group(1).split(".")) if m else ()


def is_legacy() -> bool:
    """True when the fake plays a Pantograph <= v0.3.4 (``FAKE_PANTOGRAPH_VERSION``)."""
    v = version_tuple(fake_version())
    return bool(v) and v <= LEGACY_MAX


# Lean core options the fake knows (name -> type), as `getOptionDefaultValue` would find them.
KNOWN_CORE_OPTIONS = {
    "maxHeartbeats": "Nat",
    "maxRecDepth": "Nat",
    "synthInstance.maxHeartbeats": "Nat",
    "synthInstance.maxSize": "Nat",
    "pp.all": "Bool",
    "pp.raw": "Bool",
    "pp.proofs": "Bool",
    "pp.fieldNotation": "Bool",
    "pp.notation": "Bool",
    "pp.funBinderTypes": "Bool",
    "autoImplicit": "Bool",
    "relaxedAutoImplicit": "Bool",
    "linter.all": "Bool",
    "trace.profiler": "Bool",
}


def parse_core_option(entry: str) -> tuple[str, str]:
    """One ``key=value`` as Pantograph's ``setOptionFromString'`` (Library.lean) reads it: a
    malformed entry or a bad value is ``Options cannot be parsed: ...`` (ValueError); an unknown
    key is Lean's ``unknown option '...'`` (LookupError), an IO error that escapes uncaught."""
    parts = [p.strip() for p in entry.split("=")]
    if len(parts) != 2:
        raise ValueError(
            "invalid configuration option entry, it must be of the form '<key> = <value>'"
        )
    key, value = parts
    kind = KNOWN_CORE_OPTIONS.get(key)
    if kind is None:
        raise LookupError(f"unknown option '{key}'")
    if kind == "Bool" and value not in ("true", "false"):
        raise ValueError(f"invalid Bool option value '{value}'")
    if kind == "Nat" and not value.isdigit():
        raise ValueError(f"invalid Nat option value '{value}'")
    return key, value


def split_arguments(argv: list[str]) -> tuple[list[str], list[str]]:
    """(``--`` arguments without the dashes, module names), as Main.lean partitions them."""
    options = [a[2:] for a in argv if a.startswith("--")]
    modules = [a for a in argv if not a.startswith("--")]
    return options, modules


def core_options_of(entries: list[str]) -> dict[str, str]:
    return dict(parse_core_option(e) for e in entries)


def startup_checks(argv: list[str]) -> int | None:
    """What happens before the (slow) library import: ``--version``, a malformed core option and
    the start-up failure switches. Returns an exit status, or None to go on."""
    if argv == ["--version"]:
        write_stdout(fake_version() + "\n")
        return 0
    try:  # createCoreContext runs before createCoreState (the import)
        core_options_of(split_arguments(argv)[0])
    except ValueError as exc:
        write_stderr(f"uncaught exception: Options cannot be parsed: {exc}\n")
        return 1
    except LookupError as exc:
        write_stderr(f"uncaught exception: {exc.args[0]}\n")
        return 1
    need = os.environ.get("FAKE_PANTOGRAPH_NEED_TOOLCHAIN")
    if need and not _toolchain_here(need):
        # elan resolved the toolchain from the working directory (its default without a
        # lean-toolchain file): the Init .olean files are of another Lean version.
        write_stderr(
            "uncaught exception: failed to read file "
            f"'{Path.home()}/.elan/toolchains/leanprover--lean4---stable/lib/lean/Init.olean', "
            "invalid header\n"
        )
        return 1
    if os.environ.get("FAKE_PANTOGRAPH_NO_READY") == "1":
        olean = Path.cwd() / ".lake/packages/mathlib/.lake/build/lib/lean/Mathlib.olean"
        write_stderr(f"uncaught exception: failed to read file '{olean}', invalid header\n")
        return 1
    if os.environ.get("FAKE_PANTOGRAPH_HANG_START") == "1":
        sleep_forever()
    return None


if __name__ == "__main__":  # answer these before importing the library, like the real binary
    _early = startup_checks(sys.argv[1:])
    if _early is not None:
        sys.exit(_early)

REPO_ROOT = Path(__file__).resolve().parents[2]
try:
    import lean_dojo_v2  # noqa: F401
except ImportError:  # not installed into this interpreter: use the checkout beside us
    sys.path.insert(0, str(REPO_ROOT))

from lean_dojo_v2.data import (  # noqa: E402
    Theorem,
    find_declarations,
    load_theorems,
    sample_dataset_path,
    strip_comments,
)
from lean_dojo_v2.data.goals import goal_texts, parse_goal  # noqa: E402
from lean_dojo_v2.interaction.replay import (  # noqa: E402
    TransitionTable,
    normalize_tactic,
    split_tactics,
)

MINIF2F_RELATIVE = Path("minictx") / "derived" / "minif2f_test_traced_tactics.json"

NOT_RECORDED = "unknown tactic (not among recorded transitions)"
NOT_EMULATED = "the fake Pantograph REPL does not emulate"
INTERRUPT = {"error": "io", "desc": "interrupt"}
# A `frontend.process` stopped by the `timeout` option: the interrupt escapes the command
# elaborator. Newer Lean: an `io` error object; older Lean (the v0.3.4 shape): an error message
# inside the unit. Neither says just "interrupt".
FRONTEND_INTERRUPT = {"error": "io", "desc": "unexpected internal error: interrupt"}
LEGACY_FRONTEND_INTERRUPT = "internal exception: interrupt"
HUGE_BYTES = 10 * 1024 * 1024


class FrontendInterrupted(Exception):
    """The REPL `timeout` stopped a `frontend.process`."""


def statement_signature(statement: str, named: bool = True) -> str:
    """A declaration's binders and type, white space collapsed: the text between its name
    (``named``: the first word, after an optional ``theorem``/``lemma``) and the top-level
    ``:=``. Empty when there is none."""
    text = statement.strip()
    if named:
        text = re.sub(r"^(theorem|lemma)\s+", "", text)
        m = re.match(r"(«[^»]*»|[^\s(\[{⦃:]+)", text)
        if m is None:
            return ""
        text = text[m.end() :]
    depth = 0
    for i, ch in enumerate(text):
        if ch in "([{⟨⦃":
            depth += 1
        elif ch in ")]}⟩⦄":
            depth -= 1
        elif depth == 0 and text.startswith(":=", i):
            return " ".join(text[:i].split())
    return ""


class CommandError(Exception):
    """A protocol error answer ``{"error": kind, "desc": desc}``."""

    def __init__(self, kind: str, desc: str) -> None:
        super().__init__(desc)
        self.kind = kind
        self.desc = desc

    def to_json(self) -> dict[str, Any]:
        return {"error": self.kind, "desc": self.desc}


# ---------------------------------------------------------------------------------------------
# JSON out: Lean's ``Json.compress`` (raw UTF-8; only ", \, \n, \r and controls < 0x20 escaped).
# ---------------------------------------------------------------------------------------------

_ESCAPE = re.compile(r'[\x00-\x1f"\\]')
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r"}


def _escape_char(match: re.Match[str]) -> str:
    c = match.group()
    return _ESCAPES.get(c) or f"\\u{ord(c):04x}"


def _encode(value: Any, out: list[str], rng: random.Random | None) -> None:
    if isinstance(value, str):
        out.append('"' + _ESCAPE.sub(_escape_char, value) + '"')
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, float):
        out.append(json.dumps(value))
    elif isinstance(value, dict):
        keys = list(value)
        if rng is None:
            keys.sort()
        else:
            rng.shuffle(keys)
        out.append("{")
        for i, key in enumerate(keys):
            if i:
                out.append(",")
            _encode(str(key), out, None)
            out.append(":")
            _encode(value[key], out, rng)
        out.append("}")
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _encode(item, out, rng)
        out.append("]")
    else:  # pragma: no cover - programming error
        raise TypeError(f"cannot encode {type(value).__name__}")


def compress(value: Any, rng: random.Random | None = None) -> str:
    """One line of compact JSON; keys ascending, or shuffled at every level when ``rng`` is given."""
    out: list[str] = []
    _encode(value, out, rng)
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# JSON in: Lean's derived ``FromJson`` (every field without ``?`` is required).
# ---------------------------------------------------------------------------------------------

NAT, BOOL, STR, NAME, JSON = "Nat", "Bool", "String", "Name", "Json"


def ARR(elem: Any) -> tuple[str, Any]:
    return ("arr", elem)


def OPT(inner: Any) -> tuple[str, Any]:
    return ("opt", inner)


_OPTIONS_FIELDS = [
    ("printJsonPretty", OPT(BOOL)),
    ("printExprPretty", OPT(BOOL)),
    ("printExprAST", OPT(BOOL)),
    ("printDependentMVars", OPT(BOOL)),
    ("noRepeat", OPT(BOOL)),
    ("printAuxDecls", OPT(BOOL)),
    ("printImplementationDetailHyps", OPT(BOOL)),
    ("automaticMode", OPT(BOOL)),
    ("timeout", OPT(NAT)),
]

# Structure name and fields, in declaration order, per command (Pantograph/Protocol.lean).
SPECS: dict[str, tuple[str, list[tuple[str, Any]]]] = {
    "reset": ("Reset", []),
    "stat": ("Stat", []),
    "options.set": ("OptionsSet", _OPTIONS_FIELDS),
    "options.print": ("OptionsPrint", []),
    "expr.echo": ("ExprEcho", [("expr", STR), ("type", OPT(STR)), ("levels", OPT(ARR(NAME)))]),
    "env.describe": ("EnvDescribe", []),
    "env.module_read": ("EnvModuleRead", [("module", NAME)]),
    "env.catalog": (
        "EnvCatalog",
        [("filename", STR), ("modulePrefix", OPT(NAME)), ("invertFilter", BOOL)],
    ),
    "env.inspect": (
        "EnvInspect",
        [("name", NAME), ("value", OPT(BOOL)), ("dependency", OPT(BOOL)), ("source", OPT(BOOL))],
    ),
    "env.add": (
        "EnvAdd",
        [
            ("name", NAME),
            ("levels", OPT(ARR(NAME))),
            ("type", OPT(STR)),
            ("value", STR),
            ("isTheorem", BOOL),
        ],
    ),
    "env.save": ("EnvSaveLoad", [("path", STR)]),
    "env.load": ("EnvSaveLoad", [("path", STR)]),
    "env.parse": ("EnvParse", [("input", STR), ("category", NAME)]),
    "goal.start": (
        "GoalStart",
        [("expr", OPT(STR)), ("levels", OPT(ARR(NAME))), ("copyFrom", OPT(NAME))],
    ),
    "goal.tactic": (
        "GoalTactic",
        [
            ("stateId", NAT),
            ("goalId", OPT(NAT)),
            ("autoResume", OPT(BOOL)),
            ("tactic", OPT(STR)),
            ("mode", OPT(STR)),
            ("expr", OPT(STR)),
            ("have", OPT(STR)),
            ("let", OPT(STR)),
            ("draft", OPT(STR)),
            ("binderName", OPT(NAME)),
        ],
    ),
    "goal.continue": (
        "GoalContinue",
        [("target", NAT), ("branch", OPT(NAT)), ("goals", OPT(ARR(NAME)))],
    ),
    "goal.subsume": (
        "GoalSubsume",
        [("stateId", NAT), ("goal", NAME), ("srcStateId", OPT(NAT)), ("candidates", ARR(NAME))],
    ),
    "goal.delete": ("GoalDelete", [("stateIds", ARR(NAT))]),
    "goal.print": (
        "GoalPrint",
        [
            ("stateId", NAT),
            ("rootExpr", OPT(BOOL)),
            ("parentExprs", OPT(BOOL)),
            ("goals", OPT(BOOL)),
            ("extraMVars", OPT(ARR(NAME))),
        ],
    ),
    "goal.save": ("GoalSave", [("id", NAT), ("path", STR)]),
    "goal.load": ("GoalLoad", [("path", STR)]),
    "frontend.process": (
        "FrontendProcess",
        [
            ("fileName", OPT(STR)),
            ("file", OPT(STR)),
            ("readHeader", BOOL),
            ("inheritEnv", BOOL),
            ("invocations", OPT(STR)),
            ("newConstants", BOOL),
        ],
    ),
    "frontend.distil": (
        "FrontendDistil",
        [("file", STR), ("binderName", OPT(NAME)), ("ignoreValues", BOOL)],
    ),
}

# Pantograph v0.3.4 (Protocol.lean at tag v0.3.4): `frontend.process` also has the Bool fields
# `sorrys` and `typeErrorsAsGoals`; like every Bool field they must be present (Lean's derived
# FromJson reads a missing field as null). Commands added after v0.3.4 are unknown there.
LEGACY_SPECS: dict[str, tuple[str, list[tuple[str, Any]]]] = {
    "frontend.process": (
        "FrontendProcess",
        [
            ("fileName", OPT(STR)),
            ("file", OPT(STR)),
            ("readHeader", BOOL),
            ("inheritEnv", BOOL),
            ("invocations", OPT(STR)),
            ("sorrys", BOOL),
            ("typeErrorsAsGoals", BOOL),
            ("newConstants", BOOL),
        ],
    ),
}
LEGACY_UNKNOWN = frozenset({"frontend.distil", "env.parse", "goal.subsume"})

_TYPE_ERRORS = {
    NAT: "Natural number expected",
    BOOL: "Bool expected",
    STR: "String expected",
    NAME: "String expected",
}


def _check(value: Any, spec: Any) -> tuple[bool, Any, str]:
    """(ok, decoded value, error message) for one JSON value against a field type."""
    if isinstance(spec, tuple):
        kind, inner = spec
        if kind == "opt":
            if value is None:
                return True, None, ""
            return _check(value, inner)
        if not isinstance(value, list):
            return False, None, f"expected JSON array, got '{compress(value)}'"
        items = []
        for item in value:
            ok, decoded, err = _check(item, inner)
            if not ok:
                return False, None, err
            items.append(decoded)
        return True, items, ""
    if spec == JSON:
        return True, value, ""
    if spec == NAT:
        ok = type(value) is int and value >= 0
    elif spec == BOOL:
        ok = type(value) is bool
    else:
        ok = type(value) is str
    return (True, value, "") if ok else (False, None, _TYPE_ERRORS[spec])


def decode_payload(cmd: str, payload: Any, legacy: bool = False) -> dict[str, Any]:
    struct, fields = (LEGACY_SPECS.get(cmd) if legacy else None) or SPECS[cmd]
    obj = payload if isinstance(payload, dict) else {}
    args: dict[str, Any] = {}
    for name, spec in fields:
        ok, value, err = _check(obj.get(name), spec)
        if not ok:
            raise CommandError(
                "command", f"Unable to parse json: Pantograph.Protocol.{struct}.{name}: {err}"
            )
        args[name] = value
    return args


def parse_request(line: str) -> tuple[str, Any]:
    """``<cmd> <json>`` or ``{"cmd": ..., "payload": ...}``, exactly as Main.lean's
    ``parseCommand``: JSON mode when the trimmed line starts with ``{``; otherwise the command is
    everything before the first space of the line *as read* (its newline included), so a command
    without a payload (``stat\\n``) is the unknown command ``stat\\n``."""
    if line.strip().startswith("{"):
        obj = _json_loads(line)
        if not isinstance(obj, dict) or not isinstance(obj.get("cmd"), str):
            raise CommandError("command", "Pantograph.Protocol.Command.cmd: String expected")
        return obj["cmd"], obj.get("payload")
    cut = line.find(" ")
    if cut < 0:
        return line, None
    return line[:cut], _json_loads(line[cut:])


def _json_loads(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CommandError("command", f"offset {exc.pos}: {exc.msg}") from None
    except RecursionError:
        raise CommandError("command", "offset 0: nesting too deep") from None


# ---------------------------------------------------------------------------------------------
# Recorded data.
# ---------------------------------------------------------------------------------------------

# The real data bundled with the tests (a trimmed copy of shared/data, same layout).
REAL_DATA = REPO_ROOT / "tests" / "data" / "real"


def minif2f_theorems(records: list[dict[str, Any]]) -> list[Theorem]:
    """miniCTX's derived miniF2F-test chains → :class:`Theorem` (malformed chains skipped): the
    library's reader, which also builds the quickstart's bundled copy."""
    from lean_dojo_v2.quickstart.minif2f import chains_to_theorems

    return chains_to_theorems(records)


def _load_path(path: Path) -> list[Theorem]:
    if path.is_file():
        with path.open(encoding="utf-8") as f:
            head = f.read(4096)
        if '"url"' not in head and '"statement"' in head:
            with path.open(encoding="utf-8") as f:
                return minif2f_theorems(json.load(f))
    return load_theorems(path)


def load_recorded_theorems() -> list[Theorem]:
    spec = os.environ.get("FAKE_PANTOGRAPH_DATA")
    if spec:
        theorems: list[Theorem] = []
        for part in spec.split(os.pathsep):
            if part:
                theorems.extend(_load_path(Path(part)))
        return theorems
    theorems = load_theorems(sample_dataset_path())
    theorems.extend(_load_path(REAL_DATA / MINIF2F_RELATIVE))
    return theorems


def module_of(theorem: Theorem) -> str:
    path = theorem.file_path
    if path.endswith(".lean"):
        path = path[: -len(".lean")]
    return path.replace("/", ".")


def _mentions(name: str, text: str) -> bool:
    return re.search(r"(?<![\w.'])" + re.escape(name) + r"(?![\w'!?])", text) is not None


def telescope(goal_text: str) -> str:
    """An initial goal as the theorem's type: ``∀ (x : T), P → Q`` (approximates Lean's pp)."""
    goal = parse_goal(goal_text)
    hyps = list(goal.hypotheses)
    parts: list[str] = []
    binders: list[str] = []
    for i, hyp in enumerate(hyps):
        rest = " ".join([*(h.type for h in hyps[i + 1 :]), goal.target])
        if hyp.names and any(_mentions(n, rest) for n in hyp.names):
            binders.append(f"({' '.join(hyp.names)} : {hyp.type})")
            continue
        if binders:
            parts.append(f"∀ {' '.join(binders)}, ")
            binders = []
        parts.append(f"{hyp.type} → ")
    if binders:
        parts.append(f"∀ {' '.join(binders)}, ")
    return "".join(parts) + goal.target


# ---------------------------------------------------------------------------------------------
# Goal states.
# ---------------------------------------------------------------------------------------------


class Var:
    __slots__ = ("name", "user", "type", "value", "repeated")

    def __init__(self, name: str, user: str, type_: str, value: str | None, repeated: bool):
        self.name, self.user, self.type, self.value, self.repeated = (
            name,
            user,
            type_,
            value,
            repeated,
        )


class GoalRec:
    """One goal (a metavariable): its name, canonical text and parsed pieces."""

    __slots__ = ("name", "text", "case", "target", "vars")

    def __init__(self, name: str, text: str, case: str | None, target: str, vars_: list[Var]):
        self.name, self.text, self.case, self.target, self.vars = name, text, case, target, vars_


class GState:
    """A stored goal state. ``known`` holds every goal of the proof tree so far (dormant ones
    included); ``assigned`` the names of those already solved."""

    __slots__ = (
        "goals",
        "root",
        "known",
        "assigned",
        "has_sorry",
        "root_has_sorry",
        "script",
        "parent_count",
    )

    def __init__(
        self,
        goals: list[GoalRec],
        root: str,
        known: dict[str, GoalRec],
        assigned: frozenset[str],
        has_sorry: bool = False,
        root_has_sorry: bool = False,
        script: tuple[str, ...] = (),
        parent_count: int = 0,
    ) -> None:
        self.goals = goals
        self.root = root
        self.known = known
        self.assigned = assigned
        self.has_sorry = has_sorry
        self.root_has_sorry = root_has_sorry
        self.script = script
        self.parent_count = parent_count

    @property
    def solved(self) -> bool:
        return all(name in self.assigned for name in self.known)


class TacticFailure(Exception):
    def __init__(self, data: str) -> None:
        super().__init__(data)
        self.data = data


_OPENERS = {"(": ")", "[": "]", "{": "}", "⟨": "⟩"}
_CLOSERS = set(_OPENERS.values())


def syntax_error(text: str, file_name: str = "<Pantograph>") -> str | None:
    """A parse error for empty input or unbalanced brackets (strings and ``--`` comments skipped)."""
    if not text.strip():
        return f"{file_name}:1:0: unexpected end of input"
    stack: list[str] = []
    line, col, i, n = 1, 0, 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\n":
            line, col, i = line + 1, 0, i + 1
            continue
        if ch == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            col += min(j + 1, n) - i
            i = j + 1
            continue
        if ch == "-" and text.startswith("--", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            col += j - i
            i = j
            continue
        if ch in _OPENERS:
            stack.append(_OPENERS[ch])
        elif ch in _CLOSERS:
            if not stack or stack[-1] != ch:
                expected = f"'{stack[-1]}'" if stack else "end of input"
                return f"{file_name}:{line}:{col}: unexpected token '{ch}'; expected {expected}"
            stack.pop()
        col += 1
        i += 1
    if stack:
        return f"{file_name}:{line}:{col}: unexpected end of input; expected '{stack[-1]}'"
    return None


def split_sequence(tactic: str) -> list[str]:
    """A tactic sequence's steps: lines at the base indentation, else top-level ``;``."""
    steps = split_tactics(tactic)
    if len(steps) > 1:
        return steps
    text = tactic.strip()
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in _OPENERS:
            depth += 1
        elif ch in _CLOSERS:
            depth -= 1
        elif ch == ";" and depth == 0 and text[i - 1 : i] != "<" and text[i + 1 : i + 2] != ">":
            out.append(text[start:i].strip())
            start = i + 1
    out.append(text[start:].strip())
    return [s for s in out if s]


# Magic tactics that also act inside a proof given to frontend.process.
_FRONTEND_MAGIC = frozenset({"fake_hang", "fake_crash", "fake_sleep"})
_SORRY_TACTICS = frozenset(
    {"sorry", "admit", "fake_sorry", "exact sorry", "apply sorry", "refine sorry", "· sorry"}
)


def is_sorry_tactic(tactic: str) -> bool:
    """Tactics that close the main goal with ``sorry`` (success with ``hasSorry: true``)."""
    return normalize_tactic(tactic) in _SORRY_TACTICS


# ---------------------------------------------------------------------------------------------
# The REPL.
# ---------------------------------------------------------------------------------------------


class FakeRepl:
    def __init__(self, modules: list[str], core_options: dict[str, str]) -> None:
        self.modules = modules
        self.core_options = core_options
        self.options: dict[str, Any] = {
            "printJsonPretty": False,
            "printExprPretty": True,
            "printExprAST": False,
            "printDependentMVars": False,
            "noRepeat": False,
            "printAuxDecls": False,
            "printImplementationDetailHyps": False,
            "automaticMode": True,
            "timeout": 0,
        }
        self.states: dict[int, GState] = {}
        self.next_id = 0
        self.uniq = 0
        self.env_constants: dict[str, dict[str, Any]] = {}
        theorems = load_recorded_theorems()
        self.table = TransitionTable.from_theorems(theorems)
        self.theorems = {t.full_name: t for t in theorems}
        self.by_signature: dict[str, str] = {}
        for t in theorems:
            sig = statement_signature(t.theorem_statement or "")
            if sig:
                self.by_signature.setdefault(sig, t.full_name)
        self.legacy = is_legacy()
        # Test switch, unlike the real server: copyFrom answers the recorded first state (for
        # tests of tactic mechanics on B4 sample theorems, whose statements are not recorded).
        self.copy_from_recorded = os.environ.get("FAKE_PANTOGRAPH_COPYFROM_RECORDED") == "1"
        # Cooperative cancellation: an interrupted tactic answers this many seconds late.
        self.lateness = float(os.environ.get("FAKE_PANTOGRAPH_INTERRUPT_LATENESS") or 0)
        seed = os.environ.get("FAKE_PANTOGRAPH_SEED")
        self.rng = random.Random(seed)
        self.shuffle = os.environ.get("FAKE_PANTOGRAPH_SHUFFLE_KEYS") == "1"
        self.delay = float(os.environ.get("FAKE_PANTOGRAPH_DELAY") or 0)
        self.noise = os.environ.get("FAKE_PANTOGRAPH_STDERR_NOISE") == "1"
        self.log_path = os.environ.get("FAKE_PANTOGRAPH_LOG")
        # Test switch: a theorem's tactic proof whose statement nothing recorded is an error
        # (the fake cannot check it) instead of passing with no messages.
        self.strict = os.environ.get("FAKE_PANTOGRAPH_STRICT") == "1"
        # The axioms of constants of the environment, for `#print axioms` of a declaration that
        # names them (JSON {constant: [axiom, ...]}); the fake cannot elaborate, so a checked
        # proof depends on the standard three, these, and sorryAx when it failed or used sorry.
        self.constant_axioms: dict[str, list[str]] = json.loads(
            os.environ.get("FAKE_PANTOGRAPH_AXIOMS") or "{}"
        )

    # --- output -------------------------------------------------------------------------------

    def dumps(self, obj: Any) -> str:
        return compress(obj, self.rng if self.shuffle else None)

    def answer(self, obj: Any) -> None:
        write_stdout(self.dumps(obj) + "\n")

    # --- helpers ------------------------------------------------------------------------------

    def fresh(self) -> str:
        self.uniq += 1
        return f"_uniq.{self.uniq}"

    def new_state(self, state: GState) -> int:
        sid = self.next_id
        self.next_id += 1
        self.states[sid] = state
        return sid

    def get_state(self, sid: int) -> GState:
        state = self.states.get(sid)
        if state is None:
            raise CommandError("index", f"Invalid state index {sid}")
        return state

    def make_goal(self, text: str, parent: GoalRec | None = None) -> GoalRec:
        goal = parse_goal(text)
        inherited: dict[tuple[str, str, str | None], str] = {}
        if parent is not None:
            for v in parent.vars:
                inherited.setdefault((v.user, v.type, v.value), v.name)
        vars_: list[Var] = []
        for hyp in goal.hypotheses:
            for user in hyp.names or ("[anonymous]",):
                old = inherited.get((user, hyp.type, hyp.value))
                vars_.append(Var(old or self.fresh(), user, hyp.type, hyp.value, old is not None))
        return GoalRec(self.fresh(), text, goal.case, goal.target, vars_)

    def expr(self, pp: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.options["printExprPretty"]:
            out["pp"] = pp
        if self.options["printDependentMVars"]:
            out["dependentMVars"] = []
        return out

    def goal_json(self, goal: GoalRec) -> dict[str, Any]:
        no_repeat = self.options["noRepeat"]
        vars_json = []
        for v in goal.vars:
            var: dict[str, Any] = {
                "name": v.name,
                "userName": v.user,
                "isInaccessible": "✝" in v.user,
            }
            if not (no_repeat and v.repeated):
                var["type"] = self.expr(v.type)
                if v.value is not None:
                    var["value"] = self.expr(v.value)
            vars_json.append(var)
        out: dict[str, Any] = {
            "name": goal.name,
            "fragment": "tactic",
            "target": self.expr(goal.target),
            "vars": vars_json,
        }
        if goal.case is not None:
            out["userName"] = goal.case
        return out

    def start_state(self, texts: list[str]) -> GState:
        goals = [self.make_goal(t) for t in texts]
        return GState(goals, self.fresh(), {g.name: g for g in goals}, frozenset())

    # --- tactic semantics ---------------------------------------------------------------------

    def run_text(self, texts: list[str], tactic: str) -> list[str] | None:
        """Goal texts after ``tactic`` on ``texts``: the whole text as one recorded transition,
        else its steps (lines at the base indentation or top-level ``;``), else line by line."""
        if not texts:
            return None
        candidates = [[tactic]]
        steps = split_sequence(tactic)
        if len(steps) > 1:
            candidates.append(steps)
        lines = [line.strip() for line in tactic.split("\n") if line.strip()]
        if len(lines) > 1 and lines != steps:
            candidates.append(lines)
        for steps in candidates:
            current: list[str] | None = texts
            for step in steps:
                current = self._step(current, step) if current else None
                if current is None:
                    break
            if current is not None:
                return current
        return None

    def _step(self, goals: list[str], step: str) -> list[str] | None:
        after = self.table.apply(goals, step)
        if after is None and step[:1] in ("·", ".") and step[1:2].isspace():
            # LeanDojo records the tactics inside a focusing bullet, not the bullet itself.
            after = self.table.apply(goals, step[1:].strip())
        return after

    def _on_list(
        self, goals: list[GoalRec], tactic: str
    ) -> tuple[list[GoalRec], list[GoalRec]] | None:
        """(result goals, consumed goals) for ``tactic`` on the whole list (prefix rule)."""
        texts = [g.text for g in goals]
        result = self.run_text(texts, tactic)
        if result is None:
            return None
        n = len(goals)
        for k in range(1, n + 1):  # smallest consumed prefix whose untouched rest ends the result
            kept = n - k
            if kept <= len(result) and result[len(result) - kept :] == texts[k:]:
                new = [self.make_goal(t, goals[0]) for t in result[: len(result) - kept]]
                return new + goals[k:], goals[:k]
        return [self.make_goal(t, goals[0]) for t in result], list(goals)  # pragma: no cover

    def apply_tactic(self, state: GState, site: tuple[str, int], tactic: str) -> GState:
        kind, idx = site
        goals = state.goals
        if kind == "unfocus" and not goals:
            raise TacticFailure("no goals to be proved")
        if is_sorry_tactic(tactic):
            target = goals[idx]
            if kind == "focus":
                result: list[GoalRec] = []
            else:
                result = [g for g in goals if g is not target]
            return self._successor(state, result, [target], tactic, sorry=True)
        if kind == "unfocus":
            done = self._on_list(goals, tactic)
        elif kind == "focus":
            after = self.run_text([goals[idx].text], tactic)
            done = None
            if after is not None:
                done = [self.make_goal(t, goals[idx]) for t in after], [goals[idx]]
        else:  # prefer: the chosen goal alone first (result in place), else it leads the list
            target = goals[idx]
            after = self.run_text([target.text], tactic)
            if after is not None:
                new = [self.make_goal(t, target) for t in after]
                done = goals[:idx] + new + goals[idx + 1 :], [target]
            else:
                done = self._on_list([target] + [g for g in goals if g is not target], tactic)
        if done is None:
            raise TacticFailure(f"{NOT_RECORDED}: {normalize_tactic(tactic)}")
        return self._successor(state, done[0], done[1], tactic)

    def _successor(
        self,
        state: GState,
        goals: list[GoalRec],
        consumed: list[GoalRec],
        tactic: str,
        sorry: bool = False,
    ) -> GState:
        known = dict(state.known)
        for g in goals:
            known.setdefault(g.name, g)
        return GState(
            goals,
            state.root,
            known,
            state.assigned | {g.name for g in consumed},
            has_sorry=sorry,
            root_has_sorry=state.root_has_sorry or sorry,
            script=(*state.script, tactic.strip()),
            parent_count=len(consumed),
        )

    # --- messages -----------------------------------------------------------------------------

    @staticmethod
    def message(
        data: str,
        file_name: str = "<Pantograph>",
        pos: tuple[int, int] = (0, 0),
        end_pos: tuple[int, int] | None = None,
        severity: str = "error",
        kind: str = "[anonymous]",
    ) -> dict[str, Any]:
        return {
            "fileName": file_name,
            "pos": {"line": pos[0], "column": pos[1]},
            "endPos": None if end_pos is None else {"line": end_pos[0], "column": end_pos[1]},
            "keepFullRange": False,
            "severity": severity,
            "isSilent": False,
            "caption": "",
            "data": data,
            "kind": kind,
        }

    def tactic_failure(self, data: str) -> dict[str, Any]:
        return {"messages": [self.message(data)], "hasSorry": False, "hasUnsafe": False}

    # --- dispatch -----------------------------------------------------------------------------

    def handle_line(self, line: str) -> None:
        if self.log_path:
            with open(self.log_path, "a", encoding="utf-8") as f:
                f.write(line.rstrip("\n") + "\n")
        if self.delay > 0:
            time.sleep(self.delay)
        try:
            cmd, payload = parse_request(line)
        except CommandError as exc:
            self.answer(exc.to_json())
            return
        if self.noise:
            write_stderr(
                f"stdout: [fake pantograph] running {cmd}\n"
                f"[Elab.command] fake trace: elaborating {cmd} ▶\n"
            )
        handler = getattr(self, "cmd_" + cmd.replace(".", "_"), None)
        if handler is None or cmd not in SPECS or (self.legacy and cmd in LEGACY_UNKNOWN):
            self.answer({"error": "command", "desc": f"Unknown command {cmd}"})
            return
        try:
            args = decode_payload(cmd, payload, self.legacy)
            result = handler(args)
        except CommandError as exc:
            result = exc.to_json()
        except Exception as exc:  # a bug in the fake: answer like Main.lean's catch-all
            traceback.print_exc()
            result = {"error": "main", "desc": f"{type(exc).__name__}: {exc}"}
        if result is not None:
            self.answer(result)

    # --- commands -----------------------------------------------------------------------------

    def cmd_reset(self, args: dict[str, Any]) -> dict[str, Any]:
        n = len(self.states)
        self.states.clear()
        self.next_id = 0
        return {"nGoals": n}

    def cmd_stat(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"nGoals": len(self.states)}

    def cmd_options_set(self, args: dict[str, Any]) -> dict[str, Any]:
        for key, value in args.items():
            if value is not None:
                self.options[key] = value
        return {}

    def cmd_options_print(self, args: dict[str, Any]) -> dict[str, Any]:
        return dict(self.options)

    def cmd_expr_echo(self, args: dict[str, Any]) -> dict[str, Any]:
        raise CommandError("expr", f"{NOT_EMULATED} expression elaboration (expr.echo)")

    def cmd_env_describe(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"imports": list(self.modules), "modules": list(self.modules)}

    def _known_theorem(self, name: str) -> Theorem | None:
        thm = self.theorems.get(name)
        if thm is not None and self.table.initial_goals(name):
            return thm
        return None

    def cmd_env_inspect(self, args: dict[str, Any]) -> dict[str, Any]:
        name = args["name"]
        thm = self._known_theorem(name)
        if thm is not None:
            initial = self.table.initial_goals(name) or []
            out: dict[str, Any] = {
                "type": self.expr(telescope(initial[0])),
                "isUnsafe": False,
                "module": module_of(thm),
            }
            if args["dependency"]:
                out["typeDependency"] = []
                out["valueDependency"] = thm.premises
            if args["source"]:
                out["sourceUri"] = f"file:///{thm.file_path}"
                out["sourceStart"] = {"line": thm.start.line_nb, "column": thm.start.column_nb - 1}
                out["sourceEnd"] = {"line": thm.end.line_nb, "column": thm.end.column_nb - 1}
            return out
        added = self.env_constants.get(name)
        if added is not None:
            out = {"type": self.expr(added.get("type") or "?"), "isUnsafe": False}
            if added.get("value") is not None and (args["value"] or not added.get("isTheorem")):
                out["value"] = self.expr(added["value"])
            return out
        raise CommandError("index", f"Symbol not found {name}")

    def cmd_env_catalog(self, args: dict[str, Any]) -> dict[str, Any]:
        prefix = args["modulePrefix"]
        names = []
        for name, thm in self.theorems.items():
            if prefix is not None:
                inside = module_of(thm) == prefix or module_of(thm).startswith(prefix + ".")
                if inside == args["invertFilter"]:
                    continue
            names.append(name)
        names.extend(n for n in self.env_constants if n not in self.theorems)
        try:
            Path(args["filename"]).write_text("".join(n + "\n" for n in names), encoding="utf-8")
        except OSError as exc:
            raise CommandError("io", str(exc)) from None
        return {"nSymbols": len(names)}

    def cmd_env_module_read(self, args: dict[str, Any]) -> dict[str, Any]:
        module = args["module"]
        names = [n for n, t in self.theorems.items() if module_of(t) == module]
        if not names:
            raise CommandError("io", f"object file of module {module} does not exist")
        return {"imports": [], "constNames": names, "extraConstNames": []}

    def cmd_env_add(self, args: dict[str, Any]) -> dict[str, Any]:
        self.env_constants[args["name"]] = {
            "type": args["type"],
            "value": args["value"],
            "isTheorem": args["isTheorem"],
        }
        return {}

    def cmd_env_save(self, args: dict[str, Any]) -> dict[str, Any]:
        data = {"fakePantographEnv": 1, "constants": self.env_constants}
        try:
            Path(args["path"]).write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        except OSError as exc:
            raise CommandError("io", str(exc)) from None
        return {}

    def cmd_env_load(self, args: dict[str, Any]) -> dict[str, Any]:
        try:
            data = json.loads(Path(args["path"]).read_text(encoding="utf-8"))
            self.env_constants = dict(data["constants"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise CommandError("io", str(exc)) from None
        return {}

    def cmd_env_parse(self, args: dict[str, Any]) -> dict[str, Any]:
        text = args["input"]
        error = syntax_error(text, "<input>")
        if error is not None:
            raise CommandError("parse", error)
        steps = split_tactics(text) if args["category"] == "tactic" else []
        first = text.rstrip()
        if steps:
            first_line = steps[0].split("\n")[0]
            at = text.find(first_line)
            end = text.find("\n", at + len(first_line)) if len(steps) > 1 else -1
            first = text[:end].rstrip() if end >= 0 else text.rstrip()
        return {"pos": len(first.encode("utf-8"))}

    def cmd_goal_start(self, args: dict[str, Any]) -> dict[str, Any]:
        expr, copy_from = args["expr"], args["copyFrom"]
        if (expr is None) == (copy_from is None):
            raise CommandError("command", "Exactly one of {expr, copyFrom} must be supplied")
        if copy_from is not None:
            # GoalState.create cInfo.type: one goal whose target is the constant's whole type
            # (binders as ∀/→), no hypotheses, as the real server answers.
            initial = self.table.initial_goals(copy_from)
            if initial:
                if not self.copy_from_recorded:
                    initial = ["⊢ " + telescope(initial[0])]
            else:
                added = self.env_constants.get(copy_from)
                if added is None or not added.get("type"):
                    raise CommandError("index", f"Symbol not found: {copy_from}")
                initial = ["⊢ " + " ".join(added["type"].split())]
            state = self.start_state(initial)
        else:
            error = syntax_error(expr)
            if error is not None:
                raise CommandError("expr", error)
            state = self.start_state(["⊢ " + " ".join(expr.split())])
        return {"stateId": self.new_state(state), "root": state.root}

    def cmd_goal_tactic(self, args: dict[str, Any]) -> dict[str, Any] | None:
        state = self.get_state(args["stateId"])
        automatic = args["autoResume"]
        if automatic is None:
            automatic = self.options["automaticMode"]
        goal_id = args["goalId"]
        if goal_id is not None:
            if goal_id >= len(state.goals):
                raise CommandError("index", f"Invalid goal index {goal_id}")
            site = ("prefer" if automatic else "focus", goal_id)
        elif automatic:
            site = ("unfocus", 0)
        else:
            if not state.goals:
                raise CommandError("index", "No goals to be solved")
            site = ("focus", 0)
        fields = ("tactic", "mode", "expr", "have", "let", "draft")
        given = [f for f in fields if args[f] is not None]
        if len(given) != 1:
            raise CommandError(
                "command", "Exactly one of {tactic, mode, expr, have, let, draft} must be supplied"
            )
        field = given[0]
        if field == "mode" and args["mode"] not in ("tactic", "conv", "calc"):
            raise CommandError("command", f"Invalid mode {args['mode']}")
        if field != "tactic":
            return self.tactic_failure(f"{NOT_EMULATED} goal.tactic with '{field}'")
        tactic: str = args["tactic"]
        magic = self.magic(tactic)
        if magic is not None:
            return magic if magic else None
        error = syntax_error(tactic)
        if error is not None:
            return {"parseError": error, "hasSorry": False, "hasUnsafe": False}
        try:
            nxt = self.apply_tactic(state, site, tactic)
        except TacticFailure as exc:
            return self.tactic_failure(exc.data)
        return self.success(nxt)

    def success(self, nxt: GState) -> dict[str, Any]:
        sid = self.new_state(nxt)
        return {
            "nextStateId": sid,
            "goals": [self.goal_json(g) for g in nxt.goals],
            "messages": [],
            "hasSorry": nxt.has_sorry,
            "hasUnsafe": False,
        }

    def magic(self, tactic: str) -> dict[str, Any] | None:
        """The answer of a magic tactic; ``{}`` when it already answered; None if not magic."""
        words = tactic.split()
        if not words or not words[0].startswith("fake_"):
            return None
        head = words[0]
        if head == "fake_hang":
            while True:
                time.sleep(SLEEP_FOREVER)
        if head == "fake_crash":
            write_stdout('{"goals":[{"fragment":"tactic","name":"_uniq.')
            write_stderr("Stack overflow detected. Aborting.\n")
            os._exit(134)
        if head == "fake_garbage":
            write_stdout(
                "PANIC at Lean.MetavarContext.getDecl Lean.MetavarContext:412:17: "
                "unknown metavariable '?_uniq.3'\n"
            )
            return {}
        if head == "fake_flood":
            chunk = ("[Meta.Tactic.simp.rewrite] fake flood: " + "x" * 983 + "\n") * 64
            sent = 0
            while sent < HUGE_BYTES:
                write_stderr(chunk)
                sent += len(chunk)
            return self.tactic_failure(f"{NOT_RECORDED}: {normalize_tactic(tactic)}")
        if head == "fake_huge":
            data = f"{NOT_RECORDED}: fake_huge\n" + ("⊢ " + "a" * 1022 + "\n") * (
                HUGE_BYTES // 1024 + 1
            )
            return self.tactic_failure(data)
        if head == "fake_sleep":
            try:
                ms = int(words[1])
            except (IndexError, ValueError):
                return self.tactic_failure(f"{NOT_RECORDED}: {normalize_tactic(tactic)}")
            timeout = self.options["timeout"]
            if timeout > 0 and ms > timeout:
                time.sleep(timeout / 1000 + self.lateness)
                return dict(INTERRUPT)
            time.sleep(ms / 1000)
            return self.tactic_failure(f"{NOT_RECORDED}: {normalize_tactic(tactic)}")
        return None  # fake_sorry and unknown fake_* go through the normal path

    def cmd_goal_continue(self, args: dict[str, Any]) -> dict[str, Any]:
        target = self.get_state(args["target"])
        branch_id, names = args["branch"], args["goals"]
        if (branch_id is None) == (names is None):
            raise CommandError("command", "Exactly one of {branch, goals} must be supplied")
        if branch_id is not None:
            branch = self.get_state(branch_id)
            if target.goals:
                raise CommandError("structure", "Target state has unresolved goals")
            if target.root != branch.root:
                raise CommandError(
                    "structure",
                    "Roots of two continued goal states do not match: "
                    f"{target.root} != {branch.root}",
                )
            names = [g.name for g in branch.goals]
        missing = [n for n in names if n not in target.known]
        if missing:
            raise CommandError("structure", f"Goals [{', '.join(missing)}] are not in scope")
        goals = [target.known[n] for n in names if n not in target.assigned]
        nxt = GState(
            goals,
            target.root,
            dict(target.known),
            target.assigned,
            root_has_sorry=target.root_has_sorry,
            script=target.script,
        )
        sid = self.new_state(nxt)
        return {"nextStateId": sid, "goals": [self.goal_json(g) for g in goals]}

    def cmd_goal_subsume(self, args: dict[str, Any]) -> dict[str, Any]:
        state = self.get_state(args["stateId"])
        goal = state.known.get(args["goal"])
        if goal is None:
            raise CommandError("index", f"Invalid goal {args['goal']}")
        for name in args["candidates"]:
            for other in self.states.values():
                cand = other.known.get(name)
                if cand is not None and cand.name != goal.name and cand.text == goal.text:
                    return {"result": "subsumed", "subsumptor": name}
        return {"result": "none"}

    def cmd_goal_delete(self, args: dict[str, Any]) -> dict[str, Any]:
        for sid in args["stateIds"]:
            self.states.pop(sid, None)
        return {}

    def cmd_goal_print(self, args: dict[str, Any]) -> dict[str, Any]:
        state = self.get_state(args["stateId"])
        solved = state.solved
        out: dict[str, Any] = {
            "goals": [self.goal_json(g) for g in state.goals] if args["goals"] else [],
            "extraMVars": [self.expr(f"?{n}") for n in args["extraMVars"] or []],
            "rootHasSorry": state.root_has_sorry,
            "rootHasUnsafe": False,
            "rootHasMVar": not solved,
        }
        if args["rootExpr"] and solved and state.script:
            out["root"] = self.expr("by\n  " + "\n  ".join(state.script))
        if args["parentExprs"]:
            out["parentExprs"] = [None] * state.parent_count
        return out

    def cmd_goal_save(self, args: dict[str, Any]) -> dict[str, Any]:
        state = self.get_state(args["id"])
        data = {
            "fakePantographGoalState": 1,
            "goals": [g.text for g in state.goals],
            "rootHasSorry": state.root_has_sorry,
        }
        try:
            Path(args["path"]).write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        except OSError as exc:
            raise CommandError("io", str(exc)) from None
        return {}

    def cmd_goal_load(self, args: dict[str, Any]) -> dict[str, Any]:
        try:
            data = json.loads(Path(args["path"]).read_text(encoding="utf-8"))
            texts = [str(t) for t in data["goals"]]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise CommandError("io", str(exc)) from None
        state = self.start_state(texts)
        state.root_has_sorry = bool(data.get("rootHasSorry"))
        return {"id": self.new_state(state)}

    # --- frontend -----------------------------------------------------------------------------

    def cmd_frontend_process(self, args: dict[str, Any]) -> dict[str, Any]:
        file_name, content = args["fileName"], args["file"]
        if (file_name is None) == (content is None):
            raise CommandError("command", "Exactly one of {fileName, file} must be supplied")
        if file_name is not None:
            try:
                content = Path(file_name).read_text(encoding="utf-8")
            except FileNotFoundError:
                raise CommandError(
                    "io", f"no such file or directory (error code: 2)\n  file: {file_name}"
                ) from None
            except (OSError, UnicodeDecodeError) as exc:
                raise CommandError("io", str(exc)) from None
        else:
            file_name = "<anonymous>"
        source = SourceFile(content)
        units = []
        invocation_units = []
        declared: set[str] = set()
        axioms_of: dict[str, set[str]] = {k: set(v) for k, v in self.constant_axioms.items()}
        for start, stop, decl in source.units():
            unit: dict[str, Any] = {"boundary": [source.byte(start), source.byte(stop)]}
            messages: list[dict[str, Any]] = []
            invocations: list[dict[str, Any]] = []
            names: list[str] = []
            if decl == STRAY:
                m = re.compile(r"[^\W\d]\w*|\S").match(source.clean, start)
                token = m.group() if m else ""
                what = "identifier" if token[:1].isalpha() or token == "_" else f"token '{token}'"
                messages.append(
                    self.message(
                        f"unexpected {what}; expected command", file_name, source.position(start)
                    )
                )
            elif decl is None and (query := _PRINT_AXIOMS.match(source.clean, start)):
                messages.append(self.print_axioms(query.group(1), axioms_of, file_name,
                                                  source.position(start)))  # fmt: skip
            elif decl is None and source.clean.startswith("import", start):
                messages.append(
                    self.message(
                        "invalid 'import' command, it must be used in the beginning of the file",
                        file_name,
                        source.position(start),
                        source.position(start + len("import")),
                    )
                )
            elif decl is not None:
                try:
                    messages, invocations = self.check_declaration(
                        source, decl, file_name, declared
                    )
                except FrontendInterrupted:
                    if not self.legacy:
                        raise CommandError(
                            FRONTEND_INTERRUPT["error"], FRONTEND_INTERRUPT["desc"]
                        ) from None
                    messages = [
                        self.message(LEGACY_FRONTEND_INTERRUPT, file_name, source.position(start))
                    ]
                if decl.name is not None:
                    names.append(decl.name)
                    declared.add(decl.name)
                    axioms_of[decl.name] = self.declaration_axioms(
                        source, decl, messages, axioms_of
                    )
                if self.legacy and args.get("sorrys") and decl.has_sorry:
                    found = self.sorry_goals(source, decl)
                    if found:
                        state = self.start_state([g for texts in found for g in texts])
                        unit["goalStateId"] = self.new_state(state)
                        unit["goals"] = [self.goal_json(g) for g in state.goals]
                        unit["goalSrcBoundaries"] = [[source.byte(start), source.byte(stop)]]
            unit["messages"] = messages
            if args["invocations"] is not None:
                unit["nInvocations"] = len(invocations)
            if args["newConstants"]:
                unit["newConstants"] = names
            units.append(unit)
            invocation_units.append({"invocations": invocations})
        if args["inheritEnv"]:
            for name in declared:
                self.env_constants.setdefault(name, {"type": None, "value": None})
        if args["invocations"] is not None:
            try:
                Path(args["invocations"]).write_text(
                    compress({"units": invocation_units}), encoding="utf-8"
                )
            except OSError as exc:
                raise CommandError("io", str(exc)) from None
        return {"units": units}

    @staticmethod
    def declaration_axioms(
        source: SourceFile, decl: Any, messages: list[dict[str, Any]], known: dict[str, set[str]]
    ) -> set[str]:
        """What `#print axioms` says a declaration of this run depends on: itself for an
        `axiom`; sorryAx when it failed or used sorry (Lean's error recovery closes it with
        sorryAx); otherwise the standard three; plus the axioms of the known constants its text
        names."""
        start, end = source.offset(decl.start), source.offset(decl.end) + 1
        keyword = _KEYWORD.search(source.clean, start, end)
        if keyword is not None and keyword.group(1) == "axiom":
            return {decl.name}
        failed = any(m["severity"] == "error" or m["kind"] == "hasSorry" for m in messages)
        found = {"sorryAx"} if failed else set(STANDARD_AXIOMS)
        body = source.clean[source.name_span(decl)[1] : end]
        for token in set(re.findall(r"[^\W\d][\w.'!?]*", body)):
            for name, axioms in known.items():
                if name == token or name.endswith("." + token):
                    found |= axioms
        return found

    def print_axioms(
        self, name: str, axioms_of: dict[str, set[str]], file_name: str, pos: tuple[int, int]
    ) -> dict[str, Any]:
        """Lean's answer to `#print axioms name` (a name declared in this run, in its namespace
        or not, or a constant given by FAKE_PANTOGRAPH_AXIOMS)."""
        found = axioms_of.get(name)
        if found is None:
            found = next((a for n, a in axioms_of.items() if name.endswith("." + n)), None)
        if found is None:
            return self.message(f"unknown constant '{name}'", file_name, pos)
        if not found:
            return self.message(f"'{name}' does not depend on any axioms", file_name, pos,
                                severity="information")  # fmt: skip
        listed = ", ".join(sorted(found))
        return self.message(f"'{name}' depends on axioms: [{listed}]", file_name, pos,
                            severity="information")  # fmt: skip

    def check_declaration(
        self, source: SourceFile, decl: Any, file_name: str, declared: set[str]
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Messages and invocations of one declaration."""
        name_pos = source.name_span(decl)
        if decl.name is not None and (decl.name in declared or decl.name in self.env_constants):
            return [
                self.message(
                    f"'{decl.name}' has already been declared",
                    file_name,
                    source.position(name_pos[0]),
                    source.position(name_pos[1]),
                )
            ], []
        sorry_warning = self.message(
            "declaration uses 'sorry'",
            file_name,
            source.position(name_pos[0]),
            source.position(name_pos[1]),
            severity="warning",
            kind="hasSorry",
        )
        unbound = self.unbound_name(source, decl)
        if unbound is not None:
            at = source.offset(decl.start)
            m = re.compile(r"(?<![\w.'])" + re.escape(unbound) + r"(?![\w'!?])").search(
                source.clean, source.name_span(decl)[1]
            )
            pos = m.start() if m else at
            return [
                self.message(
                    f"unknown identifier '{unbound}'",
                    file_name,
                    source.position(pos),
                    source.position(pos + len(unbound)),
                )
            ], []
        recorded = self.recorded_name(source, decl)
        initial = self.table.initial_goals(recorded) if recorded else None
        proof = source.tactic_proof(decl) if initial else None
        if proof is None and self.strict and not initial and not decl.has_sorry:
            unchecked = self.unchecked_proof(source, decl, file_name)
            if unchecked is not None:
                return [unchecked], []
        if proof is None:
            return ([sorry_warning] if decl.has_sorry else []), []
        by_start, tactics = proof
        thm = self.theorems.get(recorded) if recorded else None
        goals: list[str] = list(initial or [])
        invocations: list[dict[str, Any]] = []
        used_sorry = False
        for text, t_start, t_end in tactics:
            where = (source.position(t_start), source.position(t_end))
            if not goals:
                return [self.message("no goals to be proved", file_name, *where)], invocations
            if text.split()[0] in _FRONTEND_MAGIC and self.magic(text) == INTERRUPT:
                raise FrontendInterrupted()
            if is_sorry_tactic(text):
                after: list[str] | None = goals[1:]
                used_sorry = True
            else:
                error = syntax_error(text, file_name)
                if error is not None:
                    line, col = source.position(t_start)
                    return [self.message(error.split(": ", 1)[-1], file_name, (line, col))], []
                after = self.run_text(goals, text)
            if after is None:
                # Lean prints the goal a failing tactic saw under its complaint (linarith,
                # omega, decide, …): so does the fake, for a refinement round to read.
                data = f"{NOT_RECORDED}: {normalize_tactic(text)}\n" + "\n\n".join(goals)
                return [self.message(data, file_name, *where)], invocations
            invocations.append(
                {
                    "goalBefore": "\n".join(goals),
                    "goalAfter": "\n".join(after),
                    "tactic": text,
                    "usedConstants": self.used_constants(thm, goals, text),
                }
            )
            goals = after
        if goals:
            data = "unsolved goals\n" + "\n\n".join(goals)
            last_end = tactics[-1][2] if tactics else by_start + 2
            return [
                self.message(
                    data,
                    file_name,
                    source.position(by_start),
                    source.position(last_end),
                )
            ], invocations
        return ([sorry_warning] if used_sorry or decl.has_sorry else []), invocations

    def unchecked_proof(
        self, source: SourceFile, decl: Any, file_name: str
    ) -> dict[str, Any] | None:
        """An error for a theorem with a tactic proof whose statement nothing recorded: the fake
        cannot elaborate it, and says so rather than accept an unchecked proof. None for other
        declarations (definitions, context the fake needs no check of)."""
        start, end = source.offset(decl.start), source.offset(decl.end) + 1
        keyword = _KEYWORD.search(source.clean, start, end)
        if keyword is None or keyword.group(1) not in ("theorem", "lemma", "example"):
            return None
        if source.tactic_proof(decl) is None:
            return None
        name_pos = source.name_span(decl)
        return self.message(
            f"{NOT_EMULATED} elaboration: no recorded proof has this statement, so its proof "
            "cannot be checked",
            file_name,
            source.position(name_pos[0]),
            source.position(name_pos[1]),
        )

    @staticmethod
    def used_constants(thm: Theorem | None, goals: list[str], tactic: str) -> list[str]:
        if thm is None:
            return []
        key = normalize_tactic(tactic)
        for tt in thm.traced_tactics:
            if normalize_tactic(tt.tactic) == key:
                before = goal_texts(tt.state_before)
                if before and before == goals[: len(before)]:
                    return tt.premises
        return []

    def recorded_name(self, source: SourceFile, decl: Any) -> str | None:
        """The recorded theorem a declaration of the file states: by its (full) name, else by
        its statement text (binders and type) when the record has one. The fake cannot
        elaborate a statement; this stands in for Lean elaborating the same statement."""
        if decl.name is not None and self.table.initial_goals(decl.name):
            return decl.name
        sig = self.declared_signature(source, decl)
        return self.by_signature.get(sig) if sig else None

    def declared_signature(self, source: SourceFile, decl: Any) -> str:
        """The declaration's binders and type, with the binders of the `variable` commands in
        scope that it mentions in front (Lean adds those to the statement)."""
        end = source.offset(decl.end) + 1
        name_end = source.name_span(decl)[1]
        sig = statement_signature(source.clean[name_end:end], named=False)
        binders = [b for b in source.variables_at(decl) if any(_mentions(n, sig) for n in b[1])]
        return " ".join([*(text for text, _ in binders), sig]) if sig else ""

    def unbound_name(self, source: SourceFile, decl: Any) -> str | None:
        """A name the statement uses that only a binder it lacks would bind: the statement is a
        recorded one without its leading binders, as when it is checked without the `variable`
        command its file has (Lean: the name is unknown)."""
        sig = self.declared_signature(source, decl)
        if not sig or sig in self.by_signature:
            return None
        for recorded in self.by_signature:
            if recorded.endswith(" " + sig):
                missing = recorded[: -len(sig) - 1]
                for _, names in binder_groups(missing):
                    for name in names:
                        if _mentions(name, sig):
                            return name
        return None

    def sorry_goals(self, source: SourceFile, decl: Any) -> list[list[str]]:
        """The goals at each ``sorry`` of a recorded declaration (replaying the tactics before)."""
        recorded = self.recorded_name(source, decl)
        initial = self.table.initial_goals(recorded) if recorded else None
        if not initial:
            return []
        found: list[list[str]] = []
        proof = source.tactic_proof(decl)
        if proof is not None:
            goals: list[str] | None = list(initial)
            for text, _, _ in proof[1]:
                if not goals:
                    break
                if is_sorry_tactic(text):
                    found.append(goals[:1])
                    goals = goals[1:]
                else:
                    goals = self.run_text(goals, text)
                    if goals is None:
                        break
        elif source.term_value(decl) == "sorry":
            found.append(list(initial))
        return found

    def cmd_frontend_distil(self, args: dict[str, Any]) -> dict[str, Any]:
        source = SourceFile(args["file"])
        targets = []
        for decl in source.declarations:
            if not decl.has_sorry:
                continue
            for texts in self.sorry_goals(source, decl):
                state = self.start_state(texts)
                sid = self.new_state(state)
                targets.append({"stateId": sid, "goals": [self.goal_json(g) for g in state.goals]})
        return {"targets": targets}


# ---------------------------------------------------------------------------------------------
# Lean source splitting (top-level commands, tactic proofs).
# ---------------------------------------------------------------------------------------------

_COMMAND_WORDS = frozenset(
    {
        "namespace", "section", "end", "open", "variable", "universe", "set_option", "import",
        "attribute", "mutual", "export", "notation", "infix", "infixl", "infixr", "prefix",
        "postfix", "macro", "macro_rules", "syntax", "elab", "elab_rules", "initialize",
        "deriving", "omit", "include", "noncomputable", "private", "protected", "local", "scoped",
        "theorem", "lemma", "def", "abbrev", "instance", "example", "opaque", "axiom",
        "structure", "inductive", "class", "unsafe", "partial", "nonrec",
    }
)  # fmt: skip
_COMMAND_START = re.compile(r"#?[A-Za-z_]\w*|@\[")
STRAY = "stray"
_PRINT_AXIOMS = re.compile(r"#print\s+axioms\s+(\S+)")
STANDARD_AXIOMS = ("propext", "Classical.choice", "Quot.sound")
_KEYWORD = re.compile(
    r"(?<![\w.'])(theorem|lemma|def|abbrev|instance|example|opaque|axiom|structure|inductive|class)"
    r"(?![\w'])"
)


def binder_groups(text: str) -> list[tuple[str, list[str]]]:
    """The top-level binder groups of ``text`` (``(x y : ℝ) [inst : C] {n : ℕ}``): each as
    ``(text, names bound)``; a group without ``:`` (an instance ``[C α]``) binds nothing."""
    groups: list[tuple[str, list[str]]] = []
    depth, begin = 0, -1
    for i, ch in enumerate(text):
        if ch in "([{⦃":
            if depth == 0:
                begin = i
            depth += 1
        elif ch in ")]}⦄" and depth:
            depth -= 1
            if depth == 0 and begin >= 0:
                group = text[begin : i + 1]
                head = group[1:-1].split(":", 1)
                names = head[0].split() if len(head) == 2 else []
                groups.append((" ".join(group.split()), names))
        elif depth == 0 and ch == ":":
            break
    return groups


class SourceFile:
    """A Lean file split the way the frontend does: header, then one unit per command."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.clean = strip_comments(text)
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        try:
            self.declarations = find_declarations(text)
        except ValueError:  # lean_dojo_v2.data.sorry raises on a file without any command
            self.declarations = []
        self._byte_prefix: list[int] | None = None
        self._variables: dict[int, list[tuple[str, list[str]]]] | None = None

    def variables_at(self, decl: Any) -> list[tuple[str, list[str]]]:
        """The binder groups of the `variable` commands in scope at ``decl`` (those of a
        `section`/`namespace` closed by its `end` are gone): ``(text, names)`` in order."""
        if self._variables is None:
            self._variables = {}
            scopes: list[list[tuple[str, list[str]]]] = [[]]
            starts = {self.offset(d.start): d for d in self.declarations}
            for begin, stop, unit_decl in self.units():
                text = self.clean[begin:stop].strip()
                word = re.match(r"(?:noncomputable\s+)?(\w+)", text)
                keyword = word.group(1) if word else ""
                if unit_decl is not None and unit_decl != STRAY and begin in starts:
                    self._variables[begin] = [g for scope in scopes for g in scope]
                elif keyword in ("namespace", "section"):
                    scopes.append([])
                elif keyword == "end" and len(scopes) > 1:
                    scopes.pop()
                elif keyword == "variable":
                    scopes[-1].extend(binder_groups(text[len("variable") :]))
        return self._variables.get(self.offset(decl.start), [])

    def offset(self, pos: tuple[int, int]) -> int:
        return self._line_starts[pos[0] - 1] + pos[1] - 1

    def position(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self._line_starts, offset) - 1
        return line + 1, offset - self._line_starts[line]

    def byte(self, offset: int) -> int:
        if self.text.isascii():
            return offset
        return len(self.text[:offset].encode("utf-8"))

    def header_end(self) -> int:
        """Offset just after the ``import``/``prelude`` lines that open the file."""
        end = 0
        for line_start in self._line_starts:
            nl = self.clean.find("\n", line_start)
            line = self.clean[line_start : len(self.clean) if nl < 0 else nl].strip()
            if not line:
                continue
            if re.match(r"(import|prelude|module)(\s|$)", line) is None:
                break
            end = len(self.clean) if nl < 0 else nl + 1
        return end

    def units(self) -> list[tuple[int, int, Any]]:
        header = self.header_end()
        spans = []
        starts: dict[int, Any] = {}
        for decl in self.declarations:
            s, e = self.offset(decl.start), self.offset(decl.end) + 1
            spans.append((s, e))
            if s >= header:
                starts[s] = decl
        for line_start in self._line_starts:
            if line_start < header or line_start in starts:
                continue
            m = _COMMAND_START.match(self.clean, line_start)
            if m is None:
                continue
            word = m.group()
            if not (word.startswith(("#", "@[")) or word in _COMMAND_WORDS):
                continue
            if any(s <= line_start < e for s, e in spans):
                continue
            starts[line_start] = None
        first = min(starts, default=len(self.text))
        stray = re.compile(r"\S").search(self.clean, header, first)
        if stray is not None:  # text before the first command: Lean's "expected command"
            starts[stray.start()] = STRAY
        order = sorted(starts)
        bounds = [*order[1:], len(self.text)] if order else []
        return [(s, e, starts[s]) for s, e in zip(order, bounds, strict=True)]

    def name_span(self, decl: Any) -> tuple[int, int]:
        start, end = self.offset(decl.start), self.offset(decl.end) + 1
        m = _KEYWORD.search(self.clean, start, end)
        if m is None:
            return start, start
        if m.group(1) == "example":
            return m.start(1), m.end(1)
        n = re.compile(r"\s*([^\s(\[{:]+)").match(self.clean, m.end(1))
        return (n.start(1), n.end(1)) if n else (m.start(1), m.end(1))

    def _value_start(self, decl: Any) -> int | None:
        """Offset just after the top-level ``:=`` of a declaration."""
        end = self.offset(decl.end) + 1
        depth = 0
        i = self.name_span(decl)[1]
        clean = self.clean
        while i < end:
            ch = clean[i]
            if ch in _OPENERS:
                depth += 1
            elif ch in _CLOSERS:
                depth -= 1
            elif ch == '"':
                j = clean.find('"', i + 1)
                i = end if j < 0 else j
            elif depth == 0 and clean.startswith(":=", i):
                return i + 2
            i += 1
        return None

    def term_value(self, decl: Any) -> str | None:
        value = self._value_start(decl)
        if value is None:
            return None
        return self.clean[value : self.offset(decl.end) + 1].strip()

    def tactic_proof(self, decl: Any) -> tuple[int, list[tuple[str, int, int]]] | None:
        """(offset of ``by``, [(tactic text, start, end)]) when the value is ``by`` + tactics."""
        value = self._value_start(decl)
        if value is None:
            return None
        end = self.offset(decl.end) + 1
        m = re.compile(r"\s*by(?![\w'])").match(self.clean, value, end)
        if m is None:
            return None
        by_start = m.end() - 2
        tactics: list[list[int]] = []  # [start, end] offsets
        base: int | None = None
        pos = m.end()
        first_line = True
        while pos < end:
            nl = self.clean.find("\n", pos, end)
            line_end = end if nl < 0 else nl
            segment = self.clean[pos:line_end]
            if segment.strip():
                indent = len(segment) - len(segment.lstrip())
                t_start = pos + indent
                t_end = pos + len(segment.rstrip())
                if first_line:
                    tactics.append([t_start, t_end])
                elif base is None or indent <= base or not tactics:
                    if base is None:
                        base = indent
                    tactics.append([t_start, t_end])
                else:
                    tactics[-1][1] = t_end
            if nl < 0:
                break
            first_line = False
            pos = nl + 1
        return by_start, [(self.clean[s:e], s, e) for s, e in tactics]


# ---------------------------------------------------------------------------------------------
# Process.
# ---------------------------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    code = startup_checks(argv)
    if code is not None:
        return code
    entries, modules = split_arguments(argv)
    repl = FakeRepl(modules, core_options_of(entries))
    delay = float(os.environ.get("FAKE_PANTOGRAPH_READY_DELAY") or 0)
    if delay > 0:
        time.sleep(delay)
    write_stdout("ready.\n")
    stdin = sys.stdin.buffer
    while True:
        raw = stdin.readline()
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            repl.answer({"error": "command", "desc": f"invalid UTF-8 input: {exc}"})
            continue
        if not line.strip():  # an empty line or EOF ends the REPL
            return 0
        repl.handle_line(line)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
