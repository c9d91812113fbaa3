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
from lean_dojo_v2.trainer.premise_selector import split_states
from lean_dojo_v2.trainer.premise_selector_config import PremiseSelectorConfig

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
        "--data_dir",  # upstream LeanDojo-v2's spelling
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


# --------------------------------------------------------------------------- LeanHammer's options


def _example(state, corpus, target: str):
    from lean_dojo_v2.trainer.retrieval_data import RetrievalExample

    return RetrievalExample(
        state.state, corpus.get_premise(target), frozenset(state.premises), state.module, state.pos
    )


def _mask_case(want_later: bool = False):
    """A real state with: another positive, its declaration, a premise of a module importing its
    module (downstream), an accessible one and one of an unrelated module; with ``want_later``, a
    state and a premise after it in its own module."""
    from lean_dojo_v2.trainer.premise_selector import declarations_of

    data = read_ntp_toolkit(FIXTURE)
    corpus = data.corpus
    for s in data.states_with_premises():
        if corpus.get_premise(s.decl_name) is None:
            continue
        later = [
            p.full_name
            for p in corpus.get_file(s.module).premises
            if not p.start < s.pos and p.full_name != s.decl_name
        ]
        importers = [f.path for f in corpus.files if s.module in corpus.imports_of(f.path)]
        downstream = [p.full_name for m in importers for p in corpus.get_file(m).premises]
        accessible = [
            p.full_name
            for p in corpus.accessible_premises(s.module, s.pos)
            if p.full_name not in s.premises
        ]
        unrelated = [
            p.full_name
            for f in corpus.files
            if f.path != s.module
            and f.path not in importers
            and f.path not in corpus.imports_of(s.module)
            for p in f.premises
        ]
        if want_later and later:
            return data, s, [s.premises[0], later[0]], declarations_of([s])
        if not want_later and len(s.premises) >= 2 and downstream and accessible and unrelated:
            cands = [s.premises[0], s.premises[1], s.decl_name]
            cands += [downstream[0], accessible[0], unrelated[0]]
            return data, s, cands, declarations_of([s])
    pytest.fail("the fixture has no state with every kind of candidate")


def test_retrieval_mask_mode_none_masks_no_candidate() -> None:
    from lean_dojo_v2.trainer.premise_selector import _false_negative_mask

    data, s, cands, decls = _mask_case()
    items = [(_example(s, data.corpus, cands[0]), [])]
    mask = _false_negative_mask(items, cands, "none", data.corpus, decls)
    assert mask.tolist() == [[False] * 6]


def test_retrieval_mask_mode_no_positive_masks_positives_and_own_declaration() -> None:
    from lean_dojo_v2.trainer.premise_selector import _false_negative_mask

    data, s, cands, decls = _mask_case()
    items = [(_example(s, data.corpus, cands[0]), [])]
    mask = _false_negative_mask(items, cands, "no_positive", data.corpus, decls)
    # positives (the target's own column is ignored by the loss), the declaration itself
    assert mask.tolist() == [[True, True, True, False, False, False]]


def test_retrieval_mask_mode_only_negative_keeps_only_accessible_or_unrelated() -> None:
    from lean_dojo_v2.trainer.premise_selector import _false_negative_mask

    data, s, cands, decls = _mask_case()
    items = [(_example(s, data.corpus, cands[0]), [])]
    mask = _false_negative_mask(items, cands, "only_negative", data.corpus, decls)
    # in a module importing its module: masked; accessible, unrelated: kept
    assert mask.tolist() == [[True, True, True, True, False, False]]
    # later in its own module (not accessible yet): masked; no_positive keeps it
    data, s, cands, decls = _mask_case(want_later=True)
    items = [(_example(s, data.corpus, cands[0]), [])]
    assert _false_negative_mask(items, cands, "only_negative", data.corpus, decls).tolist() == [
        [True, True]
    ]
    assert _false_negative_mask(items, cands, "no_positive", data.corpus, decls).tolist() == [
        [True, False]
    ]


@pytest.mark.parametrize("mode", ["none", "no_positive", "only_negative"])
def test_retrieval_mask_mode_reaches_the_training_batches(
    mode: str, tiny_encoder_dir: Path, tmp_path: Path
) -> None:
    from lean_dojo_v2.data.ntp_toolkit import split_modules
    from lean_dojo_v2.trainer.premise_selector import (
        _false_negative_mask,
        _query,
        _training_config,
        declarations_of,
        premise_selector_trainer_class,
    )

    data = read_ntp_toolkit(FIXTURE)
    modules = sorted({s.module for s in data.states_with_premises()})
    train = split_states(data, split_modules(modules, valid=0.0, test=0.0))["train"]
    cfg = PremiseSelectorConfig(
        data_dir=str(FIXTURE), model=str(tiny_encoder_dir), batch_size=16, retrieval_mask_mode=mode
    )
    decls = declarations_of(train)
    trainer = premise_selector_trainer_class()(
        _training_config(cfg, tmp_path / "t"), pooling=None, mask_mode=mode, decls=decls
    )
    loader = trainer._loader([_query(s) for s in train], data.corpus, shuffle=False)
    items = [loader.dataset[(i, 0)] for i in range(16)]
    batch = loader.collate_fn(items)
    expected = _false_negative_mask(items, batch.candidate_names, mode, data.corpus, decls)
    assert batch.positive_mask.tolist() == expected.tolist()
    masked = int(batch.positive_mask.sum())
    assert (masked == 0) if mode == "none" else (masked > 0)


