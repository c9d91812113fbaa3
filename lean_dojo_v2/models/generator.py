"""The ``TacticGenerator`` contract and its Hugging Face implementations.

:class:`TacticGenerator` is the one way the rest of the library asks a model for tactics:
``generate(states, num_samples, prefix=None)`` returns, for each goal state, up to
``num_samples`` distinct :class:`Candidate` s (tactic text and log-probability), best first.

:class:`HFTacticGenerator` implements it for causal LMs (SmolLM2, DeepSeek-Prover, BFS-Prover)
and seq2seq models (ReProver's ByT5) loaded by :func:`~lean_dojo_v2.models.load_model`:

* **Batching.** Up to ``batch_size`` states are decoded together, each expanded to
  ``num_samples`` sequences; causal prompts are padded on the left and encoder inputs on the
  right, whatever the tokenizer's ``padding_side`` (it is not changed). Sampling and greedy decoding
  of causal LMs use :func:`~lean_dojo_v2.models.decoding.decode_causal` (prompt run once per
  state, finished sequences leave the batch, preallocated KV cache); beam search and seq2seq
  models use ``model.generate``.
* **Decoding.** ``strategy="sample"`` (temperature / top-p, transformers' own warpers),
  ``"beam"`` (beam search, ``num_beams >= num_samples``), ``"greedy"`` (one candidate).
* **Where a tactic ends.** At the end marker of the prompt format (EOS / ``<|im_end|>``,
  :func:`~lean_dojo_v2.models.prompts.end_marker`), or at the first line break that is not
  followed by a continuation line (:func:`tactic_end`). Multi-line tactics are kept whole: a line
  that starts with white space or ``|`` continues the tactic (``induction n with`` followed by its
  indented ``| zero => …`` alternatives), as they appear in traced data and therefore in training
  completions; anything else after a line break (a new tactic, prose) ends it. Decoding stops each
  sequence as soon as its tactic has ended; the text is cut there too.
* **Scores.** ``logprob`` is the sum of the model's own log-probabilities (temperature 1, before
  any warper) of the generated tokens kept: the tactic's tokens and the token that ended it (the
  end marker, or the token holding the line break), so that a tactic is scored as "this text, then
  stop". A sequence cut by ``max_new_tokens`` is scored on all its tokens. A ``prefix`` is given,
  not generated: it is not scored.
* **Clean-up.** Leading/trailing white space stripped; empty tactics and tactics using ``sorry``
  or ``admit`` dropped; duplicates merged (best score kept); sorted by log-prob, best first.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import os
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from ..errors import ModelError
from .candidates import clean_candidates
from .candidates import is_forbidden as is_forbidden  # its public home before candidates.py
from .loading import LoadedModel, load_model
from .prompts import add_special_tokens_for, end_marker, prompt_style, render_prompt

if TYPE_CHECKING:  # pragma: no cover
    import torch
    from peft import PeftModel
    from transformers import BatchEncoding, PreTrainedModel, PreTrainedTokenizerBase

    from ..data.model import Theorem

log = logging.getLogger(__name__)

STRATEGIES = ("sample", "beam", "greedy")


@dataclass(frozen=True)
class Candidate:
    """One proposed tactic and the model's log-probability of it (higher is better)."""

    tactic: str
    logprob: float


@dataclass(frozen=True)
class Sample:
    """One decoded sequence before clean-up (:meth:`HFTacticGenerator.samples`): its tactic text
    (``prefix`` included, cut where the tactic ends), the summed log-prob of its kept tokens, the
    tokens generated (up to and including the one that ended it), and whether
    ``max_new_tokens`` cut it before its tactic ended."""

    text: str
    logprob: float
    tokens: int
    truncated: bool


