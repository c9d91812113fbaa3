"""Layer 4 (external_api): what a served model is: the three roles and the local kinds.

Three roles, one small contract each; every method here is blocking and is called from a worker
thread, never on the event loop:

- :class:`GeneratorModel`: ``generate(states, num_samples, prefix, options)`` → per state the
  :class:`~lean_dojo_v2.models.generator.Candidate` s, best first (the ``TacticGenerator``
  contract, plus per-request ``options``); ``completions(states, n, prefix, options)`` → per
  state exactly ``n`` :class:`Completion` s, repeats included (a chat's choices); ``chat(messages,
  n, options)`` → completion texts with their summed log-probs (``None`` when unknown), for models
  that read the messages themselves; ``token_counts(states, prefix, options)`` → the prompt sizes
  and context length the server checks before a model sees a request (None: the model does not
  count tokens). Implemented by :class:`HFGenerator` (a local HF or GGUF model, LoRA adapters
  included), :class:`ConstantGenerator` (a fixed answer, for load tests) and the upstream
  adapters of :mod:`.adapters`.
- :class:`EncoderModel`: ``encode(texts)`` → L2-normalised float32 rows (:class:`LocalEncoder`).
- :class:`RetrieverModel`: an exported retriever (``export_retriever``): ``encode`` plus its
  :class:`~lean_dojo_v2.models.premise_index.PremiseIndex` (:class:`ExportedRetriever`).

:class:`~lean_dojo_v2.external_api.registry.ModelRegistry` builds them from a config. Weights
load on first use (or at start with ``preload``), once, under a lock.
"""

from __future__ import annotations

import contextlib
import threading
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ..models.generator import Candidate
from .errors import APIServerError, ModelLoadError, ModelRegistryError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from ..models.generator import HFTacticGenerator
    from ..models.premise_index import DenseRetriever, PremiseIndex
    from ..models.retrieval import PremiseEncoder


@dataclass(frozen=True)
class GenOptions:
    """Per-request decoding settings; ``None`` keeps the model's own. Requests with equal
    options (and equal ``num_samples`` and ``prefix``) may share one ``generate`` call."""

    temperature: float | None = None
    max_tokens: int | None = None


@dataclass(frozen=True)
class Completion:
    """One choice of a chat completion: its text, summed log-prob (None: unknown), the tokens
    generated for it (0: not counted) and OpenAI's ``finish_reason``: ``"length"`` when the token
    limit cut it, else ``"stop"``."""

    text: str
    logprob: float | None
    tokens: int = 0
    finish_reason: str = "stop"


@dataclass(frozen=True)
class ChatAnswer:
    """The ``n`` choices of one chat with its usage as the model counted it: the prompt's
    tokens, and the tokens of all choices together when the model reports only that total
    (None: the sum of the choices' ``tokens``). 0 means not counted."""

    choices: list[Completion]
    prompt_tokens: int = 0
    completion_tokens: int | None = None


@dataclass(frozen=True)
class TokenCounts:
    """What decoding some states takes, in the model's tokens: each state's prompt as the model
    sees it, the most tokens generated per sequence, the model's context length (None: none
    known), and whether generated tokens share that context with the prompt (a decoder-only
    model; an encoder-decoder's limit is on its input alone)."""

    prompts: list[int]
    max_new: int
    context: int | None
    shared_context: bool = True


