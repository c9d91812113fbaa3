"""``lean-dojo-v2 prove``: the JSON summary (last line), the progress bar, recording with --db,
write-back with --write-back, and one-line errors for bad input.

Fast tests use a tiny random model (tests/tiny_models.py) or a local fake OpenAI-compatible
server that answers with the tactics recorded in the bundled sample (so theorems get proved end
to end through the real ``openai`` client and ``ReplayEnv``); one slow test runs the default
model."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lean_dojo_v2.cli import main
from lean_dojo_v2.data import DatasetDir, load_theorems, sample_dataset_path
from lean_dojo_v2.database import DynamicDatabase
from lean_dojo_v2.interaction import ReplayEnv

from ._oracle_server import one_line_error, oracle_answer, repo_with_sorries
from .fake_openai import FakeOpenAI
from .pipeline_oracle import replay_provable

TESTS_DIR = Path(__file__).resolve().parents[1]
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))
from tiny_models import build_tiny_causal  # noqa: E402

SAMPLE = str(sample_dataset_path())
FAST = ["--num-samples", "2", "--max-expansions", "3", "--timeout", "60", "--no-progress"]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_causal(tmp_path_factory.mktemp("tiny_causal"))


def _last_json(out: str) -> dict:
    return json.loads(out.strip().splitlines()[-1])


def _check_counts(summary: dict) -> None:
    statuses = ("proved", "failed", "timeout", "error")
    assert sum(summary[s] for s in statuses) == summary["attempted"]
    assert len(summary["proofs"]) == summary["proved"]


def test_prove_json_summary_with_tiny_model_and_progress_bar(
    tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc = main(
        ["prove", "--data", SAMPLE, "--model", str(tiny_model), "--json", "--parallel", "inline"]
        + ["--limit", "2", "--max-expansions", "2", "--num-samples", "2"]  # progress bar on
    )
    out, err = capsys.readouterr()
    assert rc == 0
    summary = _last_json(out)
    test_split = DatasetDir(SAMPLE).theorems("random", "test")
    startable = [t for t in test_split if t.traced_tactics]
    assert summary["attempted"] == min(2, len(startable))
    assert summary["left_out_no_tactic_proof"] == len(test_split) - len(startable)
    assert summary["backend"] == "replay" and summary["generator"] == "hf"
    assert summary["expansions"] >= 1 and summary["seconds"] > 0
    _check_counts(summary)
    assert "proving" in err and "thm" in err  # the progress bar, on stderr


def test_prove_openai_proves_records_and_writes_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Through a fake OpenAI-compatible server that answers the recorded tactic (among a wrong
    one): every theorem direct replay proves is proved; proofs go into the database and, in
    place of sorry, into a working copy of a repository holding those theorems."""
    answer = oracle_answer()

    theorems = [t for t in load_theorems(SAMPLE) if t.traced_tactics][:8]
    with ReplayEnv.from_dataset(SAMPLE) as env:
        expected = replay_provable(env, theorems)
    repo = repo_with_sorries(tmp_path / "repo", theorems)
    db_path = tmp_path / "db.sqlite"
    with DynamicDatabase(db_path) as db:
        db.add_repository(SAMPLE)
    names = [x for t in theorems for x in ("--theorem", t.full_name)]
    with FakeOpenAI(completions=answer, models=("oracle",)) as server:
        rc = main(
            ["prove", "--data", SAMPLE, "--split", "all", "--generator", "openai"]
            + ["--model", "oracle", "--base-url", server.base_url, "--json"]
            + ["--num-samples", "3", "--max-expansions", "30", "--no-progress"]
            + ["--parallel", "inline", "--db", str(db_path)]
            + ["--write-back", str(repo), "--out", str(tmp_path / "work"), "--branch", "proofs"]
            + names
        )
    out, _ = capsys.readouterr()
    assert rc == 0
    summary = _last_json(out)
    _check_counts(summary)
    assert summary["attempted"] == len(theorems)
    assert expected and expected <= set(summary["proofs"])
    assert summary["checked_by"] == {"replay": summary["proved"]}
    assert summary["db"]["recorded"] == summary["proved"]
    with DynamicDatabase(db_path) as db:
        assert {db.get_theorem(p.theorem_id).theorem.full_name for p in db.proofs()} == set(
            summary["proofs"]
        )
    wb = summary["write_back"]
    assert sorted(wb["written"]) == sorted(summary["proofs"]) and wb["branch"] == "proofs"
    # The diff applies to a pristine copy of the repository and gives the committed files.
    pristine = tmp_path / "pristine"
    shutil.copytree(repo, pristine)
    subprocess.run(["git", "apply", wb["diff_file"]], cwd=pristine, check=True)
    for rel in wb["files"]:
        assert (pristine / rel).read_bytes() == (tmp_path / "work" / rel).read_bytes()
        assert "sorry" not in (pristine / rel).read_text("utf-8") or len(wb["written"]) < len(
            theorems
        )


