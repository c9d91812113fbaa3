"""A stand-in for ``lake`` and ``lean`` (no Lean toolchain can be installed here).

It does what the tracer needs from them, driven by environment variables:

- ``lean --version`` / ``lean --print-prefix``: ``FAKE_LEAN_VERSION`` / ``FAKE_LEAN_PREFIX``;
- ``lake build``: writes an empty ``.lake/build/lib/lean/<Module>.olean`` for every module that has
  an extractor output in ``FAKE_LAKE_TRACES`` and a source file in the project (as Lake writes
  real ones), after copying the packages of ``FAKE_LAKE_PACKAGES`` to ``.lake/packages/`` (as
  Lake fetches dependencies); fails when ``FAKE_LAKE_BUILD_FAIL`` is set;
- ``lake exe cache get``: succeeds (fails when ``FAKE_LAKE_CACHE_FAIL`` is set);
- ``lake env lean --run ExtractData.lean FILE MODULE OUT``: checks that the script is our
  extractor, then writes ``FAKE_LAKE_TRACES/<MODULE>.json`` to OUT with ``FAKE_LAKE_FIXTURE_ROOT``
  replaced by the project directory (extractor outputs hold absolute .olean paths). Modules in
  ``FAKE_LAKE_FAIL`` fail like Lean does (message on stderr, exit 1); modules in
  ``FAKE_LAKE_HANG`` never finish; with ``FAKE_LAKE_SCRIPT_ERROR`` the script itself fails to
  compile, as it would under a Lean whose API changed.

Every call is appended to ``FAKE_LAKE_LOG`` when set.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path


def _log(argv: list[str]) -> None:
    log = os.environ.get("FAKE_LAKE_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"argv": argv, "cwd": os.getcwd()}) + "\n")


def _modules() -> list[str]:
    traces = Path(os.environ["FAKE_LAKE_TRACES"])
    return sorted(p.stem for p in traces.glob("*.json"))


def lean(args: list[str]) -> int:
    if args == ["--version"]:
        version = os.environ.get("FAKE_LEAN_VERSION", "4.27.0")
        print(f"Lean (version {version}, x86_64-unknown-linux-gnu, commit 0000000, Release)")
        return 0
    if args == ["--print-prefix"]:
        print(os.environ["FAKE_LEAN_PREFIX"])
        return 0
    if len(args) == 5 and args[0] == "--run":
        script, file, module, out = args[1:]
        if "lean_dojo_v2.trace" not in Path(script).read_text(encoding="utf-8"):
            print(f"{script}: not the lean-dojo-v2 extractor", file=sys.stderr)
            return 2
        broken = os.environ.get("FAKE_LAKE_SCRIPT_ERROR")
        if broken:  # the extractor does not compile with this (pretend) Lean
            print(f"{script}:178:26: error: {broken}", file=sys.stderr)
            return 1
        if not Path(file).is_file():
            print(f"file not found: {file}", file=sys.stderr)
            return 1
        if module in os.environ.get("FAKE_LAKE_HANG", "").split(","):
            time.sleep(3600)
        if module in os.environ.get("FAKE_LAKE_FAIL", "").split(","):
            print(f"{file}:1:0: error: unknown package 'Nonexistent'", file=sys.stderr)
            print(f"lean_dojo_v2 extract: {file}: uncaught exception", file=sys.stderr)
            return 1
        src = Path(os.environ["FAKE_LAKE_TRACES"]) / f"{module}.json"
        text = src.read_text(encoding="utf-8")
        text = text.replace(os.environ["FAKE_LAKE_FIXTURE_ROOT"], os.getcwd())
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(out + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.rename(out)
        return 0
    print(f"fake lean: unsupported arguments {args}", file=sys.stderr)
    return 2


def lake(args: list[str]) -> int:
    if args == ["build"]:
        if os.environ.get("FAKE_LAKE_BUILD_FAIL"):
            print(
                "✖ [2/3] Building Fixture.Algebra\nerror: Fixture/Algebra.lean:3:8: unknown "
                "identifier 'foo'\nerror: build failed"
            )
            return 1
        # Dependencies arrive as Lake would fetch them (FAKE_LAKE_PACKAGES/<name>/…).
        packages = os.environ.get("FAKE_LAKE_PACKAGES")
        roots = [Path(".")]
        if packages:
            for pkg in sorted(Path(packages).iterdir()):
                dst = Path(".lake/packages") / pkg.name
                shutil.copytree(pkg, dst, dirs_exist_ok=True)
                roots.append(dst)
        for root in roots:
            for module in _modules():
                rel = Path(*module.split("."))
                if (root / rel.with_suffix(".lean")).is_file():
                    olean = root / ".lake/build/lib/lean" / rel.with_suffix(".olean")
                    olean.parent.mkdir(parents=True, exist_ok=True)
                    olean.write_bytes(b"")
        print("Build completed successfully.")
        return 0
    if args == ["exe", "cache", "get"]:
        if os.environ.get("FAKE_LAKE_CACHE_FAIL"):
            print("error: unknown executable cache", file=sys.stderr)
            return 1
        print("Decompressing 0 file(s)")
        return 0
    if args[:2] == ["env", "lean"]:
        return lean(args[2:])
    if args[:1] == ["env"] and args[1:] == ["printenv", "LEAN_PATH"]:
        print(str(Path.cwd() / ".lake/build/lib/lean"))
        return 0
    print(f"fake lake: unsupported arguments {args}", file=sys.stderr)
    return 2


def main() -> int:
    name = Path(sys.argv[1]).name
    args = sys.argv[2:]
    _log([name, *args])
    return lake(args) if name == "lake" else lean(args)


if __name__ == "__main__":
    sys.exit(main())
