"""Presets (issue 17, item 2): built-ins, apply, the user library, presets.json, import/export."""

import json
from dataclasses import replace

import pytest

from app.core.presets import (
    BUILTIN_PRESETS,
    MAX_NAME_CHARS,
    PRESET_FIELDS,
    ChangedValue,
    IgnoredKey,
    KeptAside,
    Preset,
    PresetError,
    PresetLibrary,
    export_presets,
    import_presets,
    load_presets,
    presets_path,
    read_presets,
    save_presets,
)
from app.core.settings import MAX_CONTEXT_TOKENS, GenerationSettings

MINE = Preset("Terse", {"system_prompt": "Answer in one line.", "temperature": 0.3, "top_k": 30,
                        "seed": 7}, "short answers")


def test_builtins_are_distinct_valid_and_include_a_korean_helper():
    names = [p.name for p in BUILTIN_PRESETS]
    assert names == ["Balanced", "Precise", "Creative", "Code", "한국어 도우미"]
    for preset in BUILTIN_PRESETS:
        assert preset.builtin and preset.values["system_prompt"]
        applied = preset.apply(GenerationSettings())
        assert applied == applied.validated()
        assert {k: getattr(applied, k) for k in preset.values} == dict(preset.values)  # nothing clamped
    korean = BUILTIN_PRESETS[-1].values["system_prompt"]
    assert sum("가" <= ch <= "힣" for ch in korean) > 20
    assert BUILTIN_PRESETS[0].apply(GenerationSettings()) == GenerationSettings()  # Balanced = today's defaults
    assert BUILTIN_PRESETS[1].apply(GenerationSettings()).temperature < 0.5  # Precise is near-greedy


def test_apply_sets_the_presets_fields_and_keeps_the_chats_others():
    chat = GenerationSettings(max_new_tokens=900, context_tokens=4096, temperature=1.2, min_p=0.2)
    applied = MINE.apply(chat)
    assert (applied.system_prompt, applied.temperature, applied.top_k, applied.seed) == \
        ("Answer in one line.", 0.3, 30, 7)
    assert (applied.max_new_tokens, applied.context_tokens, applied.min_p) == (900, 4096, 0.2)


def test_from_settings_captures_all_or_some_fields():
    settings = GenerationSettings(temperature=0.4, repetition_penalty=1.2, context_tokens=2048)
    whole = Preset.from_settings("  My   set ", settings)
    assert whole.name == "My set" and set(whole.values) == set(PRESET_FIELDS)
    assert whole.apply(GenerationSettings()) == settings
    part = Preset.from_settings("Only sampling", settings, only=("temperature", "repetition_penalty", "nope"))
    assert dict(part.values) == {"temperature": 0.4, "repetition_penalty": 1.2}
    with pytest.raises(PresetError, match="needs a name"):
        Preset.from_settings("   ", settings)


def test_library_refuses_clashes_with_builtins_and_other_user_presets():
    library = PresetLibrary().with_preset(MINE)
    assert library.get("  terse ") is library.user[0]
    with pytest.raises(PresetError, match="built-in"):
        library.with_preset(Preset("balanced", {"temperature": 0.1}))
    with pytest.raises(PresetError, match="already exists"):
        library.with_preset(Preset("TERSE", {"temperature": 0.1}))
    replaced = library.with_preset(Preset("TERSE", {"temperature": 0.1}), replace_existing=True)
    assert [dict(p.values) for p in replaced.user] == [{"temperature": 0.1}]
    with pytest.raises(PresetError, match="cannot be removed"):
        library.without("Code")
    assert library.without("terse").user == ()
    assert len(library.all) == len(BUILTIN_PRESETS) + 1


def test_user_presets_round_trip_through_the_config_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("HEADROOM_CONFIG_DIR", str(tmp_path))
    library = PresetLibrary().with_preset(MINE).with_preset(Preset("둘째", {"min_p": 0.1}))
    save_presets(library)
    assert presets_path() == tmp_path / "presets.json"
    stored = json.loads(presets_path().read_text(encoding="utf-8"))
    assert stored["format"] == "headroom-presets" and [p["name"] for p in stored["presets"]] == ["Terse", "둘째"]
    assert "둘째" in presets_path().read_text(encoding="utf-8")  # readable UTF-8, not \\u escapes
    assert load_presets() == library
    assert load_presets(tmp_path / "absent.json") == PresetLibrary()


