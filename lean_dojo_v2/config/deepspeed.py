"""Layer 0 (config): a DeepSpeed JSON config (``deepspeed:`` of ``train sft`` / ``train grpo``)
read and checked before a run writes anything. DeepSpeed itself reads the file only once the
model is loaded and the run directory written, and a bad stage or a missing launcher then ends in
a traceback; here each is one :class:`~lean_dojo_v2.errors.ConfigValueError` naming the file
(docs/scaling.md, "DeepSpeed ZeRO-2/3"). No DeepSpeed import: only the package's presence.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from ..errors import ConfigValueError

ZERO_STAGES = (0, 1, 2, 3)
# What a launcher sets in each process: torchrun and `accelerate launch` (RANK), mpirun
# (OMPI_COMM_WORLD_RANK, PMI_RANK). DeepSpeed's own launcher sets RANK too.
LAUNCHER_VARIABLES = ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK")
_LAUNCHERS = (
    "accelerate launch --num_processes N -m lean_dojo_v2 ..., torchrun --nproc_per_node N "
    "-m lean_dojo_v2 ... or deepspeed --no_local_rank --num_gpus N --module lean_dojo_v2 ... "
    "(one process: torchrun --nproc_per_node 1 -m lean_dojo_v2 ...)"
)


def read_deepspeed_config(path: str | Path) -> dict[str, object]:
    """The JSON object at ``path``, checked as far as it can be without DeepSpeed: it exists,
    parses, is an object, and its ``zero_optimization.stage`` (0 when absent) is one of
    :data:`ZERO_STAGES`. ``"auto"`` values stay: transformers fills them from the run's
    arguments."""
    where = f"deepspeed config {path}"
    try:
        from ..data.jsonio import loads  # the one JSON reader: too deep is a ValueError too

        data = loads(Path(path).read_text("utf-8"))
    except FileNotFoundError:
        raise ConfigValueError(
            f"{where} does not exist; pass the path of a DeepSpeed JSON config "
            "(configs/deepspeed/zero2.json, zero3.json)"
        ) from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        text = " ".join(str(exc).split())
        raise ConfigValueError(f"{where} is not valid JSON text ({text}): fix the file") from None
    if not isinstance(data, dict):
        raise ConfigValueError(f"{where} is a JSON {type(data).__name__}, not an object of keys")
    zero = data.get("zero_optimization", {})
    if not isinstance(zero, dict):
        raise ConfigValueError(f"{where}: zero_optimization is {zero!r}, not an object of keys")
    stage = zero.get("stage", 0)
    if type(stage) is not int or stage not in ZERO_STAGES:
        raise ConfigValueError(
            f"{where}: zero_optimization.stage is {stage!r}; DeepSpeed's ZeRO stages are "
            "0, 1, 2 and 3 (an integer)"
        )
    return data


def check_deepspeed_run(path: str | Path) -> dict[str, object]:
    """:func:`read_deepspeed_config`, and what this process needs to run it: the deepspeed
    package, and a launcher's rank in the environment (without one DeepSpeed looks for MPI
    through mpi4py, and fails with an ImportError after the run directory is written)."""
    data = read_deepspeed_config(path)
    if importlib.util.find_spec("deepspeed") is None:
        raise ConfigValueError(
            f"deepspeed is set ({path}) but the deepspeed package is not installed: "
            "pip install 'lean-dojo-v2[deepspeed]'"
        )
    has_launcher = any(os.environ.get(name) for name in LAUNCHER_VARIABLES)
    if not has_launcher and importlib.util.find_spec("mpi4py") is None:
        raise ConfigValueError(
            f"deepspeed is set ({path}) but no launcher started this process: run it under "
            + _LAUNCHERS
        )
    return data


__all__ = ["LAUNCHER_VARIABLES", "ZERO_STAGES", "check_deepspeed_run", "read_deepspeed_config"]
