"""Premise embeddings with exact, accessibility-masked top-k search; the dense retriever; export.

:class:`PremiseIndex` holds one L2-normalised float32 row per premise of a
:class:`~lean_dojo_v2.data.Corpus`, in the corpus' file order, plus what it needs to build the
accessibility mask of any ``(file, position)`` from the corpus' own import closure
(:meth:`Corpus.imports_of`): a premise is accessible when its file is transitively imported, or it
starts before the position in the same file: exactly :meth:`Corpus.accessible_premises`.

Search is exact: one matrix product per batch of queries, inaccessible rows set to ``-inf``, then
``numpy.argpartition``. With FAISS installed, ``backend="faiss"`` searches an ``IndexFlatIP``
for a shortlist and falls back to numpy for any query whose shortlist holds fewer than ``k``
accessible premises, so the mask is honoured exactly either way (``benchmarks/retrieval_speed.py``
compares them; numpy is the default).

:func:`export_retriever` writes ``model/`` (the encoder), ``index/`` (corpus, premise rows,
embeddings) and ``retriever.json`` (a manifest); :func:`load_retriever` reads it back as a
:class:`DenseRetriever`.
"""

from __future__ import annotations

import json
import logging
import os
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ..data.corpus import Corpus
from ..data.jsonio import loads
from ..data.model import Pos, Premise, PremiseFile
from ..errors import CorpusError, DataFormatError, ModelError, ModelNotFoundError
from .retrieval import AccessibleAt, PremiseEncoder, Retriever, check_retrieve_args, premise_text

log = logging.getLogger(__name__)

INDEX_FORMAT = "lean-dojo-v2-premise-index"
RETRIEVER_FORMAT = "lean-dojo-v2-retriever"
FORMAT_VERSION = 1
INDEX_META = "index.json"
EMBEDDINGS = "embeddings.npy"
CORPUS = "corpus.jsonl"
MANIFEST = "retriever.json"
BACKENDS = ("numpy", "faiss")
_COL_BITS = 20  # a start position as one integer: line << 20 | column


def _pos_key(pos: Pos) -> int:
    return (int(pos[0]) << _COL_BITS) | int(pos[1])


def _premise_key(p: Premise) -> tuple[str, str, str]:
    """What makes an embedding reusable: same file, same name, same text."""
    return (p.path, p.full_name, premise_text(p))


def _normalise(x: np.ndarray) -> np.ndarray:
    x = np.ascontiguousarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    if np.all(np.abs(norms - 1.0) < 1e-5):
        return x  # already unit rows (an encoder's output, a saved index): keep them bit-exact
    return x / np.maximum(norms, 1e-12)


