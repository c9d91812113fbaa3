"""Running v1 code unchanged: ``python -m lean_dojo_v2.v1 SCRIPT.py`` and ``lean-dojo-v2 v1-run``
make ``import lean_dojo`` (and v1's submodules) resolve to ``lean_dojo_v2.v1`` for that run only,
in the processes the script starts too; v1 names we do not provide fail with one line naming our
equivalent; a real ``lean_dojo`` beside us is not shadowed otherwise."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lean_dojo_v2.data import sample_dataset_path
from lean_dojo_v2.v1 import alias, run

from .conftest import SCRIPTS, TESTS_DIR

pytestmark = pytest.mark.timeout(120)


def script(tmp_path: Path, body: str, name: str = "v1_script.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


def python_m(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "lean_dojo_v2.v1", *args],
        capture_output=True,
        text=True,
        timeout=100,
        cwd=cwd,
    )


IMPORTS = """
    import sys
    import lean_dojo
    from lean_dojo import Dojo, TacticState, LeanGitRepo, Theorem, Pos, DojoInitError
    from lean_dojo.interaction.dojo import ProofFinished, Dojo as Dojo2
    from lean_dojo.interaction.parse_goals import parse_goals, Goal
    from lean_dojo.data_extraction.lean import LeanGitRepo as Repo2, Pos as Pos2
    from lean_dojo.data_extraction.trace import is_available_in_cache
    import lean_dojo.interaction.dojo
    import lean_dojo_v2.v1 as ours

    assert Dojo is Dojo2 is ours.Dojo and LeanGitRepo is Repo2 and Pos is Pos2
    assert lean_dojo.interaction.dojo.TacticState is TacticState is ours.TacticState
    assert TacticState.__module__ == "lean_dojo_v2.v1.results"
    assert lean_dojo.__version__ == "4.20.0" and __name__ == "__main__"
    assert parse_goals("h : p\\n⊢ q")[0] == Goal.from_pp("h : p\\n⊢ q")
    print("argv", sys.argv[1:], "main", sys.argv[0].endswith("v1_script.py"))
    sys.exit(int(sys.argv[1]))
