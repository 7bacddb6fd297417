"""Test-wide settings: Qt runs offscreen; user data goes to a per-session temp dir (the model cache is shared: it is only a cache)."""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Keep tests away from the user's real data and model cache.
_tmp = tempfile.mkdtemp(prefix="hearth-tests-")
os.environ.setdefault("HEARTH_DATA_DIR", os.path.join(_tmp, "data"))
