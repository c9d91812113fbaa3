"""``lean-dojo-v2 eval retrieval`` on the bundled real sample."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from lean_dojo_v2.cli import main
from lean_dojo_v2.data import sample_dataset_path

sys.path.insert(0, str(Path(__file__).resolve().parent / "models"))
from retrieval_fixtures import build_tiny_bert  # noqa: E402

METRICS = {"R@1", "R@10", "FullRecall@1", "FullRecall@10", "MRR", "n"}


def _run_json(capsys, *argv: str) -> dict:
    rc = main(["eval", "retrieval", *argv, "--json"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    lines = captured.out.strip().splitlines()
    assert len(lines) == 1
    return json.loads(lines[0])


@pytest.fixture(scope="module")
def tiny_bert_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_bert(tmp_path_factory.mktemp("bert"))


def test_eval_retrieval_bm25_prints_one_json_line_of_fractions(capsys) -> None:
    out = _run_json(capsys, "--data", str(sample_dataset_path()), "--bm25")
    assert METRICS <= set(out) and out["retriever"] == "bm25"
    assert out["n"] == 9 and out["split"] == "random/test"
    for key in METRICS - {"n"}:
        assert 0.0 <= out[key] <= 1.0
    assert out["R@1"] <= out["R@10"] and out["MRR"] > 0


def test_eval_retrieval_with_an_encoder_dir_and_an_exported_retriever(
    capsys, tiny_bert_dir: Path, tmp_path: Path
) -> None:
    from lean_dojo_v2.data import Corpus
    from lean_dojo_v2.models.premise_index import PremiseIndex, export_retriever
    from lean_dojo_v2.models.retrieval import load_encoder

    data = str(sample_dataset_path())
    on_the_fly = _run_json(
        capsys, "--data", data, "--model", str(tiny_bert_dir), "--device", "cpu", "--k", "10,1,5"
    )
    assert {"R@5", "FullRecall@5"} <= set(on_the_fly) and on_the_fly["n"] == 9
    encoder = load_encoder(tiny_bert_dir, device="cpu")
    corpus = Corpus.from_jsonl(sample_dataset_path() / "corpus.jsonl")
    exported = export_retriever(
        tmp_path / "exp", encoder, PremiseIndex.build(corpus, encoder, show_progress=False)
    )
    loaded = _run_json(
        capsys, "--data", data, "--model", str(exported), "--device", "cpu", "--k", "1,5,10"
    )
    for key in METRICS | {"R@5"}:
        assert loaded[key] == pytest.approx(on_the_fly[key], abs=1e-9)


def test_eval_retrieval_bad_k_is_a_one_line_error(capsys) -> None:
    rc = main(["eval", "retrieval", "--data", str(sample_dataset_path()), "--bm25", "--k", "1,0"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and len(err) == 1 and "--k" in err[0] and "'0'" in err[0]


def test_eval_retrieval_missing_corpus_file_is_named(capsys, tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(sample_dataset_path(), data)
    (data / "corpus.jsonl").unlink()
    rc = main(["eval", "retrieval", "--data", str(data), "--bm25"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and len(err) == 1 and "corpus.jsonl" in err[0]


def test_eval_retrieval_premise_not_in_corpus_names_file_and_line(capsys, tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(sample_dataset_path(), data)
    test_file = data / "random" / "test.json"
    theorems = json.loads(test_file.read_text("utf-8"))
    thm = next(t for t in theorems if any(tt["annotated_tactic"][1] for tt in t["traced_tactics"]))
    tac = next(tt for tt in thm["traced_tactics"] if tt["annotated_tactic"][1])
    tac["annotated_tactic"][1][0]["full_name"] = "Ghost.premise"
    tac["annotated_tactic"][1][0]["def_path"] = "Ghost.lean"
    test_file.write_text(json.dumps(theorems), "utf-8")
    # Default: left out of the positives and counted.
    out = _run_json(capsys, "--data", str(data), "--bm25")
    assert out["unresolved_premise_uses"] == 1
    # --strict: a one-line error naming the theorem's file and line and the premise.
    rc = main(["eval", "retrieval", "--data", str(data), "--bm25", "--strict"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and len(err) == 1
    assert f"{thm['file_path']}:{thm['start'][0]}" in err[0] and "Ghost.premise" in err[0]
