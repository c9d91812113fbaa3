"""Typed exceptions of lean-dojo-v2.

Every error the library raises on bad input is a subclass of :class:`LeanDojoError`, so callers can
catch the family at once, and the message says what to fix.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def did_you_mean(name: str, valid: Sequence[str]) -> str:
    """`` (did you mean 'x'?)`` for the name of ``valid`` closest to ``name``, else ``""``."""
    # difflib only on this (rare) path: errors.py is imported by every module.
    from difflib import get_close_matches

    close = get_close_matches(name, valid, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


class LeanDojoError(Exception):
    """Base class of every error raised by lean-dojo-v2."""


class ConfigError(LeanDojoError):
    """A setting (environment variable or argument) has an unusable value."""


class DataFormatError(LeanDojoError, ValueError):
    """A record or file does not follow the expected format.

    Carries where the problem is (file, record index, field) so a user can find it at once.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | Path | None = None,
        record: int | None = None,
        field: str | None = None,
    ) -> None:
        self.file = str(file) if file is not None else None
        self.record = record
        self.field = field
        self.reason = message
        super().__init__(self._render())

    def __reduce__(self) -> tuple[object, ...]:  # survive pickling (worker processes)
        fields = {"file": self.file, "record": self.record, "field": self.field}
        return (_rebuild_data_format_error, (type(self), self.reason, fields))

    def _render(self) -> str:
        where = []
        if self.file is not None:
            where.append(f"file {self.file}")
        if self.record is not None:
            where.append(f"record {self.record}")
        if self.field is not None:
            where.append(f"field {self.field!r}")
        return f"{', '.join(where)}: {self.reason}" if where else self.reason

    def nested(self, prefix: str) -> DataFormatError:
        """The same error inside a container: ``prefix`` (e.g. ``traced_tactics[3]``) goes in
        front of the field."""
        field = f"{prefix}.{self.field}" if self.field else prefix
        return DataFormatError(self.reason, file=self.file, record=self.record, field=field)

    def located(
        self, *, file: str | Path | None = None, record: int | None = None
    ) -> DataFormatError:
        """A copy of this error with the file and/or record index filled in where missing."""
        return DataFormatError(
            self.reason,
            file=self.file if self.file is not None else file,
            record=self.record if self.record is not None else record,
            field=self.field,
        )


def _rebuild_data_format_error(
    cls: type[DataFormatError], reason: str, fields: dict
) -> DataFormatError:
    return cls(reason, **fields)


class DatasetNotFoundError(LeanDojoError, FileNotFoundError):
    """A path that should hold a dataset (split file or LeanDojo directory) does not."""


class SplitError(LeanDojoError, ValueError):
    """Split sizes or ratios that cannot be satisfied."""


class CorpusError(LeanDojoError, ValueError):
    """An inconsistent premise corpus (unknown import, cycle, unknown premise)."""


class OutputExistsError(LeanDojoError, FileExistsError):
    """An output path holds something this library did not write (or overlaps an input).

    Choose a new path, or pass ``--force`` / ``force=True`` where the command offers it.
    """


class IncompleteDatasetError(LeanDojoError, FileNotFoundError):
    """A LeanDojo dataset directory lacks a split file or ``corpus.jsonl``.

    ``missing`` lists the absent parts (relative paths such as ``random/val.json``). Restore them,
    or ask for a partial dataset (``--partial`` / ``partial=True``) to read what is there.
    """

    def __init__(
        self, path: str | Path, missing: list[str], not_files: list[str] | None = None
    ) -> None:
        self.path = str(path)
        self.missing = list(missing)
        self.not_files = list(not_files or [])
        shown = [f"{m} (not a file)" if m in self.not_files else m for m in self.missing]
        super().__init__(
            f"dataset {self.path} is incomplete: missing {', '.join(shown)}; restore them, "
            "or ask for a partial dataset (--partial / partial=True) to use what is there"
        )

    def __reduce__(self) -> tuple[object, ...]:  # survive pickling (worker processes)
        return (type(self), (self.path, self.missing, self.not_files))


class DuplicateTheoremError(DataFormatError):
    """The same theorem (full name, file and start) appears twice where each must appear once:
    within one split file, or across the splits of one strategy. The message names both records;
    remove one of them."""


class InteractionError(LeanDojoError):
    """Base of errors raised by the Lean boundary (``lean_dojo_v2.interaction``)."""


class TracingError(LeanDojoError):
    """Base class of everything that can go wrong while tracing a repository
    (``lean_dojo_v2.lean_dojo``)."""


class LeanNotFoundError(InteractionError, TracingError):
    """No usable Lean: no toolchain (``lean``/``lake``, with or without elan) or no Pantograph REPL
    binary was found. Raised by tracing and by the Lean boundary alike; the message says what to
    install (elan, the project's toolchain, Pantograph) and how to point the library at it.

    ``lean_dojo_v2.interaction.LeanNotFoundError`` and
    ``lean_dojo_v2.lean_dojo.ToolchainNotFoundError`` are this class; it is both an
    ``InteractionError`` and a ``TracingError``, so code catching either family still catches it."""


