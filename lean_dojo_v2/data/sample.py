"""The real traced sample that ships with the package (quickstart, examples, docs).

It is built from LeanDojo Benchmark 4 records by ``scripts/build_sample_data.py``; its provenance
and licence are in ``PROVENANCE.md`` beside the data. Its corpus has no premise code (the records
carry none), so a loader that drops premises without code, as ReProver's does, gets no retrieval
training example from it (``lean-dojo-v2 data stats`` says so); lean-dojo-v2's own retrieval
training uses premise names there.
"""

from __future__ import annotations

from pathlib import Path

SAMPLE_NAME = "leandojo_b4_sample"


def sample_dataset_path() -> Path:
    """Directory of the bundled LeanDojo-layout sample (read-only package data)."""
    return Path(__file__).resolve().parent.parent / "resources" / SAMPLE_NAME