class ServedModel:
    """One entry of the registry: ``name``, the ``spec`` it was built from, its ``role``."""

    role: ClassVar[str] = ""
    kind: ClassVar[str] = ""
    options: ClassVar[tuple[str, ...]] = ()
    """The option keys its spec may hold besides ``kind``."""
    batchable: ClassVar[bool] = True
    """Whether concurrent requests are worth merging into one call (a local model)."""
    concurrency: int = 1
    """How many calls of this model may run at once (1 for a local model)."""

    def __init__(self, name: str, spec: Mapping[str, Any]) -> None:
        unknown = sorted(set(spec) - {"kind", *self.options})
        if unknown:
            raise ModelRegistryError(
                f"model {name!r} (kind {self.kind!r}): unknown option {unknown[0]!r}; valid "
                f"options: {', '.join(self.options) or 'none'}"
            )
        self.name = name
        self.spec = dict(spec)
        self._loaded = False
        self._load_lock = threading.Lock()

    def load(self) -> None:
        """Load the weights (or open the connection); once, whoever calls first."""
        if self._loaded:
            return
        with self._load_lock:
            if not self._loaded:
                try:
                    self._load()
                except APIServerError:
                    raise
                except Exception as exc:
                    # The client (or `serve --preload`) gets which model and why in one line,
                    # not the loader's internals as a 500.
                    why = " ".join(str(exc).split()) or type(exc).__name__
                    raise ModelLoadError(
                        f"model {self.name!r} (kind {self.kind!r}) could not be loaded: {why}; "
                        "fix its entry in the server config and restart the server"
                    ) from exc
                self._loaded = True

    def _load(self) -> None:  # most kinds have nothing to load
        """Do the loading; called once by :meth:`load`."""

    @property
    def loaded(self) -> bool:
        return self._loaded

    def describe(self) -> dict[str, Any]:
        """What ``GET /models`` says of this model (no secrets)."""
        return {"name": self.name, "role": self.role, "kind": self.kind, "loaded": self.loaded}


class GeneratorModel(ServedModel, ABC):
    """A tactic generator (``/generate``, ``/v1/chat/completions``)."""

    role = "generator"
    default_num_samples: int | None = None

    @abstractmethod
    def generate(
        self,
        states: list[str],
        num_samples: int,
        prefix: str | None,
        options: GenOptions,
    ) -> list[list[Candidate]]:
        """For each state at most ``num_samples`` distinct candidates, best first."""

    def completions(
        self, states: list[str], n: int, prefix: str | None, options: GenOptions
    ) -> list[list[Completion]]:
        """For each state exactly ``n`` completions, repeats included (OpenAI's ``n`` choices).
        By default :meth:`generate`'s distinct candidates, repeated in turn up to ``n``."""
        out = []
        for cands in self.generate(states, n, prefix, options):
            texts = [Completion(c.tactic, c.logprob) for c in cands] or [Completion("", None)]
            out.append([texts[i % len(texts)] for i in range(n)])
        return out

    def chat(
        self, messages: Sequence[Mapping[str, str]], n: int, options: GenOptions
    ) -> ChatAnswer:
        """Exactly ``n`` completions of a chat, each with its summed log-prob (None: unknown),
        and the usage. By default the goal state is read from the last user turn
        (:func:`chat_state`) and answered with :meth:`completions`."""
        state, prefix = chat_state(messages)
        (done,) = self.completions([state], n, prefix, options)
        return ChatAnswer(list(done))

    def token_counts(
        self, states: list[str], prefix: str | None, options: GenOptions
    ) -> TokenCounts | None:
        """The token sizes of decoding ``states`` (checked against the context and the
        server's ``max_request_tokens`` before :meth:`generate`); None: this model does not
        count tokens."""
        return None


class EncoderModel(ServedModel, ABC):
    """A text encoder (``/encode``)."""

    role = "encoder"

    @abstractmethod
    def encode(self, texts: list[str]) -> np.ndarray:
        """float32 ``[len(texts), d]``, L2-normalised."""


