"""Every ``HEARTH_*`` environment knob the engine reads, declared once.

Owns the declarations (name, type, default, one line of meaning) and reading them. The
boundary layer: imports nothing else of the engine. Does not own the app's knobs
(`app.system.settings`).
"""

from __future__ import annotations
