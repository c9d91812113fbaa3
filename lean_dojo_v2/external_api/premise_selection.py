"""Layer 4 (external_api): lean-premise-server's protocol on an exported retriever.

What Lean's premise-selection client (``Lean.LibrarySuggestions.Cloud``, the ``Cloud.lean`` of
hanwenzhu/premise-selection) does against ``premiseSelection.apiBaseUrl``:

1. ``GET /max-new-premises`` → a JSON natural number (the most ``new_premises`` it may send);
2. ``GET /indexed-premises`` → a JSON array of premise names; the position of a name is the
   integer the client sends for that premise;
3. ``GET /indexed-modules`` → a JSON array of module names, likewise;
4. ``POST /retrieve`` ``{"state", "local_premises": [Nat], "imported_modules": [Nat],
   "new_premises": [{"name", "decl"}], "k"}`` → ``[{"name": ..., "score": ...}]``, best first.

:func:`rank_premises` answers step 4 by lean-premise-server's rules: names or integers in both
lists; with either list given (even empty) only what they admit ranks, else the whole index; a
new premise named like an indexed one replaces it. The route (``server.py``) caps ``k`` and
truncates ``new_premises`` before this runs; this runs in the retriever's model thread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..data.lean_lexer import iter_tokens
from ..data.model import Pos
from ..errors import CorpusError
from .errors import BadAPIRequestError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from .schemas import RetrieveRequest
    from .served import RetrieverModel


def new_premise_text(decl: str) -> str:
    """What the encoder sees of a new premise's ``decl``: the declaration without the doc comment
    before it, as the index's premises were encoded (a traced corpus's ``code`` holds none; a
    fifth of the declarations Lean prints for the client start with one)."""
    first = next(iter_tokens(decl), None)
    if first is not None and first.kind == "doc":
        return decl[first.end :].strip()
    return decl.strip()


def module_file(model: RetrieverModel, ref: str | int) -> str | None:
    """The corpus file of an ``imported_modules`` entry: a position in ``GET /indexed-modules``,
    a module name (``Mathlib.Data.Nat.Basic``, or lean-premise-server's ``Mathlib/Data/Nat/
    Basic.lean`` spelling) or a corpus path; None when the index does not hold it."""
    modules, names = model.modules, model.module_names
    if isinstance(ref, int):
        return modules[names[ref]] if 0 <= ref < len(names) else None
    path = modules.get(ref) or modules.get(ref.removesuffix(".lean").replace("/", "."))
    if path is None and ref in model.index.corpus:
        path = ref
    return path


def premise_rows(model: RetrieverModel, ref: str | int) -> list[int]:
    """The index rows of a ``local_premises`` entry: a position in ``GET /indexed-premises``
    or a premise name; none when the index does not hold it."""
    index = model.index
    if isinstance(ref, int):
        return [ref] if 0 <= ref < len(index) else []
    return index.rows_named(ref)


def admitted_rows(model: RetrieverModel, req: RetrieveRequest) -> np.ndarray | None:
    """bool ``[N]``: the indexed premises that may rank for ``req``; None: all of them."""
    import numpy as np

    index = model.index
    mask = None
    if (
        req.file_path is not None
        or req.imported_modules is not None
        or req.local_premises is not None
    ):
        # Any of them given, even as [], restricts: an empty local_premises with no modules
        # ranks only the new premises, as lean-premise-server does.
        mask = np.zeros(len(index), dtype=bool)
        if req.file_path is not None:
            pos = Pos(req.position.line, req.position.column) if req.position else None
            try:
                mask |= index.mask(req.file_path, pos)
            except CorpusError as exc:
                raise BadAPIRequestError(
                    f"file_path {req.file_path!r} is not in the retriever's corpus ({exc})"
                ) from None
        files = {f for m in req.imported_modules or () if (f := module_file(model, m)) is not None}
        if files:
            mask |= index.files_mask(files)
        for ref in req.local_premises or ():
            mask[premise_rows(model, ref)] = True
    if req.new_premises:
        # A new premise replaces the indexed one of its name (its statement may have changed).
        shadowed = [r for p in req.new_premises for r in index.rows_named(p.name)]
        if shadowed:
            if mask is None:
                mask = np.ones(len(index), dtype=bool)
            mask[shadowed] = False
    return mask


def rank_premises(model: RetrieverModel, req: RetrieveRequest) -> list[dict[str, Any]]:
    """The ``req.k`` best premises for ``req.state`` among the admitted indexed premises and
    the new ones, best first: ``[{"name", "score"}]`` (``score`` the cosine similarity)."""
    index = model.index
    mask = admitted_rows(model, req)
    query = model.encode([req.state])
    found: list[tuple[float, str]] = []
    if mask is None or mask.any():
        hits = index.search(query, req.k, None if mask is None else [mask])[0]
        found = [(float(s), index.premises[row].full_name) for row, s in hits]
    if req.new_premises:
        texts = [new_premise_text(p.decl) or p.name for p in req.new_premises]
        scores = model.encode_premises(texts) @ query[0]
        found += [(float(s), p.name) for s, p in zip(scores, req.new_premises, strict=True)]
    found.sort(key=lambda x: -x[0])  # stable: on a tie an indexed premise comes first
    return [{"name": n, "score": s} for s, n in found[: req.k]]
