"""Upstream LeanDojo-v2's prover calls, as its 1.0.9 README and examples write them, on our
provers: ``HFProver(ckpt_path=...).next_tactic / generate_whole_proof / search(server=...,
goal=...)``, ``RetrievalProver(ret_ckpt_path=..., gen_ckpt_path=..., indexed_corpus_path=...)``
and ``ExternalProver()`` with no arguments (defaults from the environment).

The model is a tiny random Llama with a hand-written LoRA adapter that makes it emit ``simp``
(``test_hf_prover.write_emitter_adapter``); the Lean environment of ``search`` is a scripted
``ProofEnv`` in which only ``simp`` closes the goal; the OpenAI server is ``fake_openai``."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parents[1]
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

from tiny_models import build_tiny_causal  # noqa: E402

from lean_dojo_v2.errors import ConfigError, ModelError, ModelNotFoundError  # noqa: E402
from lean_dojo_v2.interaction import (  # noqa: E402
    ProofEnv,
    ProofFinished,
    ProofState,
    TacticError,
    Verdict,  # noqa: E402
)

from .fake_openai import FakeOpenAI  # noqa: E402
from .test_hf_prover import TACTIC, write_emitter_adapter  # noqa: E402

GOAL = "∀ {p q : Prop}, p ∧ q → q ∧ p"


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory) -> Path:
    return build_tiny_causal(tmp_path_factory.mktemp("tiny") / "causal")


@pytest.fixture(scope="module")
def simp_prover(tiny_dir, tmp_path_factory):
    """HFProver over the adapter that emits ``simp``, loaded upstream's way."""
    from lean_dojo_v2.prover import HFProver

    adapter = write_emitter_adapter(tiny_dir, tmp_path_factory.mktemp("lora") / "a", TACTIC)
    return HFProver(ckpt_path=str(adapter), use_lora=True, device="cpu", seed=0)


class ScriptedEnv(ProofEnv):
    """One goal; ``closing`` closes it, every other tactic fails. Records what it was asked."""

    backend = "scripted"

    def __init__(self, closing: str | None = TACTIC) -> None:
        self.closing = closing
        self.started: list[object] = []
        self.verified: list[str] = []

    def start(self, theorem):
        self.started.append(theorem)
        return ProofState(goals=(f"⊢ {GOAL}",), backend=self.backend, handle=0)

    def run_tactic(self, state, tactic, timeout=None):
        if tactic == self.closing:
            return ProofFinished(self.backend, handle=1)
        return TacticError("no", self.backend)

    def verify(self, theorem, proof):
        self.verified.append(proof)
        return Verdict(ok=proof.strip() == self.closing, backend=self.backend, checked_by="lean")


# --------------------------------------------------------------------------- HFProver


def test_next_tactic_takes_text_and_proof_states(simp_prover):
    assert simp_prover.next_tactic("n : ℕ\n⊢ n + 0 = n", 0) == TACTIC
    state = ProofState(goals=("n : ℕ\n⊢ n + 0 = n",), backend="x")
    assert simp_prover.next_tactic(state, goal_id=0) == TACTIC


def test_generate_whole_proof_of_a_statement_text(simp_prover, tiny_dir):
    from lean_dojo_v2.prover import HFProver

    # The adapter answers every chat prompt with `simp` then its end marker: the whole proof.
    proof = simp_prover.generate_whole_proof(f"theorem my_and_comm : {GOAL} := by")
    assert proof == TACTIC
    # What the prompt carries: the statement without its `:= by`.
    base = HFProver(str(tiny_dir), device="cpu")
    seen: list[list[str]] = []
    base.generate_proofs = lambda states, n: seen.append(states) or [[]]  # type: ignore[method-assign]
    assert base.generate_whole_proof(f"theorem t : {GOAL} := by") == ""
    assert seen == [[f"theorem t : {GOAL}"]]