def test_use_qlora_is_a_clear_error_naming_what_is_missing(tmp_path: Path) -> None:
    import importlib.util

    import torch

    with pytest.raises(ConfigValueError) as err:
        from lean_dojo_v2.trainer.premise_selector import train_premise_selector

        train_premise_selector(
            PremiseSelectorConfig(data_dir=str(FIXTURE), use_qlora=True, output_dir=str(tmp_path))
        )
    msg = str(err.value)
    assert "use_qlora" in msg
    if not torch.cuda.is_available():
        assert "CUDA" in msg
    if importlib.util.find_spec("bitsandbytes") is None:
        assert "bitsandbytes" in msg
    if torch.cuda.is_available() and importlib.util.find_spec("bitsandbytes"):
        assert "not implemented" in msg
    assert not any(tmp_path.iterdir())  # refused before anything was written


def test_is_sentence_transformer_auto_detects_the_bundled_minilm(tiny_encoder_dir: Path) -> None:
    from lean_dojo_v2.trainer.premise_selector import encoder_pooling

    assert encoder_pooling(PremiseSelectorConfig()) == (True, "mean")
    # a plain HF folder: not a sentence transformer; pooling from pooling_mode (None: loader's)
    assert encoder_pooling(PremiseSelectorConfig(model=str(tiny_encoder_dir))) == (False, None)
    cfg = PremiseSelectorConfig(model=str(tiny_encoder_dir), pooling_mode="max")
    assert encoder_pooling(cfg) == (False, "max")


def test_is_sentence_transformer_false_re_pools_with_pooling_mode() -> None:
    from lean_dojo_v2.trainer.premise_selector import encoder_pooling

    cfg = PremiseSelectorConfig(is_sentence_transformer=False, pooling_mode="cls")
    assert encoder_pooling(cfg) == (False, "cls")
    assert encoder_pooling(PremiseSelectorConfig(is_sentence_transformer=False)) == (False, "mean")


def test_is_sentence_transformer_true_needs_a_sentence_transformers_folder(
    tiny_encoder_dir: Path,
) -> None:
    from lean_dojo_v2.trainer.premise_selector import encoder_pooling

    with pytest.raises(ConfigValueError, match="modules.json"):
        encoder_pooling(
            PremiseSelectorConfig(model=str(tiny_encoder_dir), is_sentence_transformer=True)
        )


def test_pooling_mode_contradicting_the_sentence_transformers_config_is_an_error() -> None:
    from lean_dojo_v2.trainer.premise_selector import encoder_pooling

    with pytest.raises(ConfigValueError, match="contradicts"):
        encoder_pooling(PremiseSelectorConfig(is_sentence_transformer=True, pooling_mode="cls"))
    # the same pooling as the folder's is accepted (LeanHammer's train.sh sets both)
    cfg = PremiseSelectorConfig(is_sentence_transformer=True, pooling_mode="mean")
    assert encoder_pooling(cfg) == (True, "mean")


def test_config_rejects_unknown_mask_and_pooling_modes() -> None:
    with pytest.raises(ConfigValueError, match="retrieval_mask_mode"):
        PremiseSelectorConfig(retrieval_mask_mode="all")
    with pytest.raises(ConfigValueError, match="pooling_mode"):
        PremiseSelectorConfig(pooling_mode="median")


def test_seed_boolean_options_parse_like_hf_argument_parser() -> None:
    from lean_dojo_v2.cli import build_parser

    base = ["train", "premise-selector", "--data_dir", "D"]
    a = build_parser().parse_args(
        base + ["--nameless", "--mathlib_only", "True", "--filter", "False", "--use_qlora", "no"]
    )
    assert (a.nameless, a.mathlib_only, a.filter, a.use_qlora) == (True, True, False, False)
    b = build_parser().parse_args(
        base
        + [
            "--is_sentence_transformer",
            "false",
            "--pooling_mode",
            "lasttoken",
            "--retrieval_mask_mode",
            "only_negative",
        ]
    )
    assert (b.is_sentence_transformer, b.pooling_mode, b.retrieval_mask_mode) == (
        False,
        "lasttoken",
        "only_negative",
    )


def test_no_filter_contradicting_filter_true_is_one_line_error(capsys) -> None:
    rc = main(["train", "premise-selector", "--data-dir", str(FIXTURE), "--filter", "--no-filter"])
    assert rc != 0
    assert "contradicts" in capsys.readouterr().err


