"""Presets in the chat (issue 17, item 2): a pick per conversation, the library's save, remove,
import and export, every failure said and harmless."""

import errno
import json
from dataclasses import replace

import pytest

from tests.chat.conftest import finished, record
from tests.helpers.unreadable import deny_reading


@pytest.fixture
def chat(make_chat, tmp_path, monkeypatch):
    monkeypatch.setenv("HEADROOM_CONFIG_DIR", str(tmp_path / "config"))  # presets.json lives here
    return make_chat()


def test_a_preset_sets_the_chats_prompt_and_sampling_and_stays_with_the_conversation(chat):
    seen = chat.recorded
    presets, current = seen.of("presets_changed")[-1]
    assert current == "" and [p.name for p in presets][:4] == ["Balanced", "Precise", "Creative", "Code"]
    chat.presets.apply("Precise")
    generation = chat.settings.generation
    assert (generation.temperature, generation.top_k, generation.min_p) == (0.2, 20, 0.1)
    assert generation.system_prompt.startswith("You are a precise assistant.")
    assert generation.max_new_tokens == 16  # a field the preset does not set is kept
    assert seen.of("presets_changed")[-1][1] == "Precise"
    chat.turns.send("What is 2 + 2?")
    request = chat.worker.requests[-1]
    assert request.settings.top_k == 20 and request.settings.system_prompt.startswith("You are a precise")
    chat.worker.reply_finished.emit(chat.worker.last_id, finished("4"), record())
    cid = chat.conversation_id
    assert chat.store.load_conversation(cid).settings["preset"] == "Precise"

    chat.conversations.new_conversation()
    chat.presets.apply("Creative")
    chat.turns.send("A story")
    chat.worker.reply_finished.emit(chat.worker.last_id, finished("Once"), record())
    chat.conversations.open_conversation(cid)  # its own preset comes back with it
    assert chat.preset_name == "Precise" and chat.settings.generation.top_k == 20
    assert seen.of("presets_changed")[-1][1] == "Precise"
    chat.settings = replace(chat.settings, generation=replace(chat.settings.generation, temperature=0.9))
    chat.presets.settings_edited()
    assert seen.of("presets_changed")[-1][1] == ""  # edited: the chat's own settings now
    assert chat.store.load_conversation(cid).settings["temperature"] == 0.9


def test_save_remove_import_and_export(chat, tmp_path):
    seen = chat.recorded
    assert not chat.presets.export_file(tmp_path / "none.json")  # trial 7: an empty file, "Exported 0 presets"
    assert not (tmp_path / "none.json").exists() and seen.of("notice")[-1] == (
        "Nothing to export: you have no presets of your own yet. Select a preset to export it, or save these "
        "settings as one first.", "error")
    chat.settings = replace(chat.settings, generation=replace(chat.settings.generation, temperature=0.33,
                                                              system_prompt="Talk like a pirate."))
    assert chat.presets.save_current("Pirate")
    assert seen.of("presets_changed")[-1][1] == "Pirate"
    stored = json.loads((tmp_path / "config" / "presets.json").read_text())
    [pirate] = stored["presets"]
    assert pirate["name"] == "Pirate" and pirate["values"]["temperature"] == 0.33
    assert "cpu_threads" not in pirate["values"]
    assert not chat.presets.save_current("balanced")  # a built-in's name
    assert "built-in" in seen.of("notice")[-1][0] and seen.of("notice")[-1][1] == "error"

    assert chat.presets.export_file(tmp_path / "out.json")
    assert seen.of("notice")[-1] == ("Exported 1 preset to out.json", "status")
    assert chat.presets.import_file(tmp_path / "out.json")  # the same name again: renamed
    assert [p.name for p in chat.presets.library.user] == ["Pirate", "Pirate (2)"]
    assert seen.of("notice")[-1] == ("Imported 1 preset (Pirate → Pirate (2))", "status")
    chat.presets.delete("Pirate (2)")
    (tmp_path / "many.json").write_text(json.dumps([{"name": "Pirate", "values": {"temperature": 0.5}}] * 6))
    assert chat.presets.import_file(tmp_path / "many.json")  # six renames: three named, the rest counted
    assert seen.of("notice")[-1] == ("Imported 6 presets (Pirate → Pirate (2); Pirate → Pirate (3); "
                                     "Pirate → Pirate (4); … +3)", "status")
    for n in range(2, 8):
        chat.presets.delete(f"Pirate ({n})")
    chat.presets.delete("Balanced")
    assert "cannot be removed" in seen.of("notice")[-1][0]
    (tmp_path / "bad.json").write_text('{"presets": [{"name": "x", "values": {"temperature": "hot"}}]}')
    assert not chat.presets.import_file(tmp_path / "bad.json")
    assert seen.of("notice")[-1] == ('Nothing was imported: preset “x”: Temperature is not a number ("hot")', "error")
    assert [p.name for p in chat.presets.library.user] == ["Pirate"]
    (tmp_path / "none.json").write_text("[]")  # new-user trial: "Imported 0 presets", a success
    assert not chat.presets.import_file(tmp_path / "none.json")
    assert seen.of("notice")[-1] == ("Nothing was imported: none.json holds no presets", "error")
    (tmp_path / "flat.json").write_text(json.dumps({"format": "headroom-presets", "version": 1, "presets": [
        {"name": "big", "system_prompt": "Be big.", "temperature": 0.3}]}))  # not under "values"
    assert not chat.presets.import_file(tmp_path / "flat.json")
    assert seen.of("notice")[-1] == ("Nothing was imported: preset “big”: its settings (system_prompt, "
                                     "temperature) belong under “values”, as Headroom exports them", "error")
    assert [p.name for p in chat.presets.library.user] == ["Pirate"]
    assert not chat.presets.export_file(tmp_path / "bad.json" / "out.json")  # a file is in the way
    # as a chat export says it: no folder is made for an export (trial 10), so the write meets the file
    assert seen.of("notice")[-1] == (f"Could not export to {tmp_path / 'bad.json' / 'out.json'}: a part of the "
                                     "path is a file, not a folder", "error")


