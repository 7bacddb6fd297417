"""The same image is encoded once (memory, then disk after a restart), and the CLI writes rows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from PIL import Image

from bench.vision_reference import synthetic_image
from engine.vision.cache import EmbeddingCache, image_key
from engine.vision.encode import ImageEncoder

ROOT = Path(__file__).resolve().parents[3]


def _picture(tmp_path: Path, h: int = 100, w: int = 150) -> Path:
    path = tmp_path / "pic.png"
    Image.fromarray(synthetic_image(h, w)).save(path)
    return path


def test_a_second_encode_is_a_cache_hit_and_a_restart_reads_the_disk(
    tiny_mmproj: Callable[[str, str], Path], tmp_path: Path
) -> None:
    folder, pic = tmp_path / "vision", _picture(tmp_path)
    first = ImageEncoder(tiny_mmproj("gemma4v", "F16"), EmbeddingCache(folder))
    a = first.encode(pic, 70)
    assert a.cache_hit is None and a.seconds > 0
    b = first.encode(pic.read_bytes(), 70)  # the same bytes, however they come
    assert b.cache_hit == "memory" and np.array_equal(a.rows, b.rows)
    assert first.encode(pic, 140).cache_hit is None  # another budget is another encode
    restarted = ImageEncoder(tiny_mmproj("gemma4v", "F16"), EmbeddingCache(folder))
    c = restarted.encode(pic, 70)
    assert c.cache_hit == "disk" and np.array_equal(a.rows, c.rows)


def test_the_disk_cache_is_bounded_and_shrugs_off_damage(tmp_path: Path) -> None:
    rows = np.ones((10, 100), np.float32)  # 4,000 bytes of data per entry
    cache = EmbeddingCache(tmp_path, memory_bytes=0, disk_bytes=10_000)
    for i in range(5):
        cache.put(image_key(str(i), "m", None), rows)
    kept = sorted(tmp_path.glob("*.npy"))
    assert 1 <= len(kept) <= 2  # least recently used went first
    assert cache.get(image_key("4", "m", None)) is not None
    assert cache.get(image_key("0", "m", None)) is None
    kept[0].write_bytes(b"garbage")
    assert cache.get(kept[0].stem) is None and not kept[0].exists()


def test_memory_cache_is_lru_in_bytes() -> None:
    cache = EmbeddingCache(None, memory_bytes=8_000)
    rows = np.zeros((10, 100), np.float32)
    for key in "abc":
        cache.put(key, rows)
    assert cache.get("a") is None and cache.get("c") is not None


def test_encode_image_cli(tiny_mmproj: Callable[[str, str], Path], tmp_path: Path) -> None:
    out = tmp_path / "rows.npy"
    env = {**os.environ, "HEARTH_CACHE_DIR": str(tmp_path / "cache")}
    cmd = [sys.executable, "-m", "engine", "encode-image", "--mmproj",
           str(tiny_mmproj("qwen3vl", "Q8_0")), "--image", str(_picture(tmp_path)),
           "--out", str(out), "--json"]  # fmt: skip
    runs = [subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env) for _ in "ab"]
    records = [json.loads(r.stdout) for r in runs]
    assert records[0]["image_tokens"] == 15 and records[0]["cache_hit"] is None
    assert records[1]["cache_hit"] == "disk"
    assert np.load(out).shape == (15, 128)


def test_encode_image_cli_refuses_in_one_line(
    tiny_mmproj: Callable[[str, str], Path], tmp_path: Path
) -> None:
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n broken")
    cmd = [sys.executable, "-m", "engine", "encode-image", "--mmproj",
           str(tiny_mmproj("gemma3", "F16")), "--image", str(bad), "--out", str(tmp_path / "o.npy"),
           "--no-cache"]  # fmt: skip
    run = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 2
    assert run.stderr.strip().count("\n") == 0 and "bad.png" in run.stderr


def test_count_tokens_matches_an_encode(
    tiny_mmproj: Callable[[str, str], Path], tmp_path: Path
) -> None:
    encoder = ImageEncoder(tiny_mmproj("qwen3vl", "F16"))
    pic = _picture(tmp_path, 300, 500)
    assert encoder.count_tokens(500, 300) == encoder.encode(pic).n_tokens == 144
    assert encoder.count_tokens(4500, 3000, 256) <= 256
    gemma3 = ImageEncoder(tiny_mmproj("gemma3", "F16"))
    assert gemma3.count_tokens(4000, 100) == 16  # a fixed square: always (128/8/4)²
