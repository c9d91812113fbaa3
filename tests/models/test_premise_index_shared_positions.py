"""A retriever over a corpus where several premises start at one position, as lemmas generated
by ``@[simps]`` do in LeanDojo Benchmark 4 (``CategoryTheory.Iso.trans_hom`` and ``trans_inv``
at Mathlib/CategoryTheory/Iso.lean [149, 10]): it saves, exports and loads back, row for row."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from lean_dojo_v2.data import Corpus, sample_dataset_path
from lean_dojo_v2.data.ntp_toolkit import read_ntp_toolkit
from lean_dojo_v2.errors import DataFormatError
from lean_dojo_v2.models.premise_index import PremiseIndex, export_retriever, load_retriever
from lean_dojo_v2.models.retrieval import PremiseEncoder, load_encoder

from .retrieval_fixtures import (
    ISO_FILE,
    SHARED_NAMES,
    b4_corpus_with_shared_positions,
    build_tiny_bert,
)

NTP_MINI = Path(__file__).resolve().parents[1] / "data" / "ntp_toolkit" / "mini"


@pytest.fixture(scope="module")
def encoder(tmp_path_factory: pytest.TempPathFactory) -> PremiseEncoder:
    return load_encoder(build_tiny_bert(tmp_path_factory.mktemp("bert")), device="cpu")


@pytest.fixture(scope="module")
def b4_corpus(b4_records_path: Path) -> Corpus:
    return b4_corpus_with_shared_positions(b4_records_path)


def test_the_corpus_has_two_premises_at_one_position(b4_corpus: Corpus) -> None:
    iso = b4_corpus.get_file(ISO_FILE).premises
    assert [p.full_name for p in iso] == list(SHARED_NAMES)
    assert iso[0].start == iso[1].start
    assert len(b4_corpus) == 187  # the 185 real premises of the records, and the two


def test_an_export_with_shared_positions_loads_back_and_retrieves_both(
    b4_corpus: Corpus, encoder: PremiseEncoder, tmp_path: Path
) -> None:
    index = PremiseIndex.build(b4_corpus, encoder, show_progress=False)
    out = export_retriever(tmp_path / "export", encoder, index)
    loaded = load_retriever(out, device="cpu")
    assert [(p.path, p.full_name, p.start) for p in loaded.index.premises] == [
        (p.path, p.full_name, p.start) for p in index.premises
    ]
    np.testing.assert_array_equal(loaded.index.embeddings, index.embeddings)
    # Everything accessible in Iso.lean ranks, both lemmas included, each under its own name.
    (hits,) = loaded.retrieve(
        ["X Y Z : C\n⊢ (α ≪≫ β).inv = β.inv ≫ α.inv"], 1000, [(ISO_FILE, None)]
    )
    names = [p.full_name for p, _ in hits]
    assert len(names) == len(set(names)) == 187
    assert set(SHARED_NAMES) <= set(names)


@pytest.mark.parametrize("which", ["bundled sample", "ntp-toolkit mini", "b4 shared positions"])
def test_save_load_round_trips_every_real_corpus(
    which: str, b4_corpus: Corpus, encoder: PremiseEncoder, tmp_path: Path
) -> None:
    corpus = {
        "bundled sample": lambda: Corpus.from_jsonl(sample_dataset_path() / "corpus.jsonl"),
        "ntp-toolkit mini": lambda: read_ntp_toolkit(NTP_MINI).corpus,
        "b4 shared positions": lambda: b4_corpus,
    }[which]()
    index = PremiseIndex.build(corpus, encoder, show_progress=False)
    again = PremiseIndex.load(index.save(tmp_path / "idx"))
    assert again.premises == index.premises
    np.testing.assert_array_equal(again.embeddings, index.embeddings)


def test_a_row_whose_position_no_longer_matches_is_refused(
    b4_corpus: Corpus, encoder: PremiseEncoder, tmp_path: Path
) -> None:
    """The name finds the premise; its position is the check that the corpus is the one the
    embeddings were computed from."""
    index = PremiseIndex.build(b4_corpus, encoder, show_progress=False)
    saved = index.save(tmp_path / "idx")
    meta = json.loads((saved / "index.json").read_text())
    row = next(i for i, r in enumerate(meta["rows"]) if r[1] == SHARED_NAMES[1])
    meta["rows"][row][2] = [150, 0]
    (saved / "index.json").write_text(json.dumps(meta))
    with pytest.raises(DataFormatError, match=rf"rows\[{row}\].*trans_inv.*\[149, 10\].*rebuild"):
        PremiseIndex.load(saved)
    meta["rows"] = meta["rows"][:-1]
    (saved / "index.json").write_text(json.dumps(meta))
    with pytest.raises(DataFormatError, match="rows.*embeddings"):
        PremiseIndex.load(saved)


def test_a_premise_use_resolves_to_its_own_name_where_positions_are_shared(
    b4_corpus: Corpus,
) -> None:
    """A tactic's provenance names ``trans_hom`` at the position ``trans_inv`` shares: the
    positive is ``trans_hom``, not whichever premise the position finds first."""
    from lean_dojo_v2.data import Theorem
    from lean_dojo_v2.models.retrieval_eval import retrieval_queries

    def use(name: str) -> dict:
        return {
            "tactic": f"simp [{name.rsplit('.', 1)[1]}]",
            "annotated_tactic": [
                f"simp [<a>{name.rsplit('.', 1)[1]}</a>]",
                [{"full_name": name, "def_path": ISO_FILE, "def_pos": [149, 10],
                  "def_end_pos": [149, 10]}],
            ],
            "state_before": "⊢ (α ≪≫ β).hom = α.hom ≫ β.hom",
            "state_after": "no goals",
        }  # fmt: skip

    thm = Theorem.from_dict(
        {
            "url": "https://github.com/leanprover-community/mathlib4",
            "commit": "29dcec074de168ac2bf835a77ef68bbe069194c5",
            "file_path": ISO_FILE,
            "full_name": "CategoryTheory.Iso.trans_assoc",
            "start": [160, 1],
            "end": [162, 20],
            "traced_tactics": [use(SHARED_NAMES[0]), use(SHARED_NAMES[1])],
        }
    )
    queries = retrieval_queries([thm], b4_corpus, strict=True)
    assert [q.positives for q in queries] == [(SHARED_NAMES[0],), (SHARED_NAMES[1],)]


def test_files_mask_follows_imports_and_rows_named_finds_both_lemmas(
    b4_corpus: Corpus, encoder: PremiseEncoder
) -> None:
    index = PremiseIndex.build(b4_corpus, encoder, show_progress=False)
    assert index.files_mask([ISO_FILE]).all()  # Iso.lean imports every other file here
    own = index.files_mask([ISO_FILE], with_imports=False)
    assert sorted(index.premises[r].full_name for r in np.flatnonzero(own)) == list(SHARED_NAMES)
    rows = [index.rows_named(n) for n in SHARED_NAMES]
    assert [index.premises[r].full_name for (r,) in rows] == list(SHARED_NAMES)