def test_removing_the_chats_preset_keeps_its_settings_and_forgets_the_name(chat):
    chat.settings = replace(chat.settings, generation=replace(chat.settings.generation, temperature=0.44))
    assert chat.presets.save_current("Mine")
    chat.turns.send("Hi")
    chat.worker.reply_finished.emit(chat.worker.last_id, finished("Hello"), record())
    cid = chat.conversation_id
    assert chat.store.load_conversation(cid).settings["preset"] == "Mine"
    chat.presets.delete("MINE")  # names compare without case
    assert chat.preset_name == "" and chat.settings.generation.temperature == 0.44
    assert "preset" not in chat.store.load_conversation(cid).settings
    assert chat.store.load_conversation(cid).settings["temperature"] == 0.44


def test_a_presets_json_that_cannot_be_read_is_said_once_and_never_saved_over(make_chat, tmp_path, monkeypatch):
    """New-user trial: a folder named presets.json stopped the app at start; a file without read
    permission would have been replaced by the first save (os.replace needs only the folder's)."""
    config = tmp_path / "config"
    monkeypatch.setenv("HEADROOM_CONFIG_DIR", str(config))
    (config / "presets.json").mkdir(parents=True)
    chat = make_chat()
    seen = chat.recorded
    said = [n for n in seen.of("notice") if n[0].startswith("Your presets could not be read")]
    assert said == [(f"Your presets could not be read: {config / 'presets.json'}: it is a folder, not a file",
                     "error")]
    assert chat.presets.library.user == () and [p.name for p in seen.of("presets_changed")[-1][0]][0] == "Balanced"
    chat.presets.show_presets()  # said once, not at every refresh
    assert len([n for n in seen.of("notice") if n[0].startswith("Your presets")]) == 1
    assert not chat.presets.save_current("Mine")
    assert seen.of("notice")[-1] == (f"The preset was not saved: {config / 'presets.json'} could not be read when "
                                     "Headroom started and is left as it is; move it away, or fix it and restart "
                                     "Headroom, to save presets", "error")
    (tmp_path / "one.json").write_text(json.dumps([{"name": "One", "values": {"temperature": 0.1}}]))
    assert not chat.presets.import_file(tmp_path / "one.json")
    assert seen.of("notice")[-1][0].startswith("Nothing was imported: ") and (config / "presets.json").is_dir()
    (config / "presets.json").rmdir()  # moved away: saving works again, in a new file
    assert chat.presets.save_current("Mine")
    assert [p["name"] for p in json.loads((config / "presets.json").read_text())["presets"]] == ["Mine"]


def test_a_presets_json_without_read_permission_is_not_replaced(make_chat, tmp_path, monkeypatch):
    config = tmp_path / "config"
    monkeypatch.setenv("HEADROOM_CONFIG_DIR", str(config))
    config.mkdir()
    stored = config / "presets.json"
    stored.write_text(json.dumps({"presets": [{"name": "Theirs", "values": {"top_k": 3}}]}), encoding="utf-8")
    allow_reading = deny_reading(monkeypatch, stored)  # chmod 000 does not stop root, who runs some test boxes
    chat = make_chat()
    assert (f"Your presets could not be read: {stored}: permission denied", "error") in chat.recorded.of("notice")
    assert not chat.presets.save_current("Mine")
    allow_reading()
    assert json.loads(stored.read_text(encoding="utf-8"))["presets"][0]["name"] == "Theirs"


