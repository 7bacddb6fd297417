"""The kernel's cache trusts nothing it finds (issue 34 A12, issue 35 item 7).

A damaged or truncated cached library used to turn the kernel off for every later run; one
missing a symbol raised AttributeError; a leftover shipped ``_experts.so`` of older sources
shadowed a source change; old builds piled up. Each case runs in a child process with its own
cache folder (the real build is copied in, so only the rebuilds compile), so a library that
crashes at load fails the test rather than pytest.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.cache_folders import publish_folder
from engine.kernels import build

needs_kernel = pytest.mark.skipif(not build.available(), reason="no C compiler for the kernel")

_CHILD = (
    "from engine.kernels import build\n"
    "path = build.library_path()\n"
    "print(path, build.unavailable_reason())\n"
    "assert build.library().hearth_supports(8) == 1\n"
)


def _open_in_child(cache: Path) -> str:
    env = {**os.environ, "HEARTH_CACHE_DIR": str(cache)}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, timeout=300,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"the child failed ({done.returncode}): {done.stderr[-1500:]}"
    return done.stdout.strip()


def _seeded(tmp_path: Path) -> tuple[Path, Path]:
    """A cache holding a copy of this machine's current build: (cache root, build folder)."""
    path = build.library_path()
    assert path is not None
    folder = tmp_path / "cache" / "kernels" / path.parent.name
    shutil.copytree(path.parent, folder)
    return tmp_path / "cache", folder


@needs_kernel
@pytest.mark.parametrize("damage", ["flipped", "truncated", "empty", "no digest"])
def test_a_damaged_cached_library_is_built_again_not_loaded(damage: str, tmp_path: Path) -> None:
    cache, folder = _seeded(tmp_path)
    lib = build.verified(folder, folder.name.removeprefix("experts-"))
    assert lib is not None
    data = bytearray(lib.read_bytes())
    if damage == "flipped":  # in the code: dlopen may well succeed and then run garbage
        data[len(data) // 2 : len(data) // 2 + 64] = bytes(64)
        lib.write_bytes(bytes(data))
    elif damage == "truncated":
        lib.write_bytes(bytes(data[: len(data) // 3]))
    elif damage == "empty":
        lib.write_bytes(b"")
    else:
        (folder / build.DIGEST).unlink()
    out = _open_in_child(cache)
    rebuilt = build.verified(folder, folder.name.removeprefix("experts-"))
    assert out == f"{rebuilt} None", out  # rebuilt whole, and loaded


@needs_kernel
def test_a_cached_library_missing_a_symbol_is_built_again(tmp_path: Path) -> None:
    """Whole bytes with the right key that still lack a symbol (a library of another build
    that carries the same key): AttributeError once meant an uncaught traceback."""
    cache, folder = _seeded(tmp_path)
    key = folder.name.removeprefix("experts-")
    c_file = tmp_path / "lacking.c"
    c_file.write_text(
        f'const char hearth_build_key[] = "HEARTH-KEY:{key};";\nint hearth_supports(long t) '
        "{ return 0; }\n"
    )
    lib = build.verified(folder, key)
    assert lib is not None
    cc = os.environ.get("CC") or shutil.which("cc") or "gcc"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(lib), str(c_file)], check=True)
    digest = hashlib.sha256(lib.read_bytes()).hexdigest()
    (folder / build.DIGEST).write_text(f"{digest} {lib.name}")
    assert build.verified(folder, key) == lib  # it passes the checks before loading
    out = _open_in_child(cache)
    rebuilt = build.verified(folder, key)
    assert rebuilt is not None and out == f"{rebuilt} None", out
    assert b"hearth_routed_ffn" in rebuilt.read_bytes()


def test_a_stale_shipped_library_does_not_shadow_the_sources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``_experts.so`` beside the sources is used only when it carries their key."""
    if not all(f in build._cpu_flags().split() for f in build.SHIP_NEEDS):
        pytest.skip("this CPU does not run the shipped build")
    for source in build.sources():
        shutil.copy(source, tmp_path / source.name)
    monkeypatch.setattr(build, "SOURCE", tmp_path / build.SOURCE.name)
    shipped = tmp_path / build.SHIPPED
    shipped.write_bytes(b"\x7fELF" + b"HEARTH-KEY:0123456789abcdef;")  # older sources' key
    assert build.shipped_library() is None
    shipped.write_bytes(b"\x7fELF" + f"HEARTH-KEY:{build.build_key(build.SHIP_FLAGS)};".encode())
    assert build.shipped_library() == shipped
    with (tmp_path / "kdots.h").open("a") as header:  # a source changes: the key with it
        header.write("\n/* changed */\n")
    assert build.shipped_library() is None


def test_old_builds_are_cleaned_keeping_the_previous(tmp_path: Path) -> None:
    kernels = tmp_path / "kernels"
    now = time.time()
    made = {}
    for age, name in enumerate(["experts-current", "experts-newer", "experts-older"]):
        (kernels / name).mkdir(parents=True)
        (kernels / name / "experts-0.so").write_bytes(b"x")
        os.utime(kernels / name, (now - 100 * age, now - 100 * age))
        made[name] = kernels / name
    flat = kernels / "experts-0123456789abcdef.so"  # earlier versions' flat cache files
    flat.write_bytes(b"x")
    crashed = kernels / "tmpab12cd"  # an older version's compile cut off two hours ago
    crashed.mkdir()
    os.utime(crashed, (now - 7200, now - 7200))
    gone = build.clean_builds(made["experts-current"])
    assert sorted(p.name for p in gone) == sorted([flat.name, "experts-older", crashed.name])
    assert sorted(p.name for p in kernels.iterdir()) == ["experts-current", "experts-newer"]


def test_publish_folder_leaves_nothing_half_written(tmp_path: Path) -> None:
    target = tmp_path / "cache" / "thing"

    def fail(tmp: Path) -> None:
        (tmp / "half").write_text("x")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        publish_folder(target, fail)
    assert list(target.parent.iterdir()) == []  # no temporary, no target

    def write(text: str) -> Callable[[Path], int]:
        return lambda tmp: (tmp / "file").write_text(text)

    publish_folder(target, write("one"))
    publish_folder(target, write("two"))  # a good folder there (another process's): kept
    assert (target / "file").read_text() == "one"
    publish_folder(target, write("three"), keep=lambda t: False)  # stale: replaced
    assert (target / "file").read_text() == "three"
    stale = target.parent / ".tmp-crashed"
    stale.mkdir()
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    young = target.parent / ".tmp-running"
    young.mkdir()
    publish_folder(target.with_name("other"), write("x"))
    assert not stale.exists() and young.exists()
    assert sorted(p.name for p in target.parent.iterdir()) == [".tmp-running", "other", "thing"]
