"""Shared test set-up: offline hubs, the bundled real data, skips for Lean/GPU/browser tests (the
only tests that may skip), and CUDA hidden from every test not marked ``gpu``.

Why hide CUDA: a test that does not pin a device would move to CUDA and bf16 wherever there is a
GPU (``device="auto"`` everywhere in the library), so the suite would test another path on a GPU
machine than on a laptop, and ``pytest -n 12`` on one GPU runs twelve processes that each hold
CUDA memory until one runs out. A ``gpu`` test sees the real device; any other test sees none:
``torch.cuda.is_available()`` is False, ``torch.cuda.device_count()`` 0, and
``CUDA_VISIBLE_DEVICES`` is empty for the programs it starts.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

# Nothing in the test suite may wait on a model hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO_ROOT = Path(__file__).resolve().parents[1]
# The real Lean data the tests read: a trimmed, byte-for-byte copy of ``shared/data`` with the same
# layout (tests/data/real/README.md; regenerate with scripts/copy_real_test_data.py).
REAL_DATA = Path(__file__).resolve().parent / "data" / "real"


def full_shared_data_dir() -> Path | None:
    """The complete ``../shared/data`` beside the checkout (or ``LEAN_DOJO_V2_SHARED_DATA``), if any.

    Optional extra coverage only: a test may read more there, but the tests collected, run and
    passed must be the same without it (``LEAN_DOJO_V2_SHARED_DATA=/nonexistent`` simulates that).
    """
    env = os.environ.get("LEAN_DOJO_V2_SHARED_DATA")
    path = Path(env) if env else REPO_ROOT.parent / "shared" / "data"
    return path if path.is_dir() else None


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The bundled real data (``tests/data/real``); paths under it are those under ``shared/data``."""
    return REAL_DATA


@pytest.fixture(scope="session")
def full_shared_data() -> Path | None:
    """``../shared/data`` when it is there (see :func:`full_shared_data_dir`), else None."""
    return full_shared_data_dir()


@pytest.fixture(scope="session")
def fullest_data(shared_data: Path, full_shared_data: Path | None) -> Callable[[str], Path]:
    """``fullest_data("a/b")``: ``a/b`` under ``../shared/data`` where that exists, else the bundled
    copy. For tests that loop over every file or record they find (never parametrise over it)."""

    def pick(relative: str) -> Path:
        if full_shared_data is not None and (full_shared_data / relative).exists():
            return full_shared_data / relative
        return shared_data / relative

    return pick


@pytest.fixture(scope="session")
def b4_records_path(shared_data: Path) -> Path:
    return shared_data / "leandojo_b4" / "random_test_records_1_100.json"


def _has_lean() -> bool:
    return shutil.which("lean") is not None and shutil.which("lake") is not None


def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def _init_cuda() -> bool:
    """Initialise CUDA in this process now, with the real ``CUDA_VISIBLE_DEVICES``: the driver
    reads it once, at its first use, and a first use inside a test that hides CUDA would take the
    GPU away from the gpu tests after it. False when CUDA is reported but cannot start (NVML sees
    a GPU that the CUDA runtime cannot use): the gpu tests then skip instead of failing."""
    import torch

    try:
        torch.cuda.init()
    except RuntimeError:
        return False
    return True


def _no_cuda() -> bool:
    """``torch.cuda.is_available`` while CUDA is hidden."""
    return False


def _no_cuda_devices() -> int:
    """``torch.cuda.device_count`` while CUDA is hidden."""
    return 0


def hide_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make CUDA invisible until ``monkeypatch`` is undone: to the programs a test starts
    (``CUDA_VISIBLE_DEVICES=""``) and to this process's torch (``is_available`` False,
    ``device_count`` 0: what the library's ``resolve_device("auto")``, Lightning's accelerator
    choice and transformers' ``TrainingArguments`` ask). torch is patched only when it is already
    imported (importing it costs seconds a pure-Python test need not pay); if a test imports it
    later, the empty ``CUDA_VISIBLE_DEVICES`` hides the devices from its first CUDA call instead."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    torch = sys.modules.get("torch")
    if torch is not None:
        monkeypatch.setattr(torch.cuda, "is_available", _no_cuda)
        monkeypatch.setattr(torch.cuda, "device_count", _no_cuda_devices)
    forget_cached_cuda_checks()


# transformers' checks that ask torch.cuda and keep the answer for the life of the process
# (functools.lru_cache).
_TRANSFORMERS_CUDA_CHECKS = (
    "is_torch_cuda_available",
    "is_torch_bf16_gpu_available",
    "is_torch_bf16_available_on_device",
    "is_torch_tf32_available",
    "is_flash_attn_2_available",
    "is_flash_attn_3_available",
    "is_flash_attn_4_available",
)


def forget_cached_cuda_checks() -> None:
    """Clear transformers' cached CUDA checks, whenever CUDA is hidden or shown again: else a
    ``gpu`` test after a test that hid CUDA is told there is no GPU (``TrainingArguments(bf16=True)``
    refuses), and a test that hides it, after a ``gpu`` test, that there is one."""
    utils = sys.modules.get("transformers.utils.import_utils")
    if utils is None:
        return
    for name in _TRANSFORMERS_CUDA_CHECKS:
        clear = getattr(getattr(utils, name, None), "cache_clear", None)
        if clear is not None:
            clear()


_CUDA_HIDDEN = pytest.StashKey[pytest.MonkeyPatch]()


@pytest.fixture(scope="session", name="hide_cuda")
def hide_cuda_fixture() -> Callable[[pytest.MonkeyPatch], None]:
    """:func:`hide_cuda`, for the test that checks it."""
    return hide_cuda


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # A hook rather than an autouse fixture: it runs before every fixture of the test, the
    # module- and session-scoped ones it is the first to use included (a module fixture that
    # trains with device="auto" must train on the CPU too).
    if "gpu" not in item.keywords:
        patch = pytest.MonkeyPatch()
        hide_cuda(patch)
        item.stash[_CUDA_HIDDEN] = patch


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    # trylast: after the test's fixtures are torn down, which may still be using the CPU.
    patch = item.stash.get(_CUDA_HIDDEN, None)
    if patch is not None:
        patch.undo()
        del item.stash[_CUDA_HIDDEN]
        forget_cached_cuda_checks()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    lean = _has_lean()
    skip_lean = pytest.mark.skip(reason="no Lean toolchain (lean and lake) on PATH; install elan")
    skip_gpu = pytest.mark.skip(reason="no CUDA device")
    skip_browser = pytest.mark.skip(
        reason="no Chromium on PATH: install Debian's chromium package (.ci/run does)"
    )
    cuda: bool | None = None
    chromium: bool | None = None
    for item in items:
        if "lean" in item.keywords and not lean:
            item.add_marker(skip_lean)
        if "browser" in item.keywords:
            if chromium is None:
                from evaluation.browser import find_chromium

                chromium = find_chromium() is not None
            if not chromium:
                item.add_marker(skip_browser)
        if "gpu" in item.keywords:
            if cuda is None:
                cuda = _has_cuda()
                if cuda:
                    cuda = _init_cuda()
            if not cuda:
                item.add_marker(skip_gpu)
