"""``python -m lean_dojo_v2.lean_agent`` and upstream LeanDojo-v2's ``lean_agent.config`` names: the LeanAgent
retrieval loop over a database's curriculum (EWC between repositories, evaluation of every
repository), on real data with a tiny random encoder."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from trainer.test_retrieval_fixtures import build_tiny_encoder  # noqa: E402


def test_seed_config_names_are_the_retrieval_config_and_a_documented_prover_config():
    from lean_dojo_v2.config.loading import field_docs
    from lean_dojo_v2.lean_agent import DynamicDatabase, ProverConfig, TrainingConfig
    from lean_dojo_v2.lean_agent.config import ProverConfig as P2
    from lean_dojo_v2.lean_agent.config import TrainingConfig as T2
    from lean_dojo_v2.lean_agent.database import DynamicDatabase as D2
    from lean_dojo_v2.trainer import TrainingConfig as T3

    assert TrainingConfig is T2 is T3 and ProverConfig is P2 and DynamicDatabase is D2
    seed_fields = {
        "model_name",
        "lr",
        "warmup_steps",
        "max_seq_len",
        "num_retrieved",
        "batch_size",
        "eval_batch_size",
        "accumulate_grad_batches",
        "num_gpus",
        "precision",
        "num_negatives",
        "num_in_file_negatives",
        "lambda_value",
        "seed",
        "max_epochs",
    }
    cfg = TrainingConfig()
    assert seed_fields <= set(vars(cfg))
    assert (cfg.num_negatives, cfg.num_in_file_negatives, cfg.lambda_value) == (3, 1, 0.1)
    docs = field_docs(TrainingConfig)
    assert set(vars(cfg)) <= set(docs) and all(d[2] for d in docs.values())
    p = ProverConfig()
    assert (p.num_workers, p.timeout, p.num_sampled_tactics, p.batch_size) == (4, 600, 64, 12)
    assert set(vars(p)) <= set(field_docs(ProverConfig))


def test_help_says_it_also_proves():
    out = subprocess.run(
        [sys.executable, "-m", "lean_dojo_v2.lean_agent", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "--db" in out and "--no-prove" in out and "RetrievalProver" in out


def test_lean_agent_loop_trains_the_curriculum_with_ewc_and_evaluates_each_repository(
    tmp_path, capsys
):
    import torch

    from lean_dojo_v2.data import sample_dataset_path
    from lean_dojo_v2.database import DynamicDatabase
    from lean_dojo_v2.lean_agent.__main__ import main

    sample = sample_dataset_path()
    db = DynamicDatabase(tmp_path / "db.sqlite")
    db.add_repository(sample)
    db.add_repository(sample, url="https://github.com/example/other", commit="c" * 40)
    db.close()
    enc = build_tiny_encoder(tmp_path / "enc")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        rc = main(
            [
                "--db",
                str(tmp_path / "db.sqlite"),
                "-o",
                str(tmp_path / "out"),
                "--json",
                "--set",
                f"model_name={enc}",
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
                "--set",
                "batch_size=8",
                "--no-prove",  # proving: tests/agent/test_lean_agent_main.py
            ]
        )
    finally:
        torch.set_num_threads(threads)
    assert rc == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert len(result["passes"]) == 2 and result["ewc_tasks"] == 2
    assert result["steps"] == 4
    assert len(result["test"]) == 2
    for metrics in result["test"].values():
        assert "error" in metrics or set(metrics) == {"R@1", "R@10", "MRR", "FullRecall@10", "n"}
    runs = DynamicDatabase(tmp_path / "db.sqlite", create=False).training_runs()
    assert [r.kind for r in runs] == ["retrieval"] and runs[0].status == "finished"


def test_bad_input_is_one_line_error(tmp_path, capsys):
    from lean_dojo_v2.lean_agent.__main__ import main

    assert main(["--data", str(tmp_path / "missing"), "-o", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "missing" in err and "\n" not in err
