"""``sample_proofs``, how whole-proof and refinement search ask every prover of the library:
exactly n answers per request, as the model wrote them, with what each cost — a local Hugging
Face model (the tiny Llama; a retrieval prover adds premises), and an OpenAI-compatible server
(the local fake one, whose ``usage`` the prover reads)."""

from __future__ import annotations

import pytest

from lean_dojo_v2.data import load_theorems, sample_dataset_path
from lean_dojo_v2.errors import ModelError
from lean_dojo_v2.interaction.standalone import standalone_theorem
from lean_dojo_v2.models.proof_prompt import (
    DEEPSEEK_PROMPT,
    FailedProof,
    LeanFeedback,
    ProofPrompt,
    ProofRequest,
    ProofTask,
)

from .fake_openai import FakeOpenAI
from .test_retrieval_prover import OverlapRetriever, corpus, theorem, tiny_dir  # noqa: F401

STATEMENT = "theorem mathd_algebra_182 (y : ℂ) : 7 * (3 * y + 2) = 21 * y + 14 := by"
PROBLEM = ProofTask.from_theorem(standalone_theorem("mathd_algebra_182", "", STATEMENT))


@pytest.fixture(scope="module")
def traced_task() -> ProofTask:
    thm = next(t for t in load_theorems(sample_dataset_path()) if t.traced_tactics)
    return ProofTask.from_theorem(thm, thm.traced_tactics[0].state_before)


def test_hf_prover_samples_exactly_n_answers_and_says_what_each_cost(
    tiny_dir,  # noqa: F811
    traced_task,
):
    from lean_dojo_v2.prover import HFProver

    prover = HFProver(str(tiny_dir), device="cpu", seed=0, max_proof_tokens=12)
    requests = [ProofRequest(PROBLEM), ProofRequest(traced_task)]
    before = prover.usage()
    answers = prover.sample_proofs(requests, 3)
    used = prover.usage() - before
    assert [len(a) for a in answers] == [3, 3]
    flat = [c for a in answers for c in a]
    assert all(isinstance(c.text, str) and c.logprob is not None for c in flat)
    assert all(1 <= (c.tokens_out or 0) <= 12 for c in flat)
    assert sum(c.tokens_out or 0 for c in flat) == used.tokens_out  # each answer's own tokens
    assert used.calls == 1 and used.tokens_in > 0 and used.seconds > 0
    # a traced theorem is asked exactly as whole-proof mode always asked it (as SFT trains)
    state = traced_task.state or ""
    assert prover.request_prompts([ProofRequest(traced_task)]) == prover.prompts(
        [state], whole_proof=True
    )
    (sent,) = prover.request_prompts([ProofRequest(PROBLEM)])
    assert "Complete the following Lean 4 code" in sent and STATEMENT in sent


def test_hf_prover_greedy_answers_once_for_every_sample(tiny_dir):  # noqa: F811
    from lean_dojo_v2.prover import HFProver

    prover = HFProver(str(tiny_dir), device="cpu", strategy="greedy", max_proof_tokens=8)
    (answers,) = prover.sample_proofs([ProofRequest(PROBLEM)], 4)
    assert len(answers) == 4 and len({a.text for a in answers}) == 1
    assert prover.usage().calls == 1
    with pytest.raises(ModelError, match="ProofRequest"):
        prover.sample_proofs(["a goal"], 2)  # type: ignore[list-item]
    with pytest.raises(ModelError, match="num_samples"):
        prover.sample_proofs([ProofRequest(PROBLEM)], 0)


def test_a_retrieval_prover_puts_premises_in_a_traced_theorems_request(
    tiny_dir,  # noqa: F811
    corpus,  # noqa: F811
    theorem,  # noqa: F811
):
    from lean_dojo_v2.prover import RetrievalProver

    prover = RetrievalProver(
        str(tiny_dir), retriever=OverlapRetriever(corpus), num_premises=2, device="cpu"
    )
    bound = prover.for_theorem(theorem)
    state = theorem.traced_tactics[0].state_before
    task = ProofTask.from_theorem(theorem, state)
    (premises,) = bound.request_premises([ProofRequest(task)])
    assert premises and premises == bound.premises([state])[0]  # ranked for its goal state
    assert bound.request_prompts([ProofRequest(task)]) == bound.prompts([state], whole_proof=True)
    assert "Premises:" in bound.request_prompts([ProofRequest(task)])[0]
    assert bound.request_premises([ProofRequest(PROBLEM)]) == [[]]  # no goal state: none


def test_external_prover_samples_exactly_n_answers_with_the_servers_usage():
    from lean_dojo_v2.prover import ExternalProver

    answers = ["```lean4\nring\n```", "", "nlinarith [sq_nonneg y]"]
    with FakeOpenAI(completions=answers, honour_n=False) as server:
        prover = ExternalProver("fake-model", base_url=server.base_url, timeout=5.0)
        failed = FailedProof("simp", LeanFeedback("simp made no progress", 1, 0))
        requests = [ProofRequest(PROBLEM), ProofRequest(PROBLEM, (failed,))]
        got = prover.sample_proofs(requests, 3)
        sent = list(server.requests)
    assert [len(a) for a in got] == [3, 3]
    texts = sorted(c.text for a in got for c in a)
    assert texts == sorted(answers * 2)  # duplicates and the empty answer kept
    assert len(sent) == 6 and sorted(r["n"] for r in sent) == [1, 1, 2, 2, 3, 3]
    firsts = [r["messages"] for r in sent if r["n"] == 3]
    assert DEEPSEEK_PROMPT.messages(requests[0]) in firsts
    assert DEEPSEEK_PROMPT.messages(requests[1]) in firsts  # the refine prompt
    assert all(r["max_tokens"] == prover.max_proof_tokens for r in sent)
    used = prover.usage()
    assert used.calls == 6 and used.gpu_seconds == 0.0
    # the fake server counts 3 characters a token: every answer's text and each prompt once
    assert used.tokens_out == sum(-(-len(t) // 3) or 1 for t in answers) * 2
    assert used.tokens_in > 0


def test_external_prover_uses_the_prompt_it_is_given():
    from lean_dojo_v2.prover import ExternalProver

    prompt = ProofPrompt(whole="Prove: {formal_statement}", system="Be brief.")
    with FakeOpenAI(completions=["ring"]) as server:
        prover = ExternalProver("fake-model", base_url=server.base_url, timeout=5.0)
        prover.sample_proofs([ProofRequest(PROBLEM)], 1, prompt=prompt)
        (request,) = server.requests
    assert request["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": f"Prove: {STATEMENT}"},
    ]
    assert prover.usage().calls == 1 and prover.usage().tokens_in > 0
