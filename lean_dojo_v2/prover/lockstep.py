"""Layer 3 (prover): one generator shared by several searches in threads of this process, whose
calls are answered together, one batched call per round (``prove_theorems(..., backend="inline",
workers=N)``).

A search asks its generator for the tactics of one or a few states at a time. On a CPU, and on a
GPU that one search leaves idle, the cost of a decoding step hardly depends on how many rows it
decodes (the weights are read once per step either way): SmolLM2-135M sampled 8 tactics of one
state in 1.4 s and of each of 8 states in 4.2 s (0.53 s a state). :class:`Lockstep` lets ``N``
searches run at once, each in a thread with its own environment, and hands each one a
:class:`LockstepSlot`, a ``TacticGenerator`` whose ``generate`` waits until every search of the
round has asked, then answers all of them with one call of the shared generator.

Rounds are deterministic: a round is cut when every slot that still has theorems to prove is
waiting (a slot between two theorems counts as not yet waiting), and the states are put in the
order of the theorems' indices; so with a seeded generator the same theorems give the same
tactics whatever the threads' timing (a time limit that runs out is the one exception, as it is
for one search). Calls a round cannot merge (another ``num_samples`` or ``prefix``, a generator
bound to one theorem's premises, whole-proof sampling) are made one at a time under a lock, like
the shared generator's other methods.

What a batched call used (:meth:`TacticGenerator.usage`) is shared among its searches by their
number of states; each slot reports its own share, which is what a search counts.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..models.generator import GeneratorUsage, TacticGenerator

if TYPE_CHECKING:
    from ..data.model import Theorem
    from ..models.generator import Candidate

__all__ = ["Lockstep", "LockstepSlot"]


@dataclass
class _Request:
    slot: LockstepSlot
    states: list[str]
    num_samples: int
    prefix: str | None
    done: threading.Event = field(default_factory=threading.Event)
    answer: list[list[Candidate]] | None = None
    error: BaseException | None = None


class Lockstep:
    """The shared generator (``inner``) and its rounds. :meth:`slot` makes one slot per search
    thread; a slot takes part in every round until it is closed."""

    def __init__(self, inner: TacticGenerator) -> None:
        self.inner = inner
        self._cond = threading.Condition()
        self._slots: list[LockstepSlot] = []
        self._pending: list[_Request] = []
        self._calls = threading.Lock()  # one call of ``inner`` at a time

    def slot(self) -> LockstepSlot:
        made = LockstepSlot(self)
        with self._cond:
            self._slots.append(made)
        return made

    # ------------------------------------------------------------------ rounds

    def _ask(self, request: _Request) -> list[list[Candidate]]:
        with self._cond:
            self._pending.append(request)
            self._cut_round_if_ready()
        request.done.wait()
        if request.error is not None:
            raise request.error
        assert request.answer is not None
        return request.answer

    def _leave(self, slot: LockstepSlot) -> None:
        with self._cond:
            if slot in self._slots:
                self._slots.remove(slot)
            self._cut_round_if_ready()

    def _between(self, slot: LockstepSlot, value: bool) -> None:
        with self._cond:
            slot.between = value
            self._cut_round_if_ready()

    def _cut_round_if_ready(self) -> None:
        """Run a round when every slot still proving has asked (holding ``_cond``). The round
        runs in the thread that completed it; the others wait for their answer."""
        if not self._pending:
            return
        asking = {id(r.slot) for r in self._pending}
        if any(s.between or id(s) not in asking for s in self._slots):
            return
        taken, self._pending = self._pending, []
        # Outside the condition: a long decode must not stop slots from asking for the next.
        self._cond.release()
        try:
            self._answer(sorted(taken, key=lambda r: r.slot.index))
        finally:
            self._cond.acquire()

    def _answer(self, requests: list[_Request]) -> None:
        groups: dict[tuple[int, str | None], list[_Request]] = {}
        for r in requests:
            groups.setdefault((r.num_samples, r.prefix), []).append(r)
        for (n, prefix), group in groups.items():
            states = [s for r in group for s in r.states]
            try:
                with self._calls:
                    before = _usage(self.inner)
                    answers = self.inner.generate(states, n, prefix=prefix)
                    used = _usage(self.inner) - before
            except BaseException as exc:  # noqa: BLE001 - each search gets its generator's error
                for r in group:
                    r.error = exc
                    r.done.set()
                continue
            at = 0
            for r in group:
                r.answer = answers[at : at + len(r.states)]
                at += len(r.states)
                r.slot.add_usage(_share(used, len(r.states), len(states)))
                r.done.set()


class _Counted:
    """What a search's generator used, counted for it alone (the shared generator's count is
    every search's)."""

    def __init__(self, lockstep: Lockstep) -> None:
        self.lockstep = lockstep
        self._used = GeneratorUsage()
        self._used_lock = threading.Lock()

    def usage(self) -> GeneratorUsage:
        with self._used_lock:
            return self._used

    def add_usage(self, used: GeneratorUsage) -> None:
        with self._used_lock:
            self._used = self._used + used

    def _alone(self, owner: object, name: str) -> Any:
        """``owner``'s attribute ``name``; a method is called one call of the shared generator
        at a time, and what it used is counted for this search."""
        value = getattr(owner, name)
        if not callable(value):
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            with self.lockstep._calls:
                before = _usage(owner)
                try:
                    return value(*args, **kwargs)
                finally:
                    self.add_usage(_usage(owner) - before)

        return call


