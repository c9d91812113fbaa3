"""Where the files and modules of a built Lake project live.

Paths follow LeanDojo's convention, relative to the project root: the project's own files as they
are (``Foo/Bar.lean``), dependencies under ``.lake/packages/<name>/``, and Lean's own sources under
``.lake/packages/lean4/src/lean/`` (``Init``, ``Lean``, ``Std``, ``Lake`` — they physically live in
the toolchain, ``<prefix>/src/lean``).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

logger = logging.getLogger("lean_dojo_v2.lean_dojo")

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
        self._options: dict[Path, dict[str, dict[str, OptionValue]]] = {}

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
        out: list[LeanSource] = []
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

    # -- options ---------------------------------------------------------------------------

    def option_args(self, path: str, module: str) -> list[str]:
        """``ExtractData.lean``'s ``NAME TYPE VALUE`` arguments for the file at LeanDojo path
        ``path``: the ``leanOptions`` of the package it belongs to (and of its library), as Lake
        applied them when it built the file; none for Lean's own files."""
        if path.startswith(CORE_DIR + "/"):
            return []
        package = self.root
        if path.startswith(".lake/packages/"):
            package = self.packages_dir / path.split("/", 3)[2]
        if package not in self._options:
            self._options[package] = lean_options(package)
        return option_args(options_for(self._options[package], module))

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


# ------------------------------------------------------------------------ the package's options

# A Lake option value: bool, natural number or string (Lake's ``LeanOptionValue``).
OptionValue = bool | int | str
# ⟨`name, value⟩ or (`name, value) in a lakefile.lean, value a literal or .ofBool/.ofNat/.ofString.
_LEAN_OPTION = re.compile(
    r"[⟨(]\s*`([\w.«»']+)\s*,\s*"
    r"(?:\.of(?:Bool|Nat|String)\s+)?(true|false|\d+|\"(?:[^\"\\]|\\.)*\")\s*[⟩)]"
)
_LEAN_OPTIONS_FIELD = re.compile(r"\bleanOptions\s*:=\s*")
_LEAN_DEF = (
    r"^\s*(?:@\[[^\]]*\]\s*)?(?:private\s+)?(?:abbrev|def)\s+{name}\b[^:=\n]*(?::[^=\n]*)?:="
)


def lean_options(package: str | Path) -> dict[str, dict[str, OptionValue]]:
    """The Lean options a package's Lake configuration sets (``leanOptions``), as Lake passes them
    to ``lean`` when it builds: ``{"": package options, "<root module>": package options plus the
    library's}``. ``lakefile.toml`` is read exactly; ``lakefile.lean`` is Lean code, so only
    literal entries (``⟨`name, value⟩``, also through one named ``abbrev``/``def``) are read, and
    ``weak.`` and ``linter.`` options are left out (they add warnings, not goals or premises). Missing or unreadable
    configuration gives no options."""
    package = Path(package)
    toml_file, lean_file = package / "lakefile.toml", package / "lakefile.lean"
    try:
        if toml_file.is_file():
            return _toml_options(toml_file.read_text(encoding="utf-8"))
        if lean_file.is_file():
            return _lakefile_lean_options(lean_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        logger.warning("cannot read the Lean options of %s: %s", package, exc)
    return {}


def options_for(options: dict[str, dict[str, OptionValue]], module: str) -> dict[str, OptionValue]:
    """The options of ``module``: its library's (the longest root that prefixes it), else the
    package's."""
    best = ""
    for root in options:
        if root and (module == root or module.startswith(root + ".")) and len(root) > len(best):
            best = root
    return options.get(best, options.get("", {}))


def option_args(options: dict[str, OptionValue]) -> list[str]:
    """``NAME TYPE VALUE`` triples for ``ExtractData.lean``'s command line."""
    out: list[str] = []
    for name, value in sorted(options.items()):
        if isinstance(value, bool):
            out += [name, "bool", "true" if value else "false"]
        elif isinstance(value, int) and value >= 0:
            out += [name, "nat", str(value)]
        elif isinstance(value, str):
            out += [name, "string", value]
    return out


def _flatten(table: dict[str, Any], prefix: str = "") -> dict[str, OptionValue]:
    out: dict[str, OptionValue] = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flatten(value, name + "."))
        elif isinstance(value, bool | int | str):
            out[name] = value
    return out