def test_cli_seed_options_reach_the_run_and_the_export(
    tiny_encoder_dir: Path, tmp_path: Path
) -> None:
    import contextlib
    import io

    from lean_dojo_v2.models.premise_index import load_retriever

    out = tmp_path / "run"
    argv = ["train", "premise-selector", "--data_dir", str(FIXTURE)]
    argv += ["--model_name_or_path", str(tiny_encoder_dir), "--is_sentence_transformer", "False"]
    argv += ["--pooling_mode", "max", "--retrieval_mask_mode", "only_negative", "--mathlib_only"]
    argv += ["--filter", "False", "--max_steps", "1", "--batch-size", "4", "--k", "1,4"]
    argv += ["--output_dir", str(out), "--device", "cpu", "--quiet", "--json"]
    argv += ["--valid-fraction", "0.15", "--test-fraction", "0.15"]
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(argv)
    assert rc == 0, buf.getvalue()[-2000:]
    summary = json.loads(buf.getvalue().strip().splitlines()[-1])
    assert summary["encoder"] == {
        "is_sentence_transformer": False,
        "pooling": "max",
        "retrieval_mask_mode": "only_negative",
    }
    assert summary["data"]["non_mathlib_states"] > 0
    assert summary["data"]["filtered_declarations"] == {}
    assert summary["data"]["blacklisted_declarations"] == 0
    split = json.loads((out / "split.json").read_text("utf-8"))
    assert all(m.startswith("Mathlib.") for part in split.values() for m in part)
    retriever = load_retriever(out / "retriever", device="cpu")
    assert retriever.encoder.pooling == "max"
    assert all(p.path.startswith("Mathlib.") for p in retriever.index.premises)


def test_help_names_every_seed_option(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["train", "premise-selector", "-h"])
    text = capsys.readouterr().out
    for flag in (
        "--is_sentence_transformer",
        "--pooling_mode",
        "--nameless",
        "--mathlib_only",
        "--retrieval_mask_mode",
        "--use_qlora",
        "--filter",
        "--no-filter",
    ):
        assert flag in text, flag


@pytest.mark.slow
def test_real_minilm_premise_selector_reports_recall_and_exports(tmp_path: Path) -> None:
    """The bundled all-MiniLM-L6-v2 (load_encoder(None)) for a few steps on the fixture."""
    from lean_dojo_v2.models.premise_index import load_retriever
    from lean_dojo_v2.trainer.premise_selector import train_premise_selector

    cfg = PremiseSelectorConfig(
        data_dir=str(FIXTURE),
        max_steps=3,
        batch_size=8,
        ks=[1, 8, 32],
        valid_fraction=0.15,
        test_fraction=0.15,
        device="cpu",
        progress_bar=False,
        output_dir=str(tmp_path / "run"),
    )
    result = train_premise_selector(cfg)
    assert result.encoder["is_sentence_transformer"] is True
    assert result.encoder["pooling"] == "mean"
    for split in ("valid", "test"):
        m = result.metrics[split]
        assert m["n"] > 0
        for k in (1, 8, 32):
            assert 0.0 <= m[f"R@{k}"] <= 1.0 and 0.0 <= m[f"FullRecall@{k}"] <= 1.0
        assert m["R@1"] <= m["R@8"] <= m["R@32"]
        assert result.retrieval_files[split].name == f"dot_{split}-all-MiniLM-L6-v2.json"
    assert result.train_summary["steps"] == 3
    print(json.dumps({"minilm_premise_selector_metrics": result.metrics}))
    retriever = load_retriever(result.retriever_dir, device="cpu")
    data = read_ntp_toolkit(FIXTURE)
    assert len(retriever.index.premises) == len(data.corpus)
    modules = sorted({x.module for x in data.states_with_premises()})
    s = split_states(data, split_modules(modules, valid=0.15, test=0.15))["test"][0]
    hits = retriever.retrieve([s.state], 5, accessible=[(s.module, s.pos)])[0]
    assert hits and all(isinstance(score, float) for _, score in hits)


def test_config_is_the_retrieval_trainers_with_leanhammers_key_names(tmp_path: Path) -> None:
    from lean_dojo_v2.config.loading import load_config
    from lean_dojo_v2.errors import UnknownConfigKeyError
    from lean_dojo_v2.trainer.retrieval_config import TrainingConfig

    cfg = PremiseSelectorConfig(model="m", epochs=3, mini_batch_size=8)
    assert isinstance(cfg, TrainingConfig)
    fields = (cfg.model_name, cfg.max_epochs, cfg.grad_cache, cfg.grad_cache_chunk_size)
    assert fields == ("m", 3, True, 8)
    path = tmp_path / "ps.yaml"
    path.write_text("model: m\nepochs: 3\nmini_batch_size: 8\n", "utf-8")
    assert load_config(PremiseSelectorConfig, path) == cfg
    assert (
        load_config(PremiseSelectorConfig, None, ["model=m", "epochs=3", "mini_batch_size=8"])
        == cfg
    )
    assert load_config(PremiseSelectorConfig, None, ["mini_batch_size=none"]).grad_cache is False
    # What the run itself sets is not a key of this config.
    with pytest.raises(UnknownConfigKeyError, match="split_strategy"):
        load_config(PremiseSelectorConfig, None, ["split_strategy=random"])
    assert PremiseSelectorConfig(ks=[4, 64]).num_retrieved == 64
    assert PremiseSelectorConfig(num_negatives=0).num_in_file_negatives == 0
