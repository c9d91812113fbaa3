"""Build ``tests/data/ntp_toolkit/mini``: a small ntp-toolkit output directory made from real Lean data.

No Lean toolchain is available here, so instead of running ntp-toolkit this script converts real
records into its schema (see ``tests/data/ntp_toolkit/SOURCE`` for what comes from where and what
is not known):

- LeanDojo Benchmark 4 records (``tests/data/real/leandojo_b4/random_test_records_1_100.json``) and
  the bundled sample's corpus (its premise positions and implied imports) give Mathlib/Init/
  Batteries modules: ``Declarations`` rows for every premise the proofs use and for every theorem
  with a tactic proof, ``Imports`` (transitive closure of the implied edges, ``isDirect`` for the
  edges themselves) and ``TrainingDataWithPremises`` (one row per traced tactic).
- miniCTX's Lean-printed SciLean declarations (``declarations/scilean.jsonl``) and the import lists
  of miniCTX's SciLean theorems (``data/minictx/scilean.jsonl``) give five SciLean modules with real
  signatures.
- ntp-toolkit's ``TrainingData/Utils/HammerBlacklist.lean`` gives ``HammerBlacklist.jsonl``, sorted
  as ``lake exe update_hammer_blacklist`` prints it.

Run from the repository root::

    python scripts/make_ntp_toolkit_fixture.py --blacklist-lean PATH/TO/HammerBlacklist.lean

It rewrites ``tests/data/ntp_toolkit/mini`` (a directory this script owns) and prints its size.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"

SCILEAN_MODULES = [
    "SciLean.Core.FunctionPropositions.Bijective",
    "SciLean.Core.FunctionTransformations.Preimage",
    "SciLean.Core.Rand.Rand",
    "SciLean.Core.Rand.ExpectedValue",
    "SciLean.Core.Rand.PushPullExpectation",
]
# The module whose TrainingDataWithPremises file gets ntp-toolkit's debug lines (the first one).
DEBUG_LINES_IN_FIRST_MODULE = True
SIMP_TACTICS = ("simp", "simp_all", "simp_rw", "dsimp", "field_simp", "norm_num", "simpa")


def module_of_path(path: str) -> str:
    """``.lake/packages/lean4/src/lean/Init/Core.lean`` -> ``Init.Core``; ``Mathlib/A/B.lean`` ->
    ``Mathlib.A.B``; ``.lake/packages/batteries/Batteries/Logic.lean`` -> ``Batteries.Logic``."""
    p = path
    m = re.match(r"^\.lake/packages/[^/]+/(.*)$", p)
    if m:
        p = m.group(1)
    if p.startswith("src/lean/"):
        p = p[len("src/lean/") :]
    if not p.endswith(".lean"):
        raise ValueError(f"not a Lean file path: {path}")
    return p[: -len(".lean")].replace("/", ".")


def simp_all_hint(tactic: str, name: str) -> str:
    """ntp-toolkit's rule, read off the tactic text: a lemma written in a simp-family lemma list is
    passed to simp_all (``unmodified``, ``backwardOnly`` after ``←``, ``simpErase`` after ``-``);
    every other use (rw, exact, term constants) is ``notInSimpAll``."""
    head = tactic.lstrip().split(None, 1)[0] if tactic.strip() else ""
    head = head.rstrip("?!")
    if head not in SIMP_TACTICS or head == "simp_rw" and "[" not in tactic:
        return "notInSimpAll"
    short = re.escape(name.rsplit(".", 1)[-1])
    if re.search(r"←\s*(?:[\w.']*\.)?" + short + r"(?![\w'])", tactic):
        return "backwardOnly"
    if head != "simp_rw" and re.search(r"-\s*(?:[\w.']*\.)?" + short + r"(?![\w'])", tactic):
        return "simpErase"
    if re.search(r"(?:[\w.']*\.)?" + short + r"(?![\w'])", tactic):
        return "unmodified"
    return "notInSimpAll"


def dumps(obj: object) -> str:
    # Lean's Json.compress: no spaces, raw UTF-8.
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def write_jsonl(path: Path, rows: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(r + "\n" for r in rows), "utf-8")


def leandojo_part(records_path: Path, corpus_path: Path):
    records = json.loads(records_path.read_text("utf-8"))
    corpus = [json.loads(line) for line in corpus_path.read_text("utf-8").splitlines() if line]
    declarations: dict[str, list[tuple[tuple[int, int], dict]]] = defaultdict(list)
    seen: set[str] = set()
    direct: dict[str, set[str]] = defaultdict(set)
    for f in corpus:
        module = module_of_path(f["path"])
        declarations.setdefault(module, [])
        for imp in f["imports"]:
            direct[module].add(module_of_path(imp))
        for p in f["premises"]:
            if p["full_name"] in seen:
                continue
            seen.add(p["full_name"])
            line, col = p["start"]
            row = {"name": p["full_name"], "module": module, "line": line, "column": col}
            declarations[module].append(((line, col), row))
    states: dict[str, list[str]] = defaultdict(list)
    for t in records:
        if not t["traced_tactics"]:
            continue
        module = module_of_path(t["file_path"])
        if t["full_name"] not in seen:
            seen.add(t["full_name"])
            line, col = t["start"]
            row = {
                "name": t["full_name"],
                "kind": "theorem",
                "module": module,
                "line": line,
                "column": col,
                "isProp": True,
                "isHumanTheorem": True,
            }
            declarations[module].append(((line, col), row))
        per_tactic = []
        for tac in t["traced_tactics"]:
            names = list(dict.fromkeys(a["full_name"] for a in tac["annotated_tactic"][1]))
            per_tactic.append([(n, simp_all_hint(tac["tactic"], n)) for n in names])
        merged: dict[str, str] = {}
        for uses in per_tactic:
            for n, h in uses:
                merged.setdefault(n, h)
        decl_rec = [f"({n}, {h})" for n, h in merged.items()]
        for tac, uses in zip(t["traced_tactics"], per_tactic, strict=True):
            row = {
                "declName": t["full_name"],
                "state": tac["state_before"],
                "nextTactic": tac["tactic"],
                "nextTacticHammerRecommendation": [f"({n}, {h})" for n, h in uses],
                "declHammerRecommendation": decl_rec,
            }
            states[module].append(dumps(row))
    # Transitive imports over the implied edges.
    imports: dict[str, list[str]] = {}
    for module in declarations:
        closure: set[str] = set()
        stack = list(direct.get(module, ()))
        while stack:
            m = stack.pop()
            if m in closure:
                continue
            closure.add(m)
            stack.extend(direct.get(m, ()))
        imports[module] = [
            dumps({"name": m, "isDirect": m in direct.get(module, set())}) for m in sorted(closure)
        ]
    decl_rows = {
        m: [dumps(r) for _, r in sorted(rows, key=lambda x: x[0])]
        for m, rows in declarations.items()
    }
    return decl_rows, imports, states, records


def scilean_part(declarations_path: Path, theorems_path: Path, keep_modules: set[str]):
    wanted = set(SCILEAN_MODULES)
    decl_rows: dict[str, list[str]] = {m: [] for m in SCILEAN_MODULES}
    for line in declarations_path.read_text("utf-8").splitlines():
        if not line.strip():
            continue
        r = json.loads(line)
        if r["module"] not in wanted:
            continue
        text = r["declaration"]
        doc = None
        m = re.match(r"^/--(.*?)-/\s*", text, flags=re.S)
        body = text[m.end() :] if m else text
        if m:
            doc = m.group(1).strip()
        kind = body.split(None, 1)[0] if body.split() else None
        row = {
            "name": r["name"],
            "kind": kind,
            "doc": doc,
            "signature": text,
            "module": r["module"],
        }
        decl_rows[r["module"]].append(dumps(row))
    imports: dict[str, list[str]] = {}
    for line in theorems_path.read_text("utf-8").splitlines():
        if not line.strip():
            continue
        t = json.loads(line)
        module = t["module"]
        if module not in wanted or module in imports:
            continue
        header = {
            x.split(None, 1)[1].strip()
            for x in t["srcContext"].splitlines()
            if x.startswith("import ")
        }
        names = [
            n
            for n in t["dependencyMetadata"]["importedModules"]
            if n != module and (n.startswith("SciLean.") or n in keep_modules)
        ]
        imports[module] = [dumps({"name": n, "isDirect": n in header}) for n in sorted(set(names))]
    return decl_rows, imports


def blacklist_names(lean_file: Path) -> list[str]:
    text = lean_file.read_text("utf-8")
    body = text.split("hammerRecommendationBlackList : Array String := #[", 1)[1].split("]", 1)[0]
    names = re.findall(r'^\s*"((?:[^"\\]|\\.)*)",?\s*(?:--.*)?$', body, flags=re.M)
    return sorted(set(names))


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--records",
        type=Path,
        default=ROOT / "tests/data/real/leandojo_b4/random_test_records_1_100.json",
    )
    ap.add_argument(
        "--corpus",
        type=Path,
        default=ROOT / "lean_dojo_v2/resources/leandojo_b4_sample/corpus.jsonl",
    )
    ap.add_argument(
        "--scilean-declarations", type=Path, default=SHARED / "minictx/declarations/scilean.jsonl"
    )
    ap.add_argument(
        "--scilean-theorems", type=Path, default=SHARED / "minictx/data/minictx/scilean.jsonl"
    )
    ap.add_argument(
        "--blacklist-lean",
        type=Path,
        required=True,
        help="TrainingData/Utils/HammerBlacklist.lean of cmu-l3/ntp-toolkit@64c9047",
    )
    ap.add_argument("--out", type=Path, default=ROOT / "tests/data/ntp_toolkit/mini")
    args = ap.parse_args()

    ld_decls, ld_imports, ld_states, records = leandojo_part(args.records, args.corpus)
    sc_decls, sc_imports = scilean_part(
        args.scilean_declarations, args.scilean_theorems, set(ld_decls)
    )
    out: Path = args.out
    if out.exists():
        shutil.rmtree(out)
    for module, rows in {**ld_decls, **sc_decls}.items():
        write_jsonl(out / "Declarations" / f"{module}.jsonl", rows)
    for module, rows in {**ld_imports, **sc_imports}.items():
        write_jsonl(out / "Imports" / f"{module}.jsonl", rows)
    first = True
    for module in sorted(ld_states):
        rows = list(ld_states[module])
        if first and DEBUG_LINES_IN_FIRST_MODULE:
            # What ntp-toolkit prints around a state when run with includeDebugMessages=true.
            row = json.loads(rows[0])
            rows = [
                f"Processing tactic {row['nextTactic']}",
                f"{row['nextTactic']} successfully processed (declName: {row['declName']})",
                *rows,
            ]
            first = False
        write_jsonl(out / "TrainingDataWithPremises" / f"{module}.jsonl", rows)
    (out / "HammerBlacklist.jsonl").write_text(
        dumps({"hammerBlacklist": blacklist_names(args.blacklist_lean)}) + "\n", "utf-8"
    )
    (out / "revision").write_text(records[0]["commit"] + "\n", "utf-8")
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    n_files = sum(1 for p in out.rglob("*") if p.is_file())
    print(f"wrote {out} ({n_files} files, {size / 1024:.1f} KiB)")


if __name__ == "__main__":
    main()
