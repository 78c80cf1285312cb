"""The context meter's count between turns (TurnRunner.count_window): the next prompt as the next
turn will send it, counted with the real model's tokenizer and template."""

from app.core.conversation import Message, Role
from app.core.history import SummaryState
from app.core.settings import GenerationSettings
from app.engine.local.turn_runner import TurnRunner
from app.engine.memory.probe import CpuProbe

# new-user trial 10: a 512-token model, 256 new tokens, a 64-token summary reserve: 192 for the prompt
SETTINGS = GenerationSettings(max_new_tokens=256, context_tokens=512, temperature=0.0)


def test_after_a_long_answer_the_meter_counts_the_next_prompt_not_a_refusal(real_loaded):
    """The trial's meter read "474 / 255 tokens in context · 0 turns in window" in red right after a
    normal answer: the last exchange (a 130-token question, a 256-token answer) was judged as the
    newest turn, which must fit or nothing does. The next turn leaves it out for the summary to
    fold; the count says so: the system prompt and the next message's frame, well within the limit."""
    tokenizer = real_loaded.tokenizer
    question = "Turn 6: tell me more about the weather today please " * 12
    answer = tokenizer.decode(tokenizer("The weather is mild and dry with light wind. " * 40)["input_ids"][:256])
    history = [Message(Role.USER, question), Message(Role.ASSISTANT, answer)]
    runner = TurnRunner(real_loaded, CpuProbe())
    counted = runner.count_window(history, SummaryState(), SETTINGS)
    assert counted.fits and counted.limit_tokens == 512 - 256 - 64
    assert counted.prompt_tokens < 40 and counted.kept == ()  # nothing over, no turn of the chat kept
    assert [t.first_position for t in counted.evicted] == [0]  # the last exchange: folded after the next turn
    # the next turn itself (its plan's window): the same, its message added
    sent = runner.foresight.plan([*history, Message(Role.USER, "hi")], SummaryState(), SETTINGS.system_prompt,
                                 SETTINGS.max_new_tokens, SETTINGS.context_tokens, fold_at=SETTINGS.summary_fold_at,
                                 keep_turns=SETTINGS.summary_keep_turns).window
    assert sent.fits and [t.first_position for t in sent.evicted] == [0]
    assert 0 < sent.prompt_tokens - counted.prompt_tokens <= 2  # "hi" and nothing else
    assert [t.first_position for t in sent.kept] == [2]  # the new message's turn only
