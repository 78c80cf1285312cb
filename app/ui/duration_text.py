"""Durations shown to the user (TTFT and the like), in one style everywhere: milliseconds below
10 s, seconds to one decimal up to 2 minutes, then minutes and whole seconds — a 2.5-minute CPU
prefill reads "2 min 27 s", not "146550 ms" (product trial). Numbers are grouped with "," as
everywhere else in the app. Text only, no widget."""

from PySide6.QtCore import QCoreApplication

translate = QCoreApplication.translate  # lupdate reads translate("Context", "source") calls

MILLISECONDS_BELOW_S = 10.0
"""Durations shorter than this (seconds) are written in ms ("850 ms", "9,850 ms")."""
MINUTES_FROM_S = 120.0
"""Durations of at least this (seconds, after rounding) are written in minutes and seconds."""


def duration_text(seconds: float) -> str:
    """`seconds` (≥ 0; a negative one counts as 0) for the user: "850 ms", "9,850 ms",
    "12.3 s", "119.9 s", "2 min 27 s", "61 min 0 s" (no hours: a turn never takes that long)."""
    seconds = max(seconds, 0.0)
    if round(seconds * 1000) < MILLISECONDS_BELOW_S * 1000:
        return translate("Duration", "{0} ms").format(f"{seconds * 1000:,.0f}")
    if round(seconds, 1) < MINUTES_FROM_S:
        return translate("Duration", "{0} s").format(f"{seconds:,.1f}")
    minutes, rest = divmod(round(seconds), 60)
    return translate("Duration", "{0} min {1} s").format(f"{minutes:,}", rest)