class ToolchainNotInstalledError(LeanNotFoundError):
    """elan (or a ``lean`` on PATH) is there, but not the toolchain the project names in its
    ``lean-toolchain``; the message has the ``elan toolchain install`` command to run."""


class CommandError(LeanDojoError):
    """An external program (git, lean, lake, elan, the Pantograph REPL) could not do its job.

    ``command`` is the argument list; ``stdout``/``stderr`` hold what it printed (bytes, possibly
    cut); ``hint`` is the advice that ends the message."""

    def __init__(
        self,
        message: str,
        command: tuple[str, ...] | list[str] = (),
        *,
        returncode: int | None = None,
        stdout: bytes = b"",
        stderr: bytes = b"",
        hint: str = "",
    ) -> None:
        self.reason = message
        self.command = tuple(command)
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.hint = hint
        super().__init__(f"{message}; {hint}" if hint else message)

    def __reduce__(self) -> tuple[object, ...]:  # survive pickling (worker processes)
        kwargs = {
            "returncode": self.returncode,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "hint": self.hint,
        }
        return (_rebuild_command_error, (type(self), self.reason, self.command, kwargs))


def _rebuild_command_error(
    cls: type[CommandError], reason: str, command: tuple[str, ...], kwargs: dict
) -> CommandError:
    return cls(reason, command, **kwargs)


class CommandNotFoundError(CommandError, FileNotFoundError):
    """The program does not exist, is not on PATH or is not executable: install it or fix PATH."""


class CommandFailedError(CommandError):
    """The program ran and exited with a non-zero status; the message ends with its stderr."""


class CommandTimeoutError(CommandError, TimeoutError):
    """The program ran longer than its time limit and was killed (with everything it started)."""


class CommandOutputError(CommandError, ValueError):
    """The program printed something that is not the text expected (e.g. not UTF-8)."""


class ModelError(LeanDojoError):
    """Base of errors raised by the models layer (``lean_dojo_v2.models``): loading a model,
    converting the bundled GGUF, generating tactics."""


class ModelNotFoundError(ModelError, FileNotFoundError):
    """A model name, directory, ``.gguf`` file or adapter could not be found or loaded (offline,
    a hub id is only found in the local Hugging Face cache). The message names what was tried
    and the valid forms: ``None``/``"smollm2"`` (the bundled default), a Hugging Face id, a local
    model directory, a ``.gguf`` file, or a PEFT adapter directory."""


class UnknownConfigKeyError(ConfigError, KeyError):
    """A config file, ``--set`` override or keyword names a field the config does not have.

    ``key`` is the unknown name, ``valid`` the config's field names, ``source`` where it came from.
    Raised by the config system (:mod:`lean_dojo_v2.config.loading`) for every command and trainer
    that reads a config; also importable from ``lean_dojo_v2.trainer``.
    """

    def __init__(
        self, key: str, valid: Sequence[str], *, source: str = "", config: str = ""
    ) -> None:
        self.key = key
        self.valid = list(valid)
        self.source = source
        self.config = config
        where = f" in {source}" if source else ""
        what = f" of {config}" if config else ""
        hint = did_you_mean(key, self.valid)
        self.message = (
            f"unknown config key {key!r}{where}{hint}; valid keys{what}: {', '.join(self.valid)}"
        )
        super().__init__(self.message)

    def __str__(self) -> str:  # KeyError would quote the message
        return self.message

    def __reduce__(self) -> tuple[object, ...]:  # survive pickling (worker processes)
        return (_rebuild_unknown_key, (type(self), self.key, self.valid, self.source, self.config))


def _rebuild_unknown_key(
    cls: type[UnknownConfigKeyError], key: str, valid: list[str], source: str, config: str
) -> UnknownConfigKeyError:
    return cls(key, valid, source=source, config=config)


class ConfigValueError(ConfigError, ValueError):
    """A config field got a value of the wrong type or out of its range; the message names the
    field, the value, and what it accepts."""


class TrainerError(LeanDojoError):
    """Base of the errors raised by ``lean_dojo_v2.trainer`` (defined here, like the other layers'
    bases, so that lower layers can raise :class:`EmptyDatasetError`); also importable from
    ``lean_dojo_v2.trainer``."""


class AgentError(LeanDojoError):
    """Base of the errors raised by :mod:`lean_dojo_v2.agent` (defined here, like the other
    layers' bases, so that a trainer an agent is built on can raise an
    :class:`AgentConfigError`); importable from ``lean_dojo_v2.agent``, the same class."""


class AgentConfigError(AgentError, ConfigError):
    """An agent was given something it cannot work with: a trainer without an ``output_dir``
    (where the trained model goes, and where the prover loads it from), or a prover setting out
    of range. ``SFTTrainer(output_dir=None)`` and ``GRPOTrainer(output_dir=None)`` raise one too
    (the trainers' ``OutputDirArgumentError``), so ``HFAgent(SFTTrainer(output_dir=None))``
    fails with the error the agents promise. Importable from ``lean_dojo_v2.agent``."""


class EmptyDatasetError(TrainerError, ValueError):
    """The training data yields no example: no theorems, or theorems without traced tactics (term
    proofs), or only ``sorry`` tactics, or every example longer than ``max_seq_len``. The message
    says which and how many were seen."""