def test_a_broken_presets_json_is_kept_aside_and_said_once(make_chat, tmp_path, monkeypatch):
    """The user's presets vanished at start with only a log line (settings.json was already said)."""
    config = tmp_path / "config"
    monkeypatch.setenv("HEADROOM_CONFIG_DIR", str(config))
    config.mkdir()
    (config / "presets.json").write_text('{"presets": [{"name": ', encoding="utf-8")
    chat = make_chat()
    [kept] = config.glob("presets.unreadable-*.json")
    said = [n for n in chat.recorded.of("notice") if n[0].startswith("Your presets")]
    assert said == [(f"Your presets could not be read: presets.json is not valid JSON (line 1, column 23). The "
                     f"file was kept as {kept}, and the built-in presets are used.", "error")]
    assert chat.presets.library.user == () and chat.recorded.of("presets_changed")[-1][0][0].name == "Balanced"
    chat.presets.show_presets()  # said once, not at every refresh
    assert len([n for n in chat.recorded.of("notice") if n[0].startswith("Your presets")]) == 1
    assert chat.presets.save_current("Mine")  # the broken file is aside: saving is safe
    assert kept.read_text(encoding="utf-8") == '{"presets": [{"name": '


def test_a_preset_s_seed_of_minus_one_is_random_not_a_fixed_seed(chat, tmp_path):
    """New-user trial 10: a preset with "seed": -1 (llama.cpp's, LM Studio's and Ollama's random) was
    imported with "Seed -1 → 0" said and picked as the fixed seed 0. It is random now, said as no change."""
    chat.settings = replace(chat.settings, generation=replace(chat.settings.generation, seed=42))
    lm_studio = {"name": "From LM Studio", "values": {"temperature": 0.8, "seed": -1}}
    (tmp_path / "lm.json").write_text(json.dumps(lm_studio))
    assert chat.presets.import_file(tmp_path / "lm.json")
    assert chat.recorded.of("notice")[-1] == ("Imported 1 preset", "status")
    assert chat.presets.library.get("From LM Studio").values == {"temperature": 0.8, "seed": None}
    chat.presets.apply("From LM Studio")
    assert chat.settings.generation.seed is None  # random, not the chat's 42 nor 0


def test_an_import_says_what_it_ignored_briefly(chat, tmp_path):
    """ImportResult.notes were computed and never shown: a setting from a newer Headroom or
    another app was dropped in silence."""
    (tmp_path / "one.json").write_text(json.dumps({"name": "Newer", "values": {"temperature": 0.4, "mirostat": 2}}))
    assert chat.presets.import_file(tmp_path / "one.json")
    assert chat.recorded.of("notice")[-1] == ("Imported 1 preset; preset “Newer”: unknown setting “mirostat” ignored",
                                              "status")
    odd = "k" * 5_000  # a key of any length must not make a huge status line
    raw = [{"name": f"P{n}", "author": "me", "values": {"top_k": n + 1, odd: 1}} for n in range(40)]
    (tmp_path / "many.json").write_text(json.dumps(raw))
    assert chat.presets.import_file(tmp_path / "many.json")
    text, kind = chat.recorded.of("notice")[-1]
    assert kind == "status" and text.startswith("Imported 40 presets; preset “P0”: unknown setting “kkk")
    assert text.endswith("…; preset “P0”: unknown field “author” ignored; … +78") and len(text) < 250


def test_an_import_says_what_it_ignored_in_korean(chat, tmp_path, korean):
    """Trial 8: the notes on ignored keys stayed English in the Korean window."""
    (tmp_path / "one.json").write_text(json.dumps({"name": "Newer", "icon": "★", "values": {"mirostat": 2, "seed": 1}}))
    assert chat.presets.import_file(tmp_path / "one.json")
    text = chat.recorded.of("notice")[-1][0]
    assert "프리셋 “Newer”: 알 수 없는 설정 “mirostat”은(는) 무시했습니다" in text
    assert "프리셋 “Newer”: 알 수 없는 필드 “icon”은(는) 무시했습니다" in text
    assert "unknown" not in text and "ignored" not in text


