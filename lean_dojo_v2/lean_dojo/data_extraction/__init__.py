"""Upstream LeanDojo-v2 import paths for tracing, kept working as thin re-exports.

Code written for upstream LeanDojo-v2 imports from ``lean_dojo_v2.lean_dojo.data_extraction.{lean,
trace, dataset, cache, traced_data}``. Each of those modules here re-exports, lazily, the one real
implementation in :mod:`lean_dojo_v2.lean_dojo` (and :mod:`lean_dojo_v2.data`); nothing is
implemented twice. New code should import from :mod:`lean_dojo_v2.lean_dojo` directly.

Upstream names that have no equivalent here raise ``AttributeError`` with a hint (for example
``Cache``, ``LeanFile``, ``TracedTheorem``); see each module's docstring.
"""
