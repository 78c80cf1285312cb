"""A reasoning model's earlier "<think>…</think>" stays out of the next prompt, which the meter
counts as sent; Continue still goes on from the raw stopped text (the real model's tokenizer and
chat template)."""

import dataclasses
import threading

from app.core.conversation import Message, MessageStatus, Role
from app.core.history import SummaryState
from app.core.settings import GenerationSettings
from app.engine.events import TextDelta, TurnCompleted
from app.engine.local.turn_runner import TurnRunner
from app.engine.memory.probe import CpuProbe

SETTINGS = GenerationSettings(max_new_tokens=64, context_tokens=1024, temperature=0.0)
REASONING = "The user asks for the capital of France. I recall that it is Paris."
HISTORY = [Message(Role.USER, "What is the capital of France?"),
           Message(Role.ASSISTANT, f"<think>\n{REASONING}\n</think>\n\nThe capital of France is Paris.")]


def plan(runner: TurnRunner, messages: list[Message], continue_final: bool = False):
    return runner.foresight.plan(messages, SummaryState(), SETTINGS.system_prompt, SETTINGS.max_new_tokens,
                                 SETTINGS.context_tokens, continue_final=continue_final)


def test_the_next_prompt_has_the_answer_without_its_reasoning(real_loaded):
    runner = TurnRunner(real_loaded, CpuProbe())
    turn = plan(runner, [*HISTORY, Message(Role.USER, "And of Italy?")])
    prompt = real_loaded.tokenizer.decode(list(turn.prompt_ids))
    assert "<|im_start|>assistant\nThe capital of France is Paris.<|im_end|>" in prompt
    assert "<think>" not in prompt and "</think>" not in prompt and REASONING not in prompt
    assert prompt.endswith("And of Italy?<|im_end|>\n<|im_start|>assistant\n")
    # the meter between turns counts that prompt: the same, less "And of Italy?" (4 tokens)
    counted = runner.count_window(HISTORY, SummaryState(), SETTINGS)
    assert turn.window.prompt_tokens == len(turn.prompt_ids) == counted.prompt_tokens + 4


def test_continue_goes_on_inside_the_stopped_reasoning(real_loaded):
    runner = TurnRunner(real_loaded, CpuProbe())
    stopped = Message(Role.ASSISTANT, "<think>\nItaly's capital is", MessageStatus.STOPPED)
    turn = plan(runner, [*HISTORY, Message(Role.USER, "And of Italy?"), stopped], continue_final=True)
    prompt = real_loaded.tokenizer.decode(list(turn.prompt_ids))
    assert prompt.endswith("And of Italy?<|im_end|>\n<|im_start|>assistant\n<think>\nItaly's capital is")
    assert REASONING not in prompt  # the earlier answer's reasoning still stays out


def test_a_reply_the_template_opened_reads_as_reasoning_from_its_first_token(real_loaded):
    """A template whose generation prompt ends with "<think>\n" (DeepSeek-R1 distills): the
    window's turn streams that opening first and stores it, so the transcript folds the reply as
    reasoning from its first token; Continue renders the prompt inside it and adds no second one."""
    fmt = dataclasses.replace(real_loaded.prompt_format, reasoning_opening="<think>\n")
    runner = TurnRunner(dataclasses.replace(real_loaded, prompt_format=fmt), CpuProbe())
    settings = dataclasses.replace(SETTINGS, max_new_tokens=3)

    def texts(messages, continue_final=False):
        events = list(runner.run_turn(messages, SummaryState(), settings, threading.Event(), continue_final))
        done = [e for e in events if isinstance(e, TurnCompleted)]
        return [e.text for e in events if isinstance(e, TextDelta)], done[0].finished.text

    deltas, text = texts([Message(Role.USER, "What is 2+2?")])
    assert deltas[0] == "<think>\n" and text == "".join(deltas) and len(deltas) > 1
    stopped = Message(Role.ASSISTANT, text, MessageStatus.STOPPED)
    more, more_text = texts([Message(Role.USER, "What is 2+2?"), stopped], continue_final=True)
    assert "<think>" not in more_text and more and more[0] != "<think>\n"
