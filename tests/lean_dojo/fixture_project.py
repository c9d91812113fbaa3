"""A small Lean project built from real Lean data, and the extractor output for it.

No Lean runs here, so the extractor output (trace schema 1, ``docs/tracing.md``) is assembled the
way ``ExtractData.lean`` writes it, from real material only:

- sources: the miniF2F-test proofs of miniCTX's state-prediction data (the exact text Lean checked,
  prefix by prefix) and a PutnamBench file (``abbrev … := sorry`` and ``theorem … := sorry``);
- goal states: the states Lean printed along those proofs (miniCTX ``derived`` file);
- premise definition sites: provenances of LeanDojo Benchmark 4 records, for the constants that
  the proofs name (``le_trans``, ``rfl``…);
- ``lean-toolchain`` and ``lake-manifest.json``: PutnamBench's.

Positions are computed from where each piece lands in the generated source, so they are exact.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LEAN_VERSION = "4.27.0"  # PutnamBench's lean-toolchain
DECL_KIND = "Lean.Parser.Command.declaration"
SORRY_TEXT = "declaration uses 'sorry'"
# Real syntax kinds of a few tactics (the parser does not need them; the extractor writes them).
TACTIC_KINDS = {
    "rw": "Lean.Parser.Tactic.rwSeq",
    "norm_num": "Mathlib.Tactic.normNum",
    "nlinarith": "Mathlib.Tactic.nlinarith",
    "linarith": "Mathlib.Tactic.linarith",
    "simp": "Lean.Parser.Tactic.simp",
    "omega": "Lean.Parser.Tactic.omega",
    "intro": "Lean.Parser.Tactic.intro",
    "exact": "Lean.Parser.Tactic.exact",
    "apply": "Lean.Parser.Tactic.apply",
    "have": "Lean.Parser.Tactic.tacticHave_",
}


def lean_pos(text: str, index: int) -> dict[str, int]:
    """Lean's position of a string index: 1-based line, 0-based column in code points."""
    line = text.count("\n", 0, index) + 1
    col = index - (text.rfind("\n", 0, index) + 1)
    return {"line": line, "column": col}


@dataclass
class Proof:
    name: str
    statement: str  # "name (args) : goal := by"
    steps: list[str]  # source text of each step, as added between prefixes
    states: list[tuple[str, str]]  # (before, after) per step


@dataclass
class FixtureProject:
    root: Path
    traces: dict[str, dict[str, Any]]  # module → extractor output
    files: dict[str, str]  # module → path
    proofs: dict[str, Proof] = field(default_factory=dict)
    commit: str = ""

    def trace_dir(self, where: Path) -> Path:
        """Write the extractor outputs as ``<module>.json`` files (what the fake lake copies)."""
        where.mkdir(parents=True, exist_ok=True)
        for module, data in self.traces.items():
            (where / f"{module}.json").write_text(json.dumps(data, ensure_ascii=False))
        return where


def load_proofs(shared: Path) -> list[Proof]:
    """miniF2F-test proofs whose every step has a recorded state before and after."""
    rows = [
        json.loads(line)
        for line in (shared / "minictx/data/v1/miniF2F_test_state_prediction.jsonl")
        .read_text(encoding="utf-8")
        .splitlines()
        if line.strip()
    ]
    derived = {
        d["full_name"]: d
        for d in json.loads(
            (shared / "minictx/derived/minif2f_test_traced_tactics.json").read_text("utf-8")
        )
    }
    by_name: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_name.setdefault(row["name"], []).append(row)
    proofs = []
    for name, group in by_name.items():
        final = [r for r in group if r["step_count"] == -1]
        steps = sorted((r for r in group if r["step_count"] >= 0), key=lambda r: r["step_count"])
        d = derived.get(name)
        if not final or d is None or len(d["traced_tactics"]) != len(steps):
            continue
        queries = [r["query"] for r in steps] + [final[0]["query"]]
        added = []
        for a, b in zip(queries, queries[1:], strict=False):
            if not b.startswith(a):
                break
            added.append(b[len(a) :])
        if len(added) != len(steps):
            continue
        states = [(t["state_before"], t["state_after"]) for t in d["traced_tactics"]]
        # Two final states of the source are malformed (see SOURCE.txt): leave those proofs out.
        if any(not s or "/-" in s or "-/" in s for pair in states for s in pair):
            continue
        proofs.append(Proof(name, queries[0], added, states))
    return proofs


def b4_provenances(shared: Path) -> dict[str, dict[str, Any]]:
    records = json.loads((shared / "leandojo_b4/random_test_records_1_100.json").read_text("utf-8"))
    out: dict[str, dict[str, Any]] = {}
    for r in records:
        for t in r["traced_tactics"]:
            for p in t["annotated_tactic"][1]:
                out.setdefault(p["full_name"], p)
    return out


