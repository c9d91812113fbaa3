"""Layer 4 (evaluation): :class:`EvalConfig`, the settings of one evaluation (no torch here)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Literal

from ..config.loading import (
    check_finite_floats,
    config_field,
    require,
    require_at_least,
    require_device,
    require_one_of,
    require_positive,
)
from ..errors import ConfigError

MODES = ("tactic", "whole", "refine")
VERIFIERS = ("lean", "recorded", "replay")
GENERATORS = ("hf", "openai")
PARALLEL = ("process", "ray", "inline")
MAX_N = 32768
"""The most samples per problem (``n``): above the largest published budgets (pass@25600), and
a bound on what one problem may ask of a server (which answers at most so many choices a
request, then is asked again for the rest)."""
PATH_KEYS = (
    "benchmark",
    "data",
    "prompt",
    "project",
    "repl",
    "verdict_cache",
    "out",
    "price_table",
)
"""The keys whose value is a path (a benchmark may be a name): text, or a path object."""
_SPLIT = re.compile(r"(?:(?:random|novel_premises)/)?(?:train|val|test|all)")

__all__ = ["EvalConfig", "GENERATORS", "MAX_N", "MODES", "PARALLEL", "PATH_KEYS", "VERIFIERS"]


@dataclass
class EvalConfig:
    r"""Settings of one evaluation: which problems, how they are proved and checked, where the
    results go. ``evaluate(EvalConfig(...))``, ``evaluate(benchmark=..., ...)`` and
    ``lean-dojo-v2 eval prove`` (``--config FILE``, ``--set key=value``, one flag per key)
    read the same fields; ``eval prove --help-config`` prints them.

    Parameters:
        > Parameters that choose the problems

        benchmark (`str` or `None`, *optional*, defaults to `None`):
            A bundled benchmark (`minif2f-test`, `minif2f-valid`, `proofnet-test`,
            `proofnet-valid`, `putnambench`), or the path of a JSONL file of
            `{name, header, formal_statement[, informal_statement]}`. `None` with `data`: the
            split of a LeanDojo dataset.
        data (`str` or `None`, *optional*, defaults to `None`):
            A LeanDojo-layout dataset directory; its `split` is the benchmark.
        split (`str` or `None`, *optional*, defaults to `None`):
            The split of `data`: `train`, `val`, `test` or `all`, `novel_premises/test` for the
            other split strategy; `None`: `test`. Only with `data`: a benchmark names its split
            (`minif2f-test`, `minif2f-valid`).
        problems (`list[str]` or `None`, *optional*, defaults to `None`):
            Only these problems, by name (a name not in the benchmark is an error naming the
            closest one).
        limit (`int` or `None`, *optional*, defaults to `None`):
            At most this many problems (the first ones, after `problems`).

        > Parameters that control the mode

        mode (`str`, *optional*, defaults to `"whole"`):
            `tactic`: best-first search, tactic by tactic (one search per problem, its budget
            `max_expansions`); `whole`: `n` whole proofs sampled per problem, each verified;
            `refine`: `n` whole proofs, each failed one sent back with Lean's first error for up to
            `refine_rounds` more tries.
        n (`int`, *optional*, defaults to `8`):
            Samples per problem in `whole` and `refine` mode, at most 32768; pass@k is reported
            for every k <= n.
        refine_rounds (`int`, *optional*, defaults to `2`):
            `refine` mode: rounds of Lean's feedback per sample (R).
        early_stop (`bool`, *optional*, defaults to `False`):
            Stop a problem at its first accepted proof: cheaper, but then only counts are
            reported, not pass@k (which needs all n samples).
        num_samples (`int`, *optional*, defaults to `8`):
            `tactic` mode: tactics asked of the generator per expanded state.
        max_expansions (`int`, *optional*, defaults to `100`):
            `tactic` mode: states expanded per problem before giving up.
        timeout (`float`, *optional*, defaults to `600.0`):
            Wall-clock seconds per problem.
        tactic_timeout (`float`, *optional*, defaults to `30.0`):
            Seconds one Lean call (a tactic, a proof check) may take.

        > Parameters that control the generator

        generator (`str`, *optional*, defaults to `"hf"`):
            `hf`: a local Hugging Face model (or PEFT adapter with `lora`); `openai`: an
            OpenAI-compatible server (vLLM, SGLang, a hosted API) at `base_url`.
        model (`str` or `None`, *optional*, defaults to `None`):
            `hf`: a model directory, a cached hub id or a `.gguf` file (default: the bundled
            SmolLM2); `openai`: the model name the server serves (required).
        base_url (`str` or `None`, *optional*, defaults to `None`):
            `openai`: the API root, e.g. `http://localhost:8000/v1`. Where the model is served,
            not what it is: an evaluation resumes with another one (`eval.json` notes it).
        api_key_env (`str`, *optional*, defaults to `"OPENAI_API_KEY"`):
            `openai`: the environment variable holding the API key (the key is never written).
        lora (`bool`, *optional*, defaults to `False`):
            `hf`: `model` is a PEFT adapter directory.
        device (`str`, *optional*, defaults to `"auto"`):
            `hf`: `auto`, `cpu`, `cuda` or `cuda:N`.
        temperature (`float` or `None`, *optional*, defaults to `None`):
            Sampling temperature; `None`: the generator's default.
        max_tokens (`int` or `None`, *optional*, defaults to `None`):
            The longest whole-proof completion in tokens; `None`: the generator's default.
            Reasoning provers need tens of thousands.
        prompt (`str` or `None`, *optional*, defaults to `None`):
            A prompt template file for `whole` and `refine` mode (docs/evaluation.md); `None`:
            the DeepSeek-Prover-style default.

        > Parameters that control the verification

        verifier (`str`, *optional*, defaults to `"lean"`):
            `lean`: Lean's REPL (Pantograph) checks each proof, with the axiom check; `recorded`:
            a proof counts only when it is, up to white space, one a real Lean run accepted for
            that statement (no Lean needed; see docs/evaluation.md for what it proves);
            `replay`: a LeanDojo dataset's recorded proofs (tactic mode without Lean).
        project (`str` or `None`, *optional*, defaults to `None`):
            `lean`: the built Lean project whose imports the statements need (e.g. one with
            Mathlib).
        repl (`str` or `None`, *optional*, defaults to `None`):
            `lean`: the Pantograph REPL command; `None`: discovered.
        verdict_cache (`str` or `None`, *optional*, defaults to `"auto"`):
            Where verdicts are kept, by (Lean version, header, statement, proof), so a repeated
            sample or a re-run costs no Lean call: `auto` (the library's cache directory), a
            file path, or `None` (no cache).

        > Parameters that control the run

        workers (`int`, *optional*, defaults to `1`):
            Problems proved at the same time (each worker has its own Lean process and
            generator; `inline`: its own Lean process, one generator for all).
        parallel (`str`, *optional*, defaults to `"process"`):
            `process` (worker processes), `ray` (Ray actors), `inline` (this process; with
            `workers` > 1 that many searches share one model, whose calls are answered
            together, and a problem's seconds include waiting for the others).
        ray_address (`str` or `None`, *optional*, defaults to `None`):
            `ray`: the cluster to join.
        out (`str` or `None`, *optional*, defaults to `None`):
            The output directory (attempts.jsonl, summary.json, putnambench_entry.json, the
            PNG, report.html); `None`: `RAID_DIR/eval/<benchmark>-<mode>-<model>-<settings
            hash>`, so the same settings resume in the same place.
        resume (`bool`, *optional*, defaults to `False`):
            Continue the evaluation in `out` (same settings): finished problems are not redone.
        force (`bool`, *optional*, defaults to `False`):
            Replace what `out` holds (another evaluation, or files this library did not write).
        price_table (`str` or `None`, *optional*, defaults to `None`):
            A YAML file of dollars per million input/output tokens by model name; the budget's
            `dollars` then prices the model's tokens.
        progress (`bool`, *optional*, defaults to `True`):
            A progress bar on stderr with the running pass@1 and budget.
    """

    benchmark: str | None = None
    data: str | None = None
    split: str | None = None
    problems: list[str] | None = None
    limit: int | None = None
    mode: Literal["tactic", "whole", "refine"] = "whole"
    n: int = 8
    refine_rounds: int = 2
    early_stop: bool = False
    num_samples: int = 8
    max_expansions: int = 100
    timeout: float = 600.0
    tactic_timeout: float = 30.0
    generator: Literal["hf", "openai"] = "hf"
    model: str | None = None
    base_url: str | None = config_field(None, fingerprint=False)
    api_key_env: str = config_field("OPENAI_API_KEY", fingerprint=False)
    lora: bool = False
    device: str = config_field("auto", fingerprint=False)
    temperature: float | None = None
    max_tokens: int | None = None
    prompt: str | None = None
    verifier: Literal["lean", "recorded", "replay"] = "lean"
    project: str | None = None
    repl: str | None = config_field(None, fingerprint=False)
    verdict_cache: str | None = config_field("auto", fingerprint=False)
    workers: int = config_field(1, fingerprint=False)
    parallel: Literal["process", "ray", "inline"] = config_field("process", fingerprint=False)
    ray_address: str | None = config_field(None, fingerprint=False)
    out: str | None = config_field(None, fingerprint=False)
    resume: bool = config_field(False, fingerprint=False)
    force: bool = config_field(False, fingerprint=False)
    price_table: str | None = config_field(None, fingerprint=False)
    progress: bool = config_field(True, fingerprint=False)

    def __post_init__(self) -> None:
        self._check_paths()
        check_finite_floats(self)
        require_at_least(self, 1, "n", "num_samples", "max_expansions", "workers")
        require(self, self.n <= MAX_N, "n", f"at most {MAX_N} (samples per problem)")
        require_at_least(self, 0, "refine_rounds")
        require_at_least(self, 1, "limit", "max_tokens", or_none=True)
        require_positive(self, "timeout", "tactic_timeout")
        require_at_least(self, 0, "temperature", or_none=True)
        for key, choices in (
            ("mode", MODES),
            ("verifier", VERIFIERS),
            ("generator", GENERATORS),
            ("parallel", PARALLEL),
        ):
            require_one_of(self, key, choices)
        require_device(self)
        names = self.problems
        require(
            self,
            names is None
            or (isinstance(names, list) and all(isinstance(p, str) and p for p in names)),
            "problems",
            "None or a list of problem names",
        )
        self._check_split()
        if self.resume and self.force:
            raise ConfigError(
                "resume and force contradict each other: --resume continues the evaluation in "
                "--out, --force replaces it; give one"
            )

    def _check_paths(self) -> None:
        """A path is text (a path object becomes its text): ``out=123`` from Python is a
        mistake, not a directory called ``123``."""
        for key in PATH_KEYS:
            value = getattr(self, key)
            if isinstance(value, os.PathLike):
                setattr(self, key, os.fspath(value))
            else:
                require(self, value is None or isinstance(value, str), key, "a path (text)")

    def _check_split(self) -> None:
        split = self.split
        if split is None:
            return
        if self.data is None:
            raise ConfigError(
                f"--split chooses a split of a LeanDojo dataset (--data DIR), not of "
                f"{self.benchmark or 'a benchmark'}: a bundled benchmark names its split "
                "(minif2f-test, minif2f-valid), a JSONL file is evaluated whole (choose with "
                "--problems); drop --split"
            )
        require(
            self,
            isinstance(split, str) and _SPLIT.fullmatch(split) is not None,
            "split",
            "train, val, test or all, optionally after random/ or novel_premises/",
        )

    @property
    def samples(self) -> int:
        """Samples per problem as pass@k counts them: ``n``, one search in tactic mode."""
        return 1 if self.mode == "tactic" else self.n
