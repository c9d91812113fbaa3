"""What a generator reports it used (``usage()``): calls, prompt tokens, generated tokens,
seconds and GPU seconds, counted by the tiny Hugging Face model's decodes, added up across
threads, carried over to a pickled copy."""

from __future__ import annotations

import pickle
import threading

from lean_dojo_v2.models.generator import (
    Candidate,
    GeneratorUsage,
    HFTacticGenerator,
    TacticGenerator,
    UsageMeter,
)

STATES = ["n : ℕ\n⊢ n + 0 = n", "a b : ℕ\nh : a = b\n⊢ b = a"]


def test_usages_add_and_subtract():
    a = GeneratorUsage(1, 10, 4, 0.5, 0.25)
    b = GeneratorUsage(2, 3, 6, 1.0, 0.0)
    assert a + b == GeneratorUsage(3, 13, 10, 1.5, 0.25)
    assert (a + b) - a == b
    assert b.to_dict() == {
        "calls": 2,
        "tokens_in": 3,
        "tokens_out": 6,
        "seconds": 1.0,
        "gpu_seconds": 0.0,
    }


def test_a_generator_that_does_not_count_reports_nothing_used():
    class Fixed(TacticGenerator):
        def generate(self, states, num_samples, *, prefix=None):
            return [[Candidate("simp", -1.0)] for _ in states]

    assert Fixed().usage() == GeneratorUsage()


def test_the_meter_adds_from_many_threads_and_survives_pickling():
    meter = UsageMeter()

    def add() -> None:
        for _ in range(200):
            meter.add(tokens_in=2, tokens_out=3, seconds=0.01)

    threads = [threading.Thread(target=add) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    total = meter.total()
    assert (total.calls, total.tokens_in, total.tokens_out) == (800, 1600, 2400)
    copy = pickle.loads(pickle.dumps(meter))
    assert copy.total() == total
    copy.add(tokens_out=1)
    assert copy.total().tokens_out == 2401 and meter.total().tokens_out == 2400


def test_hf_generator_counts_prompt_and_generated_tokens(tiny_causal):
    gen = HFTacticGenerator(tiny_causal, max_new_tokens=6, seed=0)
    assert gen.usage() == GeneratorUsage()
    gen.generate(STATES, 3)
    used = gen.usage()
    prompts = gen.tokenizer(gen.prompts(STATES), add_special_tokens=False)["input_ids"]
    assert used.calls == 1
    assert used.tokens_in == sum(len(p) for p in prompts)  # each prompt once, padding left out
    assert used.tokens_out == gen.tokens_generated > 0
    assert used.seconds > 0 and used.gpu_seconds == 0.0  # on the CPU
    gen.generate(STATES[:1], 2)
    assert gen.usage().calls == 2 and gen.usage().tokens_in > used.tokens_in
