"""Issue 34, part A (documents), through a real SQLite index: a folder holding the audit's
hostile files is indexed by ``docs add`` and by the app's background indexer; each bad file
is skipped with its one-line reason (recorded and shown), the rest are indexed, and a rescan
goes past them. Also C13: ``docs search`` prints scores that say something."""

from __future__ import annotations

import contextlib
import json
import os
import re
from pathlib import Path

import pytest

from app.documents import CollectionIndexer, DocumentIndex, IndexReport
from app.documents import index as index_module
from tests.documents.hostile import bounded, docx_bytes, shared_stream_pdf, write

SECRET = "aws_secret_access_key = hunter2-outside-the-folder"


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    """A collection folder: hostile files first in sorted order, then two good ones."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "credentials").write_text(SECRET)
    folder = tmp_path / "docs"
    folder.mkdir()
    body = "<w:p><w:r><w:t>" + "hello " * 2000 + "</w:t></w:r></w:p>"
    write(folder / "a_broken.docx", docx_bytes(body, damage=True))
    if hasattr(os, "mkfifo"):
        os.mkfifo(folder / "b_pipe.txt")
    # A name in Latin-1 bytes, as a file from an old system or a zip has; a file system that
    # takes only UTF-8 names (macOS) cannot hold one.
    with contextlib.suppress(OSError, UnicodeError):
        (Path(os.fsdecode(os.fsencode(folder) + b"/c_caf\xe9.txt"))).write_text("un café")
    (folder / "d_credentials.txt").symlink_to(outside / "credentials")
    if os.path.exists("/dev/zero"):
        (folder / "e_zero.txt").symlink_to("/dev/zero")
    (folder / "z_rivers.txt").write_text("The Nile flows north through Egypt.")
    (folder / "f_inside.md").symlink_to(folder / "z_rivers.txt")  # inside: followed
    return folder


def _reasons(report: IndexReport) -> dict[str, str]:
    return {Path(file).name: message for file, message in report.skipped}


EXPECTED = {
    "a_broken.docx": r"a_broken.docx: a damaged part inside \(Error -3 while decompressing",
    "b_pipe.txt": r"b_pipe.txt: not a regular file \(a pipe, device or socket\)",
    "c_caf\\xe9.txt": r"c_caf\\xe9.txt: the file name is not valid UTF-8",
    "d_credentials.txt": r"d_credentials.txt: a link to a file outside the folder",
    "e_zero.txt": r"e_zero.txt: a link to a file outside the folder",
}


def _check_skipped(reasons: dict[str, str], folder: Path) -> None:
    present = {n for n in EXPECTED if n in reasons}
    assert {"a_broken.docx", "d_credentials.txt"} <= present
    assert set(reasons) == present  # nothing else was skipped
    for name in present:
        assert re.match(EXPECTED[name], reasons[name]) and "\n" not in reasons[name]


def test_docs_add_skips_each_bad_file_with_its_reason_and_indexes_the_rest(
    hostile: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from app.__main__ import main

    where = ["--index", str(tmp_path / "cli.sqlite3")]
    # Was: a hang (FIFO, /dev/zero) or a SQLite traceback (the Latin-1 name), files after it
    # never indexed; the linked credentials file searchable.
    code = bounded(lambda: main(["docs", "add", str(hostile), "--collection", "c", *where]), 30)
    out, err = capsys.readouterr()
    assert code == 0 and "Traceback" not in out + err
    assert out.startswith("2 added, 0 updated, 0 unchanged, 0 removed, ")
    shown = dict(line.removeprefix("skipped: ").split(": ", 1) for line in out.splitlines()[1:])
    _check_skipped({name: f"{name}: {why}" for name, why in shown.items()}, hostile)

    assert main(["docs", "search", "c", "aws secret access key hunter2", *where]) == 0
    assert capsys.readouterr().out == ""  # the linked file outside the folder was never read
    assert main(["docs", "list", *where]) == 0
    listed = capsys.readouterr().out
    assert "\tskipped: " in listed and "d_credentials.txt: a link to a file outside" in listed

    assert main(["docs", "rescan", "c", "--json", *where]) == 0  # past them, not stuck on them
    report = json.loads(capsys.readouterr().out)
    assert (report["added"], report["skipped"], report["failed"]) == (0, [], [])
    assert report["unchanged"] == len(shown) + 2


def test_the_background_indexer_goes_past_bad_files_on_every_rescan(
    hostile: Path, tmp_path: Path
) -> None:
    done: list[object] = []
    indexer = CollectionIndexer(tmp_path / "bg.sqlite3", on_done=lambda _c, r: done.append(r))
    try:
        bounded(lambda: indexer.add("c", hostile).result(timeout=30), 30)
        bounded(lambda: indexer.rescan_all().result(timeout=30), 30)
    finally:
        indexer.close()
    first, second = done
    assert isinstance(first, IndexReport) and isinstance(second, IndexReport)
    assert (first.added, first.failed) == (2, [])
    _check_skipped(_reasons(first), hostile)
    assert (second.added, second.skipped, second.unchanged) == (0, [], len(first.skipped) + 2)
    index = DocumentIndex(tmp_path / "bg.sqlite3")  # recorded for the Collections window
    files = {Path(f.path).name: (f.status, f.error) for f in index.files("c")}
    index.close()
    assert files["d_credentials.txt"][0] == "skipped" and files["z_rivers.txt"] == ("ok", None)


def test_a_file_that_breaks_indexing_unforeseen_is_failed_and_the_scan_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Fault injection: a bug nobody foresaw (here in reading one file) must cost that file,
    # not the scan; the old loop let it escape, so every rescan stopped at the same file.
    folder = tmp_path / "docs"
    folder.mkdir()
    for name in ("a.txt", "b.txt", "c.txt"):
        (folder / name).write_text(f"text of {name}")
    real = index_module.read_regular

    def read(path: Path) -> bytes:
        if path.name == "b.txt":
            raise RuntimeError("unforeseen\nwith a second line")
        return real(path)

    monkeypatch.setattr(index_module, "read_regular", read)
    index = DocumentIndex(tmp_path / "i.sqlite3")
    report = index.add("c", folder)
    again = index.rescan("c")
    index.close()
    assert report.added == 2 and [Path(f).name for f, _ in report.failed] == ["b.txt"]
    assert report.failed[0][1] == (
        "b.txt: indexing failed (RuntimeError('unforeseen\\nwith a second line'))"
    )
    assert (again.unchanged, len(again.failed)) == (2, 1)  # retried, and the scan went on


def test_a_parser_that_raises_unforeseen_skips_that_file(monkeypatch: pytest.MonkeyPatch) -> None:
    from app.documents import extract, extract_text

    def broken(markup: str, budget: object, prefix: str = "") -> list[object]:
        raise IndexError("list index out of range\n  at state 7")

    monkeypatch.setattr(extract, "html_sections", broken)
    with pytest.raises(extract.DocumentError) as caught:
        extract_text("page.html", b"<p>x</p>")
    assert str(caught.value) == (
        "page.html: not a readable html file (IndexError: list index out of range at state 7)"
    )


def test_cancelling_stops_inside_a_long_file_which_is_read_again_next_time(
    tmp_path: Path,
) -> None:
    import threading

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text("first")
    content = b"BT /F1 12 Tf 72 720 Td " + b"(a page of text) Tj " * 50 + b"ET"
    write(folder / "b.pdf", shared_stream_pdf(500, content))
    cancel = threading.Event()

    def progress(p: object) -> None:
        if str(getattr(p, "file", "")).endswith("b.pdf"):
            cancel.set()  # Stop (or quitting) while b.pdf is being read

    index = DocumentIndex(tmp_path / "i.sqlite3")
    report = index.add("c", folder, progress, cancel)
    stored = [Path(f.path).name for f in index.files("c")]
    resumed = index.rescan("c")
    index.close()
    assert report.cancelled and (report.added, report.skipped) == (1, []) and stored == ["a.txt"]
    assert (resumed.added, resumed.unchanged) == (1, 1)


def test_docs_search_prints_the_fused_score_with_its_bm25(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # C13: every hit printed "score 0.0164" (1/61, first place in one ranking, 4 digits).
    from app.__main__ import main

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text("river river river delta")
    (folder / "b.txt").write_text("a river and a mountain and a lake and a forest")
    for i, topic in enumerate(["water", "stones", "clouds", "trees", "birds", "roads"]):
        (folder / f"other{i}.txt").write_text(f"nothing about it, only {topic}")  # bm25's idf
    where = ["--index", str(tmp_path / "s.sqlite3")]
    assert main(["docs", "add", str(folder), "--collection", "c", *where]) == 0
    capsys.readouterr()
    assert main(["docs", "search", "c", "river", "--mode", "keyword", *where]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line[:1].isdigit()]
    scores = [re.search(r"score (0\.\d{5}) \(bm25 (\d+\.\d{3})\)$", line) for line in lines]
    assert len(scores) == 2 and all(scores)
    fused = [float(m.group(1)) for m in scores if m]
    bm25 = [float(m.group(2)) for m in scores if m]
    assert fused[0] > fused[1] and bm25[0] > bm25[1] > 0
    assert lines[0].startswith("1. ") and "a.txt" in lines[0]
