"""Layer 3 (trainer): what a retriever run needs to train in several processes (Lightning DDP).

- :mod:`.in_batch`: in-batch negatives of every process (:class:`CrossRankBatch`), validation
  scores averaged with each query counted once (:func:`mean_scores`), parameters no embedding
  reaches frozen (:func:`freeze_unreached`);
- :mod:`.shards`: each process's share of the data (:class:`ShardSampler`, :class:`ShardData`).

Importing this package loads nothing: each submodule is imported on first attribute access.
"""

from __future__ import annotations

from ..._lazy import reexport

__getattr__, __dir__ = reexport(globals(), {}, submodules=("in_batch", "shards"))
