"""Layer 4 (evaluation): the output directory of an evaluation — decided before anything is
written, then opened.

:func:`plan_out_dir` only looks: where ``--out`` is (default
``RAID_DIR/eval/<benchmark>-<mode>-<model>-<settings hash>``), whether it can be written, and
what is there. A new or empty directory is started; a directory holding an evaluation
(``eval.json``) is continued with ``resume`` when its settings are the same, replaced with
``force``, and refused otherwise (naming the settings that differ); a directory of files this
library did not write is refused unless ``force``. :func:`open_out_dir` then carries the plan
out: it is the first write of an evaluation.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..config.loading import unfingerprinted_fields
from ..data.jsonio import loads
from ..data.output_dir import check_output_dir, is_ours, mark_ours
from ..errors import OutputExistsError
from ..version import __version__
from .config import EvalConfig
from .errors import EvalOutputError, EvalOutputExistsError

log = logging.getLogger(__name__)

EVAL_FILE = "eval.json"
"""The settings of the evaluation a directory holds (written when it starts)."""

__all__ = ["EVAL_FILE", "OutPlan", "default_out_dir", "open_out_dir", "plan_out_dir"]


@dataclass(frozen=True)
class OutPlan:
    """Where the evaluation writes and what happens to what is there: ``new`` (absent or empty),
    ``resume`` (the same evaluation, continued), ``replace`` (``force``)."""

    path: Path
    action: Literal["new", "resume", "replace"]


def settings_hash(settings: Mapping[str, Any]) -> str:
    text = json.dumps(settings, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]


def default_out_dir(benchmark: str, mode: str, model: str, settings: Mapping[str, Any]) -> Path:
    """``RAID_DIR/eval/<benchmark>-<mode>-<model>-<hash of the settings>``: the same settings
    give the same directory, so ``--resume`` finds it without ``--out``."""
    from ..config import get_settings

    def slug(text: str) -> str:
        return re.sub(r"[^A-Za-z0-9._-]+", "_", Path(text).name or text).strip("._-")[:60] or "x"

    name = f"{slug(benchmark)}-{mode}-{slug(model)}-{settings_hash(settings)}"
    return get_settings().raid_dir / "eval" / name


def plan_out_dir(
    path: Path,
    settings: Mapping[str, Any],
    *,
    resume: bool,
    force: bool,
    sources: Iterable[Path] = (),
) -> OutPlan:
    """What to do with ``path`` (see the module docstring); nothing is left written (a probe
    file tells whether it can be written and is removed at once). ``sources``: the
    evaluation's inputs, which the output may neither be nor hold."""
    _check_writable(path)
    sources = list(sources)
    try:
        check_output_dir(path, force=True, sources=sources)  # overlap with the inputs only
    except OutputExistsError as exc:
        raise EvalOutputExistsError(str(exc)) from None
    if not path.exists() or not any(path.iterdir()):
        if resume:
            log.info("--resume: %s holds no evaluation yet; starting one", path)
        return OutPlan(path, "new")
    theirs = _read_settings(path)
    if theirs is None:
        if force:
            return OutPlan(path, "replace")
        what = "an evaluation it cannot read" if (path / EVAL_FILE).exists() else "files"
        raise EvalOutputExistsError(
            f"--out {path} holds {what} that eval prove did not write"
            + (" (nothing to resume)" if resume else "")
            + "; choose another --out, or pass --force to replace it"
        )
    if force:
        return OutPlan(path, "replace")
    changed = _differences(theirs, settings)
    if resume and not changed:
        return OutPlan(path, "resume")
    if changed:
        shown = "; ".join(changed[:4]) + ("; ..." if len(changed) > 4 else "")
        raise EvalOutputExistsError(
            f"--out {path} holds an evaluation with other settings ({shown}); resume it with "
            "the same settings, choose another --out, or pass --force to replace it"
        )
    raise EvalOutputExistsError(
        f"--out {path} holds this evaluation already; pass --resume to continue it (finished "
        "problems are kept) or --force to start again"
    )


