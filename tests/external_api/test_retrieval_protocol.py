"""Lean's premise-selection client against ``serve``: the client's calls in its order, with its
JSON (``Lean.LibrarySuggestions.Cloud``: ``GET /max-new-premises``, ``GET /indexed-premises``,
``GET /indexed-modules``, then ``POST /retrieve`` with integer indexes), each reply parsed as the
Lean side parses it (``fromJson?`` of the declared types, mirrored below), and
lean-premise-server's ranking rules, one assertion each.

The retriever is an export (tiny random encoder) over the premises of real LeanDojo Benchmark 4
records, plus the two ``@[simps]`` lemmas B4's corpus lists at one position
(``CategoryTheory.Iso.trans_hom`` / ``trans_inv`` at Mathlib/CategoryTheory/Iso.lean [149, 10]).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from .conftest import live_server, make_app

MAX_K = 100
MAX_NEW = 4
PRELUDE = ".lake/packages/lean4/src/lean/Init/Prelude.lean"
CORE = ".lake/packages/lean4/src/lean/Init/Core.lean"


# ----------------------------------------------------------------------------- Lean's fromJson?


class LeanParseError(AssertionError):
    """What ``Json.parse output >>= fromJson?`` fails with: the client's "Could not parse
    server output"."""


def lean_nat(text: str) -> int:
    """``FromJson Nat``: a JSON number with no fraction or exponent, not negative."""
    value = json.loads(text)
    if type(value) is not int or value < 0 or not text.strip().isdigit():
        raise LeanParseError(f"expected a natural number, got {text!r}")
    return value


def lean_array_string(text: str) -> list[str]:
    """``FromJson (Array String)``."""
    value = json.loads(text)
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise LeanParseError(f"expected an array of strings, got {text[:200]!r}")
    return value


def lean_name(value: Any) -> str:
    """``FromJson Name``: a string that is a name literal (``[anonymous]`` aside): dot-separated
    non-empty components, a component in «» taken whole."""
    if not isinstance(value, str):
        raise LeanParseError(f"expected a Name, got {value!r}")
    if value == "[anonymous]":
        return value
    components, current, escaped = [], "", False
    for ch in value:
        if escaped:
            current += ch
            escaped = ch != "»"
        elif ch == "«":
            current, escaped = current + ch, True
        elif ch == ".":
            components.append(current)
            current = ""
        else:
            current += ch
    components.append(current)
    if escaped or not all(components):
        raise LeanParseError(f"expected a Name, got {value!r}")
    return value


def lean_float(value: Any) -> float:
    """``FromJson Float``: a JSON number (or Lean's spellings of the non-finite ones)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        if value in ("NaN", "Infinity", "-Infinity"):
            return float(value.lower().replace("infinity", "inf"))
        raise LeanParseError(f"expected a Float, got {value!r}")
    return float(value)


def lean_suggestions(text: str) -> list[tuple[str, float]]:
    """``FromJson (Array Suggestion)``: objects with ``name : Name`` and ``score : Float``
    (``getObjValAs?``: other keys are ignored)."""
    value = json.loads(text)
    if not isinstance(value, list):
        raise LeanParseError(f"expected an array, got {text[:200]!r}")
    out = []
    for item in value:
        if not isinstance(item, dict) or "name" not in item or "score" not in item:
            raise LeanParseError(f"expected {{name, score}}, got {item!r}")
        out.append((lean_name(item["name"]), lean_float(item["score"])))
    return out


def test_the_checkers_refuse_what_lean_refuses() -> None:
    for bad in ("-1", "1.5", "5.0", '"5"', "null"):
        with pytest.raises(LeanParseError):
            lean_nat(bad)
    with pytest.raises(LeanParseError):
        lean_array_string('["a", 1]')
    for bad in ('[{"name": "", "score": 1}]', '[{"name": "a..b", "score": 1}]',
                '[{"name": "a", "score": null}]', '[{"name": "a"}]', '{"name": "a"}'):  # fmt: skip
        with pytest.raises(LeanParseError):
            lean_suggestions(bad)
    assert lean_suggestions('[{"name": "a.«b.c»", "score": 0.5, "x": 1}]') == [("a.«b.c»", 0.5)]


# ----------------------------------------------------------------------------- the server


@pytest.fixture(scope="module")
def b4_export(tmp_path_factory: pytest.TempPathFactory, tiny_bert_dir: Path, b4_records_path):
    from models.retrieval_fixtures import b4_corpus_with_shared_positions

    from lean_dojo_v2.models.premise_index import PremiseIndex, export_retriever
    from lean_dojo_v2.models.retrieval import load_encoder

    encoder = load_encoder(str(tiny_bert_dir), device="cpu")
    corpus = b4_corpus_with_shared_positions(b4_records_path)
    index = PremiseIndex.build(corpus, encoder, show_progress=False)
    return export_retriever(tmp_path_factory.mktemp("b4_retriever") / "export", encoder, index)


@pytest.fixture(scope="module")
def states(b4_records_path) -> list[str]:
    """Real goal states: the records' ``state_before``s."""
    records = json.loads(Path(b4_records_path).read_text(encoding="utf-8"))
    return [t["state_before"] for r in records for t in r["traced_tactics"]][:5]