def test_an_import_says_which_values_it_changed_to_fit_their_range(chat, tmp_path):
    """New-user trial: a preset with temperature 99, top_p -1, max_new_tokens -5, seed -9 and
    context_tokens 10**12 was imported with only "Imported 1 preset (… → … (2))" said; picking it
    gave 1-token answers with no explanation."""
    wild = {"temperature": 99, "top_p": -1, "max_new_tokens": -5, "seed": -9, "context_tokens": 10**12}
    (tmp_path / "wild.json").write_text(json.dumps({"name": "Wild", "values": wild}))
    assert chat.presets.import_file(tmp_path / "wild.json")
    assert chat.recorded.of("notice")[-1] == (
        "Imported 1 preset; values outside their range were changed: Temperature 99 → 2, Top-p -1 → 0.01, "
        "Max new tokens -5 → 512, Context window 1,000,000,000,000 → 1,048,576", "status")  # 0 or less: the default
    assert chat.presets.library.get("Wild").values["context_tokens"] == 1_048_576  # the Settings field's end
    many = [{"name": f"P{n}", "values": {"top_k": -n - 1, "seed": 0.5}} for n in range(30)]
    (tmp_path / "many.json").write_text(json.dumps(many + [{"name": "Wild", "values": wild}]))
    assert chat.presets.import_file(tmp_path / "many.json")  # several presets: each named, two said
    text, kind = chat.recorded.of("notice")[-1]
    assert kind == "status" and text == (
        "Imported 31 presets (Wild → Wild (2)); values outside their range were changed: "
        "P0: Top-k -1 → 0, Seed 0.5 → random; P1: Top-k -2 → 0, Seed 0.5 → random; … +29")


@pytest.mark.parametrize("values, reason", [
    ('{"temperature": NaN}', "preset “NaNs”: Temperature is not a usable number (NaN)"),
    ('{"top_k": true}', "preset “NaNs”: Top-k is not a number (true)"),
    ('{"system_prompt": 12345}', "preset “NaNs”: system prompt is not a text (12345)"),
    ('{"max_new_tokens": "' + "9" * 60 + '"}', 'preset “NaNs”: Max new tokens is not a number ("' + "9" * 38 + "…)"),
    ("[1, 2]", "preset “NaNs”: its “values” must be an object of settings"),
])
def test_why_an_import_is_refused_names_the_settings_as_settings_does(chat, tmp_path, values, reason):
    """Trial 9: the refusals were the parser's English with field names ("temperature = nan is not
    a usable value"), in the Korean window too; the out-of-range note already used the labels."""
    (tmp_path / "bad.json").write_text('{"name": "NaNs", "values": ' + values + "}", encoding="utf-8")
    assert not chat.presets.import_file(tmp_path / "bad.json")
    assert chat.recorded.of("notice")[-1] == (f"Nothing was imported: {reason}", "error")


def test_why_an_import_is_refused_is_said_in_korean(chat, tmp_path, korean):
    """Trial 9: "아무것도 가져오지 못했습니다: preset 'NaNs': temperature = nan is not a usable value"."""
    (tmp_path / "bad.json").write_text('{"name": "NaNs", "values": {"temperature": NaN}}', encoding="utf-8")
    assert not chat.presets.import_file(tmp_path / "bad.json")
    text = chat.recorded.of("notice")[-1][0]
    assert "온도" in text and "(NaN)" in text and "temperature" not in text and "usable value" not in text
    assert not chat.presets.import_file(tmp_path / "missing.json")
    text = chat.recorded.of("notice")[-1][0]
    assert "missing.json" in text and "No such file" not in text


def test_an_export_to_a_missing_folder_is_refused_as_a_chat_export_is(chat, tmp_path, korean):
    """New-user trial 10: a preset export to /tmp/x/none/x.json made the missing folders, while a
    chat export to one said the folder does not exist. Both refuse it now, in the same words."""
    from app.core.conversation import Message, Role

    cid = chat.store.create_conversation("Cats")
    chat.store.append_message(cid, Message(Role.USER, "Tell me about cats"))
    assert chat.presets.save_current("Mine")
    assert not chat.presets.export_file(tmp_path / "none" / "x.json")
    presets_said = chat.recorded.of("notice")[-1]
    assert not chat.conversations.export_conversation(cid, "json", tmp_path / "none" / "x.json")
    assert chat.recorded.of("notice")[-1] == presets_said
    assert presets_said == (f"{tmp_path / 'none' / 'x.json'}(으)로 내보내지 못했습니다: 파일이나 그 폴더가 없습니다",
                            "error")
    assert not (tmp_path / "none").exists()
    assert chat.presets.export_file(tmp_path / "x.json")  # an existing folder: written as before
    assert json.loads((tmp_path / "x.json").read_text(encoding="utf-8"))["presets"][0]["name"] == "Mine"


def test_a_failed_export_says_why_in_the_windows_language(chat, tmp_path, korean, monkeypatch):
    """Trial 9: "…내보내지 못했습니다: No such file or directory" (the OS's English; /proc/x.md)."""
    def no_folder(_presets, path):
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", str(path))

    monkeypatch.setattr("app.chat.presets.export_presets", no_folder)
    assert chat.presets.save_current("Mine")
    assert not chat.presets.export_file(tmp_path / "out.json")
    text, kind = chat.recorded.of("notice")[-1]
    assert kind == "error" and "No such file" not in text and "out.json" in text
