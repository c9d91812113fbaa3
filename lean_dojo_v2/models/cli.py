"""Layer 2 (models): ``lean-dojo-v2 generate``, tactic candidates for one goal state.

Every input is checked before the model is asked: the goal state and ``--prefix`` must be UTF-8
text (:func:`~lean_dojo_v2.interaction.base.check_text`, the check the ``ProofEnv`` contract
applies to tactics), ``-n`` and ``--max-new-tokens`` have upper bounds (:data:`MAX_NUM_SAMPLES`,
:data:`MAX_NEW_TOKENS`); after loading, the prompt must fit the model's context
(:func:`check_prompt_fits`) and the model must give finite logits on it
(:func:`check_finite_logits`).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from transformers import BatchEncoding

    from ..config.cli import ParserT
    from .generator import HFTacticGenerator

# Bounds of the command's numbers. Search asks for 8 to 64 candidates per state; sampling more
# than this from one prompt is a batch job, not a command: 100000 used to run for many minutes
# before it ran out of memory.
MAX_NUM_SAMPLES = 1024
# A tactic is tens of tokens, a long one a few hundred; a random or broken model decodes to the
# limit, so the limit is what bounds its run time.
MAX_NEW_TOKENS = 4096
# torch.manual_seed takes 64-bit seeds.
MAX_SEED = 2**63 - 1


def _whole_number(low: int, high: int) -> Callable[[str], int]:
    """An argparse ``type``: a whole number in ``[low, high]`` (argparse turns the
    ``ArgumentTypeError`` into a one-line usage error)."""

    def parse(text: str) -> int:
        try:
            value = int(text.strip().replace("_", ""))
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"must be a whole number from {low} to {high:,}, got {text!r}"
            )
        return value

    return parse


def _positive_finite(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number such as 0.8, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return value


def add_generate_parser(sub: argparse._SubParsersAction[ParserT]) -> ParserT:
    """Register the ``generate`` subcommand on ``sub`` (the top-level subparsers)."""
    p = sub.add_parser(
        "generate",
        help="propose tactics for a goal state with a model",
        description="Print up to N distinct tactic candidates for one goal state, best first, "
        "with their log-probabilities. The default model is the bundled SmolLM2-135M-Instruct "
        "(converted once into the cache); it is a plumbing model, not a prover.",
    )
    p.add_argument("state", help="the goal state text, or - to read it (UTF-8) from stdin")
    p.add_argument(
        "--model",
        default=None,
        help="smollm2 (default), a Hugging Face id, a model directory, a .gguf file, or a PEFT "
        "adapter directory",
    )
    p.add_argument("--adapter", default=None, help="a PEFT adapter directory to apply")
    p.add_argument(
        "-n",
        "--num-samples",
        type=_whole_number(1, MAX_NUM_SAMPLES),
        default=8,
        help=f"candidates (default 8, at most {MAX_NUM_SAMPLES})",
    )
    p.add_argument(
        "--strategy", default="sample", choices=["sample", "beam", "greedy"], help="decoding"
    )
    p.add_argument(
        "--temperature", type=_positive_finite, default=0.8, help="sampling (default 0.8)"
    )
    p.add_argument(
        "--max-new-tokens",
        type=_whole_number(1, MAX_NEW_TOKENS),
        default=64,
        help=f"the longest tactic, in tokens (default 64, at most {MAX_NEW_TOKENS})",
    )
    p.add_argument("--prefix", default=None, help="every tactic starts with this text")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    p.add_argument(
        "--seed",
        type=_whole_number(0, MAX_SEED),
        default=None,
        help="seed sampling (reproducible output)",
    )
    p.add_argument("--json", action="store_true", help='print [{"tactic", "logprob"}, ...]')
    p.set_defaults(func=cmd_generate)
    return p


def read_state(arg: str) -> str:
    """The goal state: ``arg`` itself, or with ``-`` what stdin holds, decoded as UTF-8.

    Raises :class:`~lean_dojo_v2.interaction.InvalidRequestError` for bytes that are not UTF-8
    (read as bytes: the text layer of stdin may turn them into lone surrogates, or fail with its
    own message), and :class:`~lean_dojo_v2.errors.ModelError` for an empty state."""
    from ..errors import ModelError
    from ..interaction.types import InvalidRequestError

    if arg != "-":
        state = arg
    else:
        buffer = getattr(sys.stdin, "buffer", None)
        if buffer is None:  # a text stream standing in for stdin (tests, embedding)
            state = sys.stdin.read()
        else:
            data = buffer.read()
            try:
                state = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InvalidRequestError(
                    f"the goal state on stdin is not UTF-8 text (byte "
                    f"{data[exc.start : exc.start + 1]!r} at offset {exc.start}); pipe in the "
                    "goal text as UTF-8"
                ) from None
    check_input(state, "the goal state")
    if not state.strip():
        raise ModelError("the goal state is empty; pass the goal text, or - and pipe it in")
    return state


def check_input(text: str, what: str) -> None:
    """:func:`~lean_dojo_v2.interaction.base.check_text` with a command-line hint: an argument
    with bytes that are not UTF-8 arrives as lone surrogates (Python's ``surrogateescape``)."""
    from ..interaction.base import check_text
    from ..interaction.types import InvalidRequestError

    try:
        check_text(text, what)
    except InvalidRequestError:
        bad = next(i for i, ch in enumerate(text) if "\ud800" <= ch <= "\udfff")
        raise InvalidRequestError(
            f"{what} is not valid text (a lone surrogate {text[bad]!r} at index {bad}, e.g. "
            "from bytes that are not UTF-8); pass UTF-8 text"
        ) from None


def _prompt_inputs(gen: HFTacticGenerator, state: str, prefix: str | None) -> BatchEncoding:
    """The tokenised prompt of ``state``, as decoding builds it, on the model's device."""
    from .prompts import add_special_tokens_for

    return gen.tokenizer(
        gen.prompts([state], prefix),
        return_tensors="pt",
        add_special_tokens=add_special_tokens_for(gen.style),
    ).to(gen.loaded.device)


def check_prompt_fits(
    gen: HFTacticGenerator, state: str, prefix: str | None, max_new_tokens: int
) -> None:
    """Raise :class:`~lean_dojo_v2.errors.ModelError` when the prompt of ``state`` plus
    ``max_new_tokens`` is longer than the causal model's context (``max_position_embeddings``):
    past it a model decodes garbage, or fails deep inside, after a long wait. Models without
    that limit (ByT5's relative positions) are not checked."""
    from ..errors import ModelError

    limit = getattr(getattr(gen.model, "config", None), "max_position_embeddings", None)
    if gen.loaded.kind != "causal" or not isinstance(limit, int):
        return
    length = int(_prompt_inputs(gen, state, prefix)["input_ids"].shape[1])
    if length + max_new_tokens > limit:
        raise ModelError(
            f"the prompt of this goal state is {length:,} tokens and --max-new-tokens "
            f"{max_new_tokens:,} more; model {gen.loaded.source} reads at most {limit:,}: "
            "shorten the state or lower --max-new-tokens"
        )


def check_finite_logits(gen: HFTacticGenerator, state: str, prefix: str | None) -> None:
    """Raise :class:`~lean_dojo_v2.errors.ModelError` naming the model when its logits for the
    next token after ``state``'s prompt are not all finite: its weights hold NaN or inf (a
    training run that diverged). Such a model samples nothing (torch refuses NaN probabilities)
    and decodes NaN scores that clean-up drops, so ``generate`` would print no candidates.

    One forward pass over the prompt, with only the last position's logits computed where the
    model allows: the same work as the prefill of decoding, far below loading a model (a NaN
    in a weight the prompt does not touch, such as another token's embedding row, is not seen
    here; checking every parameter would read the whole model once more)."""
    import torch

    from ..errors import ModelError

    loaded, model = gen.loaded, gen.model
    enc = _prompt_inputs(gen, state, prefix)
    kwargs: dict[str, object] = {}
    if loaded.kind == "seq2seq":
        first = gen.decoder_start_id()
        kwargs["decoder_input_ids"] = torch.full((1, 1), first, device=loaded.device)
    elif gen.takes_logits_to_keep():
        kwargs["logits_to_keep"] = 1
    with torch.inference_mode():
        logits = model(**enc, **kwargs).logits[:, -1]
    if not bool(torch.isfinite(logits).all()):
        raise ModelError(
            f"model {loaded.source} gives NaN or infinite scores: its weights hold NaN or inf "
            "(e.g. a training run that diverged); load another checkpoint or retrain"
        )


def cmd_generate(args: argparse.Namespace) -> int:
    from .generator import HFTacticGenerator

    state = read_state(args.state)
    if args.prefix is not None:
        check_input(args.prefix, "--prefix")
    gen = HFTacticGenerator(
        args.model,
        adapter=args.adapter,
        device=args.device,
        strategy=args.strategy,
        temperature=args.temperature,
        max_new_tokens=args.max_new_tokens,
        seed=args.seed,
    )
    check_prompt_fits(gen, state, args.prefix, args.max_new_tokens)
    check_finite_logits(gen, state, args.prefix)
    candidates = gen.generate([state], args.num_samples, prefix=args.prefix)[0]
    if args.json:
        print(json.dumps([{"tactic": c.tactic, "logprob": c.logprob} for c in candidates]))
        return 0
    if not candidates:
        print("(no candidates: every sample was empty, sorry/admit, or a duplicate)")
    for c in candidates:
        print(f"{c.logprob:10.3f}  {c.tactic}")
    return 0
