

def test_continue_adds_its_tokens_to_the_answers_stats_and_round_trips():
    from dataclasses import replace

    from app.core.conversation import ReplyStats

    first = ReplyStats(40, 40, 0, 80, 0.5, 9.0, "eager", "float32", "SmolLM2 · cpu")
    part = ReplyStats(120, 1, 119, 30, 0.125, 12.5, "eager-static", "float32", "SmolLM2 · cpu")
    whole = first.continued_by(part)
    assert whole == ReplyStats(120, 1, 119, 110, 0.125, 12.5, "eager-static", "float32", "SmolLM2 · cpu", 30)
    assert whole.continued_by(ReplyStats(150, 1, 149, 0, 0.0, 0.0)) is whole  # stopped at once: unchanged
    cut = ReplyStats(40, 40, 0, 80, 0.5, 9.0, stop_reason="length")
    assert cut.continued_by(replace(part, stop_reason="eos")).stop_reason == "eos"  # ended as its last part
    assert cut.continued_by(ReplyStats(150, 1, 149, 0, 0.0, 0.0, stop_reason="stopped")) == \
        replace(cut, stop_reason="stopped")  # Stop at once: no longer "max new tokens reached"
    assert ReplyStats.from_json(whole.to_json()) == whole
    assert ReplyStats.from_json({**whole.to_json(), "continued_tokens": "many"}) is None
    assert ReplyStats.from_json({k: v for k, v in whole.to_json().items() if k != "continued_tokens"}) == \
        ReplyStats(120, 1, 119, 110, 0.125, 12.5, "eager-static", "float32", "SmolLM2 · cpu")  # an older row