def module_of(def_path: str) -> str:
    parts = Path(def_path).with_suffix("").parts
    if parts[:2] == (".lake", "packages"):
        parts = parts[3:]
        if parts[:2] == ("src", "lean"):
            parts = parts[2:]
    return ".".join(parts)


def olean_of(root: Path, prefix: Path, def_path: str) -> tuple[str, str]:
    """(module, .olean path) of a B4 definition site, placed as it would be in our project:
    core in the toolchain, Mathlib as a dependency package."""
    module = module_of(def_path)
    rel = Path(*module.split(".")).with_suffix(".olean")
    if def_path.startswith(".lake/packages/lean4/"):
        return module, str(prefix / "lib" / "lean" / rel)
    if def_path.startswith(".lake/packages/"):
        pkg = Path(def_path).parts[2]
        return module, str(root / ".lake/packages" / pkg / ".lake/build/lib/lean" / rel)
    return module, str(root / ".lake/packages/mathlib/.lake/build/lib/lean" / rel)


def expected_def_path(def_path: str) -> str:
    """Where our tracer must place a B4 definition site in the fixture project."""
    if def_path.startswith(".lake/"):
        return def_path
    return ".lake/packages/mathlib/" + def_path


class _FileBuilder:
    def __init__(self, module: str, header: str) -> None:
        self.module = module
        self.text = header
        self.commands: list[dict[str, Any]] = []
        self.declarations: list[dict[str, Any]] = []
        self.tactics: list[dict[str, Any]] = []
        self.premises: list[dict[str, Any]] = []
        self.messages: list[dict[str, Any]] = []
        self.module_files: dict[str, str] = {}

    def pos(self, index: int) -> dict[str, int]:
        return lean_pos(self.text, index)

    def declaration(
        self, kind: str, source: str, name: str, value_at: int | None, decl_start_in: int = 0
    ) -> tuple[int, int]:
        """Append one command (``value_at``: index of its ``:=`` in ``source``); returns (start
        index of the command, of the name)."""
        base = len(self.text)
        self.text += source
        start = base + decl_start_in
        end = base + len(source.rstrip())
        name_at = base + source.index(name, decl_start_in)
        values = []
        if value_at is not None:
            values.append(self.pos(base + value_at))
        self.commands.append(
            {
                "kind": DECL_KIND,
                "start": self.pos(base),
                "end": self.pos(end),
                "value_starts": values,
            }
        )
        self.declarations.append(
            {
                "name": name,
                "private": False,
                "kind": kind,
                "start": self.pos(start),
                "end": self.pos(end),
                "name_start": self.pos(name_at),
                "name_end": self.pos(name_at + len(name)),
            }
        )
        # Lean records the declared constant at its own name (a use the tracer must ignore).
        self.premises.append(
            {
                "name": name,
                "module": self.module,
                "start": self.pos(name_at),
                "end": self.pos(name_at + len(name)),
                "def_start": self.pos(name_at),
                "def_end": self.pos(name_at + len(name)),
            }
        )
        return start, name_at

    def output(self, imports: list[str]) -> dict[str, Any]:
        return {
            "schema": "lean_dojo_v2.trace",
            "schema_version": 1,
            "lean_version": LEAN_VERSION,
            "module": self.module,
            "file": self.module.replace(".", "/") + ".lean",
            "imports": imports,
            "module_files": self.module_files,
            "commands": self.commands,
            "declarations": self.declarations,
            "tactics": self.tactics,
            "premises": self.premises,
            "messages": self.messages,
        }


def _add_proof(
    b: _FileBuilder,
    proof: Proof,
    provs: dict[str, dict[str, Any]],
    root: Path,
    prefix: Path,
) -> None:
    source = "theorem " + proof.statement + "".join(proof.steps) + "\n\n"
    base = len(b.text)
    head = "theorem " + proof.statement
    assert head.endswith(":= by"), head
    b.declaration("theorem", source, proof.name, len(head) - len(":= by"))
    at = base + len("theorem " + proof.statement)
    for step, (before, after) in zip(proof.steps, proof.states, strict=True):
        body = step.lstrip("\n ")
        s = at + (len(step) - len(body))
        body = body.rstrip()
        e = s + len(body)
        first = re.match(r"[\w_]+", body)
        t: dict[str, Any] = {
            "start": b.pos(s),
            "end": b.pos(e),
            "state_before": before,
            "state_after": after,
        }
        if first and first.group(0) in TACTIC_KINDS:
            t["kind"] = TACTIC_KINDS[first.group(0)]
        b.tactics.append(t)
        for m in re.finditer(r"[A-Za-z_][A-Za-z_0-9'.]*", body):
            word = m.group(0)
            p = provs.get(word)
            if p is None:
                continue
            module, olean = olean_of(root, prefix, p["def_path"])
            b.module_files[module] = olean
            b.premises.append(
                {
                    "name": p["full_name"],
                    "module": module,
                    "start": b.pos(s + m.start()),
                    "end": b.pos(s + m.end()),
                    "def_start": {"line": p["def_pos"][0], "column": p["def_pos"][1] - 1},
                    "def_end": {"line": p["def_end_pos"][0], "column": p["def_end_pos"][1] - 1},
                }
            )
        at += len(step)


