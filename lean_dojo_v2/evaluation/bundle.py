"""Layer 4 (evaluation): how the bundled benchmarks and recorded proofs were written from their
upstream releases (``lean_dojo_v2/resources/benchmarks/``), so that anyone can redo it::

    python -m lean_dojo_v2.evaluation.bundle SRC DST

``SRC`` holds the upstream files as released (``prover_benchmarks/deepseek_prover_v15``,
``prover_benchmarks/putnambench_lean4``, ``minif2f_proofs/kimina_prover_preview``; each
folder's ``SOURCE`` in ``DST`` names the repository and commit). Every data file is the
upstream text, unchanged: DeepSeek-Prover-V1.5's JSONL files are copied; PutnamBench's and
Kimina-Prover's ``.lean`` files become one JSONL line each, ``{"name", "lean"}`` (the file's
whole text), in name order. Kept from Kimina-Prover are the files that hold the header and the
one theorem only (a proof that needs lemmas of its own file cannot be given as a tactic proof
of the statement). The ``SOURCE`` files are written by hand; the licences are copied.
``tests/evaluation/test_benchmarks_bundle.py`` rebuilds the data where the upstream files are
at hand and compares the bytes.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path

from ..data.lean_lexer import DECL_KINDS, iter_commands

__all__ = ["build_bundle", "single_theorem"]

DEEPSEEK = Path("prover_benchmarks") / "deepseek_prover_v15"
PUTNAM = Path("prover_benchmarks") / "putnambench_lean4"
KIMINA = Path("minif2f_proofs") / "kimina_prover_preview"


def single_theorem(text: str) -> bool:
    """Whether a ``.lean`` file declares nothing but one ``theorem`` (its header aside)."""
    declarations = [c for c in iter_commands(text) if c.keyword in DECL_KINDS]
    return len(declarations) == 1 and declarations[0].keyword == "theorem"


def _write_lines(path: Path, rows: Iterable[dict[str, str]]) -> int:
    lines = [json.dumps(row, ensure_ascii=False) + "\n" for row in rows]
    path.write_text("".join(lines), encoding="utf-8")
    return len(lines)


def _lean_rows(files: Iterable[Path]) -> list[dict[str, str]]:
    return [
        {"name": f.stem, "lean": f.read_text(encoding="utf-8")}
        for f in sorted(files, key=lambda f: f.stem)
    ]


def build_bundle(src: str | Path, dst: str | Path) -> dict[str, int]:
    """Write the bundle's data files and licences from the upstream files under ``src`` into
    ``dst``; returns how many records each data file holds."""
    src, dst = Path(src), Path(dst)
    counts: dict[str, int] = {}
    deepseek = dst / "deepseek_prover_v15"
    deepseek.mkdir(parents=True, exist_ok=True)
    for name in ("minif2f.jsonl", "proofnet.jsonl", "minif2f_valid_few_shot.jsonl"):
        shutil.copyfile(src / DEEPSEEK / name, deepseek / name)
        counts[f"deepseek_prover_v15/{name}"] = sum(
            1 for line in (deepseek / name).read_text("utf-8").splitlines() if line.strip()
        )
    shutil.copyfile(src / DEEPSEEK / "LICENSE-CODE", deepseek / "LICENSE")

    putnam = dst / "putnambench"
    putnam.mkdir(parents=True, exist_ok=True)
    rows = _lean_rows((src / PUTNAM / "src").glob("*.lean"))
    counts["putnambench/putnambench.jsonl"] = _write_lines(putnam / "putnambench.jsonl", rows)
    for name in ("LICENSE", "lean-toolchain"):
        shutil.copyfile(src / PUTNAM / name, putnam / name)

    kimina = dst / "kimina_prover_preview"
    kimina.mkdir(parents=True, exist_ok=True)
    files = [*(src / KIMINA / "src").glob("*.lean"),
             *(src / KIMINA / "src_added_2025-07-10").glob("*.lean")]  # fmt: skip
    rows = [r for r in _lean_rows(files) if single_theorem(r["lean"])]
    counts["kimina_prover_preview/minif2f_test_proofs.jsonl"] = _write_lines(
        kimina / "minif2f_test_proofs.jsonl", rows
    )
    for name in ("LICENSE", "lean-toolchain"):
        shutil.copyfile(src / KIMINA / name, kimina / name)
    return counts


if __name__ == "__main__":  # pragma: no cover - a maintainer's command
    if len(sys.argv) != 3:
        sys.exit("usage: python -m lean_dojo_v2.evaluation.bundle SRC DST")
    for path, count in build_bundle(sys.argv[1], sys.argv[2]).items():
        print(f"{path}: {count}")
