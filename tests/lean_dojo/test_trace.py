"""trace(), generate_benchmark() and the trace command, end to end with a fake lake/lean.

The fake (``fake_lean/fake_lake.py``) builds by writing .olean files and "extracts" by copying the
extractor outputs of the fixture project (real sources, real states); everything else — cloning,
toolchain checks, the build step, workers, the manifest, the cache and lock, parsing, the dataset —
is the real code.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from fixture_project import FixtureProject

from lean_dojo_v2.cli import main
from lean_dojo_v2.data import Corpus, DatasetDir
from lean_dojo_v2.database import DynamicDatabase
from lean_dojo_v2.lean_dojo import (
    BuildError,
    ExtractionError,
    LeanGitRepo,
    ToolchainNotFoundError,
    ToolchainNotInstalledError,
    TracedRepo,
    generate_benchmark,
    get_traced_repo_path,
    is_available_in_cache,
    trace,
)
from lean_dojo_v2.lean_dojo.extract import ExtractJob, run_extractor

FAKE = Path(__file__).parent / "fake_lean" / "fake_lake.py"
TOOLCHAIN_DIR = "leanprover--lean4---v4.27.0"


def _wrapper(path: Path, tool: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" {tool} "$@"\n')
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


@pytest.fixture
def lean_env(
    project: FixtureProject, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    """elan with the project's toolchain installed (fake lean and lake inside it)."""
    home = tmp_path / "home"
    elan_home = home / ".elan"
    bin_dir = elan_home / "toolchains" / TOOLCHAIN_DIR / "bin"
    _wrapper(bin_dir / "lean", "lean")
    _wrapper(bin_dir / "lake", "lake")
    elan = elan_home / "bin" / "elan"
    elan.parent.mkdir(parents=True)
    elan.write_text("#!/bin/sh\necho 'leanprover/lean4:v4.27.0 (default)'\n")
    elan.chmod(0o755)
    prefix = tmp_path / "toolchain-prefix"
    prefix.mkdir()
    traces = project.trace_dir(tmp_path / "traces")
    log = tmp_path / "lake.log"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ELAN_HOME", str(elan_home))
    monkeypatch.setenv("PATH", f"{elan.parent}:/usr/bin:/bin")
    monkeypatch.setenv("FAKE_LEAN_PREFIX", str(prefix))
    monkeypatch.setenv("FAKE_LAKE_TRACES", str(traces))
    monkeypatch.setenv("FAKE_LAKE_FIXTURE_ROOT", str(project.root))
    monkeypatch.setenv("FAKE_LAKE_LOG", str(log))
    for var in (
        "FAKE_LAKE_FAIL",
        "FAKE_LAKE_HANG",
        "FAKE_LAKE_BUILD_FAIL",
        "FAKE_LAKE_CACHE_FAIL",
        "FAKE_LAKE_PACKAGES",
        "FAKE_LAKE_SCRIPT_ERROR",
    ):
        monkeypatch.delenv(var, raising=False)
    return {"log": log, "prefix": prefix, "elan_home": elan_home}


def calls(log: Path) -> list[list[str]]:
    if not log.exists():
        return []
    return [json.loads(line)["argv"] for line in log.read_text().splitlines()]


def test_trace_end_to_end(project: FixtureProject, lean_env: dict[str, Any]):
    traced = trace(project.root, progress=False)
    assert isinstance(traced, TracedRepo)
    assert traced.commit == project.commit and traced.lean_version == "4.27.0"
    assert sorted(traced.files) == sorted(project.files.values())
    assert traced.failures == {}
    names = [t.full_name for t in traced.theorems()]
    assert sorted(names) == sorted([*project.proofs, "putnam_1962_a5"])
    # Mathlib dependents get the cache first, then the build, then one extractor run per file.
    argv = calls(lean_env["log"])
    assert argv[0] == ["lake", "exe", "cache", "get"] and argv[1] == ["lake", "build"]
    runs = [a for a in argv if a[1:3] == ["env", "lean"]]
    assert sorted(a[6] for a in runs) == sorted(project.files)
    manifest = traced.manifest
    assert manifest["complete"] and manifest["num_failed"] == 0
    assert {s["status"] for s in manifest["files"].values()} == {"ok"}
    assert manifest["toolchain"] == "leanprover/lean4:v4.27.0"
    # The corpus is closed and in dependency order.
    files = traced.premise_files()
    order = [f.path for f in files]
    assert order.index("Fixture/Algebra.lean") < order.index("Fixture/NumberTheory.lean")
    assert order.index("Fixture/NumberTheory.lean") < order.index("Fixture/Other.lean")
    assert len(Corpus(files)) == sum(len(f.premises) for f in files) > 50
    assert traced.sorry_theorems() == [("Fixture/Putnam.lean", "putnam_1962_a5")]

    # Cached: a second call (here through the URL form) neither builds nor extracts.
    before = len(calls(lean_env["log"]))
    again = trace(str(project.root), commit=project.commit, progress=False)
    assert len(calls(lean_env["log"])) == before
    assert list(again.theorems()) == list(traced.theorems())
    assert is_available_in_cache(LeanGitRepo(str(project.root), project.commit))
    assert get_traced_repo_path(LeanGitRepo(str(project.root))) == traced.root