def test_search_proves_a_bare_goal_and_returns_the_seeds_pair(simp_prover):
    env = ScriptedEnv()
    result, used_tactics = simp_prover.search(server=env, goal=GOAL)
    assert result.success and used_tactics == [TACTIC]
    assert result.status == "proved" and result.checked_by == "lean"  # our result's fields too
    assert result.steps == result.result.expansions >= 1 and result.duration >= 0
    (theorem,) = env.started
    assert theorem.theorem_statement == f"theorem lean_dojo_v2_goal : {GOAL} := by"
    assert env.verified == [TACTIC]  # proved only after the whole proof was re-checked


def test_search_that_fails_returns_no_tactics(simp_prover, capsys):
    from lean_dojo_v2.prover import SearchConfig

    env = ScriptedEnv(closing="omega")  # the model only says simp
    result, used_tactics = simp_prover.search(
        env, GOAL, verbose=True, config=SearchConfig(num_samples=2, max_expansions=2)
    )
    assert not result.success and used_tactics is None
    assert result.status == "failed"
    assert capsys.readouterr().out.startswith("failed: lean_dojo_v2_goal")


def test_search_takes_a_theorem_and_refuses_other_servers(simp_prover):
    from lean_dojo_v2.data import sample_dataset_path
    from lean_dojo_v2.data.dataset import load_theorems

    theorem = load_theorems(sample_dataset_path())[0]
    env = ScriptedEnv()
    result, _ = simp_prover.search(server=env, theorem=theorem)
    assert env.started == [theorem] and result.success
    with pytest.raises(ConfigError, match="ProofEnv"):
        simp_prover.search(server=object(), goal=GOAL)
    with pytest.raises(ConfigError, match="goal="):
        simp_prover.search(server=env)


# --------------------------------------------------------------------------- RetrievalProver


@pytest.fixture(scope="module")
def retriever_files(tmp_path_factory):
    """A tiny BERT encoder, its premise index over the bundled corpus, and the exported
    retriever of both."""
    from models.retrieval_fixtures import build_tiny_bert

    from lean_dojo_v2.data import Corpus, sample_dataset_path
    from lean_dojo_v2.models.premise_index import PremiseIndex, export_retriever
    from lean_dojo_v2.models.retrieval import load_encoder

    root = tmp_path_factory.mktemp("retriever")
    encoder_dir = build_tiny_bert(root / "bert")
    encoder = load_encoder(str(encoder_dir), device="cpu")
    corpus = Corpus.from_jsonl(Path(sample_dataset_path()) / "corpus.jsonl")
    index = PremiseIndex.build(corpus, encoder, show_progress=False)
    index_dir = index.save(root / "index")
    exported = export_retriever(root / "exported", encoder, index)
    return encoder_dir, index_dir, exported


def test_retrieval_prover_with_the_seeds_arguments(tiny_dir, retriever_files):
    from lean_dojo_v2.prover import RetrievalProver

    encoder_dir, index_dir, exported = retriever_files
    state = "n : ℕ\n⊢ Polynomial.natDegree (Polynomial.X ^ n) = n"
    ours = RetrievalProver(str(tiny_dir), retriever=str(exported), device="cpu")
    expected = ours.premises([state])
    assert expected[0]
    for ret, idx in [(exported, None), (exported, exported), (encoder_dir, index_dir)]:
        prover = RetrievalProver(
            ret_ckpt_path=str(ret),
            gen_ckpt_path=str(tiny_dir),
            indexed_corpus_path=None if idx is None else str(idx),
            device="cpu",
        )
        assert prover.premises([state]) == expected
        assert prover.ckpt_path == str(tiny_dir)


