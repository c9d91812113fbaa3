"""``docs/errors.md`` documents every typed error, and only errors that exist.

The table there (error → import path → when it is raised → what the user should do) is checked
against the package: every subclass of ``LeanDojoError`` (found by importing every module) must
have a row, and every row must name a ``LeanDojoError`` class importable from the path given.
One naming scheme: every class's name ends in ``Error``; another name of a class is an alias (the
same class), with a row that says whose alias it is.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import lean_dojo_v2
from lean_dojo_v2.errors import LeanDojoError

DOC = Path(__file__).resolve().parents[1] / "docs" / "errors.md"
# | `ErrorName` | `lean_dojo_v2.module` | when | what to do |
ROW = re.compile(
    r"^\|\s*`(?P<name>\w+)`\s*\|\s*`(?P<module>[\w.]+)`\s*\|(?P<when>[^|]*)\|(?P<what>[^|]*)\|\s*$"
)


def _import_all_modules() -> list[str]:
    """Import every module of the package; returns those skipped because an optional heavy
    dependency (torch and the like) is not installed."""
    skipped = []
    for info in pkgutil.walk_packages(lean_dojo_v2.__path__, "lean_dojo_v2."):
        if info.name.endswith("__main__"):
            continue
        try:
            importlib.import_module(info.name)
        except ModuleNotFoundError as exc:
            if exc.name is None or exc.name.split(".")[0] == "lean_dojo_v2":
                raise
            skipped.append(info.name)
    return skipped


def error_classes() -> list[type[LeanDojoError]]:
    _import_all_modules()
    found: list[type[LeanDojoError]] = [LeanDojoError]
    stack = [LeanDojoError]
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub not in found and sub.__module__.startswith("lean_dojo_v2"):
                found.append(sub)
                stack.append(sub)
    return found


def documented_rows() -> list[dict[str, str]]:
    rows = []
    for line in DOC.read_text("utf-8").splitlines():
        m = ROW.match(line)
        if m:
            rows.append({k: v.strip() for k, v in m.groupdict().items()})
    return rows


def test_errors_doc_has_a_table():
    assert len(documented_rows()) >= 10, f"no error table found in {DOC}"


def test_every_error_class_is_documented():
    documented = {row["name"] for row in documented_rows()}
    missing = sorted(
        f"{cls.__module__}.{cls.__name__}"
        for cls in error_classes()
        if cls.__name__ not in documented
    )
    assert not missing, f"add a row to docs/errors.md for: {', '.join(missing)}"


@pytest.mark.parametrize("row", documented_rows(), ids=lambda r: r["name"])
def test_every_documented_error_exists(row: dict[str, str]):
    module = importlib.import_module(row["module"])
    cls = getattr(module, row["name"], None)
    assert isinstance(cls, type) and issubclass(cls, LeanDojoError), (
        f"docs/errors.md names {row['module']}.{row['name']}, which is not a LeanDojoError "
        "class there: update or remove the row"
    )


def test_every_documented_error_says_when_and_what_to_do():
    rows = documented_rows()
    incomplete = [r["name"] for r in rows if not r["when"] or not r["what"]]
    assert not incomplete, f"rows without 'when' or 'what to do': {incomplete}"
    names = [r["name"] for r in rows]
    assert len(names) == len(set(names)), "one row per error name"


def test_no_two_error_classes_share_a_name():
    """One name, one meaning: ``LeanNotFoundError`` was once two classes (tracing and the Lean
    boundary); an alias (``ToolchainNotFoundError = LeanNotFoundError``) is fine, a second class
    is not."""
    by_name: dict[str, list[str]] = {}
    for cls in error_classes():
        by_name.setdefault(cls.__name__, []).append(f"{cls.__module__}.{cls.__qualname__}")
    clashes = {name: where for name, where in by_name.items() if len(where) > 1}
    assert not clashes, f"error classes sharing a name: {clashes}"


def test_every_error_class_name_ends_with_error():
    """One naming scheme: every error class's name ends in ``Error``."""
    off_scheme = sorted(
        f"{cls.__module__}.{cls.__qualname__}"
        for cls in error_classes()
        if not cls.__name__.endswith("Error")
    )
    assert not off_scheme, f"error classes whose name does not end in 'Error': {off_scheme}"


def test_alias_rows_say_which_class_they_stand_for():
    """A row for another name of a class (``ToolchainNotFoundError``) says "alias of
    `TheClass`"; a name off the ``...Error`` scheme says it is a deprecated alias."""
    problems = []
    for row in documented_rows():
        cls = getattr(importlib.import_module(row["module"]), row["name"], None)
        if not isinstance(cls, type) or cls.__name__ == row["name"]:
            continue
        if not re.search(rf"\balias of `{cls.__name__}`", row["when"], re.IGNORECASE):
            problems.append(f"{row['name']}: say 'alias of `{cls.__name__}`'")
        if not row["name"].endswith("Error") and "deprecated alias" not in row["when"].lower():
            problems.append(f"{row['name']}: say 'Deprecated alias of `{cls.__name__}`'")
    assert not problems, f"docs/errors.md alias rows: {problems}"
