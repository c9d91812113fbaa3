"""A tiny randomly initialised BERT encoder (WordPiece vocabulary of Lean characters) for the
retrieval tests: built in about a second, saved as an ordinary HF folder that
``lean_dojo_v2.models.retrieval.load_encoder`` loads. The real default (MiniLM) is only used in
tests marked ``slow``."""

from __future__ import annotations

from pathlib import Path

import tiny_models  # tests/ is on sys.path (pytest's rootdir insertion)
from tiny_models import char_vocab

_CHARS = (
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    "_.,:;=+-*/^<>()[]{}|!?@#$%&'⊢ℕℤℚℝ∀∃→←↔∧∨¬≤≥≠∣∈∉⊆∑∏⁻¹•λαβγ"
)
_WORDS = ("nat", "int", "add", "zero", "comm", "mul", "theorem", "lemma", "eq", "succ", "list")


def build_tiny_bert(dst: str | Path, *, seed: int = 0) -> Path:
    """Save a 2-layer BERT (hidden 32) and its WordPiece tokenizer to ``dst``; returns ``dst``."""
    return tiny_models.build_tiny_bert(dst, seed=seed, vocab=char_vocab(_CHARS, _WORDS))


def assert_accessible(corpus, path: str, pos, hits) -> int:  # noqa: ANN001 - Corpus, Pos | None
    """Assert every ``(premise, score)`` hit for ``(path, pos)`` may be used there: defined before
    ``pos`` in the same file, or in a file ``path`` imports. Returns the number checked."""
    allowed = corpus.imports_of(path)
    for premise, _ in hits:
        if premise.path == path:
            assert pos is None or premise.start < pos, (path, pos, premise.full_name)
        else:
            assert premise.path in allowed, (path, premise.path)
    return len(hits)


# Two lemmas `@[simps]` generates from `CategoryTheory.Iso.trans`: LeanDojo Benchmark 4's corpus
# lists both at the declaration's start, Mathlib/CategoryTheory/Iso.lean [149, 10].
ISO_FILE = "Mathlib/CategoryTheory/Iso.lean"
SHARED_START = (149, 10)
SHARED_NAMES = ("CategoryTheory.Iso.trans_hom", "CategoryTheory.Iso.trans_inv")


def b4_corpus_with_shared_positions(records_path: Path):  # noqa: ANN201 - data.Corpus
    """The premises named in the provenances of the real LeanDojo Benchmark 4 records at
    ``records_path`` (``def_path``, ``def_pos``, ``def_end_pos``: one file per ``def_path``,
    no imports), plus ``Iso.lean`` with the two ``@[simps]`` lemmas at one position, importing
    every other file (a made-up edge: the records hold no import structure)."""
    import json

    from lean_dojo_v2.data import Corpus, Pos, Premise, PremiseFile

    records = json.loads(Path(records_path).read_text(encoding="utf-8"))
    by_file: dict[str, dict[str, Premise]] = {}
    for r in records:
        for tac in r["traced_tactics"]:
            for p in tac["annotated_tactic"][1]:
                by_file.setdefault(p["def_path"], {})[p["full_name"]] = Premise(
                    p["def_path"], p["full_name"], "", Pos(*p["def_pos"]),
                    Pos(*p["def_end_pos"]), "unknown",
                )  # fmt: skip
    assert ISO_FILE not in by_file  # the 100 records hold no premise of Iso.lean
    files = [PremiseFile(path, [], list(ps.values())) for path, ps in sorted(by_file.items())]
    start = Pos(*SHARED_START)
    shared = [Premise(ISO_FILE, n, "", start, start, "unknown") for n in SHARED_NAMES]
    files.append(PremiseFile(ISO_FILE, sorted(by_file), shared))
    return Corpus(files)
