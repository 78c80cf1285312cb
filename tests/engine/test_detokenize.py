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