def test_generate_benchmark_and_database(
    project: FixtureProject, lean_env: dict[str, Any], tmp_path: Path
):
    [result] = generate_benchmark(
        [(str(project.root), project.commit)], build_deps=False, output_dir=tmp_path / "data"
    )
    assert result.path == tmp_path / "data" / f"repo_{project.commit}"
    d = DatasetDir(result.path)
    theorems = list(d.all_theorems())
    assert sorted(t.full_name for t in theorems) == sorted([*project.proofs, "putnam_1962_a5"])
    assert result.total_theorems == len(theorems)
    assert d.metadata()["from_repo"] == {"url": str(project.root), "commit": project.commit}
    assert d.traced_files() == sorted(project.files.values())
    Corpus(list(d.corpus_files()))  # loads: closed and acyclic
    # The dataset goes into the database like any other; sorry comes from the source.
    with DynamicDatabase(tmp_path / "db.sqlite") as db:
        info = db.add_repository(result.path, source_dir=result.traced_repo.root)
        assert info.total_theorems == len(theorems)
        assert [t.full_name for t in db.sorry_theorems_unproved()] == ["putnam_1962_a5"]
        again = db.trace_repository(
            str(project.root), project.commit, build_deps=False, progress=False
        )
        assert again.id == info.id  # same url + commit: already there


