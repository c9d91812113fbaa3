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
2. **run**: the output directory's lock taken before anything there is touched
   (:func:`~lean_dojo_v2.data.run_lock.lock_output_dir`), then the directory opened
   (:mod:`.out_dir`), ``attempts.jsonl`` resumed
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
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config.loading import config_to_dict, replace_config, unfingerprinted_fields
from ..errors import ConfigError, ConfigValueError
from .attempts import AttemptLog, Kept, ProblemOutcome, attempt_records
from .budget import Price
from .config import PATH_KEYS, EvalConfig
from .errors import EvalReportError, VerifierError
from .lean_usage import MeteredEnvFactory, UsageLedger, problem_key
from .out_dir import OutPlan, default_out_dir, open_out_dir, plan_out_dir
from .outcomes import Progress, lean_calls, problem_outcome
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
REPORT_FILE = "report.html"

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
    sources: list[Path]
    """The inputs, which ``--out`` may neither be nor hold (:func:`_inputs`)."""
    where: dict[str, Any]
    """Where the model is served (``base_url``): kept in ``eval.json``, not in its identity."""

    def run(self) -> EvalResult:
        """Take the output directory's lock, open it and prove what is left (see the module
        docstring). Nothing in ``--out`` is touched before the lock is held: a second run into
        a running evaluation's ``--out`` (``--force`` or ``--resume`` included) is refused with
        :class:`~lean_dojo_v2.data.run_lock.RunLockedError` and changes nothing of it."""
        from ..data.run_lock import lock_output_dir

        with lock_output_dir(self.plan.path):
            # Planned again under the lock: another run may have written there since prepare().
            cfg = self.config
            self.plan = plan_out_dir(
                self.plan.path,
                self.settings,
                resume=cfg.resume,
                force=cfg.force,
                sources=self.sources,
            )
            kept = None
            if self.plan.action == "resume":  # read (and refused) before anything is written
                kept = AttemptLog(self.plan.path).read(known=self.theorems)
            open_out_dir(self.plan, self.settings, self.where)
            return _Run(self, kept).execute()


def evaluate(
    config: EvalConfig | None = None,
    *,
    make_env: EnvFactory | None = None,
    make_generator: GeneratorFactory | None = None,
    inputs: Sequence[str | os.PathLike[str]] = (),
    **changes: object,
) -> EvalResult:
    """Evaluate a model on a benchmark (see the module docstring): ``config``, with ``changes``
    (EvalConfig's fields, checked as ``--set`` checks them) applied. Returns the
    :class:`~.summary.EvalResult` that ``summary.json`` holds.

    ``make_env`` / ``make_generator``: your own environment or generator factory (picklable
    callables without arguments, as :class:`~lean_dojo_v2.prover.pipeline.ProveRun` takes them)
    instead of the ones ``verifier`` and ``generator`` name; the verdict cache and the budget
    apply to them as to the library's. Each is called once here first, to check it
    (:mod:`.factories`). ``inputs``: other files the evaluation was made from (the config file
    of ``eval prove --config``), which ``out`` may neither be nor hold.

    A ``report.html`` that cannot be written ends it with :class:`~.errors.EvalReportError`
    (the results are written; ``.result`` holds them)."""
    prepared = prepare(
        config, make_env=make_env, make_generator=make_generator, inputs=inputs, **changes
    )
    return prepared.run()


def prepare(
    config: EvalConfig | None = None,
    *,
    make_env: EnvFactory | None = None,
    make_generator: GeneratorFactory | None = None,
    inputs: Sequence[str | os.PathLike[str]] = (),
    **changes: object,
) -> PreparedEvaluation:
    """Every check of an evaluation, nothing written: see the module docstring (and
    :func:`evaluate` for the arguments)."""
    from .factories import check_factories, try_factories

    cfg = _config(config, changes)
    check_factories(make_env, make_generator, cfg.parallel)
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
    if make_env is None:
        _check_recorded_goals(cfg, benchmark)
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
    sources = _inputs(cfg, inputs)
    plan = plan_out_dir(out, settings, resume=cfg.resume, force=cfg.force, sources=sources)
    # The costliest check, last; inline, the generator it made is the run's.
    generator = try_factories(make_env, make_generator, cfg.mode, cfg.parallel) or generator
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
        sources,
        _where(cfg, make_generator),
    )


# -- preparing ------------------------------------------------------------------------------------


