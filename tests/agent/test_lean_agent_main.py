"""``python -m lean_dojo_v2.lean_agent`` trains, evaluates, then proves the test split with a
RetrievalProver on the exported retriever (tiny encoder and generator; replay, said so)."""

from __future__ import annotations

import json

import pytest


@pytest.mark.parametrize(
    "workers",
    [1, pytest.param(2, marks=pytest.mark.slow)],  # 2: worker processes (9 s), make test-slow
)
def test_lean_agent_main_also_proves(tmp_path, capsys, tiny_encoder, tiny_causal, sample, workers):
    """``--workers 2``: two prover processes, each loading the generator and the exported
    retriever, on two theorems."""
    import torch

    from lean_dojo_v2.lean_agent.__main__ import main

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        rc = main(
            [
                "--data",
                str(sample),
                "-o",
                str(tmp_path / "out"),
                "--json",
                "--set",
                f"model_name={tiny_encoder}",
                "--set",
                "max_steps=1",
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
                "--generator",
                str(tiny_causal),
                "--num-samples",
                "2",
                "--max-expansions",
                "2",
                "--prove-limit",
                str(workers),
                "--workers",
                str(workers),
            ]
        )
    finally:
        torch.set_num_threads(threads)
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    result = json.loads(captured.out.strip().splitlines()[-1])
    prove = result["prove"]
    assert prove["retriever"] == str(tmp_path / "out") + "-retriever"
    assert prove["generator"] == str(tiny_causal)
    entry = prove[str(sample)]
    assert entry["backend"] == "replay" and entry["attempted"] == workers
    assert "backend: replay" in captured.err


@pytest.mark.parametrize("option", ["--workers", "--num-samples", "--timeout", "--prove-limit"])
@pytest.mark.parametrize("value", ["0", "-2", "x"])
def test_bad_proving_options_are_refused_before_anything_trains(tmp_path, capsys, option, value):
    """One line (no usage block) and exit status 1, as every lean-dojo-v2 command; 0 theorems
    to prove is what --no-prove says, and the line points there."""
    from lean_dojo_v2.lean_agent.__main__ import main

    assert main(["-o", str(tmp_path / "out"), option, value]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "usage:" not in err[0]
    assert f"argument {option}: must be a whole number >= 1, got '{value}'" in err[0]
    assert ("--no-prove" in err[0]) == (option == "--prove-limit")
    assert not (tmp_path / "out").exists()


def test_a_missing_generator_is_refused_before_training(tmp_path, capsys):
    from lean_dojo_v2.lean_agent.__main__ import main

    missing = tmp_path / "nonexistent"
    assert main(["-o", str(tmp_path / "out"), "--generator", str(missing)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [err[-1]] and err[0].startswith("error: no model") and str(missing) in err[0]
    assert not (tmp_path / "out").exists()
    # a hub id that is not in the local cache, offline
    assert main(["-o", str(tmp_path / "out"), "--generator", "nobody/no-such-model"]) == 1
    assert "nobody/no-such-model" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
