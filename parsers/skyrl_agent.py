"""skyrl-agent's layer of a SkyRL driver log: what the agent's own lines say.

The format-rule warnings, the tools a slow code block called, the model's own tracebacks
inside observations (not infrastructure faults), and the launch command's overrides from
a shell trace. Pure functions; `parsers.skyrl.SkyrlParser` calls them.
"""

from __future__ import annotations

import builtins
import re
import shlex

from .crashes import exception_of, has_traceback
from .events import ENV, AgentError, Event, FormatFailure, Kind, LaunchConfig, Notice, SlowCall
from .numbers import strict_float, strict_int
from .records import Record

RULE_NUMBER_RE = re.compile(r"\bRule (\d)\b", re.ASCII)

# skyrl-agent's eight format rules, by the text of their warning (docs/formats.md).
FORMAT_RULES: list[tuple[int, str]] = [
    (7, "is_last but outer is <"),  # before 5: both speak of the outer tag
    (5, "but doesn't end with </"),
    (6, "multiple outer <execute> blocks"),
    (8, "<think> or </think> in after_think"),
    (2, "not exactly one <think> and one </think>"),
    (1, "not start with <think>"),
    (3, "not end with </execute> or </solution>"),
    (4, "no action tag after </think>"),
]

# Names in agent code that are not the tool being called.
_NOT_TOOLS = set(dir(builtins)) | {"print", "def", "if", "for", "while", "return", "with", "elif", "and", "or", "not", "in", "lambda", "assert", "except"}
_METHODS = {
    "append", "extend", "join", "split", "strip", "rstrip", "lstrip", "format", "get", "items", "keys", "values",
    "head", "tail", "lower", "upper", "replace", "startswith", "endswith", "read", "write", "loads", "dumps",
    "copy", "update", "pop", "sort", "sort_values", "to_string", "to_dict", "iterrows", "apply", "find", "count",
    "index", "add", "encode", "decode", "mean", "sum", "groupby", "merge", "unique", "tolist", "describe", "json",
    "close", "isin", "dropna", "fillna", "reset_index", "set_index", "astype", "DataFrame", "Series", "compile",
    "search", "match", "findall", "sub", "exists", "makedirs", "sleep", "now",
}
_MODULES = {"pd", "np", "json", "re", "os", "sys", "math", "time", "random", "collections", "itertools", "datetime", "pandas", "numpy", "str", "self"}
CALL_RE = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\s*\(", re.ASCII)
# An unclosed string runs to the end of its line (or text): a match that cannot fail is
# one that never rescans (a line of `"\\"\\…` was quadratic).
STRING_RE = re.compile(r"'''.*?(?:'''|\Z)|\"\"\".*?(?:\"\"\"|\Z)|'(?:\\.|[^'\\\n])*(?:'|\\?$)|\"(?:\\.|[^\"\\\n])*(?:\"|\\?$)", re.S | re.M | re.ASCII)
DEF_RE = re.compile(r"\bdef\s+\w+\s*\(", re.ASCII)


def called_functions(code: str, limit: int = 6) -> tuple[str, ...]:
    """The tools a code block calls (`advanced_web_search`, `gget.info`), in order, without builtins."""
    code = STRING_RE.sub("''", DEF_RE.sub("", code))
    code = "\n".join(line.split("#", 1)[0] for line in code.splitlines())
    out: list[str] = []
    for name in CALL_RE.findall(code):
        parts = name.split(".")
        if len(parts) == 1 and name in _NOT_TOOLS:
            continue
        if len(parts) > 1 and (parts[-1] in _METHODS or parts[0] in _MODULES):
            continue
        if name not in out:
            out.append(name)
            if len(out) >= limit:
                break
    return tuple(out)


def format_rule(msg: str) -> int | None:
    m = RULE_NUMBER_RE.search(msg[:200])
    if m and 1 <= int(m.group(1)) <= 8:
        return int(m.group(1))
    # The model's message follows the rule's text after `: `: look only before it.
    for rule, phrase in FORMAT_RULES:
        i = msg.find(phrase)
        if 0 <= i < 300:
            return rule
    return None


def _is_agent_traceback(rec: Record, lines: list[str]) -> bool:
    """A traceback the model's code raised (inside an observation), not the trainer's."""
    if rec.level in ("ERROR", "CRITICAL"):
        return False
    if any(w in rec.message for w in ("Code execution", "Observation", "Output", "[runtime-error]", "execute")):
        return True
    if rec.where and rec.where.startswith("skyrl_agent"):
        return True
    return any('File "<string>"' in line or 'File "<stdin>"' in line for line in lines)


def launch_config(cmd: str) -> LaunchConfig | None:
    """The `key=value` overrides of a launch command from a shell trace (`+ python -m skyrl_train…`)."""
    if "=" not in cmd or ("trainer." not in cmd and "generator." not in cmd):
        return None
    try:
        tokens = shlex.split(cmd, posix=True)
    except ValueError:
        tokens = cmd.split()
    kv = {}
    for tok in tokens:
        k, sep, v = tok.partition("=")
        if sep and "." in k:
            kv[k.lstrip("+")] = v

    def i(key: str) -> int | None:
        return strict_int(kv.get(key))

    batch, n = i("trainer.train_batch_size"), i("generator.n_samples_per_prompt")
    return LaunchConfig(
        run_name=kv.get("trainer.run_name"),
        ckpt_dir=kv.get("trainer.ckpt_path"),
        ckpt_interval=i("trainer.ckpt_interval"),
        keep_last=i("trainer.max_ckpts_to_keep"),
        max_steps=None,
        batch_rollouts=batch * n if batch and n else None,
    )


SLOW_RE = re.compile(r"Code execution took ([\d.]+) seconds", re.ASCII)
OVERFLOW_RE = re.compile(r"Context \((\d+) tokens\) exceeded max_prompt_len \((\d+)\)", re.ASCII)


def agent_traceback(rec: Record, lines: list[str], t: str | None) -> list[Event]:
    """The model's own exception, from a traceback inside an observation."""
    if not has_traceback(lines):
        return []
    exc = exception_of(lines)
    return [AgentError(exc[0], exc[1][:200], t, count=rec.repeat)] if exc else []


def agent_events(rec: Record, msg: str, lines: list[str], t: str | None) -> list[Event] | None:
    """The events of one of the agent's own lines, or None when it is not one: a slow code
    block (and the tools it called), a tool timeout, a context overflow, a format rule."""
    n = rec.repeat
    if msg.startswith("Code execution took"):
        out: list[Event] = []
        m = SLOW_RE.match(msg)
        if m and strict_float(m.group(1)) is not None:
            code: list[str] = []
            for line in lines:
                if line.strip().startswith("Output:"):
                    break
                code.append(line)
            out.append(SlowCall(strict_float(m.group(1)) or 0.0, called_functions("\n".join(code)), t))
        return out + agent_traceback(rec, lines, t)
    if msg.startswith("Timeout error during execute"):
        return [Notice(ENV, "WARNING", Kind.TOOL_TIMEOUT, msg[:300], t, count=n)]
    if "exceeded max_prompt_len" in msg:
        return [Notice(ENV, "WARNING", Kind.CONTEXT_OVERFLOW, msg[:300], t, count=n)] if OVERFLOW_RE.search(msg) else []
    if (rec.level or "") == "WARNING":
        rule = format_rule(msg)
        if rule is not None:
            return [FormatFailure(rule, t, count=n)]
    return None
