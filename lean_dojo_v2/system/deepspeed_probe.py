"""DeepSpeed's accelerator probe, told the answer where there is nothing to probe.

transformers and accelerate import DeepSpeed whenever it is installed (``save_pretrained``
unwraps the model through it), and DeepSpeed, finding no accelerator, prints "Setting accelerator
to CPU. If you have GPU or other accelerator, we were unable to detect it." on stdout, where our
commands print their results. On a machine torch sees no accelerator on, CPU is DeepSpeed's only
choice: saying so up front (``DS_ACCELERATOR=cpu``) changes nothing but the line. A value the
user set is kept; a machine with CUDA, XPU, MPS or any other accelerator torch knows of is left
to DeepSpeed's own probe.
"""

from __future__ import annotations

import os

ENV = "DS_ACCELERATOR"


def settle_deepspeed_accelerator() -> None:
    """Set ``DS_ACCELERATOR=cpu`` when torch sees no accelerator and the variable is unset.
    Imports torch: call it where a run is about to use torch anyway."""
    if ENV in os.environ:
        return
    import torch

    if not torch.accelerator.is_available():
        os.environ[ENV] = "cpu"