def _keep(options: dict[str, OptionValue]) -> dict[str, OptionValue]:
    """Options that change what is traced: not ``weak.`` ones (set only where declared) and not
    linters (they only add warnings, and need the package's linter modules)."""
    return {k: v for k, v in options.items() if not k.startswith(("weak.", "linter."))}


def _toml_options(text: str) -> dict[str, dict[str, OptionValue]]:
    import tomllib

    config = tomllib.loads(text)
    base = _keep(_flatten(config.get("leanOptions") or {}))
    out = {"": base}
    for lib in config.get("lean_lib") or []:
        if not isinstance(lib, dict) or "name" not in lib:
            continue
        own = _keep(_flatten(lib.get("leanOptions") or {}))
        if not own:
            continue
        roots = lib.get("roots") or [lib["name"]]
        for root in roots:
            out[str(root)] = {**base, **own}
    return out


def _lean_literal(raw: str) -> OptionValue:
    if raw in ("true", "false"):
        return raw == "true"
    if raw.isdigit():
        return int(raw)
    return raw[1:-1].encode("utf-8").decode("unicode_escape").encode("latin-1").decode("utf-8")


def _lean_expression(text: str, start: int) -> str:
    """The expression starting at ``start``: up to the first line that is indented no more than
    the line it starts on, brackets balanced."""
    line_start = text.rfind("\n", 0, start) + 1
    indent = len(text[line_start:start]) - len(text[line_start:start].lstrip())
    depth, i = 0, start
    while i < len(text):
        ch = text[i]
        if ch in "([{⟨":
            depth += 1
        elif ch in ")]}⟩":
            depth -= 1
        elif ch == "\n" and depth <= 0:
            nxt = text[i + 1 :]
            stripped = nxt.lstrip(" ")
            if (
                stripped
                and not stripped.startswith(("++", "|>", "--"))
                and (len(nxt) - len(stripped) <= indent)
            ):
                break
        i += 1
    return text[start:i]


def _options_in(text: str, expr: str, depth: int = 0) -> dict[str, OptionValue]:
    out: dict[str, OptionValue] = {}
    for m in _LEAN_OPTION.finditer(expr):
        out[m.group(1).replace("«", "").replace("»", "")] = _lean_literal(m.group(2))
    if depth < 2:  # names of abbrevs/defs the expression uses
        for ident in dict.fromkeys(re.findall(r"(?<![`.\w])([A-Za-z_][\w']*)", expr)):
            d = re.search(_LEAN_DEF.format(name=re.escape(ident)), text, re.M)
            if d is not None:
                out = {**_options_in(text, _lean_expression(text, d.end()), depth + 1), **out}
    return _keep(out)


def _lakefile_lean_options(text: str) -> dict[str, dict[str, OptionValue]]:
    from ..data.sorry import strip_comments

    text = strip_comments(text)
    # Top-level blocks: `package …`, `lean_lib …`, and anything else that starts a line
    # (attributes such as `@[default_target]` belong to the block below them).
    headers = [
        (m.start(), m.group(1), m.group(2))
        for m in re.finditer(r"^(package|lean_lib|[^\s@]\S*)[ \t]*«?([\w.']*)»?", text, re.M)
    ]
    base: dict[str, OptionValue] = {}
    per_lib: dict[str, tuple[str, dict[str, OptionValue]]] = {}
    for m in _LEAN_OPTIONS_FIELD.finditer(text):
        found = _options_in(text, _lean_expression(text, m.end()))
        owner = max(((at, kw, name) for at, kw, name in headers if at < m.start()), default=None)
        if owner is not None and owner[1] == "lean_lib":
            at, _, name = owner
            following = [h for h, _, _ in headers if h > at]
            block = text[at : min(following, default=len(text))]
            per_lib.setdefault(name, (block, {}))[1].update(found)
        else:
            base.update(found)
    out = {"": base}
    for name, (block, own) in per_lib.items():
        roots_field = re.search(r"\broots\s*:=\s*#\[([^\]]*)\]", block)
        roots = re.findall(r"`([\w.«»']+)", roots_field.group(1)) if roots_field else [name]
        for root in roots:
            out[root.replace("«", "").replace("»", "")] = {**base, **own}
    return out
