"""What a v1 run does with bad input and with the script's own errors: a module that is not there,
a dataset that is not one, a value of the wrong type end in one typed line before the script
starts; the script's exception is shown as ``python SCRIPT.py`` shows it; SIGTERM leaves no
temporary ``lean_dojo`` behind; the alias has a ``__file__``; v1 calls ReProver makes
(``additional_imports=[None]``) are accepted."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lean_dojo_v2.data import sample_dataset_path
from lean_dojo_v2.errors import DataFormatError, DatasetNotFoundError
from lean_dojo_v2.v1 import (
    Dojo,
    LeanGitRepo,
    ProofFinished,
    V1ArgumentError,
    alias,
    run,
    use_dataset,
    use_project,
)

from .conftest import v1_theorem

pytestmark = pytest.mark.timeout(120)


def write(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


def test_a_module_that_is_not_there_is_one_line(tmp_path: Path, monkeypatch, capsys) -> None:
    from lean_dojo_v2.cli import main as cli_main

    monkeypatch.chdir(tmp_path)
    write(tmp_path / "v1_pkg_nomain" / "__init__.py", "")
    for argv, says in [
        (["-m", "no.such.module"], "no module named no"),
        (["-m", "v1_pkg_nomain.absent"], "no module named v1_pkg_nomain.absent"),
        (["-m", "v1_pkg_nomain"], "a package without a __main__ module"),
    ]:
        assert run.main(argv) == 1
        err = capsys.readouterr().err
        assert err.startswith("lean-dojo-v2: error: cannot run -m") and err.count("\n") == 1
        assert says in err
    assert cli_main(["v1-run", "-m", "no.such.module"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("lean-dojo-v2: error: cannot run -m no.such.module")
    assert err.count("\n") == 1


BOOM = """
    import lean_dojo

    def inner():
        raise {exc}

    inner()
"""


def runner_frames(text: str) -> list[str]:
    return [
        line
        for line in text.splitlines()
        if line.startswith("  File ") and ("runpy" in line or "lean_dojo_v2" in line)
    ]


def test_a_script_error_shows_as_python_shows_it(tmp_path: Path, monkeypatch, capsys) -> None:
    from lean_dojo_v2.cli import main as cli_main

    # What `python SCRIPT.py` prints for the same error (the script stripped of lean_dojo).
    plain = write(tmp_path / "plain" / "boom.py", BOOM.format(exc="ZeroDivisionError('x')"))
    plain.write_text(plain.read_text("utf-8").replace("import lean_dojo", "import os"), "utf-8")
    expected = subprocess.run(
        [sys.executable, str(plain)], capture_output=True, text=True, timeout=30
    )
    script = write(tmp_path / "boom.py", BOOM.format(exc="ZeroDivisionError('x')"))
    assert run.main([str(script)]) == 1 == expected.returncode
    err = capsys.readouterr().err
    assert err == expected.stderr.replace(str(plain), str(script))
    assert err.startswith(f'Traceback (most recent call last):\n  File "{script}", line 7')

    # A typed error of the library raised by the script is the script's too: a traceback with
    # the library's frames where it was raised, not one line; under lean-dojo-v2 v1-run as well.
    body = BOOM.format(exc="lean_dojo.DojoInitError('not started')")
    typed = write(tmp_path / "typed.py", body)
    assert cli_main(["v1-run", str(typed)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f'Traceback (most recent call last):\n  File "{typed}"')
    assert err.endswith("lean_dojo_v2.v1.errors.DojoInitError: not started\n")
    assert not runner_frames(err)

    # With -m, an error of the module's own package: the package's frames, none of the runner's.
    write(tmp_path / "v1_pkg_broken" / "__init__.py", "import no_such_dependency\n")
    write(tmp_path / "v1_pkg_broken" / "main.py", "")
    monkeypatch.chdir(tmp_path)
    assert run.main(["-m", "v1_pkg_broken.main"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):\n  File ")
    assert "v1_pkg_broken" in err.splitlines()[1]
    assert err.endswith("ModuleNotFoundError: No module named 'no_such_dependency'\n")


def test_bad_settings_are_typed_errors(tmp_path: Path, capsys) -> None:
    url = "https://github.com/o/r"
    for make in (lambda: LeanGitRepo(url, None), lambda: LeanGitRepo(url)):  # type: ignore[arg-type]
        with pytest.raises(V1ArgumentError, match="commit must be a commit SHA, tag or branch"):
            make()
    for call in (use_dataset, use_project):
        with pytest.raises(V1ArgumentError, match=r"str or os\.PathLike\) or None, not 5"):
            call(5)  # type: ignore[arg-type]
    with pytest.raises(DataFormatError, match="is not a traced dataset"):
        use_dataset("/etc/passwd")
    with pytest.raises(DatasetNotFoundError, match="neither random/ nor novel_premises/"):
        use_dataset(tmp_path)
    (tmp_path / "random").mkdir()
    with pytest.raises(DatasetNotFoundError, match=r"not a complete traced dataset \(missing"):
        use_dataset(tmp_path)

    # Refused before the script runs: one line, exit status 1.
    marker = tmp_path / "ran"
    script = write(tmp_path / "s.py", f"open({str(marker)!r}, 'w').close()\n")
    for dataset in ("/etc/passwd", str(tmp_path)):
        assert run.main(["--dataset", dataset, str(script)]) == 1
        err = capsys.readouterr().err
        assert err.startswith("lean-dojo-v2: error: --dataset: ") and err.count("\n") == 1
    assert not marker.exists()


def test_the_alias_has_a_file(monkeypatch) -> None:
    monkeypatch.setattr(sys, "path", [p for p in sys.path if Path(p or ".").name != "tests"])
    alias.install(children=False)
    try:
        import lean_dojo  # noqa: I001
        import lean_dojo.interaction.dojo

        ours = Path(run.__file__).parent
        assert Path(os.path.dirname(lean_dojo.__file__)) == ours
        assert Path(lean_dojo.interaction.dojo.__file__) == ours / "dojo.py"
    finally:
        alias.uninstall()


def test_additional_imports_none_is_ignored(proofs) -> None:
    use_dataset(sample_dataset_path())
    thm = next(t for t in proofs.values() if len(t.traced_tactics) == 1)
    # ReProver: `Dojo(thm, timeout, additional_imports=[module])`, module None without --module.
    with Dojo(v1_theorem(thm), 60, additional_imports=[None]) as (dojo, init):
        assert dojo.additional_imports == []
        assert isinstance(dojo.run_tac(init, thm.traced_tactics[0].tactic), ProofFinished)
    with pytest.raises(V1ArgumentError, match="module names"):
        Dojo(v1_theorem(thm), 60, additional_imports=[None, 3])  # type: ignore[list-item]


SLEEPER = """
    import os, sys, time
    import lean_dojo
    print(os.environ["PYTHONPATH"].split(os.pathsep)[0], flush=True)
    time.sleep(60)
"""


def test_sigterm_removes_the_temporary_lean_dojo(tmp_path: Path) -> None:
    script = write(tmp_path / "sleeper.py", SLEEPER)
    proc = subprocess.Popen(
        [sys.executable, "-m", "lean_dojo_v2.v1", str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        shim_dir = Path(proc.stdout.readline().strip())
        assert (shim_dir / "lean_dojo" / "__init__.py").is_file()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    # Ended by the signal, as `python SCRIPT.py` is, with nothing said and nothing left.
    assert proc.returncode == -signal.SIGTERM, err
    assert err == "" and not shim_dir.exists()
