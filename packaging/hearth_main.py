"""Entry script for the PyInstaller bundle: the same as `python -m app`.

PyInstaller needs a script file, not a module name. Kept separate from app/__main__.py so the
bundle-only concerns stay here: ``freeze_support`` makes any multiprocessing child of a frozen
executable run its task instead of starting a second copy of the app.
"""

from __future__ import annotations

import multiprocessing
import sys

if __name__ == "__main__":
    multiprocessing.freeze_support()
    from app.__main__ import main

    sys.exit(main())
