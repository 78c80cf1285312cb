"""Loops in generated text (app.core.repetition): sentences said again, phrases looping to the cap."""

from app.core.repetition import loop_start, without_repeats


def test_sentences_said_again_are_left_out_whatever_their_case_or_ending():
    cleaned = without_repeats("The user likes tea. The user lives in Seoul.\nthe user likes tea! The user likes tea")
    assert cleaned.text == "The user likes tea. The user lives in Seoul."
    assert cleaned.sentences_dropped == 2 and cleaned.loop_cut == 0
    assert cleaned.describe() == "left out 2 repeated sentences"


def test_korean_sentences_said_again_are_left_out():
    cleaned = without_repeats("사용자는 민지입니다. 부산에 삽니다. 사용자는 민지입니다.")
    assert cleaned.text == "사용자는 민지입니다. 부산에 삽니다." and cleaned.sentences_dropped == 1


def test_a_phrase_looping_to_the_end_is_cut_where_it_starts_again():
    text = "The user is Minji, a nurse who likes hiking and tea and tea and tea and tea and tea and tea and tea and tea"
    cleaned = without_repeats(text)
    assert cleaned.text == "The user is Minji, a nurse who likes hiking and tea"  # said once
    assert cleaned.loop_cut == len(text) - len("The user is Minji, a nurse who likes hiking and tea ")
    assert cleaned.describe() == f"left out a loop of {cleaned.loop_cut} characters"


def test_a_loop_in_a_script_without_spaces_is_cut_by_characters():
    assert without_repeats("用户喜欢喝茶" * 5).text == "用户喜欢喝茶"


def test_phrases_said_twice_in_a_text_that_goes_on_are_not_a_loop():
    for text in ("Minji works at Seoul National University Hospital. She moved from Busan to work at Seoul "
                 "National University Hospital",
                 "They set the budget for the trip to Jeju and agreed on the budget for the trip in May.",
                 "a b c d e f g h a b c d", "", "tea"):
        assert loop_start(text) is None and without_repeats(text).text == text.strip()
        assert not without_repeats(text).changed
