"""The version of lean-dojo-v2, in one place: ``lean_dojo_v2.__version__``, ``lean-dojo-v2
--version`` and the metadata every writer records read it from here (``pyproject.toml`` names
the same number)."""

__version__ = "0.1.0"
