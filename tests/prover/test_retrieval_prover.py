"""RetrievalProver: prompts carry the premises retrieved for each state, only premises
accessible at the theorem's position (``for_theorem`` binds ``(file_path, start)``), from any
Retriever: an in-test lexical one over the bundled sample corpus, a DenseRetriever (tiny random
BERT encoder over the same corpus) and an exported retriever directory."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parents[1]
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

from tiny_models import build_tiny_causal  # noqa: E402

from lean_dojo_v2.errors import ModelError  # noqa: E402
from lean_dojo_v2.models.retrieval import Retriever, premise_text  # noqa: E402

# At its start only 1 of its file's 3 premises precedes it: binding the position matters.
THEOREM = "Polynomial.nextCoeff_ne_zero"


@pytest.fixture(scope="module")
def corpus():
    from lean_dojo_v2.data import Corpus, sample_dataset_path

    return Corpus.from_jsonl(Path(sample_dataset_path()) / "corpus.jsonl")


@pytest.fixture(scope="module")
def theorem():
    from lean_dojo_v2.data import sample_dataset_path
    from lean_dojo_v2.data.dataset import load_theorems

    (thm,) = [t for t in load_theorems(sample_dataset_path()) if t.full_name == THEOREM]
    return thm


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory) -> Path:
    return build_tiny_causal(tmp_path_factory.mktemp("tiny") / "causal")


class OverlapRetriever(Retriever):
    """Ranks premises by words shared with the state; honours ``accessible`` through the
    corpus. Records the ``accessible`` argument of every call."""

    def __init__(self, corpus) -> None:
        self.corpus = corpus
        self.all = list(corpus.premises)
        self.calls: list[object] = []

    def retrieve(self, states, k, accessible=None):
        self.calls.append(None if accessible is None else list(accessible))
        out = []
        for i, state in enumerate(states):
            where = None if accessible is None else accessible[i]
            pool = self.all if where is None else self.corpus.accessible_premises(*where)
            words = set(state.split())
            scored = [(p, float(len(words & set(premise_text(p).split())))) for p in pool]
            scored.sort(key=lambda ps: -ps[1])
            out.append(scored[:k])
        return out


def test_for_theorem_binds_file_and_start_as_accessibility(tiny_dir, corpus, theorem):
    from lean_dojo_v2.prover import RetrievalProver

    retriever = OverlapRetriever(corpus)
    prover = RetrievalProver(str(tiny_dir), retriever=retriever, num_premises=50, device="cpu")
    state = theorem.traced_tactics[0].state_before
    bound = prover.for_theorem(theorem)
    assert bound is not prover and prover.accessible is None
    assert bound.accessible == (theorem.file_path, theorem.start)
    assert bound.generator is prover.generator  # the model is shared, not copied
    allowed = {p.full_name for p in corpus.accessible_premises(theorem.file_path, theorem.start)}
    (shown,) = bound.premises([state])
    assert retriever.calls[-1] == [(theorem.file_path, theorem.start)]
    by_text = {premise_text(p): p.full_name for p in corpus.premises}
    assert shown and {by_text[t] for t in shown} <= allowed
    # unbound: the whole index, premises defined after the theorem included
    (everything,) = prover.premises([state])
    assert retriever.calls[-1] is None
    assert len(everything) == 50 and not {by_text[t] for t in everything} <= allowed


def test_prompts_carry_the_retrieved_premises(tiny_dir, corpus, theorem):
    from lean_dojo_v2.models.prompts import render_prompt, render_proof_prompt
    from lean_dojo_v2.prover import HFProver, RetrievalProver

    prover = RetrievalProver(
        str(tiny_dir), retriever=OverlapRetriever(corpus), num_premises=3, device="cpu"
    ).for_theorem(theorem)
    state = theorem.traced_tactics[0].state_before
    (premises,) = prover.premises([state])
    tok = prover.tokenizer
    assert prover.prompts([state]) == [render_prompt(tok, state, premises)]
    assert prover.prompts([state], whole_proof=True) == [render_proof_prompt(tok, state, premises)]
    assert "Premises:\n" + premises[0] in prover.prompts([state])[0]
    plain = HFProver(str(tiny_dir), device="cpu")
    assert plain.prompts([state]) == [render_prompt(tok, state)]


def test_generate_and_generate_proofs_feed_premises_to_the_model(tiny_dir, corpus, theorem):
    from lean_dojo_v2.prover import RetrievalProver

    retriever = OverlapRetriever(corpus)
    prover = RetrievalProver(
        str(tiny_dir),
        retriever=retriever,
        num_premises=2,
        device="cpu",
        strategy="greedy",
        max_new_tokens=6,
        max_proof_tokens=6,
    ).for_theorem(theorem)
    states = [t.state_before for t in theorem.traced_tactics] * 2
    out = prover.generate(states, 1)
    assert len(out) == len(states) and len(retriever.calls) == 1
    assert len(prover.generate_proofs(states, 1)) == len(states)
    # the premises change what the model sees, hence (greedy) what it answers
    no_premises = RetrievalProver(
        str(tiny_dir),
        retriever=retriever,
        num_premises=0,
        device="cpu",
        strategy="greedy",
        max_new_tokens=6,
    )
    assert no_premises.prompts(states[:1]) != prover.prompts(states[:1])


def test_retriever_is_required_and_checked(tiny_dir):
    from lean_dojo_v2.prover import RetrievalProver

    with pytest.raises(ModelError, match="needs a retriever"):
        RetrievalProver(str(tiny_dir), device="cpu")
    with pytest.raises(ModelError, match="retrieve"):
        RetrievalProver(str(tiny_dir), retriever=object(), device="cpu")
    with pytest.raises(ModelError, match="num_premises"):
        RetrievalProver(
            str(tiny_dir), retriever=OverlapRetriever.__new__(OverlapRetriever), num_premises=-1
        )


def test_dense_retriever_and_exported_dir(tiny_dir, corpus, theorem, tmp_path):
    from models.retrieval_fixtures import build_tiny_bert

    from lean_dojo_v2.models.premise_index import DenseRetriever, PremiseIndex, export_retriever
    from lean_dojo_v2.models.retrieval import load_encoder
    from lean_dojo_v2.prover import RetrievalProver

    encoder = load_encoder(str(build_tiny_bert(tmp_path / "bert")), device="cpu")
    index = PremiseIndex.build(corpus, encoder, show_progress=False)
    allowed = {
        premise_text(p) for p in corpus.accessible_premises(theorem.file_path, theorem.start)
    }
    state = theorem.traced_tactics[0].state_before
    dense = RetrievalProver(
        str(tiny_dir), retriever=DenseRetriever(encoder, index), num_premises=5, device="cpu"
    ).for_theorem(theorem)
    (shown,) = dense.premises([state])
    assert shown and set(shown) <= allowed
    folder = export_retriever(tmp_path / "exported", encoder, index)
    from_dir = RetrievalProver(str(tiny_dir), retriever=str(folder), num_premises=5, device="cpu")
    assert from_dir.for_theorem(theorem).premises([state]) == [shown]


def test_retrieval_prover_proves_real_theorem_on_replay(tiny_dir, corpus, tmp_path):
    """Search drives a RetrievalProver (for_theorem called by search) to the recorded proof of a
    real theorem; the adapter makes the model emit the tactic whatever the premises are."""
    from lean_dojo_v2.data import sample_dataset_path
    from lean_dojo_v2.data.dataset import load_theorems
    from lean_dojo_v2.interaction import ReplayEnv
    from lean_dojo_v2.prover import RetrievalProver, SearchConfig

    from .test_hf_prover import TACTIC, write_emitter_adapter
    from .test_hf_prover import THEOREM as PROVED

    adapter = write_emitter_adapter(tiny_dir, tmp_path / "adapter", TACTIC)
    (thm,) = [t for t in load_theorems(sample_dataset_path()) if t.full_name == PROVED]
    retriever = OverlapRetriever(corpus)
    prover = RetrievalProver(str(adapter), retriever=retriever, use_lora=True, device="cpu", seed=0)
    with ReplayEnv.from_dataset(sample_dataset_path()) as env:
        result = prover.prove(thm, env, SearchConfig(num_samples=2, max_expansions=3))
    assert result.status == "proved", result
    assert retriever.calls and retriever.calls[0] == [(thm.file_path, thm.start)]