@dataclass(frozen=True)
class GeneratorUsage:
    """What a generator has used: ``calls`` (model calls: a batched decode, an HTTP request),
    ``tokens_in`` (prompt tokens read), ``tokens_out`` (tokens generated, each sequence up to and
    including the token that ended it), ``seconds`` (wall time inside those calls) and
    ``gpu_seconds`` (the wall time of calls that ran on a CUDA device; 0 on a CPU or a remote
    server). Usages add and subtract: a search reads the difference around its calls."""

    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
    gpu_seconds: float = 0.0

    def __add__(self, other: GeneratorUsage) -> GeneratorUsage:
        return GeneratorUsage(
            self.calls + other.calls,
            self.tokens_in + other.tokens_in,
            self.tokens_out + other.tokens_out,
            self.seconds + other.seconds,
            self.gpu_seconds + other.gpu_seconds,
        )

    def __sub__(self, other: GeneratorUsage) -> GeneratorUsage:
        return GeneratorUsage(
            self.calls - other.calls,
            self.tokens_in - other.tokens_in,
            self.tokens_out - other.tokens_out,
            self.seconds - other.seconds,
            self.gpu_seconds - other.gpu_seconds,
        )

    def to_dict(self) -> dict[str, int | float]:
        return {
            "calls": self.calls,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "seconds": round(self.seconds, 6),
            "gpu_seconds": round(self.gpu_seconds, 6),
        }


class UsageMeter:
    """A running :class:`GeneratorUsage` that several threads add to (a prover's concurrent
    requests); a copy sent to a worker process starts from the count it had."""

    def __init__(self) -> None:
        self._total = GeneratorUsage()
        self._lock = threading.Lock()

    def add(
        self,
        *,
        tokens_in: int = 0,
        tokens_out: int = 0,
        seconds: float = 0.0,
        gpu_seconds: float = 0.0,
        calls: int = 1,
    ) -> None:
        part = GeneratorUsage(calls, tokens_in, tokens_out, seconds, gpu_seconds)
        with self._lock:
            self._total = self._total + part

    def total(self) -> GeneratorUsage:
        with self._lock:
            return self._total

    def __getstate__(self) -> dict[str, object]:
        return {"_total": self.total()}

    def __setstate__(self, state: dict[str, object]) -> None:
        total = state.get("_total")
        self._total = total if isinstance(total, GeneratorUsage) else GeneratorUsage()
        self._lock = threading.Lock()


@dataclass(frozen=True)
class Completion:
    """One sampled answer as the model wrote it (a whole-proof request's answer, before the
    proof is taken out of it): ``text`` (``""`` when the model wrote nothing), the sum of its
    tokens' log-probs when known, and the tokens generated when known."""

    text: str
    logprob: float | None = None
    tokens_out: int | None = None


class TacticGenerator(ABC):
    """Proposes tactics for goal states."""

    def usage(self) -> GeneratorUsage:
        """What this generator has used so far (:class:`GeneratorUsage`); the searches record
        the difference around their calls in each attempt. The library's generators count; this
        default reports nothing used (a generator that does not count)."""
        return GeneratorUsage()

    @abstractmethod
    def generate(
        self, states: list[str], num_samples: int, *, prefix: str | None = None
    ) -> list[list[Candidate]]:
        """For each state, at most ``num_samples`` distinct candidates (no ``sorry``/``admit``),
        sorted by log-prob, best first; each tactic starts with ``prefix`` when one is given."""

    def generate_one(
        self, state: str, num_samples: int, *, prefix: str | None = None
    ) -> list[Candidate]:
        """:meth:`generate` for a single state."""
        return self.generate([state], num_samples, prefix=prefix)[0]

    def for_theorem(self, theorem: Theorem) -> TacticGenerator:
        """The generator to use while proving ``theorem`` (a :class:`~lean_dojo_v2.data.Theorem`).

        Search calls this once per theorem before asking for tactics. Most generators ignore the
        theorem and return themselves; one that needs its context (a retrieval-augmented prover
        ranks only the premises accessible at the theorem's position) returns a bound copy.
        """
        return self


def check_generate_args(states: object, num_samples: object, prefix: object) -> None:
    """Raise :class:`ModelError` unless ``states`` is a list of str, ``num_samples`` an int >= 1
    and ``prefix`` None or a str; shared by every implementation."""
    if isinstance(states, str) or not isinstance(states, Sequence):
        raise ModelError(
            f"states must be a list of goal-state strings, not {type(states).__name__}"
        )
    bad = [i for i, s in enumerate(states) if not isinstance(s, str)]
    if bad:
        raise ModelError(f"states[{bad[0]}] is a {type(states[bad[0]]).__name__}, not a str")
    if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples < 1:
        raise ModelError(f"num_samples must be a whole number >= 1, got {num_samples!r}")
    if prefix is not None and not isinstance(prefix, str):
        raise ModelError(f"prefix must be a str or None, not {type(prefix).__name__}")


