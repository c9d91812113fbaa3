"""Layer 5: ``lean-dojo-v2 quickstart``, the whole loop offline in one command.

Bundled real data (:mod:`.minif2f`) → database → a short LoRA SFT on a focused training set
(:mod:`.focused`) → best-first search through ``ReplayEnv``, trained and untrained model side by
side (:mod:`.run`) → a report (:mod:`.report`). See ``docs/quickstart.md``.
"""