class RetrieverModel(EncoderModel):
    """An exported retriever (``/retrieve``; ``/encode`` with its encoder)."""

    role = "retriever"
    modules: dict[str, str]
    """Lean module name → corpus file (loaded), for ``imported_modules``."""
    module_names: list[str]
    """``GET /indexed-modules``: an integer in ``imported_modules`` is a position in it."""
    premise_names: list[str]
    """``GET /indexed-premises``: the premise of each index row; an integer in
    ``local_premises`` is a row."""

    @property
    @abstractmethod
    def index(self) -> PremiseIndex:
        """The :class:`~lean_dojo_v2.models.premise_index.PremiseIndex` (loaded)."""

    def encode_premises(self, texts: list[str]) -> np.ndarray:
        """Embeddings of new premises' texts (:meth:`encode`, unless a kind caches them)."""
        return self.encode(texts)


# ----------------------------------------------------------------------------- chat → state

_PREMISES_HEAD = "Premises:\n"
_GOAL_HEAD = "\n\nGoal:\n"
_PREFIX_NOTE = "\n\nYour tactic must start with: "


def message_text(content: object) -> str:
    """The text of a chat message's ``content``: a string, or OpenAI's list of parts (the
    ``text`` of each ``{"type": "text"}`` part, joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and "text" in p
        )
    return ""


def chat_state(messages: Sequence[Mapping[str, Any]]) -> tuple[str, str | None]:
    """``(goal state, prefix)`` read from the last user turn of a chat: the goal after a
    ``Premises: ... Goal:`` block (:func:`~lean_dojo_v2.models.prompts.user_content`'s form; a
    local generator has no premise slot), and the prefix of ExternalProver's "Your tactic must
    start with: ..." note. Any other text is the state itself."""
    users = [m for m in messages if m.get("role") == "user"]
    text = message_text((users or list(messages) or [{}])[-1].get("content", ""))
    prefix = None
    head, sep, tail = text.rpartition(_PREFIX_NOTE)
    if sep and tail.strip() and "\n" not in tail.strip():
        text, prefix = head, tail  # as sent: "rw " keeps its space
    if text.startswith(_PREMISES_HEAD) and _GOAL_HEAD in text:
        text = text.split(_GOAL_HEAD, 1)[1]
    return text, prefix


# ----------------------------------------------------------------------------- local kinds


class HFGenerator(GeneratorModel):
    """A local Hugging Face (or GGUF) generator: :func:`~lean_dojo_v2.models.load_generator`."""

    kind = "hf"
    generator: HFTacticGenerator
    """The loaded generator (set by :meth:`load`)."""
    options = (
        "model",
        "adapter",
        "device",
        "dtype",
        "strategy",
        "temperature",
        "top_p",
        "max_new_tokens",
        "num_samples",
        "seed",
        "batch_size",
    )

    def __init__(self, name: str, spec: Mapping[str, Any], *, device: str = "auto") -> None:
        super().__init__(name, spec)
        self.default_num_samples = self.spec.get("num_samples")
        self._device = str(self.spec.get("device", device))
        self.calls = 0
        """``generate`` calls made on the model (tests compare it with the requests served)."""
        self._call_lock = threading.Lock()

    def _load(self) -> None:
        from ..models.generator import load_generator

        kwargs = {k: self.spec[k] for k in self.options if k in self.spec}
        kwargs.pop("num_samples", None)
        model = kwargs.pop("model", None)
        kwargs["device"] = self._device
        self.generator = load_generator(model, **kwargs)

    def generate(
        self, states: list[str], num_samples: int, prefix: str | None, options: GenOptions
    ) -> list[list[Candidate]]:
        with self._options(options) as gen:
            return gen.generate(list(states), num_samples, prefix=prefix or None)

    def completions(
        self, states: list[str], n: int, prefix: str | None, options: GenOptions
    ) -> list[list[Completion]]:
        with self._options(options) as gen:
            rows = gen.samples(list(states), n, prefix=prefix or None)
        out = []
        for samples in rows:
            done = [
                Completion(s.text.strip(), s.logprob, s.tokens, "length" if s.truncated else "stop")
                for s in samples
            ]
            out.append([done[i % len(done)] for i in range(n)])  # greedy: one decode, n copies
        return out

    def token_counts(
        self, states: list[str], prefix: str | None, options: GenOptions
    ) -> TokenCounts:
        from ..models.prompts import add_special_tokens_for

        self.load()
        gen = self.generator
        ids = gen.tokenizer(
            gen.prompts(states, prefix or None),
            add_special_tokens=add_special_tokens_for(gen.style),
        )["input_ids"]
        causal = gen.loaded.kind == "causal"
        return TokenCounts(
            prompts=[len(row) for row in ids],
            max_new=int(options.max_tokens or gen.max_new_tokens),
            context=context_length(gen.model, gen.tokenizer),
            shared_context=causal,
        )

    @contextlib.contextmanager
    def _options(self, options: GenOptions) -> Iterator[HFTacticGenerator]:
        """The loaded generator with ``options`` set for one call (one call at a time)."""
        self.load()
        gen = self.generator
        with self._call_lock:
            saved = (gen.strategy, gen.temperature, gen.max_new_tokens)
            try:
                if options.temperature is not None:
                    if options.temperature == 0:
                        gen.strategy = "greedy"
                    else:
                        gen.temperature = float(options.temperature)
                        if gen.strategy == "greedy":
                            gen.strategy = "sample"
                if options.max_tokens is not None:
                    gen.max_new_tokens = int(options.max_tokens)
                self.calls += 1
                yield gen
            finally:
                gen.strategy, gen.temperature, gen.max_new_tokens = saved

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "model": str(self.spec.get("model") or "smollm2")}