def test_export_then_import_round_trips(tmp_path):
    library = PresetLibrary().with_preset(MINE)
    path = tmp_path / "export.json"
    export_presets([MINE, BUILTIN_PRESETS[4]], path)
    fresh, result = import_presets(PresetLibrary(), path)
    assert fresh.get("Terse") == MINE
    # a built-in exports like any preset; importing it back clashes with the built-in: renamed
    assert result.renamed == (("한국어 도우미", "한국어 도우미 (2)"),)
    assert dict(fresh.get("한국어 도우미 (2)").values) == dict(BUILTIN_PRESETS[4].values)
    again, result = import_presets(library, path)
    assert [p.name for p in again.user] == ["Terse", "Terse (2)", "한국어 도우미 (2)"]
    assert again.get("Terse (2)").apply(GenerationSettings()) == MINE.apply(GenerationSettings())


@pytest.mark.parametrize("text, message", [
    ("{not json", "not valid JSON"),
    ('{"format": "lmstudio", "presets": []}', "not a Headroom presets file"),
    ('[{"values": {}}]', "needs a name"),
    ('[{"name": "A", "values": {"temperature": "hot"}}]', "temperature = 'hot' is not a number"),
    ('[{"name": "A", "values": {"system_prompt": 5}}]', "system_prompt = 5 is not a text"),
    ('[{"name": "A", "values": {"seed": true}}]', "seed = True is not a number"),
    ('[{"name": "A", "values": {"temperature": NaN}}]', "temperature = nan is not a usable value"),
    ('[{"name": "A", "values": [1, 2]}]', "'values' must be an object"),
    ('[{"name": "ok", "values": {"top_k": 1}}, "junk"]', "preset 2: a preset must be an object"),
])
def test_a_bad_file_raises_one_line_and_changes_nothing(tmp_path, text, message):
    library = PresetLibrary().with_preset(MINE)
    path = tmp_path / "bad.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(PresetError, match=message) as caught:
        import_presets(library, path)
    assert "\n" not in str(caught.value)
    assert library.user == (MINE,)


@pytest.mark.parametrize("text, kind, preset, setting, value", [
    ('[{"name": "A", "values": {"temperature": NaN}}]', "unusable", "A", "temperature", "nan"),
    ('[{"name": "A", "values": {"top_k": true}}]', "not a number", "A", "top_k", True),
    ('[{"name": "A", "values": {"system_prompt": 5}}]', "not text", "A", "system_prompt", 5),
    ('[{"name": "A", "system_prompt": "x", "values": {"top_k": 1}}]', "misplaced", "A", "", ("system_prompt",)),
    ('[{"name": "ok", "values": {"top_k": 1}}, "junk"]', "not a preset", "", "", 2),
    ('{"format": "lmstudio", "presets": []}', "other format", "", "", "lmstudio"),
    ("{not json", "not JSON", "", "", (1, 2)),
])
def test_a_refused_import_says_which_refusal_with_its_facts(tmp_path, text, kind, preset, setting, value):
    """Trial 9: the window could only show the parser's English ("temperature = nan is not a usable
    value"); the facts let it say the refusal in its language with the settings' labels."""
    path = tmp_path / "bad.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(PresetError) as caught:
        import_presets(PresetLibrary(), path)
    error = caught.value
    assert (error.kind, error.preset, error.setting) == (kind, preset, setting)
    assert str(error.value) == value if value == "nan" else error.value == value
    assert error.file == ("bad.json" if kind == "not JSON" else "")


@pytest.mark.parametrize("text", ["[]", '{"presets": []}',
                                  '{"format": "headroom-presets", "version": 1, "presets": []}'])