class AccessibilityMasks:
    """Boolean row masks over a list of premises of ``corpus``: which rows are accessible at a
    ``(file, position)``. The import closure is the corpus' own (:meth:`Corpus.imports_of`); the
    imported part of a file's mask is cached (LRU, ``cache_size`` files). Shared by
    :class:`PremiseIndex` and :class:`~lean_dojo_v2.models.bm25.BM25Retriever`."""

    def __init__(
        self, corpus: Corpus, premises: Sequence[Premise], *, cache_size: int = 256
    ) -> None:
        self.corpus = corpus
        self.size = len(premises)
        paths: dict[str, int] = {}
        file_ids = np.empty(len(premises), dtype=np.int32)
        starts = np.empty(len(premises), dtype=np.int64)
        for i, p in enumerate(premises):
            if p.path not in corpus:
                raise CorpusError(
                    f"premise {p.full_name!r} is defined in {p.path!r}, which is not in the "
                    "corpus; add that file to the corpus"
                )
            file_ids[i] = paths.setdefault(p.path, len(paths))
            starts[i] = _pos_key(p.start)
        self._starts = starts
        order = np.argsort(file_ids, kind="stable")
        bounds = np.searchsorted(file_ids[order], np.arange(len(paths) + 1))
        self._rows_by_file: dict[str, np.ndarray] = {
            path: order[bounds[fid] : bounds[fid + 1]] for path, fid in paths.items()
        }
        self._cache_size = cache_size
        self._imported: OrderedDict[str, np.ndarray] = OrderedDict()

    def _imported_mask(self, file_path: str) -> np.ndarray:
        cached = self._imported.get(file_path)
        if cached is not None:
            self._imported.move_to_end(file_path)
            return cached
        mask = np.zeros(self.size, dtype=bool)
        for dep in self.corpus.imports_of(file_path):
            rows = self._rows_by_file.get(dep)
            if rows is not None:
                mask[rows] = True
        mask.flags.writeable = False
        self._imported[file_path] = mask
        if len(self._imported) > self._cache_size:
            self._imported.popitem(last=False)
        return mask

    def files_mask(self, paths: Iterable[str], *, with_imports: bool = True) -> np.ndarray:
        """bool ``[N]``: the rows defined in ``paths`` and, ``with_imports``, in every file they
        import transitively (one walk of the import graph, however many paths). A path not in
        the corpus raises :class:`CorpusError` naming it."""
        todo = []
        for path in paths:
            if path not in self.corpus:
                raise CorpusError(f"no file {path!r} in the corpus; list files of corpus.jsonl")
            todo.append(path)
        seen = set(todo)
        if with_imports:
            graph = self.corpus.graph
            while todo:
                for dep in graph.successors(todo.pop()):
                    if dep not in seen:
                        seen.add(dep)
                        todo.append(dep)
        mask = np.zeros(self.size, dtype=bool)
        for path in seen:
            rows = self._rows_by_file.get(path)
            if rows is not None:
                mask[rows] = True
        return mask

    def mask(self, file_path: str, pos: Pos | None) -> np.ndarray:
        """bool ``[N]``: rows accessible at ``pos`` in ``file_path`` (a fresh array)."""
        if file_path not in self.corpus:
            raise CorpusError(
                f"no file {file_path!r} in the corpus; the theorem's file must be in "
                "corpus.jsonl (with its imports) to know which premises it may use"
            )
        mask = self._imported_mask(file_path).copy()
        own = self._rows_by_file.get(file_path)
        if own is not None and len(own):
            if pos is None:
                mask[own] = True
            else:
                mask[own[self._starts[own] < _pos_key(Pos.parse(pos))]] = True
        return mask