def _app(export: Path, **settings: Any):
    spec = {"kind": "retriever", "path": str(export), "device": "cpu"}
    return make_app({"mathlib": spec}, **settings)


@pytest.fixture(scope="module")
def client(b4_export: Path):
    with TestClient(_app(b4_export, max_k=MAX_K, max_new_premises=MAX_NEW)) as c:
        yield c


@pytest.fixture(scope="module")
def lists(client) -> tuple[list[str], list[str]]:
    premises = lean_array_string(client.get("/indexed-premises").text)
    modules = lean_array_string(client.get("/indexed-modules").text)
    return premises, modules


def _retrieve(client, **body: Any) -> list[tuple[str, float]]:
    r = client.post("/retrieve", json=body)
    assert r.status_code == 200, r.text
    return lean_suggestions(r.text)


def _new(name: str, decl: str | None = None) -> dict[str, str]:
    return {"name": name, "decl": decl if decl is not None else f"theorem {name} : True"}


# ----------------------------------------------------------------------------- the client's calls


def test_leans_client_calls_in_order_over_a_socket_with_curl(b4_export: Path, states) -> None:
    """``makeRequest`` runs ``curl -X METHOD --user-agent ... URL``, POSTs with
    ``--header Content-Type: application/json --data @-`` and the compressed JSON on stdin;
    ``selectPremisesCore`` sends indexes of ``/indexed-premises`` and ``/indexed-modules``."""
    agent = "LeanProver (https://leanprover-community.github.io/)"

    def curl(base: str, method: str, path: str, data: dict | None = None) -> str:
        args = ["curl", "-X", method, "--user-agent", agent]
        if data is not None:
            args += ["--header", "Content-Type: application/json", "--data", "@-"]
        text = None if data is None else json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        out = subprocess.run(
            [*args, base + path], input=text, capture_output=True, text=True, timeout=60
        )
        assert out.returncode == 0, out.stderr
        return out.stdout

    with live_server(_app(b4_export, max_new_premises=MAX_NEW)) as base:
        assert lean_nat(curl(base, "GET", "/max-new-premises")) == MAX_NEW
        premises = lean_array_string(curl(base, "GET", "/indexed-premises"))
        modules = lean_array_string(curl(base, "GET", "/indexed-modules"))
        # The client keeps name -> index (the last index of a name wins, as its fold does).
        index_of = {n: i for i, n in enumerate(premises)}
        data = {
            "state": states[0],
            "local_premises": [index_of["CategoryTheory.Iso.trans_hom"]],
            "imported_modules": [modules.index("Init.Prelude")],
            "new_premises": [_new("my_lemma", "theorem my_lemma (n : Nat) : n + 0 = n")],
            "k": 32,
        }
        hits = lean_suggestions(curl(base, "POST", "/retrieve", data))
    assert {n for n, _ in hits} >= {"CategoryTheory.Iso.trans_hom", "my_lemma"}
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)


def test_the_three_gets_parse_as_leans_types(client, lists) -> None:
    assert lean_nat(client.get("/max-new-premises").text) == MAX_NEW
    premises, modules = lists
    assert len(premises) == 187
    assert {"CategoryTheory.Iso.trans_hom", "CategoryTheory.Iso.trans_inv"} <= set(premises)
    assert premises.index("CategoryTheory.Iso.trans_hom") != premises.index(
        "CategoryTheory.Iso.trans_inv"
    )
    assert {"Init.Prelude", "Init.Core", "Mathlib.CategoryTheory.Iso"} <= set(modules)
    assert len(set(modules)) == len(modules)


# ----------------------------------------------------------------------------- the ranking rules


