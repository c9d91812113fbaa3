"""Layer 4 (evaluation): :func:`evaluate` — a model on a benchmark at a budget, the number to put
in a table, and every file behind it.

::

    from lean_dojo_v2.evaluation import evaluate

    result = evaluate(benchmark="minif2f-test", mode="whole", n=32, generator="openai",
                      model="deepseek-ai/DeepSeek-Prover-V2-7B", base_url="http://localhost:8000/v1",
                      project="~/mathlib4-project", out="raid/eval/dsp-v2-minif2f")
    print(result.solved, result.pass_at["32"], result.budget.lean_calls)

An evaluation is not another way to prove: its problems become the jobs of the one proving
pipeline (:class:`~lean_dojo_v2.prover.pipeline.ProveRun`), the mode a search strategy of
:class:`~lean_dojo_v2.prover.search_config.SearchConfig`, the verifier the environment the
searches and re-checks run in. What is evaluation's own:

1. **prepare** (:func:`prepare`): every check that can fail — the config, the price table, the
   benchmark and its problems, the verifier, the generator (a model that does not exist, a server
   that does not answer), the output directory — before anything is written;
2. **run**: the output directory opened (:mod:`.out_dir`), ``attempts.jsonl`` resumed
   (:mod:`.attempts`: finished problems are not proved again), the rest proved; as each
   problem's result arrives its attempts, what it cost (:mod:`.budget`, :mod:`.lean_usage`) and
   its outcome are appended to ``attempts.jsonl``, and the progress bar shows the running pass@1
   and budget;
3. **report**: ``summary.json``, ``putnambench_entry.json`` (:mod:`.summary`), ``solved.png``
   (:mod:`.plot`) and ``report.html`` (:mod:`.report_html`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config.loading import config_to_dict, replace_config, unfingerprinted_fields
from ..errors import ConfigError
from .attempts import AttemptLog, ProblemOutcome, attempt_records
from .budget import Budget, Price
from .config import EvalConfig
from .errors import VerifierError
from .lean_usage import MeteredEnvFactory, UsageLedger, problem_key
from .out_dir import OutPlan, default_out_dir, open_out_dir, plan_out_dir
from .recorded_start import RecordedStartFactory
from .summary import PUTNAMBENCH_FILE, SUMMARY_FILE, EvalResult, putnambench_entry, write_json

if TYPE_CHECKING:
    from ..data.model import Theorem
    from ..prover.result import SearchResult
    from ..prover.search_config import SearchConfig
    from ..prover.search_types import EnvFactory, GeneratorFactory
    from .benchmarks import Benchmark

log = logging.getLogger(__name__)

LEDGER_DIR = ".lean_usage"
"""Where the environments of a run write their calls (removed when the run ends)."""

__all__ = ["PreparedEvaluation", "evaluate", "prepare"]


@dataclass
class PreparedEvaluation:
    """An evaluation checked and ready to run; nothing written yet (:func:`prepare`)."""

    config: EvalConfig
    benchmark: Benchmark
    theorems: dict[str, Theorem]
    """Each problem's theorem, by problem name, in the benchmark's order."""
    make_env: EnvFactory
    make_generator: GeneratorFactory
    search: SearchConfig
    price: Price | None
    model: str
    settings: dict[str, Any]
    plan: OutPlan

    def run(self) -> EvalResult:
        """Open the output directory and prove what is left (see the module docstring)."""
        from ..data.run_lock import lock_output_dir

        open_out_dir(self.plan, self.settings)
        with lock_output_dir(self.plan.path):
            return _Run(self).execute()


def evaluate(
    config: EvalConfig | None = None,
    *,
    make_env: EnvFactory | None = None,
    make_generator: GeneratorFactory | None = None,
    **changes: object,
) -> EvalResult:
    """Evaluate a model on a benchmark (see the module docstring): ``config``, with ``changes``
    (EvalConfig's fields, checked as ``--set`` checks them) applied. Returns the
    :class:`~.summary.EvalResult` that ``summary.json`` holds.

    ``make_env`` / ``make_generator``: your own environment or generator factory (picklable
    callables without arguments, as :class:`~lean_dojo_v2.prover.pipeline.ProveRun` takes them)
    instead of the ones ``verifier`` and ``generator`` name; the verdict cache and the budget
    apply to them as to the library's."""
    return prepare(config, make_env=make_env, make_generator=make_generator, **changes).run()


def prepare(
    config: EvalConfig | None = None,
    *,
    make_env: EnvFactory | None = None,
    make_generator: GeneratorFactory | None = None,
    **changes: object,
) -> PreparedEvaluation:
    """Every check of an evaluation, nothing written: see the module docstring (and
    :func:`evaluate` for the arguments)."""
    cfg = config if config is not None else EvalConfig()
    if not isinstance(cfg, EvalConfig):
        raise ConfigError(f"evaluate takes an EvalConfig, not a {type(cfg).__name__}")
    if changes:
        cfg = replace_config(cfg, **changes)
    if cfg.benchmark is None and cfg.data is None:
        raise ConfigError(
            "name a benchmark (benchmark='minif2f-test', --benchmark minif2f-test; a JSONL file "
            "of problems) or a LeanDojo dataset (data=DIR, --data DIR)"
        )
    _check_mode(cfg)
    if cfg.parallel == "ray":
        from ..prover.ray_cluster import check_ray

        check_ray(cfg.ray_address)  # an address that answers nothing: one error, in seconds
    model = _model_name(cfg, make_generator)
    price = _price(cfg, model)
    benchmark = _load_benchmark(cfg)
    theorems = _theorems(benchmark)
    verifier_env = _verifier_env(cfg, benchmark, make_env)
    generator = make_generator if make_generator is not None else _generator_factory(cfg)
    search = search_config(cfg)
    settings = _settings(cfg, benchmark, model)
    for key, factory in (("env_factory", make_env), ("generator_factory", make_generator)):
        if factory is not None:  # your own: named, so that another one is another evaluation
            settings[key] = _name_of(factory)
    out = (
        Path(cfg.out).expanduser()
        if cfg.out
        else default_out_dir(benchmark.name, cfg.mode, model, settings)
    )
    sources = [Path(p) for p in (cfg.data, cfg.price_table, cfg.prompt, cfg.project) if p]
    if cfg.benchmark and Path(cfg.benchmark).exists():
        sources.append(Path(cfg.benchmark))
    plan = plan_out_dir(out, settings, resume=cfg.resume, force=cfg.force, sources=sources)
    return PreparedEvaluation(
        cfg,
        benchmark,
        theorems,
        _metered(cfg, verifier_env, plan.path.resolve() / LEDGER_DIR),
        generator,
        search,
        price,
        model,
        settings,
        plan,
    )


# -- preparing ------------------------------------------------------------------------------------


def _check_mode(cfg: EvalConfig) -> None:
    if cfg.mode == "tactic" and cfg.verifier == "recorded":
        raise VerifierError(
            "tactic mode runs tactics, which the recorded verifier cannot: use --verifier lean "
            "(a Lean REPL), or --verifier replay with a LeanDojo dataset (--data DIR)"
        )
    if cfg.verifier == "replay" and cfg.data is None:
        raise VerifierError(
            "--verifier replay replays a LeanDojo dataset's recorded proofs: give --data DIR, or "
            "use --verifier lean or recorded for a benchmark"
        )
    if cfg.early_stop and cfg.mode == "tactic":
        log.info("early_stop has no effect in tactic mode: a search stops at its first proof")


def _name_of(factory: object) -> str:
    """``module.name`` of a factory: a function's own, a ``functools.partial``'s function's, or
    the class of a callable object."""
    target = getattr(factory, "func", factory)  # functools.partial
    if not hasattr(target, "__qualname__"):
        target = type(target)
    return f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', '?')}"


def _model_name(cfg: EvalConfig, own: GeneratorFactory | None) -> str:
    """The model's name in the results: ``model``, else the default model's, else (your own
    generator factory) the factory's."""
    if own is not None:
        return cfg.model or _name_of(own)
    if cfg.generator == "openai":
        if not cfg.model:
            raise ConfigError("--generator openai needs --model: the model name the server serves")
        return cfg.model
    if cfg.base_url:
        raise ConfigError("--base-url is only used with --generator openai")
    return cfg.model or "smollm2"


def _price(cfg: EvalConfig, model: str) -> Price | None:
    if cfg.price_table is None:
        return None
    from .budget import load_price_table

    table = load_price_table(cfg.price_table)
    if cfg.generator == "hf" and model not in table.prices:
        return None  # a local model: its cost is the GPU seconds, unless the table prices it
    return table.price_of(model)


def _load_benchmark(cfg: EvalConfig) -> Benchmark:
    from .benchmarks import load_benchmark

    data = Path(cfg.data).expanduser() if cfg.data else None
    return load_benchmark(
        cfg.benchmark or "leandojo",
        data=data,
        split=cfg.split if data is not None else None,
        problems=cfg.problems,
        limit=cfg.limit,
    )


def _theorems(benchmark: Benchmark) -> dict[str, Theorem]:
    """Each problem's theorem; two problems that the pipeline's results would not tell apart
    (the same theorem name in the same file) are refused."""
    out: dict[str, Theorem] = {}
    seen: dict[str, str] = {}
    for problem in benchmark.problems:
        theorem = problem.to_theorem()
        key = problem_key(theorem.full_name, theorem.file_path)
        if key in seen:
            raise ConfigError(
                f"problems {seen[key]!r} and {problem.name!r} of {benchmark.name} are the same "
                f"theorem ({theorem.full_name}); rename one in the benchmark file"
            )
        seen[key] = problem.name
        out[problem.name] = theorem
    return out


def _verifier_env(cfg: EvalConfig, benchmark: Benchmark, own: EnvFactory | None) -> EnvFactory:
    """The environment the searches run and check in: ``own``, else the verifier's (no Lean, a
    project that is not built: one line, here)."""
    if own is not None:
        return own
    from .verifiers import make_verifier_env

    project = Path(cfg.project).expanduser() if cfg.project else None
    return make_verifier_env(
        cfg.verifier, benchmark, project=project, repl=cfg.repl, timeout=cfg.tactic_timeout
    )


def _metered(cfg: EvalConfig, make_env: EnvFactory, ledger: Path) -> EnvFactory:
    """``make_env`` with the budget's meter on it, behind the verdict cache when there is one
    (a verdict from the cache never reaches the meter, so it costs no Lean call) and, in whole
    and refine mode, behind :class:`~.recorded_start.RecordedStartEnv` (a recorded first goal
    costs none either)."""
    made: EnvFactory = MeteredEnvFactory(make_env, str(ledger))
    cache_path = _verdict_cache_path(cfg.verdict_cache)
    if cache_path is not None:
        from .verifiers import VerdictCache, cached

        made = cached(made, VerdictCache(cache_path))
    if cfg.mode != "tactic":
        made = RecordedStartFactory(made)
    return made


def _verdict_cache_path(setting: str | None) -> Path | None:
    if setting is None or setting.lower() in ("none", "off", ""):
        return None
    if setting == "auto":
        from ..config import get_settings

        return get_settings().cache_dir / "verdicts.sqlite"
    return Path(setting).expanduser()


def _generator_factory(cfg: EvalConfig) -> GeneratorFactory:
    """The generator of every worker, checked here (a model that does not exist, a server that
    does not answer or does not serve the model: one line, before anything is written)."""
    from ..prover.parallel import ExternalProverSpec, HFProverSpec

    kwargs: dict[str, Any] = {}
    if cfg.max_tokens is not None:
        kwargs["max_proof_tokens"] = cfg.max_tokens
    if cfg.generator == "openai":
        from ..prover.external_prover import DEFAULT_BASE_URL, check_endpoint

        assert cfg.model is not None  # _model_name checked it
        base_url = cfg.base_url or DEFAULT_BASE_URL
        if cfg.temperature is not None:
            kwargs["temperature"] = float(cfg.temperature)
        key = os.environ.get(cfg.api_key_env) if cfg.api_key_env else None
        hint = "start it (e.g. `vllm serve MODEL`) or point --base-url elsewhere"
        check_endpoint(base_url, cfg.model, key, hint=hint)
        return ExternalProverSpec(cfg.model, base_url, cfg.api_key_env, kwargs)
    if cfg.temperature is not None:
        if cfg.temperature == 0:
            kwargs["strategy"] = "greedy"
        else:
            kwargs["temperature"] = float(cfg.temperature)
    if cfg.lora:
        from ..errors import ModelNotFoundError

        if not cfg.model or not (Path(cfg.model) / "adapter_config.json").is_file():
            raise ModelNotFoundError(
                f"lora needs model to be a PEFT adapter directory; {cfg.model!r} is not one"
            )
        return HFProverSpec(
            str(Path(cfg.model).resolve()), cfg.device, {"use_lora": True, **kwargs}
        )
    from ..models.loading import resolve_model_path

    return HFProverSpec(resolve_model_path(cfg.model), cfg.device, kwargs)


def search_config(cfg: EvalConfig) -> SearchConfig:
    """The search settings of ``cfg``'s mode: tactic mode's are ``prove``'s (``num_samples``,
    ``max_expansions``, ``timeout``, ``tactic_timeout``), so the same budget proves the same
    theorems; whole and refine mode sample ``n`` proofs in one request per problem."""
    from ..prover.search_config import SearchConfig

    timeout, tactic_timeout = float(cfg.timeout), float(cfg.tactic_timeout)
    if cfg.mode == "tactic":
        return SearchConfig(
            mode="tactic",
            num_samples=cfg.num_samples,
            max_expansions=cfg.max_expansions,
            timeout=timeout,
            tactic_timeout=tactic_timeout,
            record_tree=True,  # the report draws it
        )
    prompt = None
    if cfg.prompt is not None:
        from ..models.proof_prompt import ProofPrompt

        ProofPrompt.from_file(cfg.prompt)  # a template that cannot be used fails here, once
        prompt = str(Path(cfg.prompt).expanduser().resolve())
    return SearchConfig(
        mode=cfg.mode,
        num_samples=cfg.n,
        whole_proof_rounds=1,
        refine_rounds=cfg.refine_rounds,
        early_stop=cfg.early_stop,
        proof_prompt=prompt,
        timeout=timeout,
        tactic_timeout=tactic_timeout,
    )


def _settings(cfg: EvalConfig, benchmark: Benchmark, model: str) -> dict[str, Any]:
    """What makes two evaluations the same one: the config's fingerprinted fields, the model,
    and the problems themselves (a benchmark file edited since is another evaluation)."""
    skip = unfingerprinted_fields(EvalConfig)
    settings = {k: v for k, v in config_to_dict(cfg).items() if k not in skip}
    digest = hashlib.sha256()
    for p in benchmark.problems:
        digest.update(f"{p.name}\0{p.header}\0{p.formal_statement}\0".encode())
    settings.update(
        benchmark=benchmark.name,
        model=model,
        problems_sha256=digest.hexdigest(),
        problem_count=len(benchmark.problems),
        lean_version=benchmark.lean_version,
    )
    return settings


# -- running --------------------------------------------------------------------------------------


class _Run:
    """One run of a prepared evaluation: resume, prove, write as it goes, report."""

    def __init__(self, prepared: PreparedEvaluation) -> None:
        self.p = prepared
        self.cfg = prepared.config
        self.out = prepared.plan.path
        self.log = AttemptLog(self.out)
        ledger_dir = self.out / LEDGER_DIR
        shutil.rmtree(ledger_dir, ignore_errors=True)  # a killed run's calls are not this run's
        ledger_dir.mkdir()
        self.ledger = UsageLedger(ledger_dir)
        self.by_key = {
            problem_key(t.full_name, t.file_path): name for name, t in prepared.theorems.items()
        }
        self.done: dict[str, ProblemOutcome] = {}
        self.bar: _Progress | None = None

    def execute(self) -> EvalResult:
        from ..prover.pipeline import ProofJob, ProveRun

        if self.p.plan.action == "resume":
            finished = self.log.resume()
            self.done = {k: v for k, v in finished.items() if k in self.p.theorems}
        todo = [t for name, t in self.p.theorems.items() if name not in self.done]
        if self.done:
            log.info(
                "resuming %s: %d of %d problem(s) finished already",
                self.out,
                len(self.done),
                len(self.p.theorems),
            )
        self.bar = _Progress(self.p, self.done.values())
        try:
            if todo:
                job = ProofJob(todo, self.p.make_env, label=self.p.benchmark.name, desc="eval")
                ProveRun(
                    self.p.make_generator,
                    self.p.search,
                    workers=self.cfg.workers,
                    parallel=self.cfg.parallel,
                    ray_address=self.cfg.ray_address,
                    progress=False,
                    observers=[self._finish],
                ).run([job])
        finally:
            self.bar.close()
        shutil.rmtree(self.out / LEDGER_DIR, ignore_errors=True)
        return self._report()

    def _finish(self, result: SearchResult) -> None:
        """A problem's result arrived: its attempts, budget and outcome go to attempts.jsonl."""
        key = problem_key(result.theorem, result.file_path)
        name = self.by_key.get(key)
        if name is None or name in self.done:
            return
        records = attempt_records(result)
        usage = self.ledger.take(key)
        outcome = problem_outcome(name, result, records, self.cfg.samples)
        if self.cfg.parallel == "ray" and not usage.calls:
            # an actor on another machine writes its ledger there: the searches' own count
            usage.calls = sum(_int(r.get("lean_calls")) for r in records if not r.get("cached"))
        outcome.budget.lean_calls = usage.calls
        outcome.budget.lean_cpu_seconds = usage.cpu_seconds
        outcome.budget.priced(self.p.price)
        self.log.write_problem(outcome, records, self.cfg.mode)
        self.done[name] = outcome
        if self.bar is not None:
            self.bar.update(outcome)

    def _report(self) -> EvalResult:
        from .plot import write_plot

        p = self.p
        outcomes = [
            self.done.get(name) or ProblemOutcome(name, "error", 0, error="not proved (no result)")
            for name in p.theorems
        ]
        result = EvalResult(
            benchmark=p.benchmark.name,
            mode=self.cfg.mode,
            verifier=self.cfg.verifier,
            model=p.model,
            n=self.cfg.samples,
            early_stop=self.cfg.early_stop,
            problems=outcomes,
            out=self.out,
            settings=p.settings,
            statements={q.name: (q.header, q.formal_statement) for q in p.benchmark.problems},
        )
        write_json(self.out / SUMMARY_FILE, result.to_dict())
        write_json(self.out / PUTNAMBENCH_FILE, putnambench_entry(result))
        write_plot(result, self.out)
        _write_report(self.out)
        return result


def problem_outcome(
    name: str, result: SearchResult, records: Sequence[Mapping[str, Any]], samples: int
) -> ProblemOutcome:
    """One problem's outcome from its search result and attempt records (Lean usage and dollars
    are filled in by the caller). A sample counts as correct when any of its rounds was
    accepted; in tactic mode the one search is sample 0."""
    correct = sorted({_int(r.get("index")) for r in records if r.get("ok") is True})
    correct = [i for i in correct if 0 <= i < samples]
    if samples == 1 and result.proved:
        correct = [0]
    accepted = [r for r in records if r.get("ok") is True]
    budget = Budget(
        attempts=len(records),
        tokens_in=sum(_int(r.get("tokens_in")) for r in records),
        tokens_out=sum(_int(r.get("tokens_out")) for r in records),
        generator_seconds=sum(_float(r.get("generator_seconds")) for r in records),
        gpu_seconds=sum(_float(r.get("gpu_seconds")) for r in records),
        wall_seconds=float(result.seconds),
    )
    stats = result.stats or {}
    if not budget.generator_seconds:
        budget.generator_seconds = _float(stats.get("generator_seconds"))
    proof = result.proof_text if result.proved else None
    if proof is None and accepted:
        proof = str(accepted[0].get("proof") or "")
    checked_by = result.checked_by or (str(accepted[0].get("checked_by")) if accepted else None)
    return ProblemOutcome(
        name=name,
        status=result.status,
        attempts=len(records),
        correct_samples=correct,
        proof=proof,
        checked_by=checked_by if correct else None,
        error=result.error,
        budget=budget,
        to_solve=_to_solve(records) if correct else None,
    )


def _to_solve(records: Sequence[Mapping[str, Any]]) -> dict[str, float] | None:
    """What the attempts up to the first accepted one cost, in sample and round order."""
    ordered = sorted(records, key=lambda r: (_int(r.get("index")), _int(r.get("round"))))
    spent = {"attempts": 0.0, "tokens": 0.0, "lean_calls": 0.0}
    for r in ordered:
        spent["attempts"] += 1
        spent["tokens"] += _int(r.get("tokens_in")) + _int(r.get("tokens_out"))
        spent["lean_calls"] += 0 if r.get("cached") else _int(r.get("lean_calls"))
        if r.get("ok") is True:
            return spent
    return None


def _int(value: object) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _float(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _write_report(out: Path) -> None:
    """``report.html`` (:mod:`.report_html`); a failure there is logged, the evaluation stands."""
    try:
        from .report_html import write_report_html
    except ImportError as exc:  # pragma: no cover - the report module ships with the package
        log.warning("no report.html: %s", exc)
        return
    try:
        write_report_html(out)
    except Exception as exc:  # noqa: BLE001 - the numbers are written; the page is extra
        log.warning("report.html could not be written: %s: %s", type(exc).__name__, exc)


class _Progress:
    """The bar on stderr: problems done, the running pass@1 (mean of correct/n over the problems
    done), problems solved, tokens, Lean calls and dollars so far."""

    def __init__(self, prepared: PreparedEvaluation, done: Iterable[ProblemOutcome]) -> None:
        from tqdm.auto import tqdm

        self.n = prepared.config.samples
        self.outcomes: list[ProblemOutcome] = list(done)
        self.bar = tqdm(
            total=len(prepared.theorems),
            initial=len(self.outcomes),
            desc=f"eval {prepared.benchmark.name}",
            unit="problem",
            disable=not prepared.config.progress,
            dynamic_ncols=True,
        )
        self.t0 = time.perf_counter()
        self._postfix()

    def _postfix(self) -> None:
        done = self.outcomes
        budget = Budget.total(o.budget for o in done)
        pass1 = sum(min(o.correct, self.n) / self.n for o in done) / len(done) if done else 0.0
        postfix = {
            "pass@1": f"{pass1:.3f}",
            "solved": sum(o.solved for o in done),
            "tokens": budget.tokens_in + budget.tokens_out,
            "lean_calls": budget.lean_calls,
        }
        if budget.dollars is not None:
            postfix["$"] = f"{budget.dollars:.2f}"
        self.bar.set_postfix(postfix, refresh=False)

    def update(self, outcome: ProblemOutcome) -> None:
        self.outcomes.append(outcome)
        self._postfix()
        self.bar.update(1)

    def close(self) -> None:
        self.bar.close()
