"""Where the files and modules of a built Lake project live.

Paths follow LeanDojo's convention, relative to the project root: the project's own files as they
are (``Foo/Bar.lean``), dependencies under ``.lake/packages/<name>/``, and Lean's own sources under
``.lake/packages/lean4/src/lean/`` (``Init``, ``Lean``, ``Std``, ``Lake`` — they physically live in
the toolchain, ``<prefix>/src/lean``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

CORE_DIR = ".lake/packages/lean4/src/lean"
CORE_ROOTS = frozenset({"Init", "Lean", "Std", "Lake", "Lean4"})
# Lake puts .olean files under <package>/.lake/build/lib/lean (older: .lake/build/lib).
BUILD_LIBS = (Path(".lake/build/lib/lean"), Path(".lake/build/lib"))
_SKIP_DIRS = frozenset({".lake", "lake-packages", ".git", "build", ".github"})


@dataclass(frozen=True)
class LeanSource:
    """A file to trace: its LeanDojo path, its module, and where it physically is."""

    path: str
    module: str
    file: Path


def _lean_files(top: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            if name.endswith(".lean") and name not in ("lakefile.lean", "ExtractData.lean"):
                yield Path(dirpath) / name


class ProjectLayout:
    """The root package, its dependency packages and (optionally) the toolchain's core files."""

    def __init__(self, root: str | Path, core_prefix: str | Path | None = None) -> None:
        self.root = Path(root).resolve()
        self.core_prefix = Path(core_prefix).resolve() if core_prefix is not None else None
        self._index: dict[str, str] | None = None

    # -- packages --------------------------------------------------------------------------

    @property
    def packages_dir(self) -> Path:
        return self.root / ".lake" / "packages"

    def packages(self) -> dict[str, Path]:
        """Dependency packages that are checked out (``.lake/packages/<name>``)."""
        if not self.packages_dir.is_dir():
            return {}
        return {
            p.name: p
            for p in sorted(self.packages_dir.iterdir())
            if p.is_dir() and p.name != "lean4"
        }

    @staticmethod
    def olean(package: Path, module: str) -> Path | None:
        rel = Path(*module.split(".")).with_suffix(".olean")
        for lib in BUILD_LIBS:
            candidate = package / lib / rel
            if candidate.is_file():
                return candidate
        return None

    def _built(self, package: Path, prefix: str) -> list[LeanSource]:
        """Files of a package that Lake built (an .olean exists), with their module names. The
        module is the longest tail of the file's path that has an .olean, which handles packages
        whose sources live in a ``srcDir``."""
        out = []
        for file in _lean_files(package):
            parts = file.relative_to(package).with_suffix("").parts
            for i in range(len(parts)):
                module = ".".join(parts[i:])
                if self.olean(package, module) is not None:
                    rel = file.relative_to(package).as_posix()
                    out.append(LeanSource(f"{prefix}{rel}", module, file))
                    break
        return out

    def project_files(self) -> list[LeanSource]:
        return self._built(self.root, "")

    def dependency_files(self) -> list[LeanSource]:
        out = []
        for name, pkg in self.packages().items():
            out.extend(self._built(pkg, f".lake/packages/{name}/"))
        return out

    def core_files(self) -> list[LeanSource]:
        """Lean's own sources in the toolchain, when their .olean files are there too."""
        if self.core_prefix is None:
            return []
        src = self.core_prefix / "src" / "lean"
        lib = self.core_prefix / "lib" / "lean"
        out = []
        if not src.is_dir():
            return out
        for file in _lean_files(src):
            rel = file.relative_to(src)
            if rel.parts[0] not in CORE_ROOTS:
                continue
            if (lib / rel.with_suffix(".olean")).is_file():
                module = ".".join(rel.with_suffix("").parts)
                out.append(LeanSource(f"{CORE_DIR}/{rel.as_posix()}", module, file))
        return out

    # -- modules → paths -------------------------------------------------------------------

    def _module_index(self) -> dict[str, str]:
        if self._index is None:
            index: dict[str, str] = {}
            for src in self.project_files() + self.dependency_files():
                index.setdefault(src.module, src.path)
            self._index = index
        return self._index

    def resolve(self, module: str, olean: str = "") -> str | None:
        """The LeanDojo path of ``module``'s source, from the .olean path Lean found for it
        (``olean`` may be empty); None when it cannot be placed."""
        if olean:
            placed = self._from_olean(module, Path(olean))
            if placed is not None:
                return placed
        hit = self._module_index().get(module)
        if hit is not None:
            return hit
        if module.split(".", 1)[0] in CORE_ROOTS:
            return f"{CORE_DIR}/{module.replace('.', '/')}.lean"
        return None

    def _from_olean(self, module: str, olean: Path) -> str | None:
        rel = Path(*module.split(".")).with_suffix(".lean")
        parts = olean.parts
        for lib in BUILD_LIBS:
            n = len(lib.parts)
            for i in range(len(parts) - n, -1, -1):
                if parts[i : i + n] == lib.parts:
                    package = Path(*parts[:i]) if i else Path("/")
                    return self._in_package(package, module, rel)
        # <prefix>/lib/lean/<Module>.olean: the toolchain's own modules.
        if "lib" in parts and module.split(".", 1)[0] in CORE_ROOTS:
            return f"{CORE_DIR}/{rel.as_posix()}"
        return None

    def _in_package(self, package: Path, module: str, rel: Path) -> str | None:
        try:
            package = package.resolve()
        except OSError:
            return None
        if package == self.root:
            if (self.root / rel).is_file():
                return rel.as_posix()
            return self._module_index().get(module, rel.as_posix())
        try:
            inside = package.relative_to(self.packages_dir.resolve())
        except ValueError:
            return None
        name = inside.parts[0] if inside.parts else ""
        if not name:
            return None
        prefix = f".lake/packages/{name}/"
        if (self.packages_dir / name / rel).is_file():
            return prefix + rel.as_posix()
        hit = self._module_index().get(module)
        if hit is not None and hit.startswith(prefix):
            return hit
        return prefix + rel.as_posix()