def test_integer_and_string_local_premises_rank_the_same(client, lists, states) -> None:
    premises, _ = lists
    names = ["CategoryTheory.Iso.trans_hom", "CategoryTheory.Iso.trans_inv", premises[0]]
    by_index = _retrieve(
        client, state=states[1], local_premises=[premises.index(n) for n in names], k=10
    )
    by_name = _retrieve(client, state=states[1], local_premises=names, k=10)
    mixed = _retrieve(
        client, state=states[1], local_premises=[names[0], premises.index(names[1]), names[2]], k=10
    )
    assert {n for n, _ in by_index} == set(names)
    assert by_name == by_index
    assert mixed == by_index


def test_integer_imported_modules_rank_those_modules_premises(client, lists, states, b4_export):
    from lean_dojo_v2.models.premise_index import load_retriever

    _, modules = lists
    corpus = load_retriever(b4_export, device="cpu").corpus
    want = {p.full_name for path in (PRELUDE, CORE) for p in corpus.get_file(path).premises}
    idx = [modules.index("Init.Prelude"), modules.index("Init.Core")]
    hits = _retrieve(client, state=states[2], imported_modules=idx, local_premises=[], k=MAX_K)
    assert {n for n, _ in hits} == want
    by_name = _retrieve(
        client, state=states[2], imported_modules=["Init.Prelude", "Init.Core"], k=MAX_K
    )
    assert by_name == hits


def test_empty_local_premises_without_modules_ranks_only_the_new_premises(client, states):
    news = [_new("n1"), _new("n2")]
    assert {n for n, _ in _retrieve(client, state=states[0], local_premises=[], k=10)} == set()
    hits = _retrieve(client, state=states[0], local_premises=[], new_premises=news, k=10)
    assert {n for n, _ in hits} == {"n1", "n2"}
    hits = _retrieve(
        client, state=states[0], local_premises=[], imported_modules=[], new_premises=news, k=10
    )
    assert {n for n, _ in hits} == {"n1", "n2"}
    # Neither list given: the whole index ranks (with the new premises).
    assert len(_retrieve(client, state=states[0], new_premises=news, k=MAX_K)) == MAX_K


def test_a_new_premise_replaces_the_indexed_one_of_its_name(client, lists, states) -> None:
    premises, _ = lists
    name = "CategoryTheory.Iso.trans_inv"
    decl = "theorem trans_inv (α : X ≅ Y) (β : Y ≅ Z) : (α ≪≫ β).inv = β.inv ≫ α.inv"
    hits = _retrieve(
        client,
        state=states[3],
        local_premises=[premises.index(name), premises.index("CategoryTheory.Iso.trans_hom")],
        new_premises=[_new(name, decl)],
        k=10,
    )
    assert [n for n, _ in hits].count(name) == 1
    # Its score is the new statement's, not the indexed premise's.
    (alone,) = _retrieve(
        client, state=states[3], local_premises=[], new_premises=[_new("probe", decl)], k=10
    )
    assert dict(hits)[name] == pytest.approx(alone[1], abs=1e-6)
    # With the whole index ranking, too.
    everything = _retrieve(client, state=states[3], new_premises=[_new(name, decl)], k=MAX_K)
    assert [n for n, _ in everything].count(name) == 1


def test_k_zero_or_less_is_an_empty_answer(client, states) -> None:
    for k in (0, -3):
        r = client.post("/retrieve", json={"state": states[0], "k": k})
        assert r.status_code == 200 and lean_suggestions(r.text) == []


def test_k_over_the_limit_is_capped(client, states) -> None:
    r = client.post("/retrieve", json={"state": states[0], "k": 5000})
    assert r.status_code == 200
    assert len(lean_suggestions(r.text)) == MAX_K


def test_more_new_premises_than_the_maximum_are_truncated(client, states) -> None:
    news = [_new(f"n{i}") for i in range(MAX_NEW + 3)]
    hits = _retrieve(client, state=states[0], local_premises=[], new_premises=news, k=50)
    assert {n for n, _ in hits} == {f"n{i}" for i in range(MAX_NEW)}


def test_unknown_names_and_out_of_range_indexes_add_nothing(client, lists, states) -> None:
    premises, modules = lists
    hits = _retrieve(
        client,
        state=states[0],
        local_premises=["No.such.premise", len(premises), -1, 0],
        imported_modules=["No.Such.Module", len(modules), -1],
        k=10,
    )
    assert [n for n, _ in hits] == [premises[0]]


def test_wrong_types_in_the_lists_are_a_422_naming_the_field(client, states) -> None:
    for body in (
        {"state": states[0], "local_premises": [1.5]},
        {"state": states[0], "imported_modules": [True]},
        {"state": states[0], "k": "many"},
    ):
        r = client.post("/retrieve", json=body)
        assert r.status_code == 422
        detail = r.json()["detail"]
        assert any(key in detail for key in ("local_premises", "imported_modules", "k"))