def test_a_file_with_no_presets_is_refused_not_imported_as_none(tmp_path, text):
    """New-user trial: `[]` was "Imported 0 presets", a success. presets.json itself may be empty."""
    path = tmp_path / "empty.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(PresetError, match="^empty.json holds no presets$") as caught:
        import_presets(PresetLibrary(), path)
    assert (caught.value.kind, caught.value.file) == ("no presets", "empty.json")
    assert read_presets(path) == (PresetLibrary(), None)  # the stored library of a user with none


def test_an_empty_object_is_a_preset_without_a_name(tmp_path):
    path = tmp_path / "empty.json"
    path.write_text("{}", encoding="utf-8")
    with pytest.raises(PresetError) as caught:
        import_presets(PresetLibrary(), path)
    assert caught.value.kind == "no name"


def test_unreadable_or_binary_import_files_are_reported(tmp_path):
    with pytest.raises(PresetError, match="cannot read"):
        import_presets(PresetLibrary(), tmp_path / "missing.json")
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe\x00junk")
    with pytest.raises(PresetError, match="not a text file"):
        import_presets(PresetLibrary(), tmp_path / "bin.json")


def test_an_import_file_nested_too_deeply_is_not_valid_json(tmp_path):
    """New-user trial: [[[…]]] 100,000 deep opened the crash dialog (RecursionError)."""
    library = PresetLibrary().with_preset(MINE)
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    with pytest.raises(PresetError) as caught:
        import_presets(library, path)
    assert str(caught.value) == "deep.json is not valid JSON (nested too deeply)"
    assert library.user == (MINE,)


def test_presets_files_with_a_utf8_bom_are_read(tmp_path):
    """Notepad saves UTF-8 with a byte-order mark: presets.json was kept aside, an import refused."""
    bom = b"\xef\xbb\xbf" + json.dumps({"format": "headroom-presets", "version": 1,
                                         "presets": [MINE.to_json()]}, ensure_ascii=False).encode()
    (tmp_path / "presets.json").write_bytes(bom)
    assert load_presets(tmp_path / "presets.json").user == (MINE,)
    assert not list(tmp_path.glob("presets.unreadable-*.json"))
    (tmp_path / "notepad.json").write_bytes(bom)
    library, result = import_presets(PresetLibrary(), tmp_path / "notepad.json")
    assert library.user == (MINE,) and result.added == ("Terse",)


def test_unknown_fields_are_dropped_and_reported(tmp_path):
    path = tmp_path / "newer.json"
    path.write_text(json.dumps({"format": "headroom-presets", "version": 9, "presets": [
        {"name": "Future", "icon": "star", "values": {"temperature": 0.5, "mirostat": 2}}]}))
    library, result = import_presets(PresetLibrary(), path)
    assert dict(library.get("Future").values) == {"temperature": 0.5}
    assert result.notes == (IgnoredKey("Future", "mirostat"), IgnoredKey("Future", "icon", field=True))
    assert [str(note) for note in result.notes] == ["preset 'Future': unknown setting 'mirostat' ignored",
                                                    "preset 'Future': unknown field 'icon' ignored"]


@pytest.mark.parametrize("preset, message", [
    ({"name": "big", "system_prompt": "Be big.", "temperature": 0.3},
     'preset \'big\': its settings (system_prompt, temperature) belong under "values", as Headroom exports them'),
    ({"name": "half", "values": {"top_k": 5}, "temperature": 0.3},
     'preset \'half\': its settings (temperature) belong under "values", as Headroom exports them'),
    ({"name": "none"}, 'preset \'none\' has no setting Headroom knows under "values"'),
    ({"name": "empty", "values": {}}, 'preset \'empty\' has no setting Headroom knows under "values"'),
    ({"name": "future", "values": {"mirostat": 2}}, 'preset \'future\' has no setting Headroom knows under "values"'),
])
def test_a_preset_that_sets_nothing_is_refused_not_imported_empty(tmp_path, preset, message):
    """New-user trial: fields beside "values" (a layout Headroom never exports) were dropped, and
    an empty preset was imported as "Imported 1 preset"."""
    library = PresetLibrary().with_preset(MINE)
    path = tmp_path / "flat.json"
    path.write_text(json.dumps({"format": "headroom-presets", "version": 1, "presets": [
        {"name": "Fine", "values": {"temperature": 0.4}}, preset]}), encoding="utf-8")
    with pytest.raises(PresetError) as caught:
        import_presets(library, path)
    assert str(caught.value) == message
    assert library.user == (MINE,)  # all or nothing: "Fine" was not added either


