"""Simplified Chinese translation: the compiled .qm loads through the app's own translator setup,
every UI string in app/ has a finished translation that keeps its placeholders, and no code
hands a bare English literal to a widget."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QCoreApplication, QLocale, QTranslator

ROOT = Path(__file__).resolve().parents[2]
I18N = ROOT / "assets" / "i18n"
TS = I18N / "hearth_zh_CN.ts"
QM = I18N / "hearth_zh_CN.qm"
TOOLS = Path(sys.executable).parent

KNOWN = [
    ("MainWindow", "New chat", "新对话"),
    ("Composer", "Send", "发送"),
    ("SamplingParams", "Temperature", "温度"),  # engine.params labels, marked in param_labels
    ("MessageDelegate", "Regenerate", "重新生成"),
    ("MessageText", "Copy", "复制"),
    ("MessageText", "{0} tokens", "{0} 个 token"),
    ("Errors", "Something went wrong.", "出现了问题。"),
    ("Presets", "Balanced", "均衡"),
    ("SamplingParams", "Repetition penalty", "重复惩罚"),
]


def _tool(name: str) -> str:
    path = TOOLS / f"pyside6-{name}"
    return str(path) if path.exists() else shutil.which(f"pyside6-{name}") or f"pyside6-{name}"


def test_qm_translates_known_strings(qapp: QCoreApplication) -> None:
    translator = QTranslator()
    assert translator.load(str(QM)), f"cannot load {QM}"
    for context, source, chinese in KNOWN:
        assert translator.translate(context, source) == chinese, (context, source)
    plural = translator.translate("EndpointsDialog", "Connected: the server offers %n model(s).")
    assert plural == "已连接：服务器提供 %n 个模型。"


def test_app_installs_chinese_for_a_chinese_locale(qapp: QCoreApplication) -> None:
    from app.system.i18n import install_translators

    installed = install_translators(qapp, QLocale("zh_CN"))
    try:
        assert QCoreApplication.translate("MainWindow", "New chat") == "新对话"
        count = QCoreApplication.translate(
            "EndpointsDialog", "Connected: the server offers %n model(s).", None, 3
        )
        assert count == "已连接：服务器提供 3 个模型。"
    finally:
        for translator in installed:
            qapp.removeTranslator(translator)
    assert QCoreApplication.translate("MainWindow", "New chat") == "New chat"


def test_traditional_ui_is_opencc_of_the_current_simplified_one() -> None:
    sys.path.insert(0, str(ROOT / "packaging"))
    from i18n_traditional import TARGET, to_traditional

    fresh = to_traditional(TS.read_text(encoding="utf-8"))
    assert fresh == TARGET.read_text(encoding="utf-8"), "run `make i18n` (zh_TW is generated)"
    assert 'language="zh_TW"' in fresh and "<source>New chat</source>" in fresh


@pytest.mark.parametrize("name", ["zh_TW", "zh_HK", "zh_Hant_MO"])
def test_traditional_chinese_locales_get_the_taiwan_ui(qapp: QCoreApplication, name: str) -> None:
    from app.system.i18n import install_translators

    installed = install_translators(qapp, QLocale(name))
    try:
        assert QCoreApplication.translate("MainWindow", "New chat") == "新對話"
        assert QCoreApplication.translate("Presets", "Balanced") == "均衡"
    finally:
        for translator in installed:
            qapp.removeTranslator(translator)


def test_committed_traditional_qm_is_the_compiled_ts(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh.qm"
    ts = I18N / "hearth_zh_TW.ts"
    subprocess.run([_tool("lrelease"), "-silent", str(ts), "-qm", str(fresh)], check=True)
    assert fresh.read_bytes() == (I18N / "hearth_zh_TW.qm").read_bytes(), "run `make i18n`"


def test_committed_qm_is_the_compiled_ts(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh.qm"
    subprocess.run([_tool("lrelease"), "-silent", str(TS), "-qm", str(fresh)], check=True)
    assert fresh.read_bytes() == QM.read_bytes(), "run pyside6-lrelease (assets/i18n/README.md)"


def _messages(ts: Path) -> Iterator[tuple[str, ET.Element]]:
    for context in ET.parse(ts).getroot().iter("context"):
        for message in context.iter("message"):
            yield context.findtext("name") or "", message


def _translation(message: ET.Element) -> tuple[str, str | None]:
    node = message.find("translation")
    assert node is not None
    forms = [form.text or "" for form in node.iter("numerusform")]
    return "".join(forms) if forms else (node.text or ""), node.get("type")


def test_every_string_in_app_has_a_finished_translation(tmp_path: Path) -> None:
    # Re-extract from today's sources into a copy: new or changed strings show as unfinished.
    current = tmp_path / TS.name
    shutil.copy(TS, current)
    command = [_tool("lupdate"), "-silent", "-extensions", "py", "-locations", "none", "app"]
    subprocess.run([*command, "-ts", str(current)], cwd=ROOT, check=True)
    missing = [
        f"{context}: {message.findtext('source')!r}"
        for context, message in _messages(current)
        if _translation(message)[1] == "unfinished" or not _translation(message)[0]
    ]
    assert not missing, "untranslated (see assets/i18n/README.md):\n" + "\n".join(missing)


PLACEHOLDER = re.compile(r"\{[^{}]*\}|%n|%\d|\\n|\n")


def test_translations_keep_placeholders_and_line_breaks() -> None:
    checked = 0
    for context, message in _messages(TS):
        text, kind = _translation(message)
        if kind in ("vanished", "obsolete"):
            continue
        source = message.findtext("source") or ""
        assert sorted(PLACEHOLDER.findall(text)) == sorted(PLACEHOLDER.findall(source)), (
            f"{context}: {source!r} -> {text!r}"
        )
        checked += 1
    assert checked > 50


# --- every UI string goes through tr -------------------------------------------------------

WIDGETS = {
    "QPushButton", "QLabel", "QCheckBox", "QRadioButton", "QGroupBox", "QAction",
    "QToolButton", "QMenu", "QDockWidget", "QCommandLinkButton",
}  # fmt: skip
SETTERS = {
    "setText", "setToolTip", "setWindowTitle", "setPlaceholderText", "setStatusTip",
    "setWhatsThis", "setTitle", "showMessage", "addTab", "insertTab", "setTabText",
    "setTabToolTip", "addAction", "addMenu", "setLabelText", "setSuffix", "setPrefix",
    "setSpecialValueText", "addItem", "addRow", "setHeaderLabels", "setInformativeText",
    "setDetailedText", "setAccessibleName", "setAccessibleDescription",
}  # fmt: skip
MESSAGE_BOXES = {"information", "warning", "critical", "question", "about"}
LETTER = re.compile(r"[^\W\d_]")
URL = re.compile(r"^[a-z][a-z0-9+.-]*://\S*$")
# Known at hand-over, reported to the lead; their strings are hand-added to the .ts under the
# context Qt uses at run time (assets/i18n/README.md, "Known gap"). Keys: (file, problem kind).
KNOWN_GAPS = {("app/views/chat/message_text.py", "dynamic translate")}


def _literal(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):  # an f-string: English words with holes
        return "".join(v.value for v in node.values if isinstance(v, ast.Constant))
    return None


def _call_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _bare_literals(call: ast.Call) -> list[str]:
    name = _call_name(call)
    if name in WIDGETS or name in SETTERS:
        args = call.args
    elif name in MESSAGE_BOXES:
        args = call.args[1:]  # parent first
    else:
        return []
    texts = [_literal(arg) for arg in args]
    return [t for t in texts if t and LETTER.search(t) and not URL.match(t)]


def _translation_problem(call: ast.Call) -> str | None:
    """Why lupdate would miss or misfile this ``tr``/``translate`` call, if it would."""
    name = _call_name(call)
    func = call.func
    if name == "tr" and call.args and not isinstance(call.args[0], ast.Constant):
        return "dynamic tr"  # lupdate cannot read a variable
    called_on_self = isinstance(func, ast.Attribute) and getattr(func.value, "id", "") == "self"
    if name == "tr" and isinstance(func, ast.Attribute) and not called_on_self:
        return "tr on another object"  # filed under the expression, not the class
    literal_args = all(isinstance(arg, ast.Constant) for arg in call.args[:2])
    if name == "translate" and len(call.args) >= 2 and not literal_args:
        return "dynamic translate"
    return None


def _ui_string_problems(path: Path) -> list[str]:
    source = path.read_text(encoding="utf-8")
    relative = path.relative_to(ROOT).as_posix()
    marked = "QT_TRANSLATE_NOOP" in source or "QT_TR_NOOP" in source
    problems = []
    for call in (n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call)):
        problems += [f"{relative}:{call.lineno}: {t!r} without tr" for t in _bare_literals(call)]
        kind = _translation_problem(call)
        excused = (relative, kind) in KNOWN_GAPS or (marked and str(kind).startswith("dynamic"))
        if kind and not excused:
            problems.append(f"{relative}:{call.lineno}: {kind}: lupdate misses or misfiles it")
    return problems


def test_ui_strings_go_through_tr() -> None:
    problems = [
        p for path in sorted((ROOT / "app").rglob("*.py")) for p in _ui_string_problems(path)
    ]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ('QPushButton("Send")', 1),
        ('w.setToolTip(f"{n} tokens")', 1),
        ('QMessageBox.warning(self, "Oops", self.tr("Bad"))', 1),
        ('w.setText(self.tr("Send"))', 0),
        ('w.setPlaceholderText("http://localhost:8000/v1")', 0),
        ('w.setText("…")', 0),
    ],
)
def test_scanner_flags_bare_literals(code: str, expected: int) -> None:
    call = ast.parse(code).body[0].value  # type: ignore[attr-defined]
    assert len(_bare_literals(call)) == expected


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ('self.tr("Send")', None),
        ("self.tr(label)", "dynamic tr"),
        ('self.window.tr("Send")', "tr on another object"),
        ('QCoreApplication.translate("Errors", text)', "dynamic translate"),
        ('QCoreApplication.translate("Errors", "Oops")', None),
    ],
)
def test_scanner_flags_calls_lupdate_cannot_file(code: str, expected: str | None) -> None:
    call = ast.parse(code).body[0].value  # type: ignore[attr-defined]
    assert _translation_problem(call) == expected