def open_out_dir(
    plan: OutPlan, settings: Mapping[str, Any], where: Mapping[str, Any] | None = None
) -> None:
    """Carry out ``plan``: the directory made (or emptied), marked as ours, its ``eval.json``
    written; on ``resume`` only the note of the resumption is added. Hold the directory's lock
    (:func:`~lean_dojo_v2.data.run_lock.lock_output_dir`) and plan under it: this is the first
    write of an evaluation.

    ``where``: settings that say where things are, not what is evaluated (``base_url``: a
    model served at another address is the same model). They are kept in ``eval.json``, and a
    resumption whose values differ notes the change: ``{"at": TIME, "changed": {"base_url":
    [THERE, HERE]}}``."""
    path = plan.path
    where = dict(where or {})
    if plan.action == "replace" and path.exists():
        log.info("--force: replacing what %s holds", path)
        for child in path.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
    path.mkdir(parents=True, exist_ok=True)
    now = time.strftime("%Y-%m-%dT%H:%M:%S")
    if plan.action == "resume":
        record = _read_json(path / EVAL_FILE) or {}
        record.setdefault("resumed", []).append(_resumption(record, where, now))
        record["where"] = {**_where_there(record, where), **where}
    else:
        mark_ours(path)
        record = {
            "lean_dojo_v2_version": __version__,
            "started": now,
            "settings": dict(settings),
            "where": where,
        }
    tmp = path / f".{EVAL_FILE}.tmp"
    tmp.write_text(json.dumps(record, indent=2, default=str) + "\n", "utf-8")
    os.replace(tmp, path / EVAL_FILE)


def _where_there(record: Mapping[str, Any], where: Mapping[str, Any]) -> dict[str, Any]:
    """``where`` as the directory's run had it (an ``eval.json`` written before ``where`` was
    kept apart has those keys among its settings)."""
    settings = record.get("settings")
    settings = settings if isinstance(settings, dict) else {}
    there = record.get("where")
    there = there if isinstance(there, dict) else {}
    return {**{k: settings[k] for k in where if k in settings}, **there}


def _resumption(record: Mapping[str, Any], where: Mapping[str, Any], now: str) -> dict[str, Any]:
    there = _where_there(record, where)
    changed = {k: [there.get(k), v] for k, v in where.items() if k in there and there[k] != v}
    for key, (was, is_now) in changed.items():
        log.info("resuming with %s %s (it was %s)", key, is_now, was)
    return {"at": now, "changed": changed} if changed else {"at": now}


def _check_writable(path: Path) -> None:
    """An :class:`EvalOutputError` unless ``path`` is, or can be made, a writable directory."""
    if path.exists() and not path.is_dir():
        raise EvalOutputError(f"--out {path} is a file, not a directory; choose another --out")
    probe = path
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if not probe.is_dir():
        raise EvalOutputError(
            f"--out {path} cannot be made: {probe} is a file, not a directory; choose another --out"
        )
    if not os.access(probe, os.W_OK | os.X_OK):
        raise EvalOutputError(
            f"--out {path} cannot be written: no write permission in {probe}; choose another --out"
        )
    # os.access says yes to root everywhere and knows nothing of read-only mounts or /proc:
    # only making a file there tells. The file is gone before anything else happens.
    try:
        fd, name = tempfile.mkstemp(prefix=".lean-dojo-v2-probe-", dir=probe)
        os.close(fd)
        os.unlink(name)
    except OSError as exc:
        raise EvalOutputError(
            f"--out {path} cannot be written: {exc.strerror or exc} in {probe}; "
            "choose another --out"
        ) from None


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _read_settings(path: Path) -> dict[str, Any] | None:
    """The settings of the evaluation in ``path``, None when it holds none (or not ours)."""
    if not is_ours(path):
        return None
    record = _read_json(path / EVAL_FILE)
    settings = record.get("settings") if record else None
    return settings if isinstance(settings, dict) else None


def _differences(theirs: Mapping[str, Any], ours: Mapping[str, Any]) -> list[str]:
    """``"key: A there, B here"`` for each setting that differs. A key that is no longer part
    of an evaluation's identity (``base_url``, in an ``eval.json`` written when it was) is not
    compared."""
    mine = json.loads(json.dumps(ours, default=str))
    free = unfingerprinted_fields(EvalConfig)
    out = []
    for key in sorted((set(theirs) | set(mine)) - set(free)):
        if theirs.get(key) != mine.get(key):
            out.append(f"{key}: {theirs.get(key)!r} there, {mine.get(key)!r} here")
    return out