def test_presets_json_keeps_an_empty_preset_an_older_import_stored(tmp_path):
    path = tmp_path / "presets.json"
    path.write_text(json.dumps({"presets": [MINE.to_json(), {"name": "big", "description": "", "values": {}}]}),
                    encoding="utf-8")
    assert load_presets(path).user == (MINE, Preset("big"))  # not the whole file sent aside for it
    assert not list(tmp_path.glob("presets.unreadable-*.json"))


def test_values_out_of_range_are_clamped_like_the_settings(tmp_path):
    path = tmp_path / "wild.json"
    path.write_text('{"name": "Wild", "values": {"temperature": 9, "top_k": -1, "repetition_penalty": 5}}')
    library, result = import_presets(PresetLibrary(), path)  # a single preset object is accepted too
    assert dict(library.get("Wild").values) == {"temperature": 2.0, "top_k": 0, "repetition_penalty": 2.0}
    assert result.added == ("Wild",)


def test_the_values_an_import_clamped_are_listed_with_their_stored_preset(tmp_path):
    """New-user trial: temperature 99, top_p -1, max_new_tokens -5, seed -9 and context_tokens
    10**12 were imported as 2.0, 0.01, 1, 0 and 10**12 with only "Imported 1 preset" said (and a
    context the Settings field, which stops at MAX_CONTEXT_TOKENS, cannot show). A negative seed is
    random (trial 10: other tools' -1), as it says: no change to list."""
    path = tmp_path / "wild.json"
    path.write_text(json.dumps({"name": "Terse", "values": {
        "temperature": 99, "top_p": -1, "max_new_tokens": -5, "seed": -9, "context_tokens": 10**12,
        "top_k": 40.0, "min_p": 0.1}}))  # 40.0 is 40: stored as 40, not a change
    library, result = import_presets(PresetLibrary().with_preset(MINE), path)
    assert dict(library.get("Terse (2)").values) == {
        "temperature": 2.0, "top_p": 0.01, "max_new_tokens": 512, "seed": None, "context_tokens": MAX_CONTEXT_TOKENS,
        "top_k": 40, "min_p": 0.1}
    assert result.changed == (ChangedValue("temperature", 99, 2.0, "Terse (2)"),
                              ChangedValue("top_p", -1, 0.01, "Terse (2)"),
                              ChangedValue("max_new_tokens", -5, 512, "Terse (2)"),  # 0 or less: the default
                              ChangedValue("context_tokens", 10**12, MAX_CONTEXT_TOKENS, "Terse (2)"))
    path.write_text(json.dumps({"name": "Fine", "values": {"temperature": 1, "seed": 7.0, "top_p": 0.5}}))
    assert import_presets(PresetLibrary(), path)[1].changed == ()  # the same numbers, written otherwise


def test_name_clashes_follow_the_chosen_policy(tmp_path):
    library = PresetLibrary().with_preset(MINE)
    path = tmp_path / "clash.json"
    path.write_text(json.dumps([{"name": "terse", "values": {"temperature": 0.9}},
                                {"name": "Code", "values": {"temperature": 0.1}},
                                {"name": "New", "values": {"top_k": 4}}, {"name": "NEW", "values": {"top_k": 5}}]))
    renamed, result = import_presets(library, path)
    assert [p.name for p in renamed.user] == ["Terse", "terse (2)", "Code (2)", "New", "NEW (2)"]
    assert renamed.get("Terse") == MINE and result.replaced == ()
    replaced, result = import_presets(library, path, on_clash="replace")
    assert dict(replaced.get("Terse").values) == {"temperature": 0.9} and result.replaced == ("Terse",)
    assert replaced.get("Code").builtin and replaced.get("Code (2)") is not None  # built-ins never replaced
    assert replaced.get("NEW (2)") is not None  # a clash inside the file is renamed, not lost
    with pytest.raises(PresetError, match="already exists; nothing was imported"):
        import_presets(library, path, on_clash="error")


