"""Generate spec/vectors/mcp.json: `read_file` windows of `gage mcp` (spec/mcp.md section 3).

Each case is a text file, an offset and a length; the expected window (where it starts and
ends, its payload lines, and the fence lines around them with the token T written as 16
zeros) is computed here from the rule as spec/mcp.md states it, with Python's own UTF-8
decoder, not by calling gage. The files are plain text, so every line is shown as it is
(the escapes are frame.json's business).

    python spec/vectors/generate_mcp.py          # rewrite mcp.json
    python spec/vectors/generate_mcp.py --check  # exit 1 if the file is out of date
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "mcp.json"
WINDOW_CAP = 65536
TOKEN = "0" * 16
NAME = "f.txt"

CASES: list[tuple[str, bytes, int, int]] = [
    ("a window inside a line", b"line one\nline two\n", 5, 7),
    ("the whole file", b"ab\ncd\n", 0, 100),
    ("a window that opens inside a 2-byte character starts at the next", ("\u00e9" * 10).encode() + b"\n", 1, 5),
    ("a character cut at the window's end is left for the next window", "x\u20acy".encode(), 0, 2),
    ("inside a 4-byte character: up to 3 bytes are skipped", "a\U0001d11eb\n".encode(), 2, 10),
    ("an offset past the end: an empty window at the file's size", b"short\n", 10_000, 10),
    ("the last line without a newline", b"one\ntwo", 4, 10),
    ("a length over the cap is cut to it", b"xxxxxxxxx\n" * 7000, 100, 200_000),
]


def window(data: bytes, offset: int, length: int) -> dict[str, Any]:
    n = min(length, WINDOW_CAP)
    start = min(offset, len(data))
    chunk = data[start : start + n]
    skip = 0
    while start > 0 and skip < min(3, len(chunk)) and 0x80 <= chunk[skip] <= 0xBF:
        skip += 1
    start += skip
    chunk = chunk[skip:]
    if start + len(chunk) < len(data):  # the file goes on: a cut character waits for the next window
        for cut in range(4):
            try:
                chunk[: len(chunk) - cut].decode("utf-8")
            except UnicodeDecodeError:
                continue
            chunk = chunk[: len(chunk) - cut]
            break
    lines = chunk.decode("utf-8").split("\n")
    if lines[-1] == "":
        lines.pop()
    end = start + len(chunk)
    fence = f"---- payload {TOKEN}"
    out: dict[str, Any] = {
        "start": start,
        "end": end,
        "begin": f'{fence} begin file "{NAME}" ({len(data)} bytes, text), bytes {start} to {end} ----',
        "end_fence": f'{fence} end file "{NAME}" ----',
        "note": (
            f'{fence} note: {len(data) - end} more bytes of "{NAME}" after byte {end}: read_file with offset {end} ----'
            if end < len(data)
            else None
        ),
    }
    if len(lines) <= 20:
        out["lines"] = ["| " + ln for ln in lines]
    else:
        out["line_count"] = len(lines)
    return out


def build() -> dict[str, Any]:
    return {
        "window_cap": WINDOW_CAP,
        "token": TOKEN,
        "name": NAME,
        "windows": [
            {"name": name, "file_b64": base64.b64encode(data).decode("ascii"), "offset": offset, "length": length, **window(data, offset, length)}
            for name, data, offset, length in CASES
        ],
    }


def render() -> str:
    return json.dumps(build(), indent=2, ensure_ascii=True) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if OUT.read_text("utf-8") != text:
            print(f"{OUT} is out of date: run {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, "utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