def test_retrieval_prover_seed_paths_that_are_not_what_they_must_be(
    tiny_dir, retriever_files, tmp_path
):
    from lean_dojo_v2.prover import RetrievalProver

    encoder_dir, index_dir, _ = retriever_files
    ckpt = tmp_path / "retriever.ckpt"
    ckpt.write_bytes(b"lightning")
    pickled = tmp_path / "indexed_corpus.pickle"
    pickled.write_bytes(b"pickle")
    empty = tmp_path / "empty"
    empty.mkdir()
    cases = [
        (dict(ret_ckpt_path=ckpt), "ret_ckpt_path .* is a file"),
        (dict(ret_ckpt_path=encoder_dir), "no indexed_corpus_path was given"),
        (dict(ret_ckpt_path=encoder_dir, indexed_corpus_path=pickled), "is a file"),
        (dict(ret_ckpt_path=encoder_dir, indexed_corpus_path=empty), "not a premise index"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ModelNotFoundError, match=message) as info:
            RetrievalProver(gen_ckpt_path=str(tiny_dir), device="cpu", **kwargs)
        assert "\n" not in str(info.value)
    with pytest.raises(ModelError, match="not both"):
        RetrievalProver(str(tiny_dir), gen_ckpt_path=str(tiny_dir), retriever=object())
    with pytest.raises(ModelError, match="pass ret_ckpt_path too"):
        RetrievalProver(gen_ckpt_path=str(tiny_dir), indexed_corpus_path=str(index_dir))


# --------------------------------------------------------------------------- ExternalProver


@pytest.fixture()
def clean_env(monkeypatch):
    for var in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "LEAN_DOJO_V2_EXTERNAL_MODEL"):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_external_prover_without_arguments_uses_the_servers_first_model(clean_env):
    from lean_dojo_v2.prover import ExternalProver

    answer = "```lean\ntheorem my_and_comm : ∀ {p q : Prop}, And p q → And q p := by\n  intro p q h\n  exact ⟨h.2, h.1⟩\n```"
    with FakeOpenAI(completions=[answer], models=("first-model", "second-model")) as server:
        clean_env.setenv("OPENAI_BASE_URL", server.base_url)
        prover = ExternalProver()
        assert "<first served model>" in repr(prover)  # constructing asked nothing
        theorem = "theorem my_and_comm : ∀ {p q : Prop}, And p q → And q p := by"
        assert prover.generate_whole_proof(theorem) == "intro p q h\nexact ⟨h.2, h.1⟩"
        assert prover.model_name == "first-model"
        (request,) = server.requests
        assert request["model"] == "first-model"
        assert "And p q → And q p" in request["messages"][-1]["content"]
        assert prover.base_url == server.base_url.rstrip("/")


def test_external_prover_model_from_the_environment_and_next_tactic(clean_env):
    from lean_dojo_v2.prover import ExternalProver

    with FakeOpenAI(completions=["simp"], models=("first-model", "chosen")) as server:
        clean_env.setenv("OPENAI_BASE_URL", server.base_url)
        clean_env.setenv("LEAN_DOJO_V2_EXTERNAL_MODEL", "chosen")
        prover = ExternalProver()
        assert prover.next_tactic(ProofState(goals=("⊢ True",), backend="x")) == "simp"
        assert [r["model"] for r in server.requests] == ["chosen"]


def test_external_prover_unreachable_default_server_is_one_clear_error(clean_env):
    from lean_dojo_v2.prover import ExternalProver
    from lean_dojo_v2.prover.external_prover import ExternalModelError

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    clean_env.setenv("OPENAI_BASE_URL", url)
    prover = ExternalProver(max_retries=0, timeout=2.0)
    with pytest.raises(ExternalModelError, match="cannot reach .* which model it serves") as info:
        prover.generate_whole_proof("theorem t : True := by")
    assert url in str(info.value) and "\n" not in str(info.value)
    assert info.value.__cause__ is None  # no chained traceback from the HTTP client


def test_external_prover_server_listing_no_model(clean_env):
    from lean_dojo_v2.prover import ExternalProver
    from lean_dojo_v2.prover.external_prover import ExternalModelError

    with FakeOpenAI(models=()) as server:
        prover = ExternalProver(base_url=server.base_url)
        with pytest.raises(ExternalModelError, match="lists no model"):
            prover.next_tactic("⊢ True")
