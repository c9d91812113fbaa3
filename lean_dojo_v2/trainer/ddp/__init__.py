"""Layer 3 (trainer): what a retriever run needs to train in several processes (Lightning DDP).

- :mod:`.in_batch`: in-batch negatives of every process (:class:`CrossRankBatch`), validation
  scores merged so that each query counts once (:func:`gather_scores`);
- :mod:`.shards`: each process's share of the data (:class:`ShardSampler`, :class:`ShardData`).

Importing this package loads nothing: each submodule is imported on first attribute access.
"""

from __future__ import annotations

from ..._lazy import reexport

__getattr__, __dir__ = reexport(globals(), {}, submodules=("in_batch", "shards"))
