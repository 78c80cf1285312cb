import pytest

from app.engine.local.detokenize import IncrementalDetokenizer


def stream(tokenizer, ids, stop_strings=()):
    detok = IncrementalDetokenizer(tokenizer, stop_strings)
    pieces = [detok.push(i) for i in ids]
    pieces.append(detok.flush())
    return pieces, detok


def test_multibyte_characters_are_never_split(real_loaded):
    tok = real_loaded.tokenizer
    text = "Paris 🇫🇷 café 東京 🙂 done"
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert len(ids) > len(text.split())  # the emoji really span several tokens
    pieces, detok = stream(tok, ids)
    assert all("\ufffd" not in p for p in pieces)
    assert "".join(pieces) == text == detok.text


def test_stop_string_cuts_the_reply_and_is_never_shown(real_loaded):
    tok = real_loaded.tokenizer
    ids = tok("Sure, here it is.\nUser: and now me", add_special_tokens=False)["input_ids"]
    pieces, detok = stream(tok, ids, ("\nUser:",))
    assert detok.hit_stop_string
    assert "".join(pieces) == "Sure, here it is." == detok.text


REPLACEMENT = "\ufffd"
MULTIBYTE = ("안녕하세요, 만나서 반갑습니다!", "좋아요 👍🏽 고마워요", "漢字 學校 大韓民國",
             "서울은 대한민국의 수도입니다. 👨‍👩‍👧")


def every_cut(tok, text):
    """(ids of the answer cut after k tokens, what streaming shows of it) for every k."""
    ids = tok(text, add_special_tokens=False)["input_ids"]
    for k in range(len(ids) + 1):
        pieces, detok = stream(tok, ids[:k])
        assert "".join(pieces) == detok.text
        yield ids[:k], detok.text


@pytest.mark.parametrize("text", MULTIBYTE)
def test_an_answer_cut_at_any_token_shows_no_half_character(real_loaded, text):
    # a cut by max new tokens, Stop or a progress save can fall inside a character (byte-level BPE)
    tok = real_loaded.tokenizer
    for ids, shown in every_cut(tok, text):
        decoded = tok.decode(ids)
        assert REPLACEMENT not in shown and text.startswith(shown)
        if not decoded.endswith(REPLACEMENT):  # ends on a whole character: all of it is shown
            assert shown == decoded


@pytest.mark.parametrize("text", [*MULTIBYTE, "the 👨‍👩‍👧 the"])
def test_byte_fallback_tokens_cut_at_any_token_show_no_half_character(text):
    from tests.helpers.byte_fallback_tokenizer import byte_fallback_tokenizer

    tok = byte_fallback_tokenizer()
    for ids, shown in every_cut(tok, text):
        assert REPLACEMENT not in shown and text.startswith(shown)
        if REPLACEMENT not in tok.decode(ids):
            assert shown == tok.decode(ids)


def test_a_malformed_sequence_the_model_wrote_is_shown_as_decode_shows_it(real_loaded):
    # SmolLM2 sampled at temperature 1.2 (seed 3) wrote the first two bytes of a Hangul syllable
    # and then "w": no later token can complete it, so it stays one U+FFFD, as in decode()
    tok = real_loaded.tokenizer
    ids = tok("(regex)", add_special_tokens=False)["input_ids"] + [182, 228, 103, 33446]
    pieces, detok = stream(tok, ids)
    assert "".join(pieces) == detok.text == tok.decode(ids) == "(regex)\ufffdw [])"
