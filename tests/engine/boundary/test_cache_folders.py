"""One rule for folders derived from a GGUF (issue 22 C4): a newer derivation replaces only
older ones of the *same file*; another file of the same name keeps its own. Before, the fast
path's conversions were matched by file name alone, so two same-name files in different folders
evicted each other's conversion on every open."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench.synth.core import write_tiny_model
from engine.cache_folders import mark_source, remove_other_versions, source_of
from engine.fastpath.cache import converted_graph
from engine.header_cache import read_gguf_header


def _folder(parent: Path, name: str, source: Path | None) -> Path:
    folder = parent / name
    folder.mkdir(parents=True)
    if source is not None:
        mark_source(folder, source)
    return folder


def test_only_older_versions_of_the_same_file_are_removed(tmp_path: Path) -> None:
    mine, theirs = tmp_path / "a" / "m.gguf", tmp_path / "b" / "m.gguf"
    root = tmp_path / "cache"
    current = _folder(root, "m-new", mine)
    old_mine = _folder(root, "m-old", mine)
    other_file = _folder(root, "m-x", theirs)
    unmarked = _folder(root, "m-legacy", None)
    assert remove_other_versions(current, mine) == 1
    assert not old_mine.exists() and other_file.exists() and unmarked.exists()
    assert source_of(other_file) == str(theirs.resolve())
    assert remove_other_versions(current, mine, alike=lambda p: "legacy" not in p.name) == 0
    assert remove_other_versions(current, mine, unmarked=True) == 1
    assert current.exists() and other_file.exists() and not unmarked.exists()


@pytest.fixture
def same_name_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(tmp_path / "cache"))
    first, second = tmp_path / "hearth" / "tiny.gguf", tmp_path / "lmstudio" / "tiny.gguf"
    for path, seed in ((first, 0), (second, 1)):
        path.parent.mkdir()
        write_tiny_model(path, "llama", "Q8_0", seed=seed)
    return first, second


def test_two_files_of_the_same_name_keep_their_own_conversions(
    same_name_files: tuple[Path, Path],
) -> None:
    first, second = same_name_files
    graph_1 = converted_graph(first, lambda _p: None)
    header_1 = read_gguf_header(first, lambda _p: None)
    graph_2 = converted_graph(second, lambda _p: None)
    header_2 = read_gguf_header(second, lambda _p: None)
    assert graph_1 != graph_2 and header_1 != header_2
    assert all(p.is_dir() for p in (graph_1, graph_2, header_1, header_2))
    # A changed file (new mtime: another identity) replaces its own older conversion only.
    os.utime(first, (1_000_000_000, 1_000_000_000))
    graph_1b = converted_graph(first, lambda _p: None)
    header_1b = read_gguf_header(first, lambda _p: None)
    assert graph_1b != graph_1 and not graph_1.exists() and graph_2.is_dir()
    assert header_1b != header_1 and not header_1.exists() and header_2.is_dir()


def test_a_conversion_finished_meanwhile_by_another_process_is_kept(
    same_name_files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two processes converting one file at once (test workers, the app and the server): the
    later one must not delete the earlier one's folder, which it may be reading."""
    from engine.fastpath import cache

    first, _ = same_name_files
    target = cache.graph_folder(first)
    real_write = cache._write_graph

    def write_while_another_finishes(*args: object, **kwargs: object) -> None:
        real_write(*args, **kwargs)  # type: ignore[arg-type]
        other = target.parent / ".other-process"
        other.mkdir()
        real_write(first, other, lambda _p: None, cache.ACCURACY_INT8)
        (other / "theirs").write_text("in use", encoding="utf-8")
        other.rename(target)

    monkeypatch.setattr(cache, "_write_graph", write_while_another_finishes)
    assert converted_graph(first, lambda _p: None) == target
    assert (target / "theirs").read_text(encoding="utf-8") == "in use"
    assert not list(target.parent.glob(".tmp-*"))