class ConstantGenerator(GeneratorModel):
    """A fixed answer after a fixed delay per call, whatever the batch: the model side of a
    load test of the server itself (``benchmarks/api_bench.py``)."""

    kind = "constant"
    options = ("outputs", "delay_ms", "num_samples")

    def __init__(self, name: str, spec: Mapping[str, Any]) -> None:
        super().__init__(name, spec)
        outputs = self.spec.get("outputs", ["rfl", "simp", "omega", "linarith"])
        if not isinstance(outputs, list) or not all(isinstance(o, str) for o in outputs):
            raise ModelRegistryError(f"model {name!r}: 'outputs' must be a list of tactics")
        delay = self.spec.get("delay_ms", 0.0)
        if not isinstance(delay, (int, float)) or delay < 0:
            raise ModelRegistryError(f"model {name!r}: 'delay_ms' must be a number >= 0")
        self.outputs = list(outputs)
        self.delay_s = float(delay) / 1000.0
        self.default_num_samples = self.spec.get("num_samples")
        self.calls = 0
        self._answers: dict[tuple[int, str], tuple[Candidate, ...]] = {}
        """(num_samples, prefix) → the answer (candidates are immutable): a call costs next
        to nothing but its delay, so a load test measures the server."""

    def generate(
        self, states: list[str], num_samples: int, prefix: str | None, options: GenOptions
    ) -> list[list[Candidate]]:
        self.calls += 1
        if self.delay_s:
            time.sleep(self.delay_s)
        cands = self._answers.get((num_samples, prefix or ""))
        if cands is None:
            texts = [(prefix or "") + o for o in self.outputs][:num_samples]
            cands = tuple(Candidate(t, -0.5 * (i + 1)) for i, t in enumerate(texts))
            if len(self._answers) < 1024:
                self._answers[(num_samples, prefix or "")] = cands
        return [list(cands) for _ in states]

    def completions(
        self, states: list[str], n: int, prefix: str | None, options: GenOptions
    ) -> list[list[Completion]]:
        self.calls += 1
        if self.delay_s:
            time.sleep(self.delay_s)
        texts = [(prefix or "") + o for o in self.outputs] or [prefix or ""]
        choices = [Completion(texts[i % len(texts)], -0.5 * (i % len(texts) + 1)) for i in range(n)]
        return [choices for _ in states]