def test_failed_files_are_listed_never_skipped(
    project: FixtureProject, lean_env: dict[str, Any], monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("FAKE_LAKE_FAIL", "Fixture.Other")
    with pytest.raises(ExtractionError) as info:
        trace(project.root, progress=False)
    assert list(info.value.failed) == ["Fixture/Other.lean"]
    assert "unknown package" in str(info.value) and "on_error='warn'" in str(info.value)
    # The trace is kept; on_error="warn" uses the files that did trace.
    traced = trace(project.root, progress=False, on_error="warn")
    assert "Fixture/Other.lean" not in traced.files and "Fixture/Other.lean" in traced.failures
    status = traced.manifest["files"]["Fixture/Other.lean"]
    assert status["status"] == "failed" and "unknown package" in status["error"]
    # Files importing it still have a closed corpus.
    Corpus(traced.premise_files())


def test_a_hanging_file_times_out(
    project: FixtureProject, lean_env: dict[str, Any], monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("FAKE_LAKE_HANG", "Fixture.Putnam")
    started = time.monotonic()
    traced = trace(project.root, progress=False, on_error="warn", timeout=3)
    assert time.monotonic() - started < 30
    assert traced.manifest["files"]["Fixture/Putnam.lean"]["status"] == "timeout"
    assert len(traced.files) == len(project.files) - 1


def test_build_failure(
    project: FixtureProject, lean_env: dict[str, Any], monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("FAKE_LAKE_BUILD_FAIL", "1")
    with pytest.raises(BuildError, match="unknown identifier 'foo'"):
        trace(project.root, progress=False)
    # Nothing half-done is left in the cache.
    assert not is_available_in_cache(LeanGitRepo(str(project.root)))
    assert not get_traced_repo_path(LeanGitRepo(str(project.root))).exists()


def test_cache_get_failure_only_warns(
    project: FixtureProject,
    lean_env: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
):
    monkeypatch.setenv("FAKE_LAKE_CACHE_FAIL", "1")
    traced = trace(project.root, progress=False)
    assert len(traced.files) == len(project.files)
    assert "lake exe cache get" in caplog.text


def test_toolchain_missing(
    project: FixtureProject,
    lean_env: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
):
    (lean_env["elan_home"] / "toolchains" / TOOLCHAIN_DIR).rename(tmp_path / "moved")
    with pytest.raises(
        ToolchainNotInstalledError, match=r"elan toolchain install leanprover/lean4:v4\.27\.0"
    ):
        trace(project.root, progress=False)
    assert calls(lean_env["log"]) == []  # nothing was built
    assert not get_traced_repo_path(LeanGitRepo(str(project.root))).exists()  # nor cloned
    monkeypatch.setenv("ELAN_HOME", str(tmp_path / "no-elan"))
    monkeypatch.setenv("HOME", str(tmp_path / "no-home"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    with pytest.raises(ToolchainNotFoundError, match="elan"):
        trace(project.root, progress=False)


def test_two_processes_trace_once(project: FixtureProject, lean_env: dict[str, Any]):
    results: list[Any] = []

    def run() -> None:
        results.append(trace(project.root, progress=False))

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 2 and results[0].root == results[1].root
    assert sum(1 for a in calls(lean_env["log"]) if a == ["lake", "build"]) == 1


def test_dst_dir_copy(project: FixtureProject, lean_env: dict[str, Any], tmp_path: Path):
    traced = trace(project.root, tmp_path / "copy", progress=False)
    assert traced.root == (tmp_path / "copy").resolve()
    assert (tmp_path / "copy" / "Fixture" / "Algebra.lean").is_file()
    assert len(list(traced.theorems())) == len(project.proofs) + 1


def test_cli_trace(
    project: FixtureProject,
    lean_env: dict[str, Any],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
):
    out = tmp_path / "dataset"
    code = main(
        ["trace", str(project.root), "--commit", project.commit, "--out", str(out), "--json"]
    )
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["theorems"] == len(project.proofs) + 1
    assert summary["sorry_theorems"] == 1 and summary["failed_files"] == []
    assert summary["tactics"] > 50 and summary["premises"] > 50
    assert list(DatasetDir(out).all_theorems())
    # Bad input: a clear message and exit status 1.
    code = main(["trace", str(tmp_path / "nowhere")])
    assert code == 1
    assert "lean-dojo-v2: error:" in capsys.readouterr().err


def test_workers_wait_for_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """With too little free memory for another process of the size already seen, jobs run one
    at a time even with several workers."""
    import psutil

    class Low:
        available = 10 * 1024 * 1024  # 10 MiB

    monkeypatch.setattr(psutil, "virtual_memory", lambda: Low())
    jobs = [
        ExtractJob(f"F{i}.lean", f"F{i}", tmp_path / f"F{i}.lean", tmp_path / f"out{i}.json")
        for i in range(4)
    ]
    script = (
        "import sys, time, pathlib; t = time.time(); time.sleep(0.5); "
        "pathlib.Path(sys.argv[1]).write_text(f'{t} {time.time()}')"
    )
    statuses = run_extractor(
        jobs,
        lambda j: [sys.executable, "-c", script, str(j.output)],
        tmp_path,
        workers=4,
        progress=False,
        memory_reserve_mib=100,
    )
    assert {s["status"] for s in statuses.values()} == {"ok"}
    spans = sorted(tuple(map(float, j.output.read_text().split())) for j in jobs)
    assert all(b[0] >= a[1] for a, b in zip(spans, spans[1:], strict=False))
    assert all(s["peak_rss_mib"] > 0 for s in statuses.values())


def test_build_deps_traces_dependencies(
    project: FixtureProject,
    lean_env: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
):
    """With build_deps, files of packages in .lake/packages are traced too and get LeanDojo's
    dependency paths; the trace is cached apart from the one without dependencies."""
    # A dependency package holding the PutnamBench file, as module Putnam.A5.
    pkg = tmp_path / "packages" / "putnambench"
    src = project.root / project.files["Fixture.Putnam"]
    (pkg / "Putnam").mkdir(parents=True)
    (pkg / "Putnam" / "A5.lean").write_text(src.read_text("utf-8"), encoding="utf-8")
    traces = Path(os.environ["FAKE_LAKE_TRACES"])
    data = json.loads((traces / "Fixture.Putnam.json").read_text("utf-8"))
    data["module"] = "Putnam.A5"
    for p in data["premises"]:
        if p["module"] == "Fixture.Putnam":
            p["module"] = "Putnam.A5"
    (traces / "Putnam.A5.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    monkeypatch.setenv("FAKE_LAKE_PACKAGES", str(tmp_path / "packages"))

    without = trace(project.root, progress=False)
    dep_path = ".lake/packages/putnambench/Putnam/A5.lean"
    assert dep_path not in without.files
    traced = trace(project.root, build_deps=True, progress=False)
    assert traced.root != without.root and traced.root.parent.name.endswith("_d")
    assert traced.build_deps and traced.manifest["build_deps"]
    assert traced.manifest["files"][dep_path]["status"] == "ok"
    deps = [t for t in traced.theorems() if t.file_path == dep_path]
    assert [t.full_name for t in deps] == ["putnam_1962_a5"]
    assert dep_path not in {t.file_path for t in traced.theorems(include_dependencies=False)}
    assert dep_path in [f.path for f in traced.premise_files()]
    assert (dep_path, "putnam_1962_a5") in traced.sorry_theorems()


def test_traced_files_are_read_lazily_and_checked(
    project: FixtureProject, lean_env: dict[str, Any]
):
    from lean_dojo_v2.lean_dojo import TraceFormatError
    from lean_dojo_v2.lean_dojo.traced_repo import TracedFiles, trace_path

    traced = trace(project.root, progress=False)
    files = traced.files
    assert isinstance(files, TracedFiles)
    files._cache_size = 1  # keep one parsed file at a time
    files._cache.clear()
    names = [t.full_name for t in traced.theorems()]
    assert len(names) == len(project.proofs) + 1 and len(files._cache) == 1
    assert traced.import_graph().has_edge("Fixture/Other.lean", "Fixture/Algebra.lean")
    with pytest.raises(KeyError):
        files["Nope.lean"]
    # A damaged output is reported when the trace is opened, naming the file and field.
    out = trace_path(traced.root, "Fixture/NumberTheory.lean")
    data = json.loads(out.read_text("utf-8"))
    del data["tactics"][0]["state_after"]
    out.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(TraceFormatError, match=r"NumberTheory.*tactics\[0\]\.state_after"):
        TracedRepo.load(traced.root)


def test_trace_a_remote_url(project: FixtureProject, lean_env: dict[str, Any]):
    """A remote (here file://) goes through the cached bare mirror, then the same pipeline."""
    url = f"file://{project.root}"
    repo = LeanGitRepo(url, project.commit)
    assert repo.repo_type.name == "REMOTE"
    traced = trace(repo, progress=False)
    assert traced.url == url and traced.commit == project.commit
    assert sorted(t.full_name for t in traced.theorems()) == sorted(
        [*project.proofs, "putnam_1962_a5"]
    )


def test_an_extractor_that_does_not_compile_is_reported_once(
    project: FixtureProject, lean_env: dict[str, Any], monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("FAKE_LAKE_SCRIPT_ERROR", "unknown constant 'Lean.Elab.IO.processCommands'")
    with pytest.raises(ExtractionError, match="ExtractData.lean does not run with") as info:
        trace(project.root, progress=False)
    assert "unknown constant" in str(info.value) and len(info.value.failed) == 1
    runs = [a for a in calls(lean_env["log"]) if a[1:3] == ["env", "lean"]]
    assert len(runs) == 1  # only the probe ran
    assert not is_available_in_cache(LeanGitRepo(str(project.root)))


def test_an_extractor_that_cannot_start_is_a_typed_error(tmp_path: Path):
    """A missing ``lake`` used to escape the worker pool as a bare FileNotFoundError."""
    from lean_dojo_v2.errors import CommandNotFoundError, LeanDojoError

    jobs = [ExtractJob("F.lean", "F", tmp_path / "F.lean", tmp_path / "out.json")]
    with pytest.raises(CommandNotFoundError, match="not installed or not on PATH") as info:
        run_extractor(
            jobs, lambda j: [str(tmp_path / "no" / "lake"), "env"], tmp_path, progress=False
        )
    assert isinstance(info.value, LeanDojoError)
