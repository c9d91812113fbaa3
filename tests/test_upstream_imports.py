"""The import paths the upstream LeanDojo-v2 README documents resolve to our one implementation.

Upstream users write ``from lean_dojo_v2.lean_dojo.data_extraction.dataset import
generate_benchmark``, ``from lean_dojo_v2.lean_agent.database import DynamicDatabase`` or ``from
lean_dojo_v2.utils.constants import RAID_DIR``. These modules are thin, lazy re-exports: each
name is the very object of the real implementation, and importing them does nothing.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import lean_dojo_v2
from lean_dojo_v2.config import get_settings, reset_settings

# Every compatibility module: upstream path -> {name: (real module, real name)}.
UPSTREAM_PATHS: dict[str, dict[str, tuple[str, str]]] = {
    "lean_dojo_v2.lean_dojo.data_extraction.lean": {
        "LeanGitRepo": ("lean_dojo_v2.lean_dojo.repo", "LeanGitRepo"),
        "RepoType": ("lean_dojo_v2.lean_dojo.repo", "RepoType"),
        "Pos": ("lean_dojo_v2.data.model", "Pos"),
    },
    "lean_dojo_v2.lean_dojo.data_extraction.trace": {
        "trace": ("lean_dojo_v2.lean_dojo.tracing", "trace"),
        "get_traced_repo_path": ("lean_dojo_v2.lean_dojo.tracing", "get_traced_repo_path"),
        "is_available_in_cache": ("lean_dojo_v2.lean_dojo.tracing", "is_available_in_cache"),
    },
    "lean_dojo_v2.lean_dojo.data_extraction.dataset": {
        "generate_benchmark": ("lean_dojo_v2.lean_dojo.benchmark", "generate_benchmark"),
    },
    "lean_dojo_v2.lean_dojo.data_extraction.cache": {
        "get_traced_repo_path": ("lean_dojo_v2.lean_dojo.tracing", "get_traced_repo_path"),
        "is_available_in_cache": ("lean_dojo_v2.lean_dojo.tracing", "is_available_in_cache"),
        "mirror_path": ("lean_dojo_v2.lean_dojo.repo", "mirror_path"),
    },
    "lean_dojo_v2.lean_dojo.data_extraction.traced_data": {
        "TracedRepo": ("lean_dojo_v2.lean_dojo.traced_repo", "TracedRepo"),
        "TracedFile": ("lean_dojo_v2.lean_dojo.traced_file", "TracedFile"),
        "TracedTactic": ("lean_dojo_v2.data.model", "TracedTactic"),
    },
    "lean_dojo_v2.lean_agent": {
        "DynamicDatabase": ("lean_dojo_v2.database.dynamic_database", "DynamicDatabase"),
    },
    "lean_dojo_v2.lean_agent.database": {
        "DynamicDatabase": ("lean_dojo_v2.database.dynamic_database", "DynamicDatabase"),
    },
    "lean_dojo_v2.utils": {
        "remove_marks": ("lean_dojo_v2.data.marks", "remove_marks"),
    },
    "lean_dojo_v2.utils.git": {
        "LeanGitRepo": ("lean_dojo_v2.lean_dojo.repo", "LeanGitRepo"),
        "RepoType": ("lean_dojo_v2.lean_dojo.repo", "RepoType"),
        "mirror_path": ("lean_dojo_v2.lean_dojo.repo", "mirror_path"),
    },
    "lean_dojo_v2.utils.filesystem": {
        "staged_output_dir": ("lean_dojo_v2.data.output_dir", "staged_output_dir"),
        "check_output_dir": ("lean_dojo_v2.data.output_dir", "check_output_dir"),
        "is_ours": ("lean_dojo_v2.data.output_dir", "is_ours"),
        "atomic_write": ("lean_dojo_v2.data.jsonio", "atomic_write"),
        "read_json": ("lean_dojo_v2.data.jsonio", "read_json"),
    },
}

CASES = [
    (path, name, real) for path, names in UPSTREAM_PATHS.items() for name, real in names.items()
]


@pytest.mark.parametrize(("path", "name", "real"), CASES, ids=[f"{p}:{n}" for p, n, _ in CASES])
def test_upstream_import_path_is_our_implementation(path: str, name: str, real: tuple[str, str]):
    namespace: dict[str, object] = {}
    exec(f"from {path} import {name}", namespace)  # the statement upstream code runs
    expected = getattr(importlib.import_module(real[0]), real[1])
    assert namespace[name] is expected


@pytest.mark.parametrize("path", sorted(UPSTREAM_PATHS))
def test_upstream_module_exports_exactly_what_is_tested(path: str):
    module = importlib.import_module(path)
    exported = set(module.__all__) - {"constants", "filesystem", "git", "database"}
    assert exported == set(UPSTREAM_PATHS[path])
    assert set(module.__all__) <= set(dir(module))


def test_upstream_readme_data_extraction_modules_all_import():
    """The upstream README lists these five modules of the data_extraction package."""
    for name in ("lean", "trace", "dataset", "cache", "traced_data"):
        importlib.import_module(f"lean_dojo_v2.lean_dojo.data_extraction.{name}")


def test_utils_submodules_reachable_as_attributes():
    import lean_dojo_v2.utils as utils

    assert utils.constants is importlib.import_module("lean_dojo_v2.utils.constants")
    assert utils.git.LeanGitRepo is importlib.import_module("lean_dojo_v2.lean_dojo").LeanGitRepo


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def test_upstream_readme_generate_benchmark_call_is_accepted(tmp_path, monkeypatch):
    """``generate_benchmark(repos=[(url, commit)], build_deps=True, output_dir="raid/data")``
    (the upstream README's call) traces each repository with ``build_deps`` and writes
    ``<output_dir>/<name>_<commit>``. Tracing itself is replaced: no Lean here."""
    from lean_dojo_v2.lean_dojo import benchmark
    from lean_dojo_v2.lean_dojo.data_extraction.dataset import generate_benchmark

    repo = tmp_path / "lean4-example"
    repo.mkdir()
    (repo / "lean-toolchain").write_text("leanprover/lean4:v4.22.0\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "lean-toolchain")
    _git(repo, "commit", "-q", "-m", "init")
    commit = _git(repo, "rev-parse", "HEAD")

    traced, written = [], []
    monkeypatch.setattr(
        benchmark, "trace", lambda r, build_deps, **kw: traced.append((r, build_deps)) or r
    )
    monkeypatch.setattr(benchmark, "write_benchmark", lambda t, dst, spec=None: written.append(dst))
    monkeypatch.setenv("LEAN_DOJO_V2_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    reset_settings()
    try:
        generate_benchmark(repos=[(str(repo), commit)], build_deps=True, output_dir="raid/data")
    finally:
        reset_settings()
    [(lean_repo, build_deps)] = traced
    assert (lean_repo.url, lean_repo.commit, build_deps) == (str(repo), commit, True)
    assert written == [Path("raid/data") / f"lean4-example_{commit}"]


def test_upstream_readme_generate_benchmark_signature():
    from lean_dojo_v2.lean_dojo.data_extraction.dataset import generate_benchmark

    inspect.signature(generate_benchmark).bind(
        repos=[("https://github.com/durant42040/lean4-example", "0" * 40)],
        build_deps=True,
        output_dir="raid/data",
    )


def test_constants_follow_settings_when_read(tmp_path, monkeypatch):
    from lean_dojo_v2.utils import constants

    monkeypatch.setenv("RAID_DIR", str(tmp_path / "raid"))
    monkeypatch.setenv("LEAN_DOJO_V2_CACHE_DIR", str(tmp_path / "cache"))
    reset_settings()
    try:
        s = get_settings()
        assert constants.RAID_DIR == str(s.raid_dir) == str(tmp_path / "raid")
        assert constants.DATA_DIR == "data" and constants.CHECKPOINT_DIR == "checkpoints"
        assert os.path.join(constants.RAID_DIR, constants.DATA_DIR) == str(s.data_dir)
        assert os.path.join(constants.RAID_DIR, constants.CHECKPOINT_DIR) == str(s.checkpoint_dir)
        assert constants.CACHE_DIR == s.cache_dir == tmp_path / "cache"
        assert constants.NUM_WORKERS == constants.NUM_PROCS == s.num_workers
        assert constants.MARK_START_SYMBOL == "<a>" and constants.MARK_END_SYMBOL == "</a>"
        assert constants.remove_marks("<a>Nat.add</a> x") == "Nat.add x"
        monkeypatch.setenv("RAID_DIR", str(tmp_path / "elsewhere"))
        reset_settings()
        assert constants.RAID_DIR == str(tmp_path / "elsewhere"), "not frozen at first read"
        assert not (tmp_path / "raid").exists() and not (tmp_path / "elsewhere").exists()
    finally:
        reset_settings()


def test_constants_need_no_github_token(monkeypatch):
    """Upstream raised ValueError at import without GITHUB_ACCESS_TOKEN; the token is optional."""
    monkeypatch.delenv("GITHUB_ACCESS_TOKEN", raising=False)
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    reset_settings()
    try:
        from lean_dojo_v2.utils.constants import GITHUB_ACCESS_TOKEN

        assert GITHUB_ACCESS_TOKEN is None
    finally:
        reset_settings()


def test_upstream_names_left_out_say_what_to_use_instead():
    from lean_dojo_v2.utils import constants, filesystem

    with pytest.raises(AttributeError, match="not provided by lean-dojo-v2: use tempfile"):
        constants.TMP_DIR  # noqa: B018
    with pytest.raises(AttributeError, match="staged_output_dir"):
        filesystem.remove_dir  # noqa: B018
    with pytest.raises(ImportError, match="Cache"):
        exec("from lean_dojo_v2.lean_dojo.data_extraction.cache import Cache", {})
    assert not hasattr(constants, "NO_SUCH_NAME")


COMPAT_MODULES = sorted({*UPSTREAM_PATHS, "lean_dojo_v2.utils.constants"})

# What importing every compatibility module may load of our package: nothing beyond themselves,
# the (lazy) lean_dojo package they live in, the lazy helper, and config/errors (settings).
ALLOWED_OWN_MODULES = {
    "lean_dojo_v2",
    "lean_dojo_v2.config",
    "lean_dojo_v2.errors",
    "lean_dojo_v2.lean_dojo",
    "lean_dojo_v2.lean_dojo.data_extraction",
    "lean_dojo_v2._lazy",
    *COMPAT_MODULES,
}

_IMPORT_PROBE = r"""
import json, os, sys, time
watched = {"RAID_DIR", "XDG_CACHE_HOME", "GITHUB_ACCESS_TOKEN", "GITHUB_TOKEN", "HF_TOKEN"}
read = []
getitem = type(os.environ).__getitem__
def spy(self, key):
    if key in watched or str(key).startswith("LEAN_DOJO_V2_"):
        read.append(key)
    return getitem(self, key)
type(os.environ).__getitem__ = spy
start = time.perf_counter()
import importlib
import lean_dojo_v2
base = time.perf_counter() - start
for m in MODULES:
    importlib.import_module(m)
elapsed = time.perf_counter() - start
type(os.environ).__getitem__ = getitem
import lean_dojo_v2.config as config
print(json.dumps({
    "env_read": read,
    "settings_read": config._settings is not None,
    "own": sorted(m for m in sys.modules if m.startswith("lean_dojo_v2")),
    "heavy": sorted(m for m in ("git", "torch", "networkx", "sqlite3", "filelock", "orjson")
                    if m in sys.modules),
    "base_s": base,
    "all_s": elapsed,
}))
"""


def _probe(tmp_path: Path) -> tuple[dict, list[Path]]:
    missing = [tmp_path / "raid-missing", tmp_path / "cache-missing", tmp_path / "home-missing"]
    cwd = tmp_path / "cwd"
    cwd.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if "TOKEN" not in k}
    env.update(
        RAID_DIR=str(missing[0]),
        LEAN_DOJO_V2_CACHE_DIR=str(missing[1]),
        HOME=str(missing[2]),
        XDG_CACHE_HOME=str(missing[2] / ".cache"),
        PYTHONPATH=str(Path(lean_dojo_v2.__file__).resolve().parents[1]),
    )
    code = _IMPORT_PROBE.replace("MODULES", repr(COMPAT_MODULES))
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert list(cwd.iterdir()) == [], "import created files in the working directory"
    return json.loads(proc.stdout.strip().splitlines()[-1]), missing


def test_importing_upstream_paths_reads_no_settings_and_creates_nothing(tmp_path):
    report, missing = _probe(tmp_path)
    for path in missing:
        assert not path.exists(), f"import created {path}"
    assert report["env_read"] == [], "import read settings from the environment"
    assert not report["settings_read"]
    assert report["heavy"] == [], "import pulled in heavy modules"
    assert set(report["own"]) <= ALLOWED_OWN_MODULES, "import loaded real implementation modules"


def test_import_lean_dojo_v2_stays_fast(tmp_path):
    """``import lean_dojo_v2`` (and every upstream path) stays well under 0.3 s; best of three runs
    to ride out a busy machine."""
    best = min(_probe(tmp_path)[0]["all_s"] for _ in range(3))
    assert best < 0.3, f"importing lean_dojo_v2 and the upstream paths took {best:.3f} s"
