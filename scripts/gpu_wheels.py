"""Fill ``wheels/`` for a GPU machine that reaches no package registry (``make gpu-wheels``;
docs/scaling.md, "The GPU check"). Run it on a machine with registry access, from the project
root, with the project's environment (``make install``):

    python scripts/gpu_wheels.py [--out wheels] [--python-version 3.12]
        [--platform manylinux_2_28_x86_64 ...] [--without torch] [--without NAME ...]
        [--with-vllm] [--print]

1. builds the project's wheel and DeepSpeed's (DeepSpeed is published as a source archive; it
   builds without torch, its ops compile on first use);
2. resolves what they need, with pytest and pytest-timeout, at constraints.txt's versions (pip's
   resolver on this machine: the names and versions);
3. downloads those wheels for the GPU machine's Python and platform, and torch's with its CUDA
   libraries (PyPI's Linux torch wheels are the CUDA builds).

``--without NAME`` (a glob, repeatable) leaves a package out, for what the GPU machine's image
already has; ``--without torch`` also leaves out torch's CUDA libraries and triton.
``--with-vllm`` (off by default: several GB) also downloads vLLM, at the versions the installed
TRL's ``vllm`` extra accepts, with everything it needs for the target (its own CUDA torch among
them), into ``wheels/vllm/``: apart, since vLLM pins its torch, which need not be the project's;
``make gpu-check`` installs only ``wheels/*.whl``. ``--print`` prints the plan (the pip commands
and the packages) as JSON and downloads nothing.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# What torch pulls on Linux: its CUDA libraries and triton.
TORCH_FAMILY = ("torch", "nvidia-*", "triton", "cuda-*")
PLATFORMS = (
    "manylinux_2_28_x86_64",
    "manylinux_2_27_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "linux_x86_64",
)
EXTRAS = ("pytest", "pytest-timeout")  # what `make gpu-check` runs besides the project


def pinned_deepspeed() -> str:
    """``deepspeed==V`` as constraints.txt pins it."""
    for line in (ROOT / "constraints.txt").read_text("utf-8").splitlines():
        if line.startswith("deepspeed=="):
            return line.strip()
    return "deepspeed"


def vllm_requirement() -> str:
    """``vllm`` with the versions the installed TRL's ``vllm`` extra accepts (``vllm`` when it
    names none)."""
    import importlib.metadata

    for req in importlib.metadata.requires("trl") or []:
        spec, _, marker = req.partition(";")
        if spec.strip().startswith("vllm") and "vllm" in marker.split("extra")[-1]:
            return spec.replace(" ", "")
    return "vllm"


def excluded(name: str, without: list[str]) -> bool:
    """Whether package ``name`` is left out: it matches a ``--without`` glob (names compared
    in PEP 503's normal form), torch's family with ``--without torch``."""
    norm = name.lower().replace("_", "-").replace(".", "-")
    patterns = [w.lower().replace("_", "-") for w in without]
    if "torch" in patterns:
        patterns += list(TORCH_FAMILY)
    return any(fnmatch.fnmatchcase(norm, p) for p in patterns)


def public_version(version: str) -> str:
    """The version without a local part: ``2.13.0+cpu`` -> ``2.13.0`` (PyPI's build)."""
    return version.split("+", 1)[0]


def target_args(python_version: str, platforms: list[str]) -> list[str]:
    args = ["--only-binary=:all:", "--python-version", python_version, "--implementation", "cp"]
    for platform in platforms:
        args += ["--platform", platform]
    return args


def resolve(out: Path, project_wheel: Path) -> list[tuple[str, str]]:
    """(name, version) of everything the project's wheel (with the deepspeed extra) and
    :data:`EXTRAS` need, as pip resolves them here under constraints.txt."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "-q"]
        cmd += ["--report", str(report), "-c", str(ROOT / "constraints.txt")]
        cmd += ["--find-links", str(out), f"{project_wheel}[deepspeed]", *EXTRAS]
        subprocess.run(cmd, check=True)
        items = json.loads(report.read_text("utf-8"))["install"]
    return [(i["metadata"]["name"], public_version(i["metadata"]["version"])) for i in items]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "wheels")
    parser.add_argument("--python-version", default="3.12")
    parser.add_argument("--platform", action="append", dest="platforms")
    parser.add_argument("--without", action="append", default=[])
    parser.add_argument("--with-vllm", action="store_true", help="also vLLM, in OUT/vllm")
    parser.add_argument("--print", action="store_true", help="print the plan; download nothing")
    args = parser.parse_args(argv)
    target = target_args(args.python_version, args.platforms or list(PLATFORMS))
    pip = [sys.executable, "-m", "pip"]
    build = [*pip, "wheel", "-q", "--no-deps", "-w", str(args.out), str(ROOT), pinned_deepspeed()]
    # With its dependencies, resolved for the target: vLLM pins the torch it was built against.
    vllm = [*pip, "download", "-q", "-d", str(args.out / "vllm"), *target, vllm_requirement()]
    if args.print:
        download = [*pip, "download", "--no-deps", *target]
        plan = {"out": str(args.out), "build": build, "download": download}
        print(json.dumps({**plan, "vllm": vllm if args.with_vllm else None}, indent=1))
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    subprocess.run(build, check=True)
    project = max(args.out.glob("lean_dojo_v2-*.whl"), key=lambda p: p.stat().st_mtime)
    built = {"lean-dojo-v2", "deepspeed"}
    wanted = [
        f"{name}=={version}"
        for name, version in resolve(args.out, project)
        if name.lower() not in built and not excluded(name, args.without)
    ]
    torch = [w for w in wanted if w.lower().startswith("torch==")]
    rest = [w for w in wanted if w not in torch]
    download = [*pip, "download", "-q", "-d", str(args.out), *target]
    subprocess.run([*download, "--no-deps", *rest], check=True)
    if torch:  # with its dependencies: the CUDA libraries the CPU build resolved here lacks
        subprocess.run([*download, *torch], check=True)
    if args.with_vllm:
        subprocess.run(vllm, check=True)
    for folder in (args.out, args.out / "vllm"):
        files = sorted(folder.glob("*.whl"))
        size = sum(f.stat().st_size for f in files) / 2**20
        if files:
            print(f"{len(files)} wheels in {folder} ({size:.0f} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
