"""English counts for the engine's and the headless runner's lines (app.core.plural)."""

from app.core.plural import counted


def test_one_is_singular_others_plural_with_separators():
    assert counted(1, "token") == "1 token"
    assert [counted(n, "token") for n in (0, 2, 2_048)] == ["0 tokens", "2 tokens", "2,048 tokens"]
    assert counted(1, "prompt token") == "1 prompt token"
    assert (counted(1, "entry", "entries"), counted(3, "entry", "entries")) == ("1 entry", "3 entries")
