"""Complete the bundled sample's ``corpus.jsonl`` with the imports its own records imply.

Run from the repository root:  python scripts/sample_corpus_imports.py [--sample DIR]

The sample's real import graph is not known (the benchmark's corpus was not available), but each
premise use is a fact about it: a theorem in file T whose proof uses a premise defined in file
P != T can only do so because T imports P (directly or transitively). This script

- adds an entry (no premises) for every file that holds theorems but is missing from the corpus,
- sets each file's imports to the files whose premises its theorems use (T -> P edges, as they are:
  no edge is invented, none is dropped), and checks that these edges form a DAG,
- checks that every recorded premise is then accessible where it is used (imported, or defined
  earlier in the theorem's own file), and
- rewrites ``corpus.jsonl`` in dependency order (every file after its imports).

It reads only the sample itself and is idempotent; ``scripts/build_sample_data.py`` calls it.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from pathlib import Path

from lean_dojo_v2.data import Corpus, DatasetDir, PremiseFile, Theorem
from lean_dojo_v2.data.dataset import CORPUS_FILE
from lean_dojo_v2.data.jsonio import write_jsonl
from lean_dojo_v2.data.sample import sample_dataset_path


def implied_imports(theorems: Iterable[Theorem]) -> dict[str, set[str]]:
    """File -> files it must import, from the premises its theorems' tactics use."""
    edges: dict[str, set[str]] = {}
    for thm in theorems:
        uses = edges.setdefault(thm.file_path, set())
        uses.update(a.def_path for a in thm.annotations if a.def_path != thm.file_path)
    return edges


def complete_corpus(files: Iterable[PremiseFile], theorems: list[Theorem]) -> list[PremiseFile]:
    """The corpus with every theorem file present and the implied imports; dependency order.

    Raises :class:`~lean_dojo_v2.errors.CorpusError` if the implied imports have a cycle, and
    ``ValueError`` if a recorded premise would still not be accessible where it is used.
    """
    by_path = {f.path: f for f in files}
    edges = implied_imports(theorems)
    for path in sorted(set(edges).union(*edges.values()) - set(by_path)):
        by_path[path] = PremiseFile(path, [], [])
    completed = [
        PremiseFile(f.path, sorted(set(f.imports) | edges.get(f.path, set())), f.premises)
        for f in by_path.values()
    ]
    corpus = Corpus(completed)  # checks that the imports form a DAG
    for thm in theorems:
        usable = {
            (p.path, p.full_name) for p in corpus.accessible_premises(thm.file_path, thm.start)
        }
        for a in thm.annotations:
            if (a.def_path, a.full_name) not in usable:
                raise ValueError(f"{a.full_name} is not accessible in {thm.full_name}")
    return corpus.files


def main(sample: Path) -> None:
    d = DatasetDir(sample, partial=True)
    theorems = list(d.all_theorems("random"))
    files = complete_corpus(d.corpus_files(), theorems)
    write_jsonl(sample / CORPUS_FILE, files, PremiseFile.to_dict)
    n_edges = sum(len(f.imports) for f in files)
    print(f"{sample / CORPUS_FILE}: {len(files)} files, {n_edges} imports")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=Path, default=sample_dataset_path())
    main(parser.parse_args().sample)