# ----------------------------------------------------------------------------- our own shape


def test_our_documented_request_still_works(client, states, b4_export) -> None:
    from lean_dojo_v2.models.premise_index import load_retriever

    corpus = load_retriever(b4_export, device="cpu").corpus
    iso = "Mathlib/CategoryTheory/Iso.lean"
    allowed = {p.full_name for p in corpus.accessible_premises(iso, None)}
    hits = _retrieve(client, name="mathlib", state=states[0], k=MAX_K, file_path=iso)
    assert {n for n, _ in hits} <= allowed and len(hits) == MAX_K
    # Before [149, 10] in Iso.lean: neither lemma of that position.
    hits = _retrieve(
        client, state=states[0], k=MAX_K, file_path=iso, position={"line": 149, "column": 10}
    )
    assert not {n for n, _ in hits} & {
        "CategoryTheory.Iso.trans_hom",
        "CategoryTheory.Iso.trans_inv",
    }


def test_a_base_url_per_retriever_when_several_are_served(b4_export, retriever_dir, states):
    spec = {"kind": "retriever", "device": "cpu"}
    app = make_app(
        {"b4": {**spec, "path": str(b4_export)}, "sample": {**spec, "path": str(retriever_dir)}}
    )
    with TestClient(app) as c:
        r = c.get("/indexed-premises")
        assert r.status_code == 400 and "/retrievers/" in r.json()["detail"]
        b4 = lean_array_string(c.get("/retrievers/b4/indexed-premises").text)
        sample = lean_array_string(c.get("/retrievers/sample/indexed-premises").text)
        assert len(b4) == 187 and len(sample) == 185
        assert lean_nat(c.get("/retrievers/b4/max-new-premises").text) == 2048
        lean_array_string(c.get("/retrievers/sample/indexed-modules").text)
        r = c.post("/retrievers/b4/retrieve", json={"state": states[0], "local_premises": [185]})
        assert [n for n, _ in lean_suggestions(r.text)] == [b4[185]]
        assert c.get("/retrievers/nope/indexed-modules").status_code == 404


# ----------------------------------------------------------------------------- a model that cannot load


def test_a_retriever_that_cannot_load_is_a_503_naming_it(b4_export, tmp_path, states) -> None:
    import shutil

    broken = shutil.copytree(b4_export, tmp_path / "broken")
    meta = json.loads((broken / "index" / "index.json").read_text())
    meta["rows"][0][1] = "Not.a.premise"
    (broken / "index" / "index.json").write_text(json.dumps(meta))
    with TestClient(_app(broken)) as c:
        for r in (
            c.post("/retrieve", json={"state": states[0], "k": 3}),
            c.get("/indexed-premises"),
        ):
            assert r.status_code == 503, r.text
            detail = r.json()["detail"]
            assert "'mathlib'" in detail and "could not be loaded" in detail
            assert "Not.a.premise" in detail and "\n" not in detail


def test_an_encoder_that_cannot_load_is_a_503_naming_it(tmp_path) -> None:
    app = make_app({"enc": {"kind": "encoder", "model": str(tmp_path / "gone"), "device": "cpu"}})
    with TestClient(app) as c:
        r = c.post("/encode", json={"name": "enc", "input": "⊢ True"})
    assert r.status_code == 503
    assert "'enc'" in r.json()["detail"] and "gone" in r.json()["detail"]


def test_a_folder_that_is_no_export_is_refused_when_the_app_is_built(tmp_path) -> None:
    from lean_dojo_v2.external_api.errors import ModelRegistryError

    with pytest.raises(ModelRegistryError, match=r"'r'.*has no retriever\.json"):
        make_app({"r": {"kind": "retriever", "path": str(tmp_path)}})
    with pytest.raises(ModelRegistryError, match=r"'r'.*does not exist"):
        make_app({"r": {"kind": "retriever", "path": str(tmp_path / "none")}})


def test_new_premises_are_encoded_once_across_requests(client, states) -> None:
    """The client sends the same unindexed premises with every request: only the goal state
    is encoded again."""
    model = client.app.state.server.registry.models["mathlib"]
    news = [_new(f"cached_{i}") for i in range(3)]
    first = _retrieve(client, state=states[4], local_premises=[], new_premises=news, k=10)
    before = model.retriever.encoder.encode_calls
    again = _retrieve(client, state=states[4], local_premises=[], new_premises=news, k=10)
    assert model.retriever.encoder.encode_calls - before == 1
    assert again == first
