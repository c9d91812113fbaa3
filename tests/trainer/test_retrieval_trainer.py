# ruff: noqa: F811  (pytest fixtures imported from test_retrieval_fixtures)
"""RetrievalTrainer on the bundled real sample with a tiny random encoder: outputs and validation,
resume from the last checkpoint, the curriculum (continuing weights, EWC, DB record), the cached
loss in the loop, evaluate/export, typed errors, the CLI; slow: MiniLM improves on zero-shot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from .test_retrieval_fixtures import quick, sample_dir, tiny_encoder_dir  # noqa: F401


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    # 2 shared cores: torch's default thread pool oversubscribes them (20x slower under load).
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _config(tiny_encoder_dir, out, **extra):  # noqa: F811
    from lean_dojo_v2.config.loading import load_config
    from lean_dojo_v2.trainer.retrieval_config import TrainingConfig

    return load_config(
        TrainingConfig,
        None,
        {},
        **quick(model_name=str(tiny_encoder_dir), output_dir=str(out), **extra),
    )


def _weights(module):
    return {n: p.detach().clone() for n, p in module.state_dict().items()}


def _same(a, b):
    assert a.keys() == b.keys()
    for k in a:
        torch.testing.assert_close(a[k], b[k], rtol=1e-5, atol=1e-7, msg=k)


def test_train_on_sample_writes_encoder_checkpoint_logs_and_val_recall(
    tiny_encoder_dir,
    sample_dir,
    tmp_path,  # noqa: F811
):
    from lean_dojo_v2.models.retrieval import load_encoder
    from lean_dojo_v2.trainer.retrieval_trainer import RetrievalTrainer

    out = tmp_path / "out"
    cfg = _config(tiny_encoder_dir, out, max_steps=6, report_to=["tensorboard"])
    trainer = RetrievalTrainer(cfg)
    before = _weights(trainer.encoder.module)
    summary = trainer.train(data_path=sample_dir)
    assert summary["steps"] == 6 and summary["examples"] > 100
    val = summary["val"]
    assert set(val) == {"R@1_val", "R@10_val", "MRR_val", "FullRecall@10_val"}
    assert 0.0 <= val["R@10_val"] <= 1.0 and summary["passes"][0]["val_queries"] == 14
    assert json.loads((out / "summary.json").read_text())["steps"] == 6
    assert list((out / "logs").rglob("events.out.tfevents*"))
    assert not (out / "checkpoints" / "pass-000").exists()  # removed once the pass is done
    # The saved encoder is the trained one and loads again.
    again = load_encoder(str(out / "encoder"), device="cpu")
    _same(_weights(again.module), _weights(trainer.encoder.module))
    assert any(not torch.equal(before[k], v) for k, v in _weights(again.module).items())
    metrics = trainer.evaluate()
    assert set(metrics) == {"R@1", "R@10", "MRR", "FullRecall@10", "n"} and metrics["n"] == 9
    # A finished run is not resumed: training again starts afresh in the same (our) folder.
    assert trainer.train(data_path=sample_dir)["resumed_from"] is None


class _Stop(Exception):
    pass


def _stop_at_epoch(epoch: int):
    import pytorch_lightning as pl

    class StopAt(pl.Callback):
        def on_train_epoch_start(self, trainer, pl_module):
            if trainer.current_epoch == epoch:
                raise _Stop(f"stopped at epoch {epoch}")

    return StopAt()


def test_interrupted_run_resumes_from_last_checkpoint_and_ends_where_uninterrupted_does(
    tiny_encoder_dir,
    sample_dir,
    tmp_path,  # noqa: F811
):
    from lean_dojo_v2.trainer.retrieval_trainer import RetrievalTrainer

    settings = dict(max_epochs=2, max_examples=40, validate=False)
    full = RetrievalTrainer(_config(tiny_encoder_dir, tmp_path / "full", **settings))
    full.train(data_path=sample_dir)

    out = tmp_path / "cut"
    cut = RetrievalTrainer(
        _config(tiny_encoder_dir, out, **settings), callbacks=[_stop_at_epoch(1)]
    )
    with pytest.raises(_Stop):
        cut.train(data_path=sample_dir)
    last = out / "checkpoints" / "pass-000" / "last.ckpt"
    assert last.is_file()
    state = json.loads((out / "training_state.json").read_text())
    assert state["passes_done"] == 0 and not state["finished"]

    resumed = RetrievalTrainer(_config(tiny_encoder_dir, out, **settings))
    summary = resumed.train(data_path=sample_dir)
    assert summary["resumed_from"] == str(last)
    assert summary["steps"] == 10  # 40 examples / batch 8 = 5 steps per epoch, 2 epochs
    _same(_weights(resumed.encoder.module), _weights(full.encoder.module))


def test_resume_refuses_an_unfinished_run_of_another_config(
    tiny_encoder_dir,
    sample_dir,
    tmp_path,  # noqa: F811
):
    from lean_dojo_v2.trainer.errors import TrainingStateError
    from lean_dojo_v2.trainer.retrieval_trainer import RetrievalTrainer

    out = tmp_path / "out"
    cut = RetrievalTrainer(
        _config(tiny_encoder_dir, out, max_epochs=2, max_examples=16, validate=False),
        callbacks=[_stop_at_epoch(1)],
    )
    with pytest.raises(_Stop):
        cut.train(data_path=sample_dir)
    other = RetrievalTrainer(
        _config(tiny_encoder_dir, out, max_epochs=2, max_examples=16, validate=False, lr=1e-4)
    )
    with pytest.raises(TrainingStateError, match="another config"):
        other.train(data_path=sample_dir)


def _two_repo_db(path: Path, sample: Path):
    from lean_dojo_v2.database import DynamicDatabase

    db = DynamicDatabase(path)
    db.add_repository(sample)
    db.add_repository(sample, url="https://github.com/example/other", commit="b" * 40)
    return db


def test_curriculum_continues_from_previous_weights_applies_ewc_and_records_the_run(
    tiny_encoder_dir,
    sample_dir,
    tmp_path,  # noqa: F811
):
    import pytorch_lightning as pl

    from lean_dojo_v2.trainer.retrieval_trainer import RetrievalTrainer

    seen: list[dict] = []

    class Watch(pl.Callback):
        def on_fit_start(self, trainer, pl_module):
            seen.append({"start": _weights(pl_module.net)})

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            seen[-1]["ewc"] = pl_module.ewc.penalty(pl_module.net).item()
            seen[-1]["ewc_active"] = pl_module.ewc.active

        def on_fit_end(self, trainer, pl_module):
            seen[-1]["end"] = _weights(pl_module.net)

    db = _two_repo_db(tmp_path / "db.sqlite", sample_dir)
    cfg = _config(tiny_encoder_dir, tmp_path / "out", max_steps=3, lambda_value=10.0)
    trainer = RetrievalTrainer(cfg, callbacks=[Watch()])
    summary = trainer.train(database=db)
    assert len(summary["passes"]) == 2 and summary["ewc_tasks"] == 2
    # Pass 2 starts from the weights pass 1 ended with (not from the base or a first checkpoint).
    _same(seen[1]["start"], seen[0]["end"])
    # EWC: inactive in the first repository, a positive penalty in the second.
    assert seen[0]["ewc_active"] is False and seen[0]["ewc"] == 0.0
    assert seen[1]["ewc_active"] is True and seen[1]["ewc"] > 0.0
    assert summary["passes"][0]["fisher"]["fisher_sum"] > 0
    assert (tmp_path / "out" / "ewc.pt").is_file()
    runs = [r for r in db.training_runs() if r.kind == "retrieval"]
    assert len(runs) == 1 and runs[0].status == "finished"
    assert len(runs[0].repository_ids) == 2 and runs[0].metrics["ewc_tasks"] == 2


def test_grad_cache_in_the_training_loop_gives_the_same_weights_as_plain(
    tiny_encoder_dir,
    sample_dir,
    tmp_path,  # noqa: F811
):
    from lean_dojo_v2.trainer.retrieval_trainer import RetrievalTrainer

    # In float64. GradCache sums each gradient in another order than one backward pass does; in
    # float32 that leaves relative differences of ~1e-7, and Adam's first steps, lr·g/(|g|+eps),
    # turn them into differences of ~1e-3·lr wherever a gradient is near zero: 0.77 of the 1e-4
    # tolerance on this machine, beyond it on others (another CPU, thread count or torch build).
    # In float64 the same rounding is ~1e-16 and the weights agree to ~1e-14, so the tolerance
    # can be 1000 times stricter than float32's was and still leave a margin of 1e5.
    results = []
    for name, extra in (
        ("plain", {}),
        ("cached", {"grad_cache": True, "grad_cache_chunk_size": 3}),
    ):
        cfg = _config(
            tiny_encoder_dir,
            tmp_path / name,
            max_steps=2,
            validate=False,
            precision="64-true",
            **extra,
        )
        t = RetrievalTrainer(cfg)
        t.train(data_path=sample_dir)
        results.append(_weights(t.encoder.module))
    assert all(w.dtype == torch.float64 for w in results[0].values() if w.is_floating_point())
    for k in results[0]:
        torch.testing.assert_close(results[1][k], results[0][k], rtol=1e-7, atol=1e-9, msg=k)


def test_fit_examples_then_export_loads_as_a_retriever_returning_accessible_premises(
    tiny_encoder_dir,
    sample_dir,
    tmp_path,  # noqa: F811
):
    from lean_dojo_v2.data.dataset import DatasetDir
    from lean_dojo_v2.models.premise_index import load_retriever
    from lean_dojo_v2.models.retrieval_eval import retrieval_queries
    from lean_dojo_v2.trainer.retrieval_trainer import RetrievalTrainer

    d = DatasetDir(sample_dir)
    corpus = d.corpus()
    train = retrieval_queries(d.theorems("random", "train"), corpus)
    val = retrieval_queries(d.theorems("random", "val"), corpus)
    trainer = RetrievalTrainer(_config(tiny_encoder_dir, tmp_path / "out", max_steps=2))
    summary = trainer.fit_examples(train, corpus, val)
    assert summary["passes"][0]["label"] == "examples" and summary["val"]["R@10_val"] >= 0
    path = trainer.export(tmp_path / "retriever")
    retriever = load_retriever(path, device="cpu")
    q = val[0]
    hits = retriever.retrieve([q.state], 10, [(q.file_path, q.pos)])[0]
    accessible = {p.full_name for p in corpus.accessible_premises(q.file_path, q.pos)}
    assert hits and all(p.full_name in accessible for p, _ in hits)


def test_bad_input_gives_typed_errors(tiny_encoder_dir, sample_dir, tmp_path):  # noqa: F811
    from lean_dojo_v2.config.loading import load_config
    from lean_dojo_v2.errors import DatasetNotFoundError, LeanDojoError
    from lean_dojo_v2.trainer.errors import ConfigValueError, TrainerError, UnknownConfigKeyError
    from lean_dojo_v2.trainer.retrieval_config import TrainingConfig
    from lean_dojo_v2.trainer.retrieval_trainer import RetrievalTrainer

    trainer = RetrievalTrainer(_config(tiny_encoder_dir, tmp_path / "out"))
    with pytest.raises(DatasetNotFoundError):
        trainer.train(data_path=tmp_path / "nope")
    no_corpus = tmp_path / "no_corpus"
    (no_corpus / "random").mkdir(parents=True)
    (no_corpus / "random" / "train.json").write_bytes(
        (sample_dir / "random" / "train.json").read_bytes()
    )
    with pytest.raises(DatasetNotFoundError, match="corpus.jsonl"):
        trainer.train(data_path=no_corpus)
    with pytest.raises(TrainerError, match="data_path"):
        trainer.train()
    with pytest.raises(TrainerError, match="evaluate"):
        RetrievalTrainer(_config(tiny_encoder_dir, tmp_path / "o2")).evaluate()
    with pytest.raises(ConfigValueError, match="num_in_file_negatives"):
        TrainingConfig(num_negatives=1, num_in_file_negatives=2)
    with pytest.raises(UnknownConfigKeyError, match="lambda_value"):
        load_config(TrainingConfig, None, ["lambda_valu=0.2"])
    with pytest.raises(ConfigValueError, match="precision"):
        TrainingConfig(precision="fp8")
    with pytest.raises(TrainerError):
        RetrievalTrainer({"lr": 1})  # type: ignore[arg-type]
    assert issubclass(TrainerError, LeanDojoError)


def test_precision_auto_is_fp32_on_cpu_and_config_loads_from_yaml(tmp_path):
    from lean_dojo_v2.config.loading import load_config
    from lean_dojo_v2.trainer.retrieval_config import TrainingConfig
    from lean_dojo_v2.trainer.retrieval_trainer import resolve_precision

    assert resolve_precision("auto", "cpu") == "32-true"
    assert resolve_precision("bf16-mixed", "cpu") == "bf16-mixed"
    if not torch.cuda.is_available():
        assert resolve_precision("auto") == "32-true"
    for path in sorted(Path(__file__).resolve().parents[2].glob("configs/retrieval_*.yaml")):
        cfg = load_config(TrainingConfig, path, ["lr=3e-5"])
        assert cfg.lr == 3e-5
    cfg = load_config(TrainingConfig, None, ["devices=4", "strategy=ddp", "num_nodes=2"])
    assert (cfg.devices, cfg.strategy, cfg.num_nodes) == ("4", "ddp", 2)


def test_cli_train_retrieval_json_summary_with_test_metrics(
    tiny_encoder_dir,
    sample_dir,
    tmp_path,
    capsys,  # noqa: F811
):
    from lean_dojo_v2.cli import main

    out = tmp_path / "out"
    rc = main(
        [
            "train",
            "retrieval",
            "--data",
            str(sample_dir),
            "-o",
            str(out),
            "--set",
            f"model_name={tiny_encoder_dir}",
            "--set",
            "max_steps=2",
            "--set",
            "accelerator=cpu",
            "--set",
            "progress_bar=false",
            "--set",
            "report_to=none",
            "--set",
            "max_seq_len=64",
            "--json",
            "--export",
            str(tmp_path / "retriever"),
        ]
    )
    assert rc == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    summary = json.loads(line)
    assert summary["output_dir"] == str(out) and summary["steps"] == 2
    assert set(summary["metrics"]) == {"R@1", "R@10", "MRR", "FullRecall@10", "n"}
    assert (tmp_path / "retriever" / "retriever.json").is_file() or any(
        (tmp_path / "retriever").iterdir()
    )
    assert main(["train", "retrieval", "--help-config"]) == 0
    assert "lambda_value" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.timeout(1200)  # real MiniLM training: about 5 minutes on 2 cores
def test_minilm_briefly_trained_on_the_sample_beats_zero_shot_r10_on_held_out(
    sample_dir,
    tmp_path,  # noqa: F811
):
    from lean_dojo_v2.config.loading import load_config
    from lean_dojo_v2.trainer.retrieval_config import TrainingConfig
    from lean_dojo_v2.trainer.retrieval_trainer import RetrievalTrainer

    cfg = load_config(
        TrainingConfig,
        None,
        {},
        output_dir=str(tmp_path / "out"),
        accelerator="cpu",
        devices="1",
        progress_bar=False,
        report_to=["none"],
        max_epochs=4,
        lr=5e-5,
        batch_size=16,
        validate=False,
    )
    zero = RetrievalTrainer(cfg).evaluate(data_path=sample_dir, split="test")
    trainer = RetrievalTrainer(cfg)
    trainer.train(data_path=sample_dir)
    trained = trainer.evaluate(split="test")
    assert trained["n"] == zero["n"] == 9
    assert trained["R@10"] > zero["R@10"], (zero, trained)