# -- bad input: one line, exit status 1 ----------------------------------------------------------


def test_dataset_with_no_provable_theorems_is_one_line_error(
    tmp_path: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A copy of the sample whose test split holds only term-mode theorems.
    data = tmp_path / "ds"
    shutil.copytree(SAMPLE, data)
    test_file = data / "random" / "test.json"
    records = [r for r in json.loads(test_file.read_text("utf-8")) if not r["traced_tactics"]]
    test_file.write_text(json.dumps(records), "utf-8")
    assert records
    line = one_line_error(["prove", "--data", str(data), "--model", str(tiny_model)], capsys)
    assert "has a recorded tactic proof" in line


def test_unreachable_base_url_is_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    line = one_line_error(
        ["prove", "--data", SAMPLE, "--generator", "openai", "--model", "m"]
        + ["--base-url", "http://127.0.0.1:9/v1"],
        capsys,
    )
    assert "cannot reach the model server at http://127.0.0.1:9/v1" in line


def test_unknown_model_is_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = one_line_error(
        ["prove", "--data", SAMPLE, "--model", str(tmp_path / "no_model")], capsys
    )
    assert "no model" in line
    with FakeOpenAI(models=("served",)) as server:
        line = one_line_error(
            ["prove", "--data", SAMPLE, "--generator", "openai", "--model", "other"]
            + ["--base-url", server.base_url],
            capsys,
        )
    assert "does not serve the model 'other'" in line


def test_theorem_not_in_env_is_one_line_error(
    tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = one_line_error(
        ["prove", "--data", SAMPLE, "--model", str(tiny_model), "--theorem", "No.such_theorem"],
        capsys,
    )
    assert "'No.such_theorem' is not in" in line


def test_pantograph_without_repl_is_one_line_error(
    tiny_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = one_line_error(
        ["prove", "--data", SAMPLE, "--model", str(tiny_model), "--backend", "pantograph"]
        + ["--repl", str(tmp_path / "repl")],
        capsys,
    )
    assert "does not exist" in line


@pytest.mark.slow
def test_prove_with_the_default_model(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["prove", "--data", SAMPLE, "--json", "--limit", "2"] + FAST)
    out, _ = capsys.readouterr()
    assert rc == 0
    summary = _last_json(out)
    assert summary["model"] == "smollm2" and summary["attempted"] == 2
    _check_counts(summary)


def test_prove_pantograph_backend_counts_no_proof_it_cannot_recheck(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--backend pantograph`` through the fake Pantograph REPL (tests/fake_pantograph, which
    answers from real recorded transitions) and the fake OpenAI server answering the recorded
    tactics: the search runs on the REPL (backend pantograph, expansions made), and as the B4
    sample has neither source files nor statements, ``verify`` cannot re-check a proof: none
    counts (status failed, never proved)."""
    import shlex

    from fake_pantograph.launcher import fake_command

    monkeypatch.setenv("FAKE_PANTOGRAPH_COPYFROM_RECORDED", "1")
    answer = oracle_answer()

    theorems = [t for t in load_theorems(SAMPLE) if t.traced_tactics][:3]
    names = [x for t in theorems for x in ("--theorem", t.full_name)]
    with FakeOpenAI(completions=answer, models=("oracle",)) as server:
        rc = main(
            ["prove", "--data", SAMPLE, "--split", "all", "--backend", "pantograph"]
            + ["--repl", shlex.join(fake_command()), "--generator", "openai"]
            + ["--model", "oracle", "--base-url", server.base_url, "--json", "--no-progress"]
            + ["--num-samples", "3", "--max-expansions", "20", "--parallel", "inline"]
            + names
        )
    out, _ = capsys.readouterr()
    assert rc == 0
    summary = _last_json(out)
    _check_counts(summary)
    assert summary["backend"] == "pantograph" and summary["attempted"] == 3
    assert summary["expansions"] >= 3
    assert summary["proved"] == 0 and summary["failed"] == 3
