"""`python -m app export` / `python -m app import` as a user runs them (real processes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app import cli
from app.store import Store

REPO = Path(__file__).resolve().parents[2]


def _hearth(*args: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HEARTH_DATA_DIR": str(data_dir), "PYTHONIOENCODING": "utf-8"}
    return subprocess.run(
        [sys.executable, "-m", "app", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
    )


def _fill(db: Path) -> dict[str, str]:
    with Store(db) as store:
        ids = {}
        for title in ("你好世界", "Second chat"):
            conv = store.create_conversation(title, system_prompt="sys")
            user = store.add_message(conv.id, None, "user", f"## User\nquestion for {title}")
            store.add_message(conv.id, user.id, "assistant", "```py\nprint('x')\n```")
            store.add_message(conv.id, user.id, "assistant", "alternative reply")
            ids[title] = conv.id
        return ids


def _contents(db: Path) -> dict[str, list[tuple[str, str]]]:
    with Store(db) as store:
        return {
            c.title: [(m.role, m.content) for m in store.tree(c.id)]
            for c in store.list_conversations()
        }


@pytest.mark.parametrize("fmt", ["markdown", "json"])
def test_export_all_then_import_into_a_fresh_database(tmp_path: Path, fmt: str) -> None:
    source = tmp_path / "source"
    _fill(source / "hearth.sqlite3")
    out = tmp_path / "out"
    done = _hearth("export", "--all", "--format", fmt, "--out", str(out), data_dir=source)
    assert done.returncode == 0, done.stderr
    files = sorted(out.iterdir())
    assert [Path(line).name for line in sorted(done.stdout.splitlines())] == [f.name for f in files]
    assert len(files) == 2 and any(f.name.startswith("你好世界 - ") for f in files)

    target = tmp_path / "target"
    done = _hearth("import", *map(str, files), data_dir=target)
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 2
    assert _contents(target / "hearth.sqlite3") == _contents(source / "hearth.sqlite3")


def test_export_one_conversation_by_id_prefix(tmp_path: Path) -> None:
    db = tmp_path / "hearth.sqlite3"
    ids = _fill(db)
    out = tmp_path / "out"
    done = _hearth(
        "export", "--conversation", ids["Second chat"][:8], "--format", "json", "--out", str(out),
        "--db", str(db), data_dir=tmp_path / "unused",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [path] = out.iterdir()
    data = json.loads(path.read_text(encoding="utf-8"))
    assert (data["title"], data["id"]) == ("Second chat", ids["Second chat"])
    assert len(data["tree"]["nodes"]) == 3


def test_bad_import_file_fails_clearly_and_imports_nothing(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text('{"title": "ok", "messages": [{"role": "user", "content": "hi"}]}')
    bad = tmp_path / "bad.json"
    bad.write_text('{"title": "broken", "messages": [{"role": "user"')
    done = _hearth("import", str(good), str(bad), data_dir=tmp_path / "data")
    assert done.returncode == 1
    assert "bad.json, line 1: invalid JSON" in done.stderr
    assert _contents(tmp_path / "data" / "hearth.sqlite3") == {}


def test_usage_and_lookup_errors_have_exit_codes(tmp_path: Path, capsys) -> None:
    db = tmp_path / "hearth.sqlite3"
    _fill(db)
    assert cli.main(["export", "--all", "--db", str(db)]) == 2  # --out missing
    assert cli.main(["export", "--all", "--conversation", "x", "--out", "o"]) == 2
    code = cli.main(["export", "--conversation", "zzz", "--out", str(tmp_path), "--db", str(db)])
    assert code == 1
    assert "conversation id 'zzz' matches no conversation" in capsys.readouterr().err
    missing = tmp_path / "none.sqlite3"
    assert cli.main(["export", "--all", "--out", str(tmp_path), "--db", str(missing)]) == 1
    assert "no conversation database" in capsys.readouterr().err
    assert not missing.exists()