def _config(config: EvalConfig | None, changes: dict[str, object]) -> EvalConfig:
    """``config`` with ``changes``; a path key given something that is not a path is refused
    before the config's loader would make text of it (``out=123``)."""
    cfg = config if config is not None else EvalConfig()
    if not isinstance(cfg, EvalConfig):
        raise ConfigError(f"evaluate takes an EvalConfig, not a {type(cfg).__name__}")
    for key in PATH_KEYS:
        value = changes.get(key)
        if isinstance(value, os.PathLike):
            changes[key] = os.fspath(value)
        elif value is not None and not isinstance(value, str):
            raise ConfigValueError(
                f"config key {key!r} must be a path (text), got {value!r} ({type(value).__name__})"
            )
    return replace_config(cfg, **changes) if changes else cfg


def _inputs(cfg: EvalConfig, given: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """Every file or directory the evaluation reads and may not lose: the dataset, the
    benchmark, price and prompt files, the project, a local model or REPL, the verdict cache
    and ``given`` (the config file)."""
    paths: list[str | os.PathLike[str]] = [
        p for p in (cfg.data, cfg.price_table, cfg.prompt, cfg.project, *given) if p
    ]
    for maybe in (cfg.benchmark, cfg.model, cfg.repl):  # a name or a command, or a path
        if maybe and Path(maybe).expanduser().exists():
            paths.append(maybe)
    cache = _verdict_cache_path(cfg.verdict_cache)
    if cache is not None:
        paths.append(cache)
    return [Path(p).expanduser() for p in paths]


def _where(cfg: EvalConfig, own: GeneratorFactory | None) -> dict[str, Any]:
    """Where the model is served (``eval.json`` keeps it; a resumption notes a change)."""
    if own is not None or cfg.generator != "openai":
        return {}
    from ..prover.external_prover import DEFAULT_BASE_URL

    return {"base_url": cfg.base_url or DEFAULT_BASE_URL}


def _check_recorded_goals(cfg: EvalConfig, benchmark: Benchmark) -> None:
    """The recorded verifier starts a problem from the goal its benchmark records: a problem
    without one would end as an ``error``, so the evaluation is refused instead."""
    if cfg.verifier != "recorded":
        return
    missing = [p.name for p in benchmark.problems if not (p.goal or "").strip()]
    if missing:
        raise VerifierError(
            f"--verifier recorded starts each problem from the initial goal its benchmark "
            f"records, and {benchmark.name} records no initial goal for {len(missing)} of its "
            f"{len(benchmark.problems)} problem(s) (first: {missing[0]!r}): give each line a "
            '"goal" (the goal as Lean prints it), or use --verifier lean'
        )


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
    # "test" where no split was given, as every eval.json written when that was the default
    # says: an evaluation started then resumes now.
    settings["split"] = cfg.split or "test"
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

    def __init__(self, prepared: PreparedEvaluation, kept: Kept | None) -> None:
        self.p = prepared
        self.cfg = prepared.config
        self.out = prepared.plan.path
        self.log = AttemptLog(self.out)
        self.kept = kept
        ledger_dir = self.out / LEDGER_DIR
        shutil.rmtree(ledger_dir, ignore_errors=True)  # a killed run's calls are not this run's
        ledger_dir.mkdir()
        self.ledger = UsageLedger(ledger_dir)
        self.by_key = {
            problem_key(t.full_name, t.file_path): name for name, t in prepared.theorems.items()
        }
        self.done: dict[str, ProblemOutcome] = {}
        self.bar: Progress | None = None

    def execute(self) -> EvalResult:
        from ..prover.pipeline import ProofJob, ProveRun

        if self.kept is not None:
            self.log.keep(self.kept)
            self.done = dict(self.kept.finished)
        todo = [t for name, t in self.p.theorems.items() if name not in self.done]
        if self.done:
            log.info(
                "resuming %s: %d of %d problem(s) finished already",
                self.out,
                len(self.done),
                len(self.p.theorems),
            )
        name, total = self.p.benchmark.name, len(self.p.theorems)
        self.bar = Progress(name, total, self.cfg.samples, self.done.values(), on=self.cfg.progress)
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
            usage.calls = lean_calls(records)
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
        _write_report(self.out, result)
        return result


def _write_report(out: Path, result: EvalResult) -> None:
    """``report.html`` (:mod:`.report_html`). When it cannot be written, no page is left (an
    earlier run's would show other numbers) and the evaluation ends in an
    :class:`~.errors.EvalReportError` saying that its results are written."""
    try:
        from . import report_html

        report_html.write_report_html(out)
    except Exception as exc:  # noqa: BLE001 - whatever failed, the same one line
        (out / REPORT_FILE).unlink(missing_ok=True)
        why = " ".join(f"{type(exc).__name__}: {exc}".split())
        raise EvalReportError(
            f"the evaluation is done and its results are in {out / SUMMARY_FILE}, but "
            f"{REPORT_FILE} could not be written ({why}); make it with `lean-dojo-v2 eval "
            f"report {out}` once that is fixed",
            result,
        ) from exc
