"""Names that come from elsewhere (a repo listing, a file's header, a server) made safe to use
here: as a file name on any OS (`local_name`; `saved_name` for a file of a given repo, which
gives a vision projector its model's name) and as text printed to a terminal (`printable`).

A repo listing may name a file ``..\\..\\..\\EVIL.Q4_0.gguf`` (a path out of the models folder on
Windows), carry a NUL or run to 300 bytes (a traceback on every OS); a header's name or a
server's error may carry terminal escape sequences that move the cursor, retitle the window or
hide text. Does not own where files go (`engine.hub.library`) or what is printed.
"""

from __future__ import annotations

import re

from engine.errors import HubError

MAX_NAME_BYTES = 200  # under every file system's 255, leaving room for ".part.json"
_UNSAFE = re.compile(r'[\x00-\x1f\x7f<>:"|?*]')  # NUL, controls, Windows' reserved characters
_WINDOWS_RESERVED = re.compile(r"^(con|prn|aux|nul|com\d|lpt\d)(\..*)?$", re.IGNORECASE)
# CSI (ESC [ ... final), OSC (ESC ] ... BEL or ESC \), other two-byte escapes, then C0/C1
# controls other than newline and tab.
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]|\x9b[0-?]*[ -/]*[@-~]"
)
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def local_name(filename: str) -> str:
    """The file name a listed ``filename`` is saved under: its last path component (``/`` and
    ``\\`` both separate), without controls or characters Windows refuses, no leading dots,
    at most MAX_NAME_BYTES of UTF-8 (shortened before ``.gguf``). HubError when nothing
    usable is left."""
    base = re.split(r"[/\\]", filename)[-1]
    base = _UNSAFE.sub("_", base).strip(" .")
    if _WINDOWS_RESERVED.match(base):
        base = "_" + base
    stem, dot, suffix = base.rpartition(".")
    if not dot:
        stem, suffix = base, ""
    ending = f".{suffix}" if dot else ""
    room = MAX_NAME_BYTES - len(ending.encode())
    stem = stem.encode()[:room].decode("utf-8", errors="ignore").rstrip(" .")
    if not stem or suffix.lower() != "gguf":
        raise HubError(f"the repo lists a file Hearth will not save: {printable(filename)!r}")
    return stem + ending


def is_projector(filename: str) -> bool:
    """Whether ``filename`` names a vision projector (``mmproj-F16.gguf``,
    ``mmproj-Qwen2.5-VL-7B-f16.gguf``, ``gemma-3-4b-it-mmproj-f16.gguf``), by the name
    llama.cpp's converter and every GGUF publisher give them."""
    return "mmproj" in re.split(r"[/\\]", filename)[-1].lower()


def repo_model_name(repo_id: str) -> str:
    """ "Qwen3.5-0.8B" for ``unsloth/Qwen3.5-0.8B-GGUF``: the repo's name without "-GGUF"."""
    name = repo_id.rsplit("/", 1)[-1]
    return re.sub(r"[-_.]gguf$", "", name, flags=re.IGNORECASE) or name


def saved_name(repo_id: str, filename: str) -> str:
    """The name ``filename`` of ``repo_id`` is saved under (`local_name`). A projector named
    only by its type (unsloth's ``mmproj-F16.gguf``, one in every repo) gets its repo's model
    name, ``mmproj-Qwen3.5-0.8B-F16.gguf``: Hearth's models folder is one folder, so two
    models' projectors never overwrite each other, and each pairs with its model by name
    (`engine.hub.projectors`)."""
    name = local_name(filename)
    model = local_name(repo_model_name(repo_id) + ".gguf")[: -len(".gguf")]
    if not is_projector(name) or model.lower() in name.lower():
        return name
    stem = name.rsplit(".", 1)[0]
    rest = re.sub(r"^mmproj[-_.]?", "", stem, flags=re.IGNORECASE)
    return local_name(f"mmproj-{model}{'-' + rest if rest else ''}.gguf")


def printable(text: str) -> str:
    """``text`` without terminal escape sequences or control characters (newlines and tabs
    kept): safe to print what a file or a server said."""
    return _CONTROLS.sub("", _ESCAPES.sub("", text))