def tactic_end(text: str, final: bool = False) -> int | None:
    """Index of the line break that ends the tactic in ``text`` (generated text, leading white
    space already removed), or None when it has not ended yet.

    A line break ends the tactic unless the next line starts with white space or ``|``
    (a continuation); a blank line always ends it. A trailing line break ends it only when
    ``final`` (no more text is coming)."""
    i = text.find("\n")
    while i != -1:
        if i + 1 >= len(text):
            return i if final else None
        nxt = text[i + 1]
        if nxt not in " \t|":
            return i
        j = text.find("\n", i + 1)
        if j != -1 and not text[i + 1 : j].strip():
            return i  # a line of white space only
        i = j
    return None


def finalize(
    raw: Sequence[tuple[str, float]], num_samples: int, prefix: str | None = None
) -> list[Candidate]:
    """Clean ``(tactic, logprob)`` pairs of one state into the contract's candidate list
    (:func:`~lean_dojo_v2.models.candidates.clean_candidates` with its strict defaults: exact
    text as the duplicate key, ``sorry``/``admit`` and non-finite scores dropped)."""
    return clean_candidates(
        (Candidate(((prefix or "") + text).strip(), float(lp)) for text, lp in raw), num_samples
    )


# --------------------------------------------------------------------------- HF implementation


def _decoded_text(tokenizer: PreTrainedTokenizerBase, ids: list[int] | torch.Tensor) -> str:
    """The text of one generated sequence, special tokens left out."""
    # decode() gives a list only for a batch of sequences; one sequence is one str.
    return cast(str, tokenizer.decode(ids, skip_special_tokens=True))


@functools.cache
def _logits_tools():  # returns the two classes it defines: no annotation can name them
    """Classes built on transformers' base classes, defined on first use (no import-time torch)."""
    import torch
    from transformers import LogitsProcessor, StoppingCriteria

    class LogprobRecorder(LogitsProcessor):
        """First in the processor list: sees the raw logits of each step and records the
        log-probability of the token chosen at the step before (one ``(rows, vocab)`` buffer)."""

        def __init__(self) -> None:
            self.prev: torch.Tensor | None = None
            self.steps: list[torch.Tensor] = []

        def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor):
            if self.prev is not None:
                self.steps.append(self.prev.gather(1, input_ids[:, -1:]).squeeze(1))
            self.prev = torch.log_softmax(scores.float(), dim=-1)
            return scores

        def token_logprobs(self, sequences: torch.Tensor, generated: int) -> torch.Tensor:
            steps = list(self.steps)
            if self.prev is not None and len(steps) < generated:
                steps.append(self.prev.gather(1, sequences[:, -1:]).squeeze(1))
            if not steps:
                return torch.zeros(sequences.shape[0], 0)
            return torch.stack(steps[:generated], dim=1).cpu()

    class TacticStop(StoppingCriteria):
        """Marks a sequence done once its generated text holds a whole tactic (see
        :func:`tactic_end`). Only rows whose text has a line break are decoded."""

        def __init__(
            self, tokenizer: PreTrainedTokenizerBase, start: int, prefix: str = ""
        ) -> None:
            self.tokenizer = tokenizer
            self.start = start
            self.prefix = prefix
            self._has_newline: dict[int, bool] = {}
            self._seen: torch.Tensor | None = None

        def _newline(self, token_id: int) -> bool:
            found = self._has_newline.get(token_id)
            if found is None:
                found = "\n" in self.tokenizer.decode([token_id])
                self._has_newline[token_id] = found
            return found

        def __call__(
            self, input_ids: torch.LongTensor, scores: torch.FloatTensor, **kwargs: object
        ):
            rows = input_ids.shape[0]
            if self._seen is None or self._seen.shape[0] != rows:
                self._seen = torch.zeros(rows, dtype=torch.bool)
            last = input_ids[:, -1].tolist()
            done = torch.zeros(rows, dtype=torch.bool)
            for r in range(rows):
                if not self._seen[r] and self._newline(last[r]):
                    self._seen[r] = True
                if self._seen[r]:
                    text = _decoded_text(self.tokenizer, input_ids[r, self.start :])
                    text = (self.prefix + text).lstrip()
                    done[r] = tactic_end(text) is not None
            return done.to(input_ids.device)

    return LogprobRecorder, TacticStop