def build(shared: Path, root: Path, prefix: Path) -> FixtureProject:
    """Write the project under ``root`` (a git repository with one commit) and return it with
    its extractor outputs. ``prefix`` is where the fake toolchain lives (core .olean paths)."""
    root.mkdir(parents=True, exist_ok=True)
    putnam = shared / "prover_benchmarks/putnambench_lean4"
    (root / "lean-toolchain").write_text((putnam / "lean-toolchain").read_text())
    (root / "lake-manifest.json").write_text((putnam / "lake-manifest.json").read_text())
    (root / "lakefile.toml").write_text(
        'name = "fixture"\ndefaultTargets = ["Fixture"]\n\n'
        '[[require]]\nname = "mathlib"\ngit = "https://github.com/leanprover-community/mathlib4"\n\n'
        '[[lean_lib]]\nname = "Fixture"\n'
    )
    (root / ".gitignore").write_text(".lake/\n")
    proofs = load_proofs(shared)
    provs = b4_provenances(shared)
    mathlib_olean = str(root / ".lake/packages/mathlib/.lake/build/lib/lean/Mathlib.olean")

    project = FixtureProject(root=root, traces={}, files={})
    groups = [
        ("Fixture.Algebra", [p for p in proofs if p.name.startswith("mathd_algebra")], []),
        (
            "Fixture.NumberTheory",
            [p for p in proofs if p.name.startswith("mathd_numbertheory")],
            ["Fixture.Algebra"],
        ),
        (
            "Fixture.Other",
            [p for p in proofs if not p.name.startswith("mathd_")],
            ["Fixture.Algebra", "Fixture.NumberTheory"],
        ),
    ]
    for module, group, local_imports in groups:
        imports = ["Mathlib", *local_imports]
        header = "".join(f"import {m}\n" for m in imports) + "\n"
        b = _FileBuilder(module, header)
        b.module_files["Mathlib"] = mathlib_olean
        for m in local_imports:
            b.module_files[m] = str(
                root / ".lake/build/lib/lean" / (m.replace(".", "/") + ".olean")
            )
        for proof in group:
            _add_proof(b, proof, provs, root, prefix)
            project.proofs[proof.name] = proof
        _write(root, module, b.text, b.output(imports), project)

    # A PutnamBench file: a definition and a theorem, both `sorry`.
    text = (putnam / "src/putnam_1962_a5.lean").read_text(encoding="utf-8")
    b = _FileBuilder("Fixture.Putnam", "")
    b.module_files["Mathlib"] = mathlib_olean
    head, rest = text.split("abbrev ", 1)
    b.text = head
    abbrev, theorem = rest.split("/--", 1)
    abbrev_src = "abbrev " + abbrev.split("\n", 1)[0] + "\n"
    comment = abbrev[len(abbrev_src) - len("abbrev ") :]
    b.declaration("definition", abbrev_src, "putnam_1962_a5_solution", abbrev_src.rindex(":="))
    b.text += comment
    theorem = "/--" + theorem
    b.declaration("theorem", theorem, "putnam_1962_a5", theorem.rindex(":="))
    for name in ("putnam_1962_a5_solution", "putnam_1962_a5"):
        decl = next(d for d in b.declarations if d["name"] == name)
        b.messages.append(
            {
                "severity": "warning",
                "start": decl["name_start"],
                "end": decl["name_end"],
                "text": SORRY_TEXT,
            }
        )
    assert b.text == text
    _write(root, "Fixture.Putnam", b.text, b.output(["Mathlib"]), project)
    (root / "Fixture.lean").write_text(
        "".join(f"import {m}\n" for m in project.files), encoding="utf-8"
    )
    project.commit = _git_commit(root)
    return project


def _write(root: Path, module: str, text: str, output: dict[str, Any], p: FixtureProject) -> None:
    path = module.replace(".", "/") + ".lean"
    (root / path).parent.mkdir(parents=True, exist_ok=True)
    (root / path).write_text(text, encoding="utf-8")
    p.traces[module] = output
    p.files[module] = path


def _git_commit(root: Path) -> str:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=root, check=True, capture_output=True, text=True
        ).stdout.strip()

    git("init", "-q", "-b", "main")
    git("config", "user.email", "fixture@example.com")
    git("config", "user.name", "fixture")
    git("add", "-A")
    git("commit", "-q", "-m", "fixture project")
    return git("rev-parse", "HEAD")