def test_a_name_repeated_many_times_gets_the_next_free_numbers():
    library = PresetLibrary().with_preset(replace(MINE, name="Same (3)"))
    raw = [{"name": "same", "values": {"top_k": k}} for k in range(1, 6)]
    raw += [{"name": "Same (3)", "values": {"top_k": 9}}]
    imported, result = library.imported(raw)
    assert [p.name for p in imported.user] == ["Same (3)", "same", "same (2)", "same (4)", "same (5)",
                                               "same (6)", "Same (3) (2)"]  # "(3)" was taken before the import
    assert [imported.get(name).values["top_k"] for name in ("same", "same (2)", "same (4)", "same (6)")] == [1, 2, 3, 5]
    assert result.renamed[-1] == ("Same (3)", "Same (3) (2)") and len(result.added) == 6
    long = "x" * MAX_NAME_CHARS  # the number replaces the name's tail, never overflows it
    names = [p.name for p in PresetLibrary().imported([{"name": long, "values": {"top_k": 1}}] * 12)[0].user]
    assert names[1] == "x" * 76 + " (2)" and names[-1] == "x" * 75 + " (12)" and len(set(names)) == 12


def test_a_corrupt_presets_file_is_kept_aside_not_overwritten(tmp_path):
    path = tmp_path / "presets.json"
    path.write_text('{"presets": [{"name": ', encoding="utf-8")
    assert load_presets(path) == PresetLibrary()
    kept = list(tmp_path.glob("presets.unreadable-*.json"))
    assert len(kept) == 1 and kept[0].read_text(encoding="utf-8") == '{"presets": [{"name": '
    save_presets(PresetLibrary().with_preset(MINE), path)
    assert load_presets(path).user == (MINE,)
    assert kept[0].exists()


def test_a_presets_file_that_cannot_be_read_at_all_is_left_in_place_and_said(tmp_path):
    """New-user trial: a folder named presets.json stopped the app at start (IsADirectoryError);
    a file that is not UTF-8 did too (UnicodeDecodeError)."""
    path = tmp_path / "presets.json"
    path.mkdir()
    with pytest.raises(PresetError) as caught:
        load_presets(path)
    assert str(caught.value) == f"{path}: Is a directory" and path.is_dir()
    path.rmdir()
    path.write_bytes(b"\xff\xfe\x00 not UTF-8")
    assert load_presets(path) == PresetLibrary()  # unparseable like broken JSON: kept aside
    [kept] = tmp_path.glob("presets.unreadable-*.json")
    assert kept.read_bytes() == b"\xff\xfe\x00 not UTF-8" and not path.exists()


@pytest.mark.parametrize(("content", "reason"), [
    (b'{"presets": [{"name": ', "presets.json is not valid JSON (line 1, column 23)"),
    (b"\xff\xfe\x00 not UTF-8", "presets.json is not a text file"),
    (b"[" * 100_000 + b"]" * 100_000, "presets.json is not valid JSON (nested too deeply)"),
    (json.dumps({"presets": [{"name": "x", "values": {"temperature": "hot"}}]}).encode(),
     "preset 'x': temperature = 'hot' is not a number"),
])
def test_read_presets_says_why_a_file_was_kept_aside_and_where(tmp_path, content, reason):
    """The user's presets vanished at start with only a log line; now the window can say why."""
    path = tmp_path / "presets.json"
    path.write_bytes(content)
    library, kept = read_presets(path)
    [aside] = tmp_path.glob("presets.unreadable-*.json")
    assert library == PresetLibrary() and kept == KeptAside(reason, aside)
    assert aside.read_bytes() == content and not path.exists()
    assert read_presets(path) == (PresetLibrary(), None)  # gone: nothing more to say
    save_presets(PresetLibrary().with_preset(MINE), path)
    assert read_presets(path) == (PresetLibrary().with_preset(MINE), None)
