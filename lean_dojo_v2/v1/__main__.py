"""``python -m lean_dojo_v2.v1 SCRIPT.py [ARGS]``: run a LeanDojo v1 script unchanged (see
:mod:`lean_dojo_v2.v1.run`)."""

import sys

from .run import main

if __name__ == "__main__":
    sys.exit(main())