class LocalEncoder(EncoderModel):
    """A local premise encoder: :func:`~lean_dojo_v2.models.retrieval.load_encoder`."""

    kind = "encoder"
    options = ("model", "device", "max_length")
    encoder: PremiseEncoder
    """The loaded encoder (set by :meth:`load`)."""

    def __init__(self, name: str, spec: Mapping[str, Any], *, device: str = "auto") -> None:
        super().__init__(name, spec)
        self._device = str(self.spec.get("device", device))

    def _load(self) -> None:
        from ..models.retrieval import load_encoder

        self.encoder = load_encoder(
            self.spec.get("model"),
            device=self._device,
            max_length=int(self.spec.get("max_length", 256)),
        )

    def encode(self, texts: list[str]) -> np.ndarray:
        from .encoding import threads_for

        self.load()
        with threads_for(len(texts), self.encoder.device.type):
            return self.encoder.encode(list(texts))

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "model": str(self.spec.get("model") or "all-MiniLM-L6-v2")}


class ExportedRetriever(RetrieverModel):
    """A folder written by :func:`~lean_dojo_v2.models.premise_index.export_retriever`.

    ``new_premises`` are encoded once each: their embeddings are kept by text (LRU,
    ``new_premise_cache_size``), since Lean's client sends the same ones with every request; the
    texts not cached are encoded together, in batches of like token counts. ``premise_dtype``
    (``auto``, ``float32``, ``bfloat16``) is the precision they are encoded in: ``auto`` is
    bfloat16 on a CPU that computes it natively (AVX512-BF16 or AMX: about 1.5 times the
    float32 speed; embeddings within a cosine of 0.9999 of float32's), float32 elsewhere. The
    index's own embeddings and the goal state's are float32 whatever it is. A goal state is
    encoded on one torch thread (:func:`~lean_dojo_v2.external_api.encoding.threads_for`).
    """

    kind = "retriever"
    options = ("path", "device", "premise_dtype")
    retriever: DenseRetriever
    """The loaded retriever (set by :meth:`load`)."""
    new_premise_cache_size: ClassVar[int] = 65536
    """Embeddings of ``new_premises`` kept between requests (by text): Lean's client sends the
    same unindexed premises with every request."""
    premise_dtypes: ClassVar[tuple[str, ...]] = ("auto", "float32", "bfloat16")

    def __init__(self, name: str, spec: Mapping[str, Any], *, device: str = "auto") -> None:
        super().__init__(name, spec)
        path = self.spec.get("path")
        if not isinstance(path, str):
            raise ModelRegistryError(
                f"model {name!r} (kind 'retriever') needs 'path': a folder written by "
                "export_retriever"
            )
        from pathlib import Path

        from ..models.premise_index import MANIFEST

        # Checked when the server starts, so a wrong path never reaches a request.
        if not (Path(path) / MANIFEST).is_file():
            why = "does not exist" if not Path(path).exists() else f"has no {MANIFEST}"
            raise ModelRegistryError(
                f"model {name!r} (kind 'retriever'): path {path} {why}; point it at a folder "
                "written by export_retriever (or `train retrieval`'s export)"
            )
        self._device = str(self.spec.get("device", device))
        dtype = self.spec.get("premise_dtype", "auto")
        if dtype not in self.premise_dtypes:
            raise ModelRegistryError(
                f"model {name!r}: 'premise_dtype' must be one of "
                f"{', '.join(self.premise_dtypes)}, got {dtype!r}"
            )
        self._premise_dtype = str(dtype)
        self.modules = {}
        self.module_names = []
        self.premise_names = []
        self._new_premise_cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_lock = threading.Lock()

    def _load(self) -> None:
        from ..models.premise_index import load_retriever

        self.retriever = load_retriever(self.spec["path"], device=self._device)
        index = self.retriever.index
        self.modules = module_paths(f.path for f in index.corpus.files)
        self.module_names = list(self.modules)
        self.premise_names = [p.full_name for p in index.premises]

    def encode_premises(self, texts: list[str]) -> np.ndarray:
        """Embeddings of new premises' texts, from the cache where it has them (LRU)."""
        import numpy as np

        self.load()
        with self._cache_lock:
            cache = self._new_premise_cache
            rows: list[np.ndarray | None] = []
            for t in texts:
                row = cache.get(t)
                if row is not None:
                    cache.move_to_end(t)
                rows.append(row)
        todo = sorted({t for t, r in zip(texts, rows, strict=True) if r is None})
        fresh: dict[str, np.ndarray] = {}
        if todo:
            with self._premise_precision():
                rows_new = self.retriever.encoder.encode(todo)
            fresh = dict(zip(todo, rows_new, strict=True))
            with self._cache_lock:
                cache.update(fresh)
                while len(cache) > self.new_premise_cache_size:
                    cache.popitem(last=False)
        if not rows:
            return np.zeros((0, self.retriever.encoder.dim), dtype=np.float32)
        return np.stack([fresh[t] if r is None else r for t, r in zip(texts, rows, strict=True)])

    @property
    def premise_dtype(self) -> str:
        """The precision new premises are encoded in (``auto`` resolved; loads the model)."""
        self.load()
        if self._premise_dtype != "auto":
            return self._premise_dtype
        from .encoding import native_bf16

        device = self.retriever.encoder.device
        return "bfloat16" if device.type == "cpu" and native_bf16() else "float32"

    def _premise_precision(self) -> contextlib.AbstractContextManager[object]:
        from .encoding import precision

        return precision(self.premise_dtype, self.retriever.encoder.device.type)

    @property
    def index(self) -> PremiseIndex:
        self.load()
        return self.retriever.index

    def encode(self, texts: list[str]) -> np.ndarray:
        from .encoding import threads_for

        self.load()
        encoder = self.retriever.encoder
        with threads_for(len(texts), encoder.device.type):
            return encoder.encode(list(texts))

    def describe(self) -> dict[str, Any]:
        out = {**super().describe(), "path": self.spec["path"]}
        if self.loaded:
            out["premises"] = len(self.retriever.index)
            out["premise_dtype"] = self.premise_dtype
        return out


_CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length")


def context_length(model: object, tokenizer: object) -> int | None:
    """The most tokens ``model`` attends to (its position table: ``max_position_embeddings``
    and kin, else the tokenizer's ``model_max_length`` when it is a real limit); None for models
    without one (T5's relative positions)."""
    config = getattr(model, "config", None)
    for key in _CONTEXT_KEYS:
        value = getattr(config, key, None)
        if isinstance(value, int) and value > 0:
            return value
    value = getattr(tokenizer, "model_max_length", None)
    # transformers writes a huge number (1e30) when a tokenizer names no limit.
    return value if isinstance(value, int) and 0 < value < 10**7 else None


def module_name(path: str) -> str:
    """The Lean module of a corpus file path: ``.lake/packages/mathlib/Mathlib/A/B.lean`` →
    ``Mathlib.A.B``, ``.lake/packages/lean4/src/lean/Init/Core.lean`` → ``Init.Core`` (the
    package folder dropped, ``.lean`` removed)."""
    parts = path.removesuffix(".lean").split("/")
    for marker in (".lake", "lake-packages"):
        if marker in parts:
            i = parts.index(marker)
            # .lake/packages/<pkg>/... and lake-packages/<pkg>/...
            skip = 3 if marker == ".lake" else 2
            parts = parts[i + skip :]
    if parts[:2] == ["src", "lean"]:  # Lean's own package keeps Init/, Std/ under src/lean/
        parts = parts[2:]
    return ".".join(p for p in parts if p)


def module_paths(paths: Iterable[str]) -> dict[str, str]:
    """Lean module name → corpus file path, for the files of a corpus."""
    return {module_name(p): p for p in paths}