"""


def test_python_m_runs_a_v1_script_unchanged(tmp_path: Path) -> None:
    proc = python_m(str(script(tmp_path, IMPORTS)), "3", "--flag", cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    assert "argv ['3', '--flag'] main True" in proc.stdout


def without_tests_dir(monkeypatch) -> None:
    """``tests/`` (on sys.path for the fake REPL) holds a ``lean_dojo`` test package; out of the
    way, ``lean_dojo`` is importable only as the alias."""
    monkeypatch.setattr(sys, "path", [p for p in sys.path if Path(p or ".").resolve() != TESTS_DIR])


def test_in_process_run_and_nothing_left_behind(tmp_path: Path, monkeypatch) -> None:
    without_tests_dir(monkeypatch)
    path = script(tmp_path, IMPORTS)
    before_path, before_meta = list(sys.path), list(sys.meta_path)
    monkeypatch.setenv("PYTHONPATH", "/somewhere")
    assert run.run(str(path), ["0"]) == 0
    assert "lean_dojo" not in sys.modules and sys.path == before_path
    assert sys.meta_path == before_meta
    assert __import__("os").environ["PYTHONPATH"] == "/somewhere"
    with pytest.raises(ModuleNotFoundError):
        __import__("lean_dojo")


def test_a_real_lean_dojo_is_set_aside_for_the_run_only(tmp_path: Path, monkeypatch) -> None:
    real = tmp_path / "site" / "lean_dojo"
    real.mkdir(parents=True)
    (real / "__init__.py").write_text("REAL = True\n", encoding="utf-8")
    without_tests_dir(monkeypatch)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    import lean_dojo  # the real one  # noqa: I001

    assert lean_dojo.REAL
    path = script(tmp_path, "import lean_dojo\nassert not hasattr(lean_dojo, 'REAL')\n")
    try:
        assert run.run(str(path)) == 0
        assert sys.modules["lean_dojo"] is lean_dojo
    finally:
        sys.modules.pop("lean_dojo", None)


def test_names_we_do_not_provide_fail_with_one_line(tmp_path: Path) -> None:
    proc = python_m(str(script(tmp_path, "from lean_dojo import trace\n")))
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("lean_dojo_v2.v1.errors.UnsupportedV1NameError: lean_dojo.trace is")
    assert "use lean_dojo_v2.lean_dojo.trace" in last

    alias.install(children=False)
    try:
        for stmt, expected in [
            ("from lean_dojo.constants import TACTIC_CPU_LIMIT", "PantographConfig.core_options"),
            ("from lean_dojo.data_extraction.lean import LeanFile", "TracedFile"),
            ("from lean_dojo import TracedRepo", "lean_dojo_v2.lean_dojo.TracedRepo"),
            ("import lean_dojo.utils", "lean_dojo_v2.system"),
            ("import lean_dojo.data_extraction.ast", "TracedFile"),
        ]:
            with pytest.raises(ImportError, match="does not provide") as info:
                exec(stmt, {})
            assert expected in str(info.value) and "\n" not in str(info.value)
        with pytest.raises(ImportError, match="cannot import name 'NoSuchName'"):
            exec("from lean_dojo import NoSuchName", {})
        with pytest.raises(ModuleNotFoundError):
            exec("import lean_dojo.no_such_module", {})
    finally:
        alias.uninstall()


def run_workers(tmp_path: Path, proofs, *flags: str) -> list[str]:
    """``scripts/v1_workers.py`` through ``python -m lean_dojo_v2.v1 --dataset SAMPLE``, with no
    dataset in the environment: what it printed, a line per place the theorem was proved."""
    thm = next(t for t in proofs.values() if len(t.traced_tactics) == 1)
    record = {**thm.to_dict(), "tactic": thm.traced_tactics[0].tactic}
    path = tmp_path / "theorem.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("LEAN_DOJO_V2_V1_", "LEAN_DOJO_V2_PANTOGRAPH"))
    }
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "lean_dojo_v2.v1",
            "--dataset",
            str(sample_dataset_path()),
            str(SCRIPTS / "v1_workers.py"),
            str(path),
            *flags,
        ],
        capture_output=True,
        text=True,
        timeout=150,
        cwd=tmp_path,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout.splitlines()


def test_processes_the_script_starts_see_lean_dojo_and_the_dataset(tmp_path: Path, proofs) -> None:
    lines = run_workers(tmp_path, proofs)
    # Told nothing, a spawned worker and a subprocess import lean_dojo and replay from --dataset.
    assert [line for line in lines if line.endswith("replay")] == [
        f"{where} ProofFinished replay" for where in ("main", "spawn", "subprocess")
    ], lines


@pytest.mark.slow  # a local Ray instance takes 10-20 s to start on two cores
def test_ray_workers_see_lean_dojo_and_the_dataset(tmp_path: Path, proofs) -> None:
    lines = run_workers(tmp_path, proofs, "--ray")
    assert "ray ProofFinished replay" in lines, lines


def test_module_mode(tmp_path: Path, monkeypatch) -> None:
    # ReProver runs `python -m prover.evaluate`; another name here, since the suite's own
    # tests/prover package is already imported as `prover`.
    pkg = tmp_path / "v1_prover"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "evaluate.py").write_text(
        "import sys\nfrom lean_dojo import Pos\nsys.exit(Pos(2, 3).column_nb)\n", encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    assert run.run("v1_prover.evaluate", [], module=True) == 3


def test_bad_runs_end_in_one_line(tmp_path: Path, capsys) -> None:
    from lean_dojo_v2.cli import main as cli_main

    missing = str(tmp_path / "nope.py")
    assert run.main([missing]) == 1
    assert capsys.readouterr().err.strip().count("\n") == 0
    assert cli_main(["v1-run", missing]) == 1
    err = capsys.readouterr().err
    assert err.startswith("lean-dojo-v2: error: no script at") and err.count("\n") == 1
    ok = script(tmp_path, "print('ran')\n")
    assert run.main(["--dataset", str(tmp_path / "none"), str(ok)]) == 1
    out = capsys.readouterr()
    assert "no traced dataset at" in out.err and "ran" not in out.out  # checked before running
    assert run.main(["--project", str(tmp_path), str(ok)]) == 1
    assert "not a built Lake project" in capsys.readouterr().err
    assert run.main([]) == 1 and "required" in capsys.readouterr().err


def test_v1_run_command_passes_options_and_arguments(tmp_path: Path, capsys) -> None:
    from lean_dojo_v2.cli import main as cli_main
    from lean_dojo_v2.data import sample_dataset_path
    from lean_dojo_v2.v1.backend import dataset_path, use_dataset

    body = """
        import sys
        from lean_dojo_v2.v1.backend import dataset_path
        print("dataset", dataset_path(), "args", sys.argv[1:])
    """
    path = script(tmp_path, body)
    other = tmp_path / "other.json"
    other.write_text("[]", encoding="utf-8")
    use_dataset(other)  # named before the run: the run's own applies during it only
    argv = ["v1-run", "--dataset", str(sample_dataset_path()), str(path), "-x", "--y=1"]
    assert cli_main(argv) == 0
    out = capsys.readouterr().out
    assert f"dataset {sample_dataset_path()} args ['-x', '--y=1']" in out
    assert dataset_path() == other.resolve()