class HFTacticGenerator(TacticGenerator):
    """:class:`TacticGenerator` over a Hugging Face causal or seq2seq model.

    ``model``: a :class:`LoadedModel`, or anything :func:`load_model` takes (None = the default
    SmolLM2). ``strategy``: ``"sample"``, ``"beam"`` or ``"greedy"``. ``temperature``/``top_p``:
    sampling only. ``num_beams``: beam width (at least ``num_samples``; default ``num_samples``).
    ``max_new_tokens``: the longest tactic, in tokens. ``batch_size``: states per ``generate``
    call (each expanded to ``num_samples`` sequences). ``seed``: reproducible sampling (each
    batch draws from a ``torch.Generator`` seeded with it; torch's global RNG is left alone;
    None: the global RNG). ``device``/``dtype``/``adapter``: passed to :func:`load_model`.
    ``share_prompt_cache``: when sampling several candidates of a causal LM, compute each prompt
    once and copy its KV cache to the samples (the same result as expanding the prompts first,
    which ``False`` does).
    """

    def __init__(
        self,
        model: LoadedModel | str | os.PathLike[str] | None = None,
        *,
        strategy: str = "sample",
        temperature: float = 0.8,
        top_p: float = 0.95,
        num_beams: int | None = None,
        max_new_tokens: int = 64,
        batch_size: int = 16,
        seed: int | None = None,
        device: str = "auto",
        dtype: str = "auto",
        adapter: str | None = None,
        share_prompt_cache: bool = True,
    ) -> None:
        if strategy not in STRATEGIES:
            raise ModelError(f"unknown strategy {strategy!r}; valid: {', '.join(STRATEGIES)}")
        if not (temperature > 0 and math.isfinite(temperature)):
            raise ModelError(f"temperature must be > 0, got {temperature!r}")
        if not 0 < top_p <= 1:
            raise ModelError(f"top_p must be in (0, 1], got {top_p!r}")
        if max_new_tokens < 1 or batch_size < 1:
            raise ModelError("max_new_tokens and batch_size must be >= 1")
        if not isinstance(model, LoadedModel):
            model = load_model(model, device=device, dtype=dtype, adapter=adapter)
        self.loaded = model
        self.strategy = strategy
        self.temperature = float(temperature)
        self.top_p = float(top_p)
        self.num_beams = num_beams
        self.max_new_tokens = int(max_new_tokens)
        self.batch_size = int(batch_size)
        self.seed = seed
        self.share_prompt_cache = share_prompt_cache
        self.tokens_generated = 0
        """Tokens generated so far (each sequence up to and including its end token)."""
        self.meter = UsageMeter()
        """Every decode's :class:`GeneratorUsage` (:meth:`usage`)."""
        tok = model.tokenizer
        self.style = "state" if model.kind == "seq2seq" else prompt_style(tok)
        self._stop_ids = self._stop_token_ids()
        self._newline_tokens: dict[int, bool] = {}

    @property
    def model(self) -> PreTrainedModel | PeftModel:
        return self.loaded.model

    def usage(self) -> GeneratorUsage:
        """Every decode so far: prompt tokens (padding left out), generated tokens, seconds, and
        GPU seconds on a CUDA device."""
        return self.meter.total()

    @property
    def tokenizer(self) -> PreTrainedTokenizerBase:
        return self.loaded.tokenizer

    def _stop_token_ids(self) -> list[int]:
        tok, ids = self.tokenizer, []
        gen_eos = getattr(getattr(self.model, "generation_config", None), "eos_token_id", None)
        for value in (gen_eos, tok.eos_token_id):
            if isinstance(value, int):
                ids.append(value)
            elif isinstance(value, (list, tuple)):
                ids.extend(v for v in value if isinstance(v, int))
        marker = end_marker(tok, self.style)
        if marker:
            marker_ids = tok.encode(marker, add_special_tokens=False)
            if len(marker_ids) == 1:
                ids.append(marker_ids[0])
        return sorted(set(ids))

    def prompts(self, states: Sequence[str], prefix: str | None = None) -> list[str]:
        """The exact model input of each state (:func:`render_prompt`, then ``prefix``)."""
        rendered = [render_prompt(self.tokenizer, s, style=self.style) for s in states]
        if prefix and self.loaded.kind == "causal":
            rendered = [p + prefix for p in rendered]
        return rendered

    def generate(
        self, states: list[str], num_samples: int, *, prefix: str | None = None
    ) -> list[list[Candidate]]:
        return [
            finalize([(s.text, s.logprob) for s in rows], num_samples)
            for rows in self.samples(states, num_samples, prefix=prefix)
        ]

    def samples(
        self, states: list[str], num_samples: int, *, prefix: str | None = None
    ) -> list[list[Sample]]:
        """For each state its decoded sequences as they came, before :meth:`generate`'s clean-up
        (duplicates, empty and ``sorry`` tactics included): ``num_samples`` of them (one with
        ``strategy="greedy"``), each with its token count and whether ``max_new_tokens`` cut it."""
        check_generate_args(states, num_samples, prefix)
        out: list[list[Sample]] = []
        for i in range(0, len(states), self.batch_size):
            out.extend(
                self._sample_batch(list(states[i : i + self.batch_size]), num_samples, prefix)
            )
        return out

    # ..................................................................... one batch

    def _sample_batch(
        self, states: list[str], num_samples: int, prefix: str | None
    ) -> list[list[Sample]]:
        n = 1 if self.strategy == "greedy" else num_samples
        rows_ids, rows_lp = self._decode_rows(states, n, prefix)
        tok = self.tokenizer
        ends = set(self._stop_ids) | {tok.pad_token_id}
        per_state: list[list[Sample]] = [[] for _ in states]
        for row, ids in enumerate(rows_ids):
            text, kept = self._cut(ids, prefix or "")
            lp = math.fsum(rows_lp[row][:kept]) if kept else 0.0
            tokens = next((i + 1 for i, t in enumerate(ids) if t in ends), len(ids))
            # Cut by the limit: no end token, and the text so far holds no whole tactic.
            truncated = (
                tokens >= self.max_new_tokens
                and ids[tokens - 1] not in ends
                and tactic_end(
                    ((prefix or "") + _decoded_text(tok, ids[:tokens])).lstrip(),
                    final=True,
                )
                is None
            )
            self.tokens_generated += tokens
            per_state[row // n].append(Sample(text, lp, tokens, truncated))
        return per_state

    @property
    def stop_ids(self) -> list[int]:
        """The token ids that end a generated sequence (EOS ids and a one-token end marker)."""
        return list(self._stop_ids)

    def decode_rows(
        self,
        states: list[str],
        n: int,
        prefix: str | None = None,
        *,
        max_new_tokens: int | None = None,
        until_tactic_end: bool = True,
    ) -> tuple[list[list[int]], list[list[float]]]:
        """Decode ``n`` sequences per state: per sequence (state-major), the generated token ids
        (after the prompt, or after the forced decoder prefix) and each one's log-probability
        (temperature 1). A sequence ends at a stop token (:attr:`stop_ids`), after
        ``max_new_tokens`` (default: the generator's), and with ``until_tactic_end`` once its text
        holds a whole tactic (``False``: e.g. a whole proof ending at the end marker)."""
        return self._decode_rows(
            states, n, prefix, max_new_tokens=max_new_tokens, until_tactic_end=until_tactic_end
        )

    def _decode_rows(
        self,
        states: list[str],
        n: int,
        prefix: str | None,
        *,
        max_new_tokens: int | None = None,
        until_tactic_end: bool = True,
    ) -> tuple[list[list[int]], list[list[float]]]:
        """See :meth:`decode_rows`."""
        tok = self.tokenizer
        causal = self.loaded.kind == "causal"
        # Causal decoding reads each row's last position as its newest token, so prompts are
        # padded on the left whatever the tokenizer says (it is shared: SFTTrainer sets right
        # padding on it for training). Encoders are padded on the right, where models with
        # absolute positions (BART) expect the text to start; the attention mask does the rest.
        enc = tok(
            self.prompts(states, prefix),
            return_tensors="pt",
            padding=True,
            padding_side="left" if causal else "right",
            add_special_tokens=add_special_tokens_for(self.style),
        ).to(self.loaded.device)
        limit = self.max_new_tokens if max_new_tokens is None else int(max_new_tokens)
        start = time.perf_counter()
        rows = self._decode_encoded(enc, states, n, prefix, limit, until_tactic_end)
        self._count(enc, rows[0], start)
        return rows

    def _count(self, enc: BatchEncoding, rows: list[list[int]], start: float) -> None:
        """Add one decode to :attr:`meter`: prompt tokens, generated tokens up to each row's
        end token, and its time (waiting for the device to finish on CUDA)."""
        import torch

        on_cuda = torch.device(self.loaded.device).type == "cuda"
        if on_cuda:
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        ends = set(self._stop_ids) | {self.tokenizer.pad_token_id}
        out = sum(next((i + 1 for i, t in enumerate(r) if t in ends), len(r)) for r in rows)
        self.meter.add(
            tokens_in=int(enc["attention_mask"].sum()),
            tokens_out=out,
            seconds=seconds,
            gpu_seconds=seconds if on_cuda else 0.0,
        )

    def _decode_encoded(
        self,
        enc: BatchEncoding,
        states: list[str],
        n: int,
        prefix: str | None,
        limit: int,
        until_tactic_end: bool,
    ) -> tuple[list[list[int]], list[list[float]]]:
        """The decode of :meth:`decode_rows` on the encoded prompts ``enc``."""
        import torch

        causal = self.loaded.kind == "causal"
        if causal and self.strategy != "beam":
            from .decoding import decode_causal

            finished = (
                self._tactic_done(len(states) * n, prefix or "") if until_tactic_end else None
            )
            with torch.inference_mode():
                return decode_causal(
                    self.model,
                    enc["input_ids"],
                    enc["attention_mask"],
                    num_samples=n,
                    max_new_tokens=limit,
                    stop_ids=self._stop_ids,
                    greedy=self.strategy == "greedy",
                    temperature=self.temperature,
                    top_p=self.top_p,
                    finished=finished,
                    share_prompt=self.share_prompt_cache,
                    logits_to_keep=self.takes_logits_to_keep(),
                    generator=self._rng(),
                )
        with self._seeded():
            return self._generate_rows(enc, len(states), n, prefix, limit, until_tactic_end)

    def _rng(self) -> torch.Generator | None:
        """A ``torch.Generator`` on the model's device, seeded with :attr:`seed`, made afresh for
        each batch (the same states give the same samples), or None without a seed (torch's
        global RNG, as transformers' ``generate``). Seeding a generator of our own leaves the
        caller's global random state as it was."""
        import torch

        if self.seed is None:
            return None
        rng = torch.Generator(device=self.loaded.device)
        rng.manual_seed(self.seed)
        return rng

    @contextlib.contextmanager
    def _seeded(self) -> Iterator[None]:
        """A context for ``model.generate``, which draws from torch's global RNG: with a
        :attr:`seed`, the global state is seeded inside and restored on the way out."""
        import torch

        if self.seed is None:
            yield
            return
        device = torch.device(self.loaded.device)
        index = device.index
        if index is None and device.type == "cuda":
            index = torch.cuda.current_device()
        devices = [] if device.type == "cpu" or index is None else [index]
        device_type = "cuda" if device.type == "cpu" else device.type
        with torch.random.fork_rng(devices=devices, device_type=device_type):
            torch.manual_seed(self.seed)
            yield

    def _tactic_done(self, rows: int, prefix: str):
        """``finished(row, ids)`` for :func:`decode_causal`: whether the generated ``ids`` of a
        row hold a whole tactic (see :func:`tactic_end`); only rows that have produced a line
        break are decoded."""
        tok, newline, seen = self.tokenizer, self._newline_tokens, [False] * rows

        def finished(row: int, ids: list[int]) -> bool:
            if not seen[row]:
                last = ids[-1]
                has = newline.get(last)
                if has is None:
                    has = newline[last] = "\n" in tok.decode([last])
                if not has:
                    return False
                seen[row] = True
            text = (prefix + _decoded_text(tok, ids)).lstrip()
            return tactic_end(text) is not None

        return finished

    def decoder_start_id(self) -> int:
        """The token a seq2seq model's decoder starts from (its generation config's, else its
        model config's)."""
        model = self.model
        first = model.generation_config.decoder_start_token_id
        if first is None:
            first = model.config.decoder_start_token_id
        return int(first)

    def takes_logits_to_keep(self) -> bool:
        """Whether the model's forward takes ``logits_to_keep`` (skip the LM head on the prompt)."""
        import inspect

        model = self.model
        get_base = getattr(model, "get_base_model", None)  # a PEFT wrapper: its base's forward
        base = get_base() if get_base is not None else model
        try:
            return "logits_to_keep" in inspect.signature(base.forward).parameters
        except (TypeError, ValueError):  # pragma: no cover - exotic forward
            return False

    def _generate_rows(
        self,
        enc: BatchEncoding,
        num_states: int,
        n: int,
        prefix: str | None,
        max_new_tokens: int,
        until_tactic_end: bool = True,
    ) -> tuple[list[list[int]], list[list[float]]]:
        """Beam search, and every strategy of seq2seq models, through ``model.generate``."""
        import torch

        LogprobRecorder, TacticStop = _logits_tools()
        tok = self.tokenizer
        # What generate() returns follows its keyword arguments (return_dict_in_generate), which
        # no annotation of the model can say.
        model: Any = self.model
        device = self.loaded.device
        seq2seq = self.loaded.kind == "seq2seq"
        kwargs: dict[str, Any] = dict(
            input_ids=enc["input_ids"],
            attention_mask=enc["attention_mask"],
            max_new_tokens=max_new_tokens,
            num_return_sequences=n,
            eos_token_id=self._stop_ids or None,
            pad_token_id=tok.pad_token_id,
            return_dict_in_generate=True,
            # Neutral defaults: a model's generation_config (top_k=50, repetition penalty, ...)
            # must not change what is sampled behind our back.
            top_k=None,
            repetition_penalty=None,
        )
        start = 0 if seq2seq else enc["input_ids"].shape[1]
        if seq2seq:
            start = 1
            if prefix:
                dec = tok(prefix, add_special_tokens=False, return_tensors="pt")["input_ids"]
                dec = torch.cat([torch.full((1, 1), self.decoder_start_id()), dec], dim=1)
                kwargs["decoder_input_ids"] = dec.expand(num_states, -1).to(device)
                start = dec.shape[1]
        recorder = None
        if self.strategy == "beam":
            beams = max(self.num_beams or n, n)
            kwargs.update(do_sample=False, num_beams=beams, output_scores=True)
            kwargs.update(temperature=None, top_p=None)
        else:
            from transformers import (
                LogitsProcessorList,
                StoppingCriteriaList,
                TemperatureLogitsWarper,
                TopPLogitsWarper,
            )

            recorder = LogprobRecorder()
            processors = [recorder]
            sample = self.strategy == "sample"
            if sample and self.temperature != 1.0:
                processors.append(TemperatureLogitsWarper(self.temperature))
            if sample and self.top_p < 1.0:
                processors.append(TopPLogitsWarper(self.top_p))
            kwargs.update(
                do_sample=sample,
                num_beams=1,
                temperature=None,
                top_p=None,
                logits_processor=LogitsProcessorList(processors),
            )
            if until_tactic_end:
                stop = TacticStop(tok, start, prefix or "")
                kwargs["stopping_criteria"] = StoppingCriteriaList([stop])
        with torch.inference_mode():
            result = model.generate(**kwargs)
        sequences = result.sequences
        generated = sequences.shape[1] - start
        if recorder is not None:
            token_lp = recorder.token_logprobs(sequences, generated)
        else:
            token_lp = model.compute_transition_scores(
                sequences, result.scores, result.beam_indices, normalize_logits=False
            ).cpu()
            token_lp = token_lp[:, -generated:] if generated else token_lp[:, :0]
        return sequences[:, start:].cpu().tolist(), token_lp.double().tolist()

    def _cut(self, ids: list[int], prefix: str = "") -> tuple[str, int]:
        """The tactic text (``prefix`` + generated text, cut where the tactic ends) of one
        generated sequence, and how many of its tokens are kept (scored)."""
        tok, stops = self.tokenizer, set(self._stop_ids)
        end = next((i for i, t in enumerate(ids) if t in stops), None)
        body = ids if end is None else ids[:end]
        full = prefix + _decoded_text(tok, body)
        stripped = full.lstrip()
        cut = tactic_end(stripped, final=True)
        if cut is None:
            return stripped, len(ids) if end is None else end + 1
        lead = len(full) - len(stripped)
        newlines = full[: lead + cut + 1].count("\n") - prefix.count("\n")
        if newlines <= 0:
            return stripped[:cut], 0
        for k in range(1, len(body) + 1):
            if _decoded_text(tok, body[:k]).count("\n") >= newlines:
                return stripped[:cut], k
        return stripped[:cut], len(body)  # pragma: no cover - the text came from these tokens


def load_generator(
    name_or_path: str | os.PathLike[str] | None = None, **kwargs: Any
) -> HFTacticGenerator:
    """An :class:`HFTacticGenerator` for ``name_or_path`` (see :func:`load_model`); ``kwargs``
    are the generator's and :func:`load_model`'s keyword arguments."""
    return HFTacticGenerator(name_or_path, **kwargs)
