"""``data stats`` says what a dataset's corpus offers retrieval training: the count of training
examples a ReProver-style loader gets (checked against a small loader written here, applying the
rule ReProver's ``Corpus`` applies), and a warning when that count is 0 (the bundled sample: its
corpus has no premise code)."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

from lean_dojo_v2.cli import main
from lean_dojo_v2.data import sample_dataset_path
from lean_dojo_v2.data.stats import dataset_report


def reprover_style_examples(dataset: Path, strategy: str = "random") -> int:
    """Training examples a loader like ReProver's makes, written from its rule alone: premises
    whose ``code`` is ``""`` (or named ``user__.n``, or a ``[mutual]`` block) are dropped when the
    corpus is read; a tactic's positive premises are, per provenance, the first remaining premise
    of ``def_path`` whose ``start <= def_pos <= end``; one example per distinct positive premise
    of each tactic."""
    kept: dict[str, list[dict]] = {}
    for line in (dataset / "corpus.jsonl").read_text().splitlines():
        entry = json.loads(line)
        kept[entry["path"]] = [
            p
            for p in entry["premises"]
            if p["code"] != ""
            and "user__.n" not in p["full_name"]
            and not (p["full_name"].startswith("[") and p["full_name"].endswith("]"))
        ]
    examples = 0
    for split in ("train", "val", "test"):
        for thm in json.loads((dataset / strategy / f"{split}.json").read_text()):
            for tac in thm["traced_tactics"]:
                positives = set()
                for prov in tac["annotated_tactic"][1]:
                    for p in kept.get(prov["def_path"], []):
                        if p["start"] <= prov["def_pos"] <= p["end"]:
                            positives.add((prov["def_path"], p["full_name"], tuple(p["start"])))
                            break
                examples += len(positives)
    return examples


def _stats(capsys, caplog, path: Path) -> tuple[dict, list[str]]:
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="lean_dojo_v2"):
        assert main(["data", "stats", str(path), "--json"]) == 0
    out, _ = capsys.readouterr()
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    return json.loads(out), warnings


def _with_code(tmp_path: Path, keep) -> Path:
    """A copy of the bundled sample whose premises chosen by ``keep`` carry a code text (a
    placeholder naming the premise: what is counted is whether the text is there)."""
    copy = tmp_path / "sample"
    shutil.copytree(sample_dataset_path(), copy)
    corpus = copy / "corpus.jsonl"
    lines = []
    for k, line in enumerate(corpus.read_text().splitlines()):
        entry = json.loads(line)
        for p in entry["premises"]:
            if keep(k, p):
                p["code"] = f"<declaration of {p['full_name']}>"
        lines.append(json.dumps(entry))
    corpus.write_text("".join(line + "\n" for line in lines))
    return copy


def test_bundled_sample_gives_a_reprover_style_loader_no_example_and_stats_say_so(capsys, caplog):
    sample = sample_dataset_path()
    assert reprover_style_examples(sample) == 0
    stats, warnings = _stats(capsys, caplog, sample)
    assert stats["corpus"] == {
        "premise_files": 160,
        "premises": 185,
        "premises_with_code": 0,
        "retrieval_examples": 0,
    }
    (line,) = [w for w in warnings if "ReProver" in w]
    assert "none of the 185 premises" in line and "0 training examples" in line
    assert "lean-dojo-v2 trace" in line and "\n" not in line


@pytest.mark.parametrize(
    "keep",
    [
        lambda k, p: True,  # every premise has its code
        lambda k, p: k % 2 == 0,  # half of the files
        lambda k, p: p["full_name"] < "M",  # some premises of a file, not others
    ],
)
def test_retrieval_examples_match_a_reprover_style_loader(tmp_path, capsys, caplog, keep):
    dataset = _with_code(tmp_path, keep)
    expected = reprover_style_examples(dataset)
    assert expected > 0
    stats, warnings = _stats(capsys, caplog, dataset)
    assert stats["corpus"]["retrieval_examples"] == expected
    assert not [w for w in warnings if "ReProver" in w]
    # the same count through the Python face, for the other strategy too (same theorems)
    report = dataset_report(dataset, "novel_premises")
    assert report.corpus is not None and report.corpus.retrieval_examples == expected


def test_code_only_on_premises_no_tactic_uses_still_warns(tmp_path, capsys, caplog):
    dataset = tmp_path / "sample"
    shutil.copytree(sample_dataset_path(), dataset)
    corpus = dataset / "corpus.jsonl"
    lines = corpus.read_text().splitlines()
    first = json.loads(lines[0])
    # one more premise, with a code text, where no provenance points (line 1 of the file)
    first["premises"].insert(
        0,
        {
            "full_name": "Unused.premise",
            "code": "<declaration of Unused.premise>",
            "start": [1, 1],
            "end": [1, 2],
            "kind": "unknown",
        },
    )
    corpus.write_text("".join(x + "\n" for x in [json.dumps(first), *lines[1:]]))
    assert reprover_style_examples(dataset) == 0
    stats, warnings = _stats(capsys, caplog, dataset)
    assert stats["corpus"]["premises_with_code"] == 1
    (line,) = [w for w in warnings if "ReProver" in w]
    assert "only 1 of the 186 premises, none used here," in line


def test_split_file_has_no_corpus_section(capsys, caplog):
    stats, warnings = _stats(capsys, caplog, sample_dataset_path() / "random" / "test.json")
    assert "corpus" not in stats and not [w for w in warnings if "ReProver" in w]


def test_human_readable_stats_show_the_corpus(capsys):
    assert main(["data", "stats", str(sample_dataset_path())]) == 0
    out, _ = capsys.readouterr()
    assert "corpus.jsonl" in out and "premises_with_code" in out and "retrieval_examples" in out
