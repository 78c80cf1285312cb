"""English counts with their noun in the right number ("1 token", "2 tokens", "1,024 tokens").

For the engine's and the headless runner's English lines (refusals, reports on stdout); the
window's own texts count through Qt's plural forms (tr(text, "", n)), not this. Pure Python.
"""


def counted(n: int, noun: str, plural: str = "") -> str:
    """`n` with thousands separators and `noun`, singular for exactly 1: counted(1, "token") is
    "1 token", counted(2_048, "token") "2,048 tokens". `plural`: the plural when it is not
    noun + "s" (counted(2, "entry", "entries")). new-user trial: "shorten the system prompt by 1
    tokens", "the context of 1 tokens"."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"
