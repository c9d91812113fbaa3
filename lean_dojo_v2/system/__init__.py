"""Layer 0: the operating system as the rest of the library sees it.

- :mod:`.commands`: start an external program, wait with a time limit, and turn every failure
  (missing program, non-zero exit, timeout, undecodable output) into a typed error;
- :mod:`.toolchain`: the ``lean-toolchain`` file, Lean version names, and finding ``elan``,
  ``lean`` and ``lake`` (elan-aware);
- :mod:`.processes`: the memory of a process tree, killing a process tree.
- :mod:`.ranks`: this process's rank in a launched run of several (``accelerate launch``,
  ``torchrun``), and what rank 0 alone does and shares with the others.
- :mod:`.deepspeed_probe`: DeepSpeed told there is no accelerator where torch sees none (its probe
  would print a warning on stdout).

Tracing (:mod:`lean_dojo_v2.lean_dojo`) and the Lean boundary (:mod:`lean_dojo_v2.interaction`)
both use these, so neither imports the other. Nothing here runs at import.
"""
