"""lean-dojo-v2: trace Lean 4 repositories, store them, train provers, search for proofs."""

__version__ = "0.1.0"
