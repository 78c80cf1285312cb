"""Notes a summary proposes (app.core.note_proposals): its own sentences that hold a number, a
name or a decision, short enough to pin, none already pinned or dismissed."""

from app.core.note_proposals import MAX_NOTE_CHARS, propose_notes

SUMMARY = ("The user is planning a trip. Her name is Ada and she lives in Lisbon. "
           "They discussed hotels in general terms. The budget is 1,200 euros for 5 nights. "
           "The assistant suggested looking at reviews.")


def test_the_sentences_with_facts_are_proposed_in_the_summarys_order():
    assert propose_notes(SUMMARY) == ["Her name is Ada and she lives in Lisbon.",
                                      "The budget is 1,200 euros for 5 nights."]


def test_what_is_pinned_or_dismissed_is_not_proposed_again_and_the_limit_holds():
    assert propose_notes(SUMMARY, notes="her name is Ada and she lives in Lisbon") == [
        "The budget is 1,200 euros for 5 nights."]
    assert propose_notes(SUMMARY, dismissed=["The budget is 1,200 euros for 5 nights."]) == [
        "Her name is Ada and she lives in Lisbon."]
    assert propose_notes(SUMMARY, limit=1) == ["Her name is Ada and she lives in Lisbon."]


def test_bullets_the_extract_prefix_and_long_or_tiny_sentences():
    summary = ("- Uses Python 3.12 on Windows.\nThe user said: My deadline is Friday.\nOk.\n"
               + "A very long sentence about Paris " * 10)
    proposed = propose_notes(summary)
    assert proposed == ["Uses Python 3.12 on Windows.", "My deadline is Friday."]
    assert all(len(p) <= MAX_NOTE_CHARS for p in proposed)


def test_korean_sentences_are_proposed_when_they_hold_a_number_or_say_a_personal_fact():
    """Korean has no capitals for names; trial 5's Korean chat (name, city, plans) got no proposals."""
    assert propose_notes("오늘은 날씨가 맑았다. 예산은 300만 원이다.") == ["예산은 300만 원이다."]
    name = "제 이름은 박민아이고 부산에 살아요."
    assert propose_notes(name + " 오늘은 날씨가 맑았다.") == [name]


def test_a_fact_already_offered_in_other_words_is_not_offered_again():
    """Trial 5: "Jonas Weber will join me; he is vegetarian." and "Jonas Weber will join us."
    were offered side by side, from two summaries."""
    offered = ["My friend Jonas Weber will join me; he is vegetarian."]
    assert propose_notes("My friend Jonas Weber will join us. The hotel is Lotte Busan.", offered=offered) == [
        "The hotel is Lotte Busan."]


def test_a_summary_without_facts_proposes_nothing():
    assert propose_notes("They talked for a while. It was pleasant.") == []


def test_a_fact_restated_in_other_words_is_offered_once():
    summary = ("Minji is a nurse in Busan. Minji is a nurse. The nurse Minji lives in Busan. "
               "She prefers green tea. Her budget is 300,000 won.")
    notes = propose_notes(summary)  # the three sentences about Minji: the one that says most
    assert notes == ["The nurse Minji lives in Busan.", "She prefers green tea.", "Her budget is 300,000 won."]


def test_transcript_labels_are_not_kept_and_questions_are_not_offered():
    summary = "User: What is the name of the person who leads Falcon?\nAssistant: Mira Kovacs leads Project Falcon."
    assert propose_notes(summary) == ["Mira Kovacs leads Project Falcon."]


def test_a_question_with_a_stray_full_stop_is_still_a_question():
    """An older extractive summary wrote "What is 2+2?." — it was offered as a fact to pin."""
    assert propose_notes("The user said: Hello! What is 2+2?. My budget is 300 won.") == ["My budget is 300 won."]
    assert propose_notes("사용자가 한 말: 예산은 30만 원이에요.") == ["예산은 30만 원이에요."]  # the lead is no note
    assert propose_notes("예산이 얼마예요？。 예산은 300만 원이다.") == ["예산은 300만 원이다."]
