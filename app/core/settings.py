"""User settings as frozen dataclasses, passed as a snapshot with every request.

Stored as JSON in the platformdirs config folder. Unknown or malformed fields fall back to
defaults instead of failing start-up.
"""

import json
import logging
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

from app.core.paths import config_dir

log = logging.getLogger(__name__)

DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant."


@dataclass(frozen=True)
class GenerationSettings:
    """Sampling settings for one turn.

    temperature 0 means greedy decoding. max_new_tokens is in tokens. context_tokens caps the
    context window below the model's own (0 = use the model's full context).
    """

    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    max_new_tokens: int = 512
    temperature: float = 0.7
    top_p: float = 0.95
    context_tokens: int = 0

    def validated(self) -> "GenerationSettings":
        """Clamp to sane ranges: max_new_tokens 1–32768, temperature 0–2, top_p (0, 1],
        context_tokens ≥ 0."""
        return replace(
            self,
            max_new_tokens=min(max(int(self.max_new_tokens), 1), 32768),
            temperature=min(max(float(self.temperature), 0.0), 2.0),
            top_p=min(max(float(self.top_p), 0.01), 1.0),
            context_tokens=max(int(self.context_tokens), 0),
        )


@dataclass(frozen=True)
class Settings:
    generation: GenerationSettings = GenerationSettings()
    last_model_path: str = ""


def settings_path() -> Path:
    return config_dir() / "settings.json"


def load_settings(path: Path | None = None) -> Settings:
    """Read settings; a missing or unreadable file gives defaults (logged, never raised)."""
    path = path or settings_path()
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        gen_fields = {f.name for f in fields(GenerationSettings)}
        generation = GenerationSettings(
            **{k: v for k, v in raw.get("generation", {}).items() if k in gen_fields}
        ).validated()
        return Settings(generation=generation, last_model_path=str(raw.get("last_model_path", "")))
    except FileNotFoundError:
        return Settings()
    except (ValueError, TypeError, AttributeError) as exc:
        log.warning("settings file %s unreadable (%s); using defaults", path, exc)
        return Settings()


def save_settings(settings: Settings, path: Path | None = None) -> None:
    """Write settings atomically (temp file + rename)."""
    path = path or settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(settings), indent=2), encoding="utf-8")
    tmp.replace(path)