class LockstepSlot(_Counted, TacticGenerator):
    """One search thread's view of the shared generator (a ``TacticGenerator``): ``generate``
    takes part in the rounds; :meth:`begin` names the theorem proved next (its index orders
    the round's states), :meth:`finish` says its search ended, :meth:`close` leaves the rounds
    once the thread has nothing more to prove. Other methods are the shared generator's, one
    call at a time."""

    def __init__(self, lockstep: Lockstep) -> None:
        super().__init__(lockstep)
        self.index = -1
        self.between = True  # no theorem yet: a round does not wait for this slot

    def begin(self, index: int) -> None:
        self.index = index
        self.lockstep._between(self, False)

    def finish(self) -> None:
        self.lockstep._between(self, True)

    def close(self) -> None:
        self.lockstep._leave(self)

    def generate(
        self, states: list[str], num_samples: int, *, prefix: str | None = None
    ) -> list[list[Candidate]]:
        if not states:
            return []
        return self.lockstep._ask(_Request(self, list(states), num_samples, prefix))

    def for_theorem(self, theorem: Theorem) -> TacticGenerator:
        inner = self.lockstep.inner
        bound = self._alone(inner, "for_theorem")(theorem)
        # Bound to the theorem's own premises (RetrievalProver): its calls cannot be merged.
        return self if bound is inner else _Alone(bound, self.lockstep)

    def __getattr__(self, name: str) -> Any:
        return self._alone(self.lockstep.inner, name)


class _Alone(_Counted, TacticGenerator):
    """A generator bound to one theorem, called one call of the shared generator at a time."""

    def __init__(self, inner: TacticGenerator, lockstep: Lockstep) -> None:
        super().__init__(lockstep)
        self._inner = inner

    def generate(
        self, states: list[str], num_samples: int, *, prefix: str | None = None
    ) -> list[list[Candidate]]:
        answer: list[list[Candidate]] = self._alone(self._inner, "generate")(
            states, num_samples, prefix=prefix
        )
        return answer

    def for_theorem(self, theorem: Theorem) -> TacticGenerator:
        return self

    def __getattr__(self, name: str) -> Any:
        return self._alone(self._inner, name)


def _usage(generator: object) -> GeneratorUsage:
    usage = getattr(generator, "usage", None)
    return usage() if callable(usage) else GeneratorUsage()


def _share(used: GeneratorUsage, part: int, whole: int) -> GeneratorUsage:
    """``part / whole`` of ``used``; the call itself counts for each search that took part."""
    f = part / whole
    return GeneratorUsage(
        calls=used.calls and 1,
        tokens_in=round(used.tokens_in * f),
        tokens_out=round(used.tokens_out * f),
        seconds=used.seconds * f,
        gpu_seconds=used.gpu_seconds * f,
    )
