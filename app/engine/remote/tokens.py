"""Counting prompt tokens for a model that runs on a remote server.

The history policy (token-budget window, summary acceptance) needs a count of the rendered
prompt. Three ways, best first; the chosen one is named in the RemoteReport and the status bar:

1. "local tokenizer": the served model's name matches a local folder (the exact path the
   server was given, or a folder of that name under the models folder, e.g. `SmolLM2-135M-
   Instruct` ↔ `SmolLM2-135M-Instruct.Q4_1.gguf.hf`): its tokenizer and chat template, exactly
   as the local backend counts (app.engine.local.turn_planner.Foresight.count_tokens).
2. "server /tokenize": vLLM's `POST /tokenize` renders with the server's own template (exact;
   one HTTP round trip per count, cached).
3. "approximation": ⌈characters / 4 × 1.25⌉ per message + 8 tokens per message for the role
   markers + 8 for the generation prompt. Four characters per token is OpenAI's rule of thumb
   for English ("What are tokens and how to count them"); the 25 % margin covers BPE on code and
   most European text (measured: SmolLM2's tokenizer gives 4.3 characters per token on the
   replay chat). Scripts such as CJK run ~1 token per character and can be undercounted: then
   the server's own context check is the backstop, and its refusal is reported as such.
"""

import functools
import glob
import json
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from app.core.paths import cache_dir, models_dir

log = logging.getLogger(__name__)

CHARS_PER_TOKEN = 4.0
APPROX_MARGIN = 0.25
TOKENS_PER_MESSAGE = 8
GENERATION_PROMPT_TOKENS = 8
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model")

CountTokens = Callable[[list[dict]], int]


@dataclass(frozen=True)
class TokenCounting:
    """How prompt tokens are counted for a remote model.

    method: "local tokenizer", "server /tokenize" or "approximation". detail: one line (the
    folder, or the formula). system_role: whether the chat template takes a system message
    (assumed True unless a local template says otherwise). model_positions: the context length
    in tokens from the local folder's config.json (None when unknown)."""

    method: str
    detail: str
    system_role: bool = True
    model_positions: int | None = None


def approximate_tokens(messages: list[dict]) -> int:
    """Upper-leaning estimate of the rendered prompt's tokens (see the module docstring)."""
    per_message = (math.ceil(len(m.get("content") or "") / CHARS_PER_TOKEN * (1 + APPROX_MARGIN))
                   + TOKENS_PER_MESSAGE for m in messages)
    return sum(per_message) + GENERATION_PROMPT_TOKENS


def find_local_folder(model_name: str, search_dir: Path | None = None) -> Path | None:
    """A local HF folder (with tokenizer files) matching the served model's name, or None."""
    name = model_name.strip().rstrip("/")
    if not name:
        return None
    base = name.rsplit("/", 1)[-1]
    converted = search_dir is None  # the default search also looks at converted GGUFs in the cache
    search_dir = search_dir or models_dir()
    candidates = [Path(name).expanduser(), search_dir / name, search_dir / base]
    if search_dir.is_dir():
        candidates += sorted(p for p in search_dir.iterdir() if p.name.startswith(base + "."))
    if converted:  # app.engine.loading.gguf_convert.conversion_dir: <cache>/gguf/<stem>-<digest>-<dtype>/<file>.hf
        candidates += sorted(cache_dir().glob(f"gguf/*/{glob.escape(base)}.*"))
    return next((p for p in candidates if p.is_dir() and any((p / f).is_file() for f in _TOKENIZER_FILES)),
                None)


def _config_positions(folder: Path) -> int | None:
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    config = config.get("text_config") or config
    for key in ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length"):
        if isinstance(config.get(key), int) and config[key] > 0:
            return config[key]
    return None


def local_counter(folder: Path) -> tuple[CountTokens, TokenCounting]:
    """Count with the folder's tokenizer and chat template (offline; raises OSError/ValueError
    from transformers when the folder's tokenizer cannot be read)."""
    from transformers import AutoTokenizer

    from app.engine.local.chat_format import detect_format, encode_messages

    tokenizer = AutoTokenizer.from_pretrained(folder)
    fmt = detect_format(tokenizer)

    def count(messages: list[dict]) -> int:
        return len(encode_messages(tokenizer, fmt, messages))

    return count, TokenCounting("local tokenizer", f"tokenizer and chat template of {folder}",
                                fmt.system_role, _config_positions(folder))


def server_counter(client) -> tuple[CountTokens, TokenCounting] | None:
    """Count with the server's `/tokenize` (vLLM), or None when it has none or it fails."""
    from app.engine.remote.errors import RemoteError

    try:
        if client.tokenize([{"role": "user", "content": "hi"}]) is None:
            return None
    except RemoteError as exc:
        log.info("server /tokenize unusable (%s); counting tokens another way", exc)
        return None

    @functools.lru_cache(maxsize=512)
    def cached(key: tuple[tuple[str, str], ...]) -> int:
        count = client.tokenize([{"role": r, "content": c} for r, c in key])
        return count if count is not None else approximate_tokens([{"content": c} for _, c in key])

    def count(messages: list[dict]) -> int:
        return cached(tuple((m["role"], m["content"]) for m in messages))

    return count, TokenCounting("server /tokenize", f"the server's tokenizer ({client.server_root}/tokenize)")


def choose_counter(model_name: str, client, search_dir: Path | None = None) -> tuple[CountTokens, TokenCounting]:
    """The best available way to count prompt tokens for `model_name` on `client`'s server."""
    folder = find_local_folder(model_name, search_dir)
    if folder is not None:
        try:
            return local_counter(folder)
        except (OSError, ValueError) as exc:
            log.info("local tokenizer in %s unusable (%s)", folder, exc)
    found = server_counter(client)
    if found is not None:
        return found
    detail = (f"≈ characters / {CHARS_PER_TOKEN:g} + {APPROX_MARGIN:.0%} margin, "
              f"+ {TOKENS_PER_MESSAGE} tokens per message (no local tokenizer, no server /tokenize)")
    return approximate_tokens, TokenCounting("approximation", detail)
