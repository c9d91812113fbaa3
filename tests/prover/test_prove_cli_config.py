"""``lean-dojo-v2 prove`` reads its SearchConfig like the trainers read theirs: ``--config FILE``,
then ``--set key=value``, then the explicit search flags (shortcuts that win); ``--help-config``
lists every search field with its doc."""

from __future__ import annotations

import dataclasses
import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lean_dojo_v2.cli import main
from lean_dojo_v2.data import sample_dataset_path

from ._oracle_server import one_line_error

TESTS_DIR = Path(__file__).resolve().parents[1]
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))
from tiny_models import build_tiny_causal  # noqa: E402

SAMPLE = str(sample_dataset_path())


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_causal(tmp_path_factory.mktemp("tiny_causal"))


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Run ``prove`` up to the search: what ``prove_theorems`` is given, with no search."""
    import lean_dojo_v2.prover.parallel as parallel

    seen: dict[str, Any] = {}

    def fake_prove_theorems(theorems, make_env, make_generator, config, **kwargs):
        seen.update(theorems=theorems, make_env=make_env, config=config)
        return []

    monkeypatch.setattr(parallel, "prove_theorems", fake_prove_theorems)
    return seen


def _prove(argv: list[str], tiny_model: Path) -> list[str]:
    return ["prove", "--data", SAMPLE, "--model", str(tiny_model), "--no-progress", *argv]


def test_help_config_lists_every_search_field_with_its_doc():
    from lean_dojo_v2.config.loading import field_docs
    from lean_dojo_v2.prover.search import SearchConfig

    proc = subprocess.run(
        [sys.executable, "-m", "lean_dojo_v2", "prove", "--help-config"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr  # no --data needed, as for --help
    docs = field_docs(SearchConfig)
    for f in dataclasses.fields(SearchConfig):
        assert f"  {f.name} = " in proc.stdout, f"prove --help-config misses {f.name}"
        text = docs.get(f.name, ("", "", ""))[2]
        assert text, f"document SearchConfig.{f.name} in its docstring (TRL style)"
        assert text.split()[0] in proc.stdout
    assert (
        "--help-config"
        in subprocess.run(
            [sys.executable, "-m", "lean_dojo_v2", "prove", "--help"],
            capture_output=True,
            text=True,
        ).stdout
    )


def test_config_file_then_set_then_explicit_flags(
    tmp_path: Path, tiny_model: Path, captured: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    from lean_dojo_v2.prover.search import SearchConfig

    cfg = tmp_path / "search.yaml"
    cfg.write_text(
        "max_expansions: 7\nfrontier_batch: 2\nwhole_proof: true\ntimeout: 50\nnum_samples: 3\n",
        "utf-8",
    )
    argv = ["--config", str(cfg), "--set", "max_expansions=20", "--set", "num_samples=5"]
    assert main(_prove(argv + ["--num-samples", "4", "--json"], tiny_model)) == 0
    config = captured["config"]
    assert isinstance(config, SearchConfig)
    expected = SearchConfig(
        max_expansions=20, frontier_batch=2, whole_proof=True, timeout=50.0, num_samples=4
    )
    assert config == expected
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["attempted"] == 0


def test_without_config_the_flags_and_defaults_are_as_before(
    tiny_model: Path, captured: dict[str, Any]
) -> None:
    from lean_dojo_v2.prover.search import SearchConfig

    assert main(_prove([], tiny_model)) == 0
    assert captured["config"] == SearchConfig()
    flags = ["--num-samples", "2", "--max-expansions", "3", "--timeout", "60"]
    assert main(_prove(flags + ["--tactic-timeout", "5", "--whole-proof"], tiny_model)) == 0
    assert captured["config"] == SearchConfig(
        num_samples=2, max_expansions=3, timeout=60.0, tactic_timeout=5.0, whole_proof=True
    )


def test_tactic_timeout_of_the_config_reaches_the_pantograph_env(
    tmp_path: Path, tiny_model: Path, captured: dict[str, Any]
) -> None:
    from fake_pantograph.launcher import fake_command

    pantograph = ["--backend", "pantograph", "--repl", shlex.join(fake_command())]
    assert main(_prove(pantograph + ["--set", "tactic_timeout=7"], tiny_model)) == 0
    assert captured["make_env"].config["tactic_timeout"] == 7.0
    assert captured["config"].tactic_timeout == 7.0
    assert main(_prove(pantograph + ["--tactic-timeout", "9"], tiny_model)) == 0
    assert captured["make_env"].config["tactic_timeout"] == 9.0


def test_bad_config_is_a_one_line_error(
    tmp_path: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = one_line_error(_prove(["--set", "max_expansion=20"], tiny_model), capsys)
    assert "unknown config key 'max_expansion'" in line and "did you mean 'max_expansions'" in line
    assert "frontier_batch" in line  # the valid keys are listed
    line = one_line_error(_prove(["--set", "max_expansions=many"], tiny_model), capsys)
    assert "'max_expansions'" in line and "many" in line
    line = one_line_error(_prove(["--set", "max_expansions=0"], tiny_model), capsys)
    assert "max_expansions" in line and ">= 1" in line
    line = one_line_error(_prove(["--config", str(tmp_path / "none.yaml")], tiny_model), capsys)
    assert "does not exist" in line
    line = one_line_error(_prove(["--max-expansions", "0"], tiny_model), capsys)
    assert "--max-expansions must be at least 1" in line


def test_prove_with_config_and_set_runs_a_search(
    tmp_path: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The documented example, end to end: ``prove --config FILE --set max_expansions=20``."""
    cfg = tmp_path / "search.yaml"
    cfg.write_text("num_samples: 2\nmax_expansions: 3\ntimeout: 60\n", "utf-8")
    argv = ["--config", str(cfg), "--set", "max_expansions=20", "--limit", "1"]
    rc = main(_prove(argv + ["--json", "--parallel", "inline"], tiny_model))
    out, _ = capsys.readouterr()
    assert rc == 0
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["attempted"] == 1
    assert 1 <= summary["expansions"] <= 20


def test_mode_and_refine_rounds_flags_set_the_search_mode(
    tiny_model: Path, captured: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    from lean_dojo_v2.prover.search import SearchConfig

    assert main(_prove(["--mode", "refine", "--refine-rounds", "3"], tiny_model)) == 0
    assert captured["config"] == SearchConfig(mode="refine", refine_rounds=3)
    assert main(_prove(["--set", "mode=whole", "--set", "early_stop=false"], tiny_model)) == 0
    assert captured["config"].search_mode == "whole" and not captured["config"].early_stop
    line = one_line_error(_prove(["--whole-proof", "--mode", "tactic"], tiny_model), capsys)
    assert "contradicts mode='tactic'" in line
    line = one_line_error(_prove(["--set", "mode=wholeproof"], tiny_model), capsys)
    assert "tactic, whole, refine" in line
