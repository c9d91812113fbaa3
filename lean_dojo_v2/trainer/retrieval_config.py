"""The config of :class:`~lean_dojo_v2.trainer.retrieval_trainer.RetrievalTrainer` (no torch here).

It keeps the names of LeanAgent's ``TrainingConfig`` (``lean_dojo_v2.lean_agent.config``) so
LeanAgent's code and YAML files still load; the defaults are the ones that suit the bundled
MiniLM on a CPU, and each differing default says what LeanAgent used.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..config.loading import (
    check_finite_floats,
    config_field,
    require,
    require_at_least,
    require_device,
    require_one_of,
    require_positive,
)

PRECISIONS = ("auto", "32-true", "32", "bf16-mixed", "bf16-true", "16-mixed", "16-true", "64-true")
SCHEDULERS = ("cosine", "linear", "constant", "constant_with_warmup")
REPORT_TO_CHOICES = ("tensorboard", "none")
STRATEGIES = ("random", "novel_premises")


@dataclass
class TrainingConfig:
    r"""Configuration of :class:`~lean_dojo_v2.trainer.retrieval_trainer.RetrievalTrainer`: a
    bi-encoder premise retriever (one encoder for goal states and premises) trained with a masked
    in-batch contrastive loss on PyTorch Lightning, over a dataset directory or the curriculum of a
    :class:`~lean_dojo_v2.database.DynamicDatabase` (lifelong, with EWC).
    ``lean_dojo_v2.lean_agent.TrainingConfig`` is this class.

    Parameters:
        > Parameters that control the model

        model_name (`str` or `None`, *optional*, defaults to `None`):
            The encoder to train: `None` is the bundled all-MiniLM-L6-v2; otherwise any
            sentence-transformers / Hugging Face encoder id (offline: only one in the local cache)
            or directory, a ByT5/T5 checkpoint (its encoder, as ReProver's retriever), or a folder
            written by `RetrievalTrainer` (its `encoder/`). LeanAgent used
            `kaiyuy/leandojo-lean4-retriever-byt5-small`.
        max_seq_len (`int`, *optional*, defaults to `256`):
            Longest goal state or premise text in tokens; longer ones are truncated (MiniLM was
            trained on 256; LeanAgent used 512 bytes for ByT5).
        device (`str`, *optional*, defaults to `"auto"`):
            Where evaluation and export encode (`auto`: CUDA when there is one, `cpu`, `cuda`,
            `cuda:N`). Training places the model where Lightning's `accelerator`/`devices` say.

        > Parameters that control the data

        split_strategy (`str`, *optional*, defaults to `"random"`):
            Which split strategy of a LeanDojo dataset to read: `random` or `novel_premises`
            (train on `train`, validate on `val`, `evaluate()` on `test`).
        num_negatives (`int`, *optional*, defaults to `3`):
            Hard negatives drawn per (goal, positive premise) example, on top of the in-batch
            negatives (every other example's positive and negatives). Drawn among the premises
            accessible at the theorem (imported files, and earlier in its own file), never a
            positive of that goal, afresh each epoch (seeded).
        num_in_file_negatives (`int`, *optional*, defaults to `1`):
            How many of the `num_negatives` come from the positive premise's own file (harder:
            neighbouring lemmas); the rest are random accessible premises. Must not exceed
            `num_negatives`.
        max_examples (`int` or `None`, *optional*, defaults to `None`):
            Use only the first this many (goal, positive) examples per pass (smoke runs and
            benchmarks). `None`: all.
        group_by_length (`bool`, *optional*, defaults to `True`):
            Batch goals of similar length together (shuffled within groups of 50 batches, batch
            order shuffled): much less padding, 2-3x faster on real goal states whose lengths
            vary from a few to hundreds of tokens. `False`: plain shuffling.
        num_retrieved (`int`, *optional*, defaults to `100`):
            Depth of the rankings that validation and `evaluate()` compute (the MRR counts a first
            hit within this many; recall@k needs k <= `num_retrieved`).
        cumulative (`bool`, *optional*, defaults to `False`):
            With a database: train each curriculum step on the merged export of every repository
            so far (v2's behaviour) instead of the new repository only (LeanAgent's, where EWC
            guards the older ones). Either way training continues from the previous step's weights.

        > Parameters that control the loss

        temperature (`float`, *optional*, defaults to `0.05`):
            Softmax temperature of the contrastive loss: similarities (cosines in [-1, 1]) are
            divided by it. Smaller is sharper. (LeanAgent regressed similarities with MSE instead.)
        grad_cache (`bool`, *optional*, defaults to `False`):
            Use the cached (GradCache) loss: embed the whole batch without gradients in chunks of
            `grad_cache_chunk_size`, compute the loss and its gradient with respect to the cached
            embeddings, then re-encode chunk by chunk and back-propagate that gradient. Same loss
            and gradients as the plain loss, with the memory of one chunk: very large batches fit.
            Under DDP too (the gradient average waits for the last chunk's backward).
        grad_cache_chunk_size (`int`, *optional*, defaults to `32`):
            Texts (goals or premises) encoded at a time by the cached loss.
        lambda_value (`float`, *optional*, defaults to `0.1`):
            EWC strength λ: from the second repository of a curriculum on, the loss gets
            λ · Σ F · (θ − θ*)², with F the diagonal Fisher information computed on the previous
            repositories' examples and θ* the weights after them. `0` turns EWC off.
        fisher_max_batches (`int` or `None`, *optional*, defaults to `None`):
            Estimate the Fisher on at most this many training batches of a repository (it costs one
            forward and backward per batch). `None`: all of them.

        > Parameters that control the training

        lr (`float`, *optional*, defaults to `2e-5`):
            Peak AdamW learning rate (LeanAgent used 1e-3 for ByT5; pretrained sentence encoders
            want 1e-5 to 5e-5).
        weight_decay (`float`, *optional*, defaults to `0.01`):
            AdamW decoupled weight decay (not on biases and LayerNorm weights).
        lr_scheduler_type (`str`, *optional*, defaults to `"cosine"`):
            Schedule after warm-up over the pass's optimizer steps: `cosine` (LeanAgent's), `linear`,
            `constant` or `constant_with_warmup`.
        warmup_steps (`int`, *optional*, defaults to `0`):
            Optimizer steps of linear warm-up from 0 to `lr` (LeanAgent used 1000, too many for a
            small repository).
        batch_size (`int`, *optional*, defaults to `16`):
            (goal, positive) examples per device per micro-step; each brings `num_negatives` more
            premises, and every premise in the batch is a candidate for every goal (under DDP, in
            the batches of every device: `batch_size` x devices goals). Larger batches give more
            in-batch negatives (use `grad_cache` when memory is short).
        eval_batch_size (`int`, *optional*, defaults to `64`):
            Texts per forward pass when encoding the corpus and the queries for validation and
            evaluation.
        accumulate_grad_batches (`int`, *optional*, defaults to `1`):
            Micro-steps per optimizer step (LeanAgent: 4). In-batch negatives stay those of each
            micro-batch; use a larger `batch_size` with `grad_cache` for more negatives.
        gradient_clip_val (`float` or `None`, *optional*, defaults to `1.0`):
            Clip gradients to this global L2 norm before each optimizer step; `None`: no clipping.
        max_epochs (`int`, *optional*, defaults to `1`):
            Epochs per pass (one pass per repository of the curriculum, or one on a dataset
            directory).
        max_steps (`int`, *optional*, defaults to `-1`):
            Stop each pass after this many optimizer steps (smoke runs, benchmarks); `-1`: run
            `max_epochs`.
        precision (`str`, *optional*, defaults to `"auto"`):
            Lightning precision: `auto` is `bf16-mixed` on a CUDA GPU that supports it (LeanAgent's
            setting) and `32-true` otherwise (CPU); or any of `32-true`, `bf16-mixed`, `16-mixed`,
            `bf16-true`, `16-true`, `64-true`.
        seed (`int`, *optional*, defaults to `3407`):
            Seed of initialisation, data order and negative sampling (`lightning.seed_everything`);
            a resumed run draws the same batches.

        > Parameters that control validation, checkpoints and outputs

        output_dir (`str`, *optional*, defaults to `"outputs-retrieval"`):
            Where the trained encoder (`encoder/`), checkpoints, TensorBoard logs, the EWC state and
            `summary.json` go. It must be new, empty or written by lean-dojo-v2 (see
            `overwrite_output_dir`).
        overwrite_output_dir (`bool`, *optional*, defaults to `False`):
            Replace `output_dir` even if it holds files lean-dojo-v2 did not write, or an unfinished
            run of another config (the CLI's `--force`). Its contents are deleted.
        resume (`bool`, *optional*, defaults to `True`):
            When `output_dir` holds an unfinished run of the same config and data, go on from it:
            finished passes are skipped and the pass under way restarts from its last Lightning
            checkpoint (`fit(ckpt_path="last")`). `False`: start afresh.
        validate (`bool`, *optional*, defaults to `True`):
            Compute recall@10 (`R@10_val`) on the val split at the end of every epoch, with the
            premise index rebuilt from the current weights; the best epoch is kept as a checkpoint.
        val_max_queries (`int` or `None`, *optional*, defaults to `None`):
            Validate on at most this many goals of the val split (large corpora). `None`: all.
        save_every_n_steps (`int` or `None`, *optional*, defaults to `None`):
            Also write `last.ckpt` every this many optimizer steps (it is written at every epoch end
            anyway), so a long epoch interrupted half-way resumes near where it stopped. `None`:
            epoch ends only.
        early_stopping_patience (`int` or `None`, *optional*, defaults to `None`):
            Stop a pass when `R@10_val` has not improved for this many epochs (LeanAgent: 5).
            `None`: never stop early.

        > Parameters that control logging

        log_every_n_steps (`int`, *optional*, defaults to `10`):
            Log the training loss (and EWC penalty) every this many optimizer steps.
        report_to (`list[str]`, *optional*, defaults to `["tensorboard"]`):
            `tensorboard` (offline event files under `output_dir/logs`) or `none`.
        progress_bar (`bool`, *optional*, defaults to `True`):
            Show Lightning's progress bar; `False` trains quietly.

        > Parameters that control distributed training

        accelerator (`str`, *optional*, defaults to `"auto"`):
            Lightning accelerator: `auto`, `cpu`, `gpu`/`cuda`, `mps`.
        devices (`str`, *optional*, defaults to `"auto"`):
            Lightning devices: `auto`, a count (`"4"`), a list of GPU indices (`"0,2"`) or `-1` for
            all. Each device takes `batch_size` examples of each step's batch (data parallel).
        num_gpus (`int` or `None`, *optional*, defaults to `None`):
            LeanAgent's name: when set, train on this many GPUs (`accelerator=gpu`,
            `devices=num_gpus`), overriding `accelerator` and `devices`.
        num_nodes (`int`, *optional*, defaults to `1`):
            Machines taking part (multi-node DDP; launch one process per node with the usual
            `MASTER_ADDR`/`NODE_RANK` variables or SLURM, see docs/training.md).
        strategy (`str`, *optional*, defaults to `"auto"`):
            Lightning strategy: `auto` (single device, or DDP when several), `ddp`, `ddp_spawn`,
            `ddp_find_unused_parameters_true`, `fsdp`, `deepspeed_stage_2`, ... In-batch negatives
            are gathered from every device's batch (tested with `ddp`; docs/scaling.md).
    """

    # model
    model_name: str | None = None
    max_seq_len: int = 256
    device: str = config_field("auto", fingerprint=False)  # where evaluation encodes
    # data
    split_strategy: str = "random"
    num_negatives: int = 3
    num_in_file_negatives: int = 1
    max_examples: int | None = None
    group_by_length: bool = True
    num_retrieved: int = config_field(100, fingerprint=False)
    cumulative: bool = False
    # loss
    temperature: float = 0.05
    grad_cache: bool = False
    grad_cache_chunk_size: int = 32
    lambda_value: float = 0.1
    fisher_max_batches: int | None = None
    # training
    lr: float = 2e-5
    weight_decay: float = 0.01
    lr_scheduler_type: str = "cosine"
    warmup_steps: int = 0
    batch_size: int = 16
    eval_batch_size: int = config_field(64, fingerprint=False)
    accumulate_grad_batches: int = 1
    gradient_clip_val: float | None = 1.0
    max_epochs: int = 1
    max_steps: int = -1
    precision: str = "auto"
    seed: int = 3407
    # validation, checkpoints, outputs (where and how often: a run resumes across other values)
    output_dir: str = config_field("outputs-retrieval", fingerprint=False)
    overwrite_output_dir: bool = config_field(False, fingerprint=False)
    resume: bool = config_field(True, fingerprint=False)
    validate: bool = True
    val_max_queries: int | None = None
    save_every_n_steps: int | None = config_field(None, fingerprint=False)
    early_stopping_patience: int | None = None
    # logging
    log_every_n_steps: int = config_field(10, fingerprint=False)
    report_to: list[str] = config_field(default_factory=lambda: ["tensorboard"], fingerprint=False)
    progress_bar: bool = config_field(True, fingerprint=False)
    # distributed
    accelerator: str = "auto"
    devices: str = "auto"
    num_gpus: int | None = None
    num_nodes: int = 1
    strategy: str = "auto"

    def __post_init__(self) -> None:
        # inf passes every range check below (lr > 0) and trains NaN weights.
        check_finite_floats(self)
        require_at_least(self, 8, "max_seq_len")
        require_one_of(self, "split_strategy", STRATEGIES)
        require_at_least(self, 0, "num_negatives", "lambda_value", "weight_decay", "warmup_steps")
        in_file_ok = 0 <= self.num_in_file_negatives <= self.num_negatives
        between = f"between 0 and num_negatives ({self.num_negatives})"
        require(self, in_file_ok, "num_in_file_negatives", between)
        require(self, self.num_retrieved >= 10, "num_retrieved", "at least 10 (R@10 is reported)")
        require_positive(self, "temperature", "lr")
        require_one_of(self, "lr_scheduler_type", SCHEDULERS)
        require_at_least(self, 1, "grad_cache_chunk_size", "batch_size", "eval_batch_size")
        require_at_least(self, 1, "accumulate_grad_batches", "max_epochs", "log_every_n_steps")
        require_at_least(self, 1, "max_examples", "fisher_max_batches", "num_gpus", or_none=True)
        optional = ("val_max_queries", "save_every_n_steps", "early_stopping_patience")
        require_at_least(self, 1, *optional, or_none=True)
        clip = self.gradient_clip_val
        require(self, clip is None or clip > 0, "gradient_clip_val", "None or positive")
        require(self, self.max_steps == -1 or self.max_steps >= 1, "max_steps", "-1 or at least 1")
        require_one_of(self, "precision", PRECISIONS)
        require(self, bool(self.output_dir), "output_dir", "a directory path")
        reporters_ok = all(r in REPORT_TO_CHOICES for r in self.report_to)
        require(self, reporters_ok, "report_to", f"a list of {', '.join(REPORT_TO_CHOICES)}")
        require_at_least(self, 1, "num_nodes")
        strategy = "a Lightning strategy name such as auto or ddp"
        require(self, bool(self.strategy), "strategy", strategy)
        devices_ok = bool(str(self.devices).strip())
        require(self, devices_ok, "devices", "auto, a count or a list of indices")
        require_device(self)