def top_k_rows(scores: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
    """Per row of ``scores`` ``[Q, N]``, the ``k`` best ``(column, score)`` pairs, best first,
    leaving out ``-inf`` (masked) entries. Uses ``torch.topk`` (several times faster than
    ``numpy.argpartition`` on 100k columns), numpy when torch is missing."""
    k = min(k, scores.shape[1])
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency
        top, top_scores = _top_k_numpy(scores, k)
    else:
        values, indices = torch.from_numpy(np.ascontiguousarray(scores)).topk(k, dim=1)
        top, top_scores = indices.numpy(), values.numpy()
    return [
        [(r, v) for r, v in zip(rows, vals, strict=False) if v != -np.inf]
        for rows, vals in zip(top.tolist(), top_scores.tolist(), strict=False)
    ]


class _FlatIndex(Protocol):
    """What search asks of a FAISS ``IndexFlatIP`` (faiss ships no types)."""

    def add(self, x: np.ndarray) -> None: ...

    def search(self, x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]: ...


def _top_k_numpy(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover
    """:func:`top_k_rows`' columns and scores, best first, with numpy only."""
    n = scores.shape[1]
    top = (
        np.argpartition(-scores, k - 1, axis=1)[:, :k]
        if k < n
        else (np.broadcast_to(np.arange(n), (scores.shape[0], n)))
    )
    top_scores = np.take_along_axis(scores, top, axis=1)
    order = np.argsort(-top_scores, axis=1, kind="stable")
    return np.take_along_axis(top, order, axis=1), np.take_along_axis(top_scores, order, axis=1)


class PremiseIndex:
    """Embeddings of a corpus' premises, accessibility masks and exact top-k search.

    ``premises[i]`` has embedding ``embeddings[i]``; ``corpus`` is the corpus they come from (its
    import DAG decides accessibility).
    """

    def __init__(
        self,
        corpus: Corpus,
        premises: Sequence[Premise],
        embeddings: np.ndarray,
        *,
        encoder_name: str | None = None,
        backend: str = "numpy",
        mask_cache_size: int = 256,
    ) -> None:
        embeddings = np.asarray(embeddings)
        if embeddings.ndim != 2 or embeddings.shape[0] != len(premises):
            raise ModelError(
                f"embeddings have shape {embeddings.shape}, expected ({len(premises)}, d): one "
                "row per premise"
            )
        if backend not in BACKENDS:
            raise ModelError(f"unknown index backend {backend!r}; valid: {', '.join(BACKENDS)}")
        self.corpus = corpus
        self.premises: list[Premise] = list(premises)
        self.embeddings: np.ndarray = _normalise(embeddings)
        self.encoder_name = encoder_name
        self.backend = backend
        self._mask_cache_size = mask_cache_size
        self._rebuild()

    # ------------------------------------------------------------------ internals

    def _rebuild(self) -> None:
        self._access = AccessibilityMasks(
            self.corpus, self.premises, cache_size=self._mask_cache_size
        )
        self._keys = {_premise_key(p): i for i, p in enumerate(self.premises)}
        self._by_name: dict[str, list[int]] | None = None
        self._faiss: _FlatIndex | None = None

    def __len__(self) -> int:
        return len(self.premises)

    @property
    def dim(self) -> int:
        return int(self.embeddings.shape[1])

    # ------------------------------------------------------------------ building

    @classmethod
    def build(
        cls,
        corpus: Corpus,
        encoder: PremiseEncoder,
        *,
        batch_size: int = 64,
        show_progress: bool = True,
    ) -> PremiseIndex:
        """Encode every premise of ``corpus`` (:func:`premise_text`) into a new index."""
        premises = [p for f in corpus.files for p in f.premises]
        emb = encoder.encode(
            [premise_text(p) for p in premises], batch_size=batch_size, show_progress=show_progress
        )
        if not premises:
            emb = np.zeros((0, encoder.dim), dtype=np.float32)
        return cls(corpus, premises, emb, encoder_name=str(encoder.name_or_path))

    def add_corpus(self, corpus: Corpus, encoder: PremiseEncoder, *, batch_size: int = 64) -> int:
        """Merge ``corpus`` (e.g. a new repository with its dependencies) into the index, encoding
        only premises not indexed yet; returns how many were encoded.

        A file present in both is taken from ``corpus`` (the newer trace): its premises keep their
        embeddings when file, name and text are unchanged; premises gone from it leave the index.
        """
        if encoder.dim != self.dim:
            raise ModelError(
                f"the encoder gives {encoder.dim}-dimensional embeddings, the index holds "
                f"{self.dim}-dimensional ones; use the encoder the index was built with"
            )
        new_paths = {f.path for f in corpus.files}
        files: list[PremiseFile] = [f for f in self.corpus.files if f.path not in new_paths]
        files += corpus.files
        merged = Corpus(files)
        premises = [p for f in merged.files for p in f.premises]
        rows = np.full(len(premises), -1, dtype=np.int64)
        todo: list[int] = []
        for i, p in enumerate(premises):
            j = self._keys.get(_premise_key(p))
            if j is None:
                todo.append(i)
            else:
                rows[i] = j
        emb = np.empty((len(premises), self.dim), dtype=np.float32)
        known = rows >= 0
        emb[known] = self.embeddings[rows[known]]
        if todo:
            emb[todo] = encoder.encode(
                [premise_text(premises[i]) for i in todo], batch_size=batch_size
            )
        self.corpus = merged
        self.premises = premises
        self.embeddings = _normalise(emb)
        self._rebuild()
        log.info("index: %d premises, %d newly encoded", len(premises), len(todo))
        return len(todo)

    # ------------------------------------------------------------------ masks and search

    def mask(self, file_path: str, pos: Pos | None) -> np.ndarray:
        """bool ``[N]``: the premises accessible at ``pos`` in ``file_path`` (those of transitively
        imported files, and those of ``file_path`` starting before ``pos``; all of the file's when
        ``pos`` is None). A file not in the corpus raises :class:`CorpusError` naming it."""
        return self._access.mask(file_path, pos)

    def files_mask(self, paths: Iterable[str], *, with_imports: bool = True) -> np.ndarray:
        """bool ``[N]``: the premises of the files ``paths`` and, ``with_imports``, of every
        file they import transitively. A file not in the corpus raises :class:`CorpusError`."""
        return self._access.files_mask(paths, with_imports=with_imports)

    def rows_named(self, full_name: str) -> list[int]:
        """The rows of the premises named ``full_name`` (usually one; none when unknown)."""
        if self._by_name is None:
            by_name: dict[str, list[int]] = {}
            for i, p in enumerate(self.premises):
                by_name.setdefault(p.full_name, []).append(i)
            self._by_name = by_name
        return self._by_name.get(full_name, [])

    def search(
        self,
        queries: np.ndarray,
        k: int,
        masks: Sequence[np.ndarray | None] | None = None,
    ) -> list[list[tuple[int, float]]]:
        """For each query row, the ``k`` best ``(row, inner product)`` pairs (the cosine for
        normalised queries, as :meth:`PremiseEncoder.encode` gives) among the rows its mask
        allows (all when the mask is None), best first. Fewer allowed rows than ``k`` → all of
        them; none → ``[]``."""
        queries = np.asarray(queries, dtype=np.float32)
        if queries.ndim == 1:
            queries = queries[None, :]
        if queries.ndim != 2 or queries.shape[1] != self.dim:
            raise ModelError(
                f"queries have shape {queries.shape}; expected (Q, {self.dim}) for this index"
            )
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ModelError(f"k must be a positive integer, got {k!r}")
        if masks is not None and len(masks) != len(queries):
            raise ModelError(f"{len(masks)} masks for {len(queries)} queries; pass one per query")
        n = len(self.premises)
        if n == 0 or len(queries) == 0:
            return [[] for _ in range(len(queries))]
        if self.backend == "faiss":
            return self._search_faiss(queries, k, masks)
        return self._search_numpy(queries, k, masks, range(len(queries)))

    def _search_numpy(
        self,
        queries: np.ndarray,
        k: int,
        masks: Sequence[np.ndarray | None] | None,
        which: Sequence[int],
    ) -> list[list[tuple[int, float]]]:
        scores = queries[list(which)] @ self.embeddings.T
        if masks is not None:
            n = len(self.premises)
            for _r, q in enumerate(which):
                m = masks[q]
                if m is not None and (m.shape != (n,) or m.dtype != bool):
                    raise ModelError(
                        f"mask {q} has shape {m.shape} and dtype {m.dtype}; expected bool "
                        f"[{n}] (PremiseIndex.mask)"
                    )
            blocked = np.stack(
                [np.zeros(n, bool) if m is None else ~m for m in (masks[q] for q in which)]
            )
            np.putmask(scores, blocked, -np.inf)
        return top_k_rows(scores, k)

    def _faiss_index(self) -> _FlatIndex:
        if self._faiss is None:
            try:
                import faiss
            except ImportError as exc:
                raise ModelError(
                    "backend 'faiss' needs faiss (pip install faiss-cpu); or use backend='numpy'"
                ) from exc
            index = faiss.IndexFlatIP(self.dim)
            index.add(self.embeddings)
            self._faiss = index
        return self._faiss

    def _search_faiss(
        self, queries: np.ndarray, k: int, masks: Sequence[np.ndarray | None] | None
    ) -> list[list[tuple[int, float]]]:
        n = len(self.premises)
        shortlist = min(n, max(4 * k, 64))
        scores, ids = self._faiss_index().search(np.ascontiguousarray(queries), shortlist)
        out: list[list[tuple[int, float]] | None] = []
        redo: list[int] = []
        for q in range(len(queries)):
            m = None if masks is None else masks[q]
            hits: list[tuple[int, float]] = []
            for r, s in zip(ids[q].tolist(), scores[q].tolist(), strict=False):
                if r >= 0 and (m is None or m[r]):
                    hits.append((r, float(s)))
                    if len(hits) == k:
                        break
            # The shortlist is the global top; its accessible rows are the accessible top,
            # unless it ran out before k of them: then search that query exactly.
            if len(hits) == k or shortlist == n:
                out.append(hits)
            else:
                out.append(None)
                redo.append(q)
        if redo:
            exact = self._search_numpy(queries, k, masks, redo)
            for q, hits in zip(redo, exact, strict=False):
                out[q] = hits
        return [h if h is not None else [] for h in out]

    # ------------------------------------------------------------------ persistence

    def save(self, path: str | os.PathLike[str], *, force: bool = False) -> Path:
        """Write ``embeddings.npy``, ``corpus.jsonl`` and ``index.json`` (the premise of each
        row) into the folder ``path``, atomically; replaces only a folder this library wrote,
        unless ``force``."""
        from ..data.jsonio import write_jsonl
        from ..data.output_dir import staged_output_dir

        dst = Path(path)
        with staged_output_dir(dst, force=force) as stage:
            np.save(stage / EMBEDDINGS, self.embeddings)
            write_jsonl(stage / CORPUS, self.corpus.files, lambda f: f.to_dict())
            meta = {
                "format": INDEX_FORMAT,
                "version": FORMAT_VERSION,
                "encoder": self.encoder_name,
                "dim": self.dim,
                "num_premises": len(self.premises),
                "rows": [[p.path, p.full_name, p.start.to_list()] for p in self.premises],
            }
            (stage / INDEX_META).write_text(json.dumps(meta) + "\n", "utf-8")
        return dst

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, backend: str = "numpy") -> PremiseIndex:
        """Read a folder written by :meth:`save`."""
        folder = Path(path)
        for name in (INDEX_META, EMBEDDINGS, CORPUS):
            if not (folder / name).is_file():
                raise ModelNotFoundError(
                    f"{folder} is not a premise index: {name} is missing; build one with "
                    "PremiseIndex.build(...).save(path)"
                )
        meta = _read_format_json(folder / INDEX_META, INDEX_FORMAT, "file")
        if meta.get("version") != FORMAT_VERSION:
            raise DataFormatError(
                f"index format version {meta.get('version')!r}; this library reads version "
                f"{FORMAT_VERSION}: rebuild the index",
                file=folder / INDEX_META,
            )
        corpus = Corpus.from_jsonl(folder / CORPUS)
        embeddings = np.load(folder / EMBEDDINGS, allow_pickle=False)
        rows = meta.get("rows", [])
        if not isinstance(rows, list) or embeddings.ndim != 2 or len(rows) != len(embeddings):
            raise DataFormatError(
                f"{len(rows) if isinstance(rows, list) else 'no list of'} rows for "
                f"{embeddings.shape[0] if embeddings.ndim else 0} embeddings in {EMBEDDINGS}: "
                "the folder is incomplete or mixed; rebuild the index",
                file=folder / INDEX_META,
                field="rows",
            )
        # A row names its premise by file and full name, with the start position as a check:
        # several premises can share a start (the lemmas `@[simps]` generates from one
        # declaration), so the position alone does not pick one.
        named: dict[tuple[str, str], list[Premise]] = {}
        for p in corpus.premises:
            named.setdefault((p.path, p.full_name), []).append(p)
        premises: list[Premise] = []
        for i, row in enumerate(rows):
            try:
                path_, name, start = row
                pos = Pos.parse(start)
                found = named.get((path_, name), [])
            except (TypeError, ValueError) as exc:
                raise DataFormatError(
                    f"bad row ({exc}); expected [file, full name, [line, column]]",
                    file=folder / INDEX_META,
                    field=f"rows[{i}]",
                ) from None
            premise = next((c for c in found if c.start == pos), None)
            if premise is None:
                where = (
                    f"{CORPUS} has it at {', '.join(str(c.start.to_list()) for c in found)}"
                    if found
                    else f"it is not in {CORPUS}"
                )
                raise DataFormatError(
                    f"premise {name!r} of {path_} at {pos.to_list()}: {where}; the corpus is "
                    "not the one the embeddings were computed from: rebuild the index",
                    file=folder / INDEX_META,
                    field=f"rows[{i}]",
                )
            premises.append(premise)
        return cls(corpus, premises, embeddings, encoder_name=meta.get("encoder"), backend=backend)


class DenseRetriever(Retriever):
    """A bi-encoder retriever: states encoded by ``encoder``, premises searched in ``index``."""

    def __init__(self, encoder: PremiseEncoder, index: PremiseIndex) -> None:
        if encoder.dim != index.dim:
            raise ModelError(
                f"encoder dimension {encoder.dim} != index dimension {index.dim}; rebuild the "
                "index with this encoder"
            )
        self.encoder = encoder
        self.index = index
        self.batch_size = 64

    @property
    def corpus(self) -> Corpus:
        return self.index.corpus

    def retrieve(
        self,
        states: list[str],
        k: int,
        accessible: Sequence[AccessibleAt | None] | None = None,
    ) -> list[list[tuple[Premise, float]]]:
        check_retrieve_args(states, k, accessible)
        masks = None
        if accessible is not None:
            # Check every file first: a bad file fails before any encoding.
            masks = [None if a is None else self.index.mask(a[0], a[1]) for a in accessible]
        if not states:
            return []
        queries = self.encoder.encode(list(states), batch_size=self.batch_size)
        hits = self.index.search(queries, k, masks)
        premises = self.index.premises
        return [[(premises[r], s) for r, s in row] for row in hits]


def export_retriever(
    path: str | os.PathLike[str],
    encoder: PremiseEncoder,
    index: PremiseIndex,
    *,
    force: bool = False,
) -> Path:
    """Write a retriever folder: ``model/`` (the encoder), ``index/`` (corpus, premise rows and
    their embeddings) and ``retriever.json``; what :func:`load_retriever` (and the API's
    ``/retrieve``) loads. Atomic; replaces only a folder this library wrote, unless ``force``."""
    from ..data.output_dir import staged_output_dir

    if encoder.dim != index.dim:
        raise ModelError(f"encoder dimension {encoder.dim} != index dimension {index.dim}")
    dst = Path(path)
    with staged_output_dir(dst, force=force) as stage:
        encoder.save(stage / "model")
        index.save(stage / "index")
        manifest = {
            "format": RETRIEVER_FORMAT,
            "version": FORMAT_VERSION,
            "model": "model",
            "index": "index",
            "encoder_source": str(encoder.name_or_path),
            "pooling": encoder.pooling,
            "max_length": encoder.max_length,
            "dim": index.dim,
            "num_premises": len(index),
            "num_files": len(index.corpus.files),
        }
        (stage / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", "utf-8")
    return dst


def is_retriever_dir(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a folder written by :func:`export_retriever`."""
    return (Path(path) / MANIFEST).is_file()


def load_retriever(
    path: str | os.PathLike[str], *, device: str = "auto", backend: str = "numpy"
) -> DenseRetriever:
    """Load a folder written by :func:`export_retriever`."""
    from .retrieval import load_encoder

    folder = Path(path)
    if not is_retriever_dir(folder):
        raise ModelNotFoundError(
            f"{folder} is not an exported retriever ({MANIFEST} is missing); write one with "
            "export_retriever(path, encoder, index)"
        )
    manifest = _read_format_json(folder / MANIFEST, RETRIEVER_FORMAT, "manifest")
    encoder = load_encoder(
        folder / str(manifest.get("model", "model")),
        device=device,
        max_length=int(manifest.get("max_length", 256)),
    )
    index = PremiseIndex.load(folder / str(manifest.get("index", "index")), backend=backend)
    return DenseRetriever(encoder, index)


def _read_format_json(path: Path, fmt: str, what: str) -> dict[str, Any]:
    """The JSON object in ``path`` whose ``"format"`` is ``fmt`` (a typed error naming the file
    otherwise; ``what`` says what the file is)."""
    try:
        data = loads(path.read_text("utf-8"))
    except ValueError as exc:
        raise DataFormatError(f"not valid JSON ({exc})", file=path) from None
    if not isinstance(data, dict) or data.get("format") != fmt:
        raise DataFormatError(f"not a {fmt} {what}", file=path)
    return data
