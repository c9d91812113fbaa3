"""``lean-dojo-v2 generate``."""

from __future__ import annotations

import io
import json

from lean_dojo_v2.cli import main

STATE = "n : ℕ\n⊢ n + 0 = n"


def test_generate_json_lists_tactics_and_logprobs(tiny_causal_dir, capsys):
    rc = main(
        [
            "generate",
            STATE,
            "--model",
            str(tiny_causal_dir),
            "-n",
            "3",
            "--json",
            "--seed",
            "0",
            "--max-new-tokens",
            "8",
            "--device",
            "cpu",
        ]
    )
    assert rc == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert 1 <= len(out) <= 3
    assert all(set(c) == {"tactic", "logprob"} for c in out)
    assert [c["logprob"] for c in out] == sorted((c["logprob"] for c in out), reverse=True)


def test_generate_reads_the_state_from_stdin(tiny_causal_dir, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO(STATE))
    rc = main(
        [
            "generate",
            "-",
            "--model",
            str(tiny_causal_dir),
            "-n",
            "2",
            "--strategy",
            "greedy",
            "--max-new-tokens",
            "6",
            "--device",
            "cpu",
        ]
    )
    assert rc == 0
    assert capsys.readouterr().out.strip()


def test_generate_with_unknown_model_is_a_one_line_error(capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    rc = main(["generate", STATE, "--model", "no-such-org/no-such-model"])
    err = capsys.readouterr().err
    assert rc == 1 and "no model 'no-such-org/no-such-model'" in err and "smollm2" in err


def test_generate_refuses_an_empty_state(capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("  \n"))
    assert main(["generate", "-"]) == 1
    assert "goal state is empty" in capsys.readouterr().err
