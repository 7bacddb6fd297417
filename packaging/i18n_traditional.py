"""Generate the Traditional Chinese UI (zh_TW) from the Simplified one (zh_CN) with OpenCC.

Owns the conversion of ``assets/i18n/hearth_zh_CN.ts`` into ``hearth_zh_TW.ts``: every
translation goes through OpenCC's ``s2twp`` (Taiwan standard with Taiwanese phrases: 软件 →
軟體, 设置 → 設定) and the curly quotes become the corner brackets Taiwan uses (“ ” → 「 」,
‘ ’ → 『 』). Source strings, contexts and placeholders are untouched. Run by ``make i18n``;
``tests/app/test_i18n.py`` checks the committed file is this script's output for the current
zh_CN file. Hong Kong and Macau users get zh_TW too (`app.system.i18n`). Does not own compiling
the ``.qm`` (pyside6-lrelease) or translating new strings (done in zh_CN, then regenerated).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import opencc

I18N = Path(__file__).resolve().parents[1] / "assets" / "i18n"
SOURCE = I18N / "hearth_zh_CN.ts"
TARGET = I18N / "hearth_zh_TW.ts"

# The text of a <translation> or one of its <numerusform>s (XML-escaped; OpenCC leaves ASCII and
# entities alone, so converting the escaped text is safe).
_TRANSLATED = re.compile(r"(<translation[^>]*>|<numerusform>)([^<]*)")
_QUOTES = str.maketrans({"“": "「", "”": "」", "‘": "『", "’": "』"})


def to_traditional(ts_text: str, converter: opencc.OpenCC | None = None) -> str:
    """``ts_text`` (a zh_CN TS file) with every translation converted to zh_TW."""
    converter = converter or opencc.OpenCC("s2twp")

    def convert(match: re.Match[str]) -> str:
        return match.group(1) + converter.convert(match.group(2)).translate(_QUOTES)

    text = _TRANSLATED.sub(convert, ts_text)
    return text.replace('language="zh_CN"', 'language="zh_TW"', 1)


def main() -> int:
    TARGET.write_text(to_traditional(SOURCE.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"wrote {TARGET.relative_to(I18N.parents[1])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
