"""Extraction of every supported type from real files, and every kind of bad input."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from app.documents import DocumentError, extract_file, extract_text, formats
from tests.documents.files import (
    write_docx,
    write_encrypted_pdf,
    write_epub,
    write_pdf,
    write_zip_bomb,
)


def test_pdf_pages_are_sections_with_page_locators(tmp_path: Path) -> None:
    doc = extract_file(write_pdf(tmp_path / "a.pdf", ["First page text", "", "Third page"]))
    assert doc.kind == "pdf"
    assert [(s.locator, s.text) for s in doc.sections] == [
        ("page 1", "First page text"),
        ("page 3", "Third page"),
    ]


def test_scanned_pdf_without_text_layer_says_no_ocr(tmp_path: Path) -> None:
    with pytest.raises(DocumentError, match=r"no text layer.*does not do OCR"):
        extract_file(write_pdf(tmp_path / "scan.pdf", ["", ""]))


def test_encrypted_pdf_is_refused_with_a_message(tmp_path: Path) -> None:
    plain = write_pdf(tmp_path / "plain.pdf", ["secret text"])
    locked = write_encrypted_pdf(tmp_path / "locked.pdf", plain)
    with pytest.raises(DocumentError, match=r"locked.pdf: the PDF is encrypted"):
        extract_file(locked)


def test_damaged_pdf_is_refused(tmp_path: Path) -> None:
    (tmp_path / "bad.pdf").write_bytes(b"%PDF-1.4\nnot really")
    with pytest.raises(DocumentError, match=r"bad.pdf: not a readable PDF"):
        extract_file(tmp_path / "bad.pdf")


def test_docx_headings_paragraphs_and_tables(tmp_path: Path) -> None:
    doc = extract_file(write_docx(tmp_path / "z.docx"))
    body = [(s.locator, s.text) for s in doc.sections if not s.heading]
    assert body[0] == ("Zebras", "Zebras have black and white stripes that confuse biting flies.")
    assert body[1][0] == "Zebras › Habitat"
    assert "plains zebra | 500000" in body[1][1]


def test_docx_zip_bomb_is_refused_within_the_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(formats, "MAX_UNZIPPED_BYTES", 4 << 20)
    bomb = write_zip_bomb(tmp_path / "bomb.docx", "word/document.xml", 16 << 20)
    assert bomb.stat().st_size < 100_000
    with pytest.raises(DocumentError, match=r"bomb.docx: unpacks to over 4 MB"):
        extract_file(bomb)


def test_epub_chapters_in_spine_order(tmp_path: Path) -> None:
    path = write_epub(tmp_path / "b.epub", [("Dawn", "The sun rose."), ("Dusk", "太阳落山了。")])
    sections = [(s.locator, s.text) for s in extract_file(path).sections if not s.heading]
    assert sections == [("chapter 1 › Dawn", "The sun rose."), ("chapter 2 › Dusk", "太阳落山了。")]


def test_epub_zip_bomb_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(formats, "MAX_UNZIPPED_BYTES", 4 << 20)
    with pytest.raises(DocumentError, match=r"unpacks to over"):
        extract_file(write_zip_bomb(tmp_path / "bomb.epub", "OEBPS/c.xhtml", 16 << 20))


def test_html_skips_scripts_and_keeps_heading_paths() -> None:
    html = (
        "<html><head><title>T</title><style>p{}</style></head><body><nav>menu</nav>"
        "<h1>Guide</h1><p>Read &amp; learn.</p><script>alert(1)</script>"
        "<h2>Install</h2><ul><li>one</li><li>two</li></ul></body></html>"
    )
    doc = extract_text("page.html", html.encode())
    body = [(s.locator, s.text) for s in doc.sections if not s.heading]
    assert body == [("Guide", "Read & learn."), ("Guide › Install", "one\ntwo")]


def test_markdown_heading_paths_ignore_fenced_code() -> None:
    text = "# A\nintro\n## B\nbody\n```\n# not a heading\n```\n# C\nend\n"
    doc = extract_text("notes.md", text.encode())
    body = [(s.locator, s.text) for s in doc.sections if not s.heading]
    assert body == [("A", "intro"), ("A › B", "body\n```\n# not a heading\n```"), ("C", "end")]


def test_csv_rows_keep_their_header_names() -> None:
    doc = extract_text("t.csv", "city,population\n北京,21893095\nParis,2102650\n".encode())
    assert doc.sections[0].locator == "rows 1–2"
    assert (
        doc.sections[0].text == "city: 北京; population: 21893095\ncity: Paris; population: 2102650"
    )


def test_source_code_is_read_as_text(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("def f():\n    return 1\n")
    assert extract_file(tmp_path / "m.py").kind == "code"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ("中文文本，国标编码。".encode("gb18030"), "中文文本，国标编码。"),
        ("UTF-16 带 BOM".encode("utf-16"), "UTF-16 带 BOM"),
        ("\ufeffUTF-8 with BOM".encode(), "UTF-8 with BOM"),
        ("plain ütf-8 中文".encode(), "plain ütf-8 中文"),
    ],
)
def test_text_encodings_are_detected(data: bytes, expected: str) -> None:
    assert extract_text("a.txt", data).text == expected


def test_binary_garbage_renamed_txt_is_refused(tmp_path: Path) -> None:
    (tmp_path / "photo.txt").write_bytes(random.Random(0).randbytes(50_000))
    with pytest.raises(DocumentError, match=r"photo.txt: this is binary data, not text"):
        extract_file(tmp_path / "photo.txt")


def test_a_2_gb_file_is_refused_before_reading(tmp_path: Path) -> None:
    huge = tmp_path / "huge.txt"
    with huge.open("wb") as stream:
        stream.truncate(2 * 2**30)  # sparse: no disk used, and never read
    with pytest.raises(DocumentError, match=r"huge.txt: 2,048 MB is over Hearth's 200 MB limit"):
        extract_file(huge)


def test_missing_file_and_unknown_type_have_messages(tmp_path: Path) -> None:
    with pytest.raises(DocumentError, match=r"gone.md: the file is gone"):
        extract_file(tmp_path / "gone.md")
    with pytest.raises(DocumentError, match=r"Hearth does not read .exe files"):
        extract_text("setup.exe", b"MZ")
    with pytest.raises(DocumentError, match=r"empty.txt: no text in it"):
        extract_text("empty.txt", b"  \n ")


def test_the_catalogue_offers_a_multilingual_embedding_model_apart_from_chat_models() -> None:
    from engine.hub.catalogue import load_catalogue
    from engine.hub.embedding import embeddings_dir, installed_path, load_embedding_models

    models = load_embedding_models()
    assert models[0].architecture == "qwen3" and {"zh", "en"} <= set(models[0].languages)
    assert models[0].repo_id not in {e.repo_id for e in load_catalogue()}
    assert embeddings_dir().name == "embeddings" and installed_path(models[0]) is None
