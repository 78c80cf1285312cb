import copy

import pytest

from app.core.history import normalize_roles
from app.engine.local.chat_format import detect_format, encode_prompt, render_prompt, stop_token_ids

GEMMA_LIKE = (
    "{% for m in messages %}{% if m['role'] == 'system' %}"
    "{{ raise_exception('System role not supported') }}{% endif %}"
    "{% if (m['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('roles must alternate') }}{% endif %}"
    "<start_of_turn>{{ m['role'] }}\n{{ m['content'] }}<end_of_turn>\n{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}")

MESSAGES = [{"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"},
            {"role": "user", "content": "Capital of France?"}]


@pytest.fixture
def tokenizer(real_loaded):
    return copy.deepcopy(real_loaded.tokenizer)


def test_smollm2_prompt_and_stop_ids(real_loaded):
    fmt = real_loaded.prompt_format
    text = render_prompt(real_loaded.tokenizer, fmt, MESSAGES[:2])
    assert text.endswith("<|im_start|>assistant\n")
    assert "<|im_start|>system\nBe brief.<|im_end|>" in text
    assert real_loaded.stop_ids == {2}  # <|im_end|> is both EOS and end-of-turn


def test_system_role_rejected_is_folded_and_same_roles_merged(tokenizer):  # case C15
    tokenizer.chat_template = GEMMA_LIKE
    fmt = detect_format(tokenizer)
    assert fmt.kind == "template" and not fmt.system_role
    text = render_prompt(tokenizer, fmt, MESSAGES)
    assert text == ("<start_of_turn>user\nBe brief.\n\nHi\n\nCapital of France?<end_of_turn>\n"
                    "<start_of_turn>model\n")


def test_fold_keeps_order_when_conversation_starts_with_assistant():
    folded = normalize_roles([{"role": "system", "content": "S"},
                              {"role": "assistant", "content": "A"}], system_allowed=False)
    assert folded == [{"role": "user", "content": "S"}, {"role": "assistant", "content": "A"}]


def test_template_end_of_turn_token_joins_stop_ids(tokenizer):  # case C18
    tokenizer.chat_template = GEMMA_LIKE.replace("<end_of_turn>", "<|endoftext|>")
    fmt = detect_format(tokenizer)

    class GenerationConfig:
        eos_token_id = [7]

    ids = stop_token_ids(tokenizer, GenerationConfig(), fmt)
    endoftext = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    assert ids == {7, tokenizer.eos_token_id, endoftext}


def test_base_model_without_template_uses_transcript(tokenizer):  # case C14
    tokenizer.chat_template = None
    fmt = detect_format(tokenizer)
    assert fmt.kind == "transcript" and "\nUser:" in fmt.stop_strings
    text = render_prompt(tokenizer, fmt, MESSAGES[:2])
    assert text == "System: Be brief.\n\nUser: Hi\n\nAssistant:"


def test_continue_final_message_ends_inside_the_partial_answer(real_loaded):  # case C17
    tok, fmt = real_loaded.tokenizer, real_loaded.prompt_format
    partial = MESSAGES[:2] + [{"role": "assistant", "content": "The capital"}]
    normal = render_prompt(tok, fmt, MESSAGES[:2])
    cont = render_prompt(tok, fmt, partial, continue_final=True)
    assert cont == normal + "The capital"
    assert encode_prompt(tok, cont)[: len(encode_prompt(tok, normal))] == encode_prompt(tok, normal)
