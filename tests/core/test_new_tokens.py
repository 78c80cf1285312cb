"""The most new tokens a context allows, and what an over-large setting is lowered to."""

import pytest

from app.core.history import summary_reserve
from app.core.new_tokens import fitted_new_tokens, lowered_new_tokens, max_new_tokens_allowed


@pytest.mark.parametrize(("context", "allowed", "lowered"), [
    (512, 320, 256),      # tiny: 64 reserve, 128 for a prompt
    (2048, 1280, 512),    # 256 reserve, 512 for a prompt
    (8192, 7168, 2048),   # SmolLM2: 512 reserve, 512 for a prompt
    (131072, 130048, 32768),
    (4, 3, 2),
])
def test_allowed_leaves_the_reserve_and_a_prompt_and_lowered_leaves_the_history_room(context, allowed, lowered):
    assert max_new_tokens_allowed(context) == allowed
    assert allowed + summary_reserve(context) + min(512, context // 4) == context or allowed == 1
    assert lowered_new_tokens(context) == lowered <= allowed


def test_only_what_the_context_cannot_hold_is_lowered():
    assert fitted_new_tokens(1755, 2048) == 512  # new-user trial: 37 tokens were left for the chat
    assert fitted_new_tokens(1280, 2048) == 1280 and fitted_new_tokens(1281, 2048) == 512
    assert fitted_new_tokens(32768, 8192) == 2048 and fitted_new_tokens(5000, 8192) == 5000
    assert fitted_new_tokens(1, 2) == 1
