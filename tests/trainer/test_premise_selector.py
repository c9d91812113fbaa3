"""``lean-dojo-v2 train premise-selector`` (trainer/premise_selector.py) on the ntp-toolkit fixture
converted from real Lean data (tests/data/ntp_toolkit), with a tiny randomly initialised encoder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lean_dojo_v2.cli import main
from lean_dojo_v2.data.ntp_toolkit import NtpToolkitLayoutError, read_ntp_toolkit, split_modules
from lean_dojo_v2.errors import OutputExistsError
from lean_dojo_v2.trainer.errors import ConfigValueError
from lean_dojo_v2.trainer.premise_selector import PremiseSelectorConfig, split_states

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "ntp_toolkit" / "mini"


@pytest.fixture(scope="module")
def tiny_encoder_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from models.retrieval_fixtures import build_tiny_bert  # tests/ is on sys.path (conftest)

    return build_tiny_bert(tmp_path_factory.mktemp("tiny_bert_premise_selector"))


@pytest.fixture(scope="module")
def trained(tiny_encoder_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    """One CLI run, shared by the end-to-end checks below."""
    out = tmp_path_factory.mktemp("ps") / "run"
    argv = [
        "train",
        "premise-selector",
        "--data_dir",  # the seed's spelling
        str(FIXTURE),
        "--model",
        str(tiny_encoder_dir),
        "--batch-size",
        "4",
        "--learning_rate",
        "1e-3",
        "--max-steps",
        "3",
        "--k",
        "1,4,16",
        "--output",
        str(out),
        "--run-name",
        "tiny",
        "--valid-fraction",
        "0.15",
        "--test-fraction",
        "0.15",
        "--device",
        "cpu",
        "--quiet",
        "--json",
    ]
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(argv)
    assert rc == 0, buf.getvalue()[-2000:]
    summary = json.loads(buf.getvalue().strip().splitlines()[-1])
    return out, summary


def test_cli_writes_static_retrievals_for_valid_and_test(trained) -> None:
    out, summary = trained
    data = read_ntp_toolkit(FIXTURE)
    split = json.loads((out / "split.json").read_text("utf-8"))
    for name in ("valid", "test"):
        path = out / "retrieved_premises" / f"dot_{name}-tiny.json"
        assert path.is_file() and summary["retrieval_files"][name] == str(path)
        records = json.loads(path.read_text("utf-8"))
        assert records and len(records) == summary["queries"][name]
        modules = set(split[name])
        # one record per declaration (its first state), from the split's modules only
        assert len({r["decl_name"] for r in records}) == len(records)
        for r in records:
            assert set(r) == {"state_name", "decl_name", "module", "idx_in_module", "premises"}
            assert (
                r["module"] in modules and r["state_name"] == f"{r['module']}#{r['idx_in_module']}"
            )
            scores = [p["score"] for p in r["premises"]]
            assert 0 < len(scores) <= 16 and scores == sorted(scores, reverse=True)
            # only premises accessible at the declaration: imported modules or earlier in its own
            # module; never the declaration itself
            own = data.corpus.get_premise(r["decl_name"])
            allowed = {p.full_name for p in data.corpus.accessible_premises(r["module"], own.start)}
            names = [p["corpus_id"] for p in r["premises"]]
            assert set(names) <= allowed and r["decl_name"] not in names
            assert len(names) == min(16, len(allowed))


def test_cli_reports_recall_and_full_recall_at_each_k(trained) -> None:
    out, summary = trained
    metrics = json.loads((out / "metrics.json").read_text("utf-8"))
    assert metrics == summary["metrics"]
    for name in ("valid", "test"):
        m = metrics[name]
        assert m["n"] == summary["queries"][name] > 0
        for k in (1, 4, 16):
            assert 0.0 <= m[f"R@{k}"] <= 1.0 and 0.0 <= m[f"FullRecall@{k}"] <= 1.0
        assert m["R@1"] <= m["R@4"] <= m["R@16"]
        assert m["FullRecall@1"] <= m["FullRecall@4"] <= m["FullRecall@16"]
        # the metrics are those of the written retrievals
        records = json.loads((out / f"retrieved_premises/dot_{name}-tiny.json").read_text("utf-8"))
        by_decl = {s.decl_name: set(s.premises) for s in read_ntp_toolkit(FIXTURE).states}
        full16 = sum(
            by_decl[r["decl_name"]] <= {p["corpus_id"] for p in r["premises"][:16]} for r in records
        ) / len(records)
        assert m["FullRecall@16"] == pytest.approx(full16)


def test_cli_split_is_by_module_and_deterministic(trained) -> None:
    out, _ = trained
    split = json.loads((out / "split.json").read_text("utf-8"))
    data = read_ntp_toolkit(FIXTURE)
    modules = sorted({s.module for s in data.states_with_premises()})
    assert split == split_modules(modules, valid=0.15, test=0.15, seed=0).to_dict()
    assert not set(split["train"]) & (set(split["valid"]) | set(split["test"]))


def test_cli_exports_a_retriever_that_load_retriever_loads(trained) -> None:
    from lean_dojo_v2.models.premise_index import load_retriever

    out, summary = trained
    assert summary["retriever_dir"] == str(out / "retriever")
    assert summary["train"]["output_dir"] == str(out / "training")  # not the staging directory
    assert (out / "training" / "encoder").is_dir()
    retriever = load_retriever(out / "retriever", device="cpu")
    data = read_ntp_toolkit(FIXTURE)
    assert len(retriever.index) == len(data.corpus)
    records = json.loads((out / "retrieved_premises/dot_test-tiny.json").read_text("utf-8"))
    r = records[0]
    state = next(s for s in data.states if s.state_name == r["state_name"])
    hits = retriever.retrieve([state.state], 4, accessible=[(state.module, state.pos)])[0]
    assert [p.full_name for p, _ in hits] == [p["corpus_id"] for p in r["premises"][:4]]
    assert [s for _, s in hits] == pytest.approx([p["score"] for p in r["premises"][:4]], abs=1e-4)


def test_cli_refuses_an_output_dir_it_did_not_write(tmp_path: Path, capsys) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me", "utf-8")
    rc = main(["train", "premise-selector", "--data-dir", str(FIXTURE), "-o", str(out)])
    assert rc == 1
    assert "did not write" in capsys.readouterr().err
    assert (out / "notes.txt").read_text("utf-8") == "keep me"
    with pytest.raises(OutputExistsError):
        from lean_dojo_v2.trainer.premise_selector import train_premise_selector

        train_premise_selector(PremiseSelectorConfig(data_dir=str(FIXTURE), output_dir=str(out)))


def test_cli_missing_ntp_toolkit_parts_is_one_line_error(tmp_path: Path, capsys) -> None:
    data_dir = tmp_path / "ntp"
    (data_dir / "Declarations").mkdir(parents=True)
    rc = main(["train", "premise-selector", "--data-dir", str(data_dir), "-o", str(tmp_path / "o")])
    assert rc == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "missing Imports" in err and "TrainingDataWithPremises" in err and "revision" in err
    with pytest.raises(NtpToolkitLayoutError):
        from lean_dojo_v2.trainer.premise_selector import train_premise_selector

        train_premise_selector(
            PremiseSelectorConfig(data_dir=str(data_dir), output_dir=str(tmp_path / "o"))
        )


def test_eval_splits_use_the_first_state_of_each_declaration() -> None:
    data = read_ntp_toolkit(FIXTURE)
    modules = sorted({s.module for s in data.states_with_premises()})
    split = split_modules(modules, valid=0.2, test=0.2, seed=3)
    states = split_states(data, split)
    assert {s.module for s in states["train"]} <= set(split.train)
    assert len(states["train"]) == sum(s.module in split.train for s in data.states_with_premises())
    for name in ("valid", "test"):
        assert states[name] and all(s.tactic_idx == 0 for s in states[name])
        assert {s.module for s in states[name]} <= set(getattr(split, name))
        assert len({s.decl_name for s in states[name]}) == len(states[name])
    per_tactic = split_states(read_ntp_toolkit(FIXTURE, premise_source="next_tactic"), split)
    assert len(per_tactic["test"]) > len(states["test"])


def test_config_rejects_bad_values() -> None:
    with pytest.raises(ConfigValueError, match="premise_source"):
        PremiseSelectorConfig(data_dir="x", premise_source="whole_file")
    with pytest.raises(ConfigValueError, match="ks"):
        PremiseSelectorConfig(data_dir="x", ks=[0])
    with pytest.raises(ConfigValueError, match="test_fraction"):
        PremiseSelectorConfig(data_dir="x", valid_fraction=0.5, test_fraction=0.5)
    assert PremiseSelectorConfig(model="/a/b/my-encoder/").model_label == "my-encoder"
    assert PremiseSelectorConfig().model_label == "all-MiniLM-L6-v2"


def test_seed_flag_names_set_the_same_keys(tmp_path: Path) -> None:
    from lean_dojo_v2.cli import build_parser

    ours = build_parser().parse_args(
        [
            "train",
            "premise-selector",
            "--data-dir",
            "D",
            "--model",
            "M",
            "--batch-size",
            "8",
            "--lr",
            "1e-4",
            "--epochs",
            "2",
            "--max-steps",
            "5",
            "--output",
            "O",
            "--run-name",
            "R",
            "--num-negatives",
            "2",
            "--mini-batch-size",
            "4",
        ]
    )
    seed = build_parser().parse_args(
        [
            "train",
            "premise-selector",
            "--data_dir",
            "D",
            "--model_name_or_path",
            "M",
            "--per_device_train_batch_size",
            "8",
            "--learning_rate",
            "1e-4",
            "--num_train_epochs",
            "2",
            "--max_steps",
            "5",
            "--output_dir",
            "O",
            "--run_name",
            "R",
            "--num_negatives_per_state",
            "2",
            "--mini_batch_size",
            "4",
        ]
    )
    assert vars(ours) == vars(seed)
    assert ours.data_dir == "D" and ours.batch_size == 8 and ours.mini_batch_size == 4
