"""Extraction of attached files: each good format yields its text, each bad file one clear message.

Every file is made in tmp_path by the test (PDFs through tests/helpers/pdf_files.py, a DOCX as a
hand-written ZIP of WordprocessingML)."""

import codecs
import threading
import zipfile

import pytest

from app.engine.documents import source
from app.engine.documents.extract import MAX_FILE_BYTES, extract_file
from app.engine.documents.source import DocumentError
from tests.helpers.pdf_files import write_image_pdf, write_text_pdf

KOREAN = "문서 첨부: 토큰 예산 안에서 답합니다.\n"


def refused(path, **kwargs) -> DocumentError:
    with pytest.raises(DocumentError) as info:
        extract_file(path, **kwargs)
    message = str(info.value)
    assert "\n" not in message and message.startswith(path.name + ": ")
    return info.value


@pytest.mark.parametrize(("encoding", "bom"), [
    ("utf-8", b""), ("utf-8", codecs.BOM_UTF8), ("utf-16-le", codecs.BOM_UTF16_LE),
    ("utf-16-be", codecs.BOM_UTF16_BE), ("utf-32-le", codecs.BOM_UTF32_LE),
])
def test_utf8_and_bom_marked_text_decode_to_the_same_string(tmp_path, encoding, bom):
    path = tmp_path / "notes.txt"
    path.write_bytes(bom + (KOREAN + "line two\r\nline three").encode(encoding))
    doc = extract_file(path)
    assert doc.text == KOREAN + "line two\nline three"
    assert (doc.kind, doc.page_starts, doc.page_at(5)) == ("text", (), None)
    assert doc.size_bytes == path.stat().st_size


def test_markdown_and_code_are_labelled_by_suffix(tmp_path):
    (tmp_path / "README.md").write_text("# Title\n\nBody\n")
    (tmp_path / "main.py").write_text("def f():\n    return 1\n")
    assert extract_file(tmp_path / "README.md").kind == "markdown"
    assert extract_file(tmp_path / "main.py").kind == "code"


MINUTES = "안녕하세요, 회의록입니다." * 50


@pytest.mark.parametrize(("text", "codec"), [
    (MINUTES, "cp949"),  # old Korean Notepad's "ANSI"
    ("회의록: 다음 회의는 월요일 오전 열 시에 시작합니다.\r\n" * 20, "euc-kr"),
    ("회의록: 월요일 오전 열 시", "cp949"),  # one short line
    ("안녕", "cp949"),  # two syllables: charset-normalizer alone says big5
])
def test_a_korean_file_in_an_older_encoding_is_read_as_cp949(tmp_path, text, codec):
    """New-user trial: a cp949 file from old Windows Notepad was refused although its encoding was
    detected; a Korean-first assistant reads it, and says it was read as cp949."""
    path = tmp_path / "회의록.txt"
    path.write_bytes(text.encode(codec))
    doc = extract_file(path)
    assert (doc.text, doc.encoding, doc.kind) == (text.replace("\r\n", "\n"), "cp949", "text")


@pytest.mark.parametrize("text", [
    "Café crème, señor, Ärger über Öl.\n",
    "Le café de la gare est très agréable; nous avons mangé une crème brûlée à Noël.\n",  # guessed cp775
    "Die Größe der Straße ist schön. Über die Brücke gehen wir zum Bäcker.\n",  # guessed cp1250
    "A informação está na seção de configurações; não é possível alterá-la.\n",
    "café\n",  # one word: charset-normalizer alone says utf_16_be
])
def test_latin1_text_is_read_as_windows_1252_not_a_wrong_code_page(tmp_path, text):
    """New-user trial: a Latin-1 file was refused; charset-normalizer's pick among single-byte code
    pages is a guess (mac_latin2 for French: "cafť"), so Windows-1252 (Latin-1's letters and
    more) is used when it reads the text cleanly."""
    path = tmp_path / "old.txt"
    path.write_bytes(text.encode("latin-1") * 10)
    doc = extract_file(path)
    assert (doc.text, doc.encoding) == (text * 10, "cp1252")


def test_utf16_with_a_bom_is_read_with_no_guess(tmp_path):
    path = tmp_path / "unicode.txt"
    path.write_bytes(codecs.BOM_UTF16_LE + (MINUTES + "\r\nÄrger").encode("utf-16-le"))
    doc = extract_file(path)
    assert (doc.text, doc.encoding) == (MINUTES + "\nÄrger", "utf-16")


def test_japanese_and_chinese_in_older_encodings_are_read_as_detected(tmp_path):
    japanese, chinese = tmp_path / "ja.txt", tmp_path / "zh.txt"
    japanese.write_bytes(("こんにちは、会議の議事録です。" * 20).encode("shift_jis"))
    chinese.write_bytes(("这是一个会议记录，我们明天再讨论这个问题。" * 20).encode("gbk"))
    read_ja, read_zh = extract_file(japanese), extract_file(chinese)
    assert (read_ja.text, read_ja.encoding) == ("こんにちは、会議の議事録です。" * 20, "cp932")
    assert (read_zh.text, read_zh.encoding) == ("这是一个会议记录，我们明天再讨论这个问题。" * 20, "gb18030")


def test_random_bytes_are_still_refused(tmp_path):
    import random

    rng = random.Random(7)
    noise = bytes(rng.randrange(1, 256) for _ in range(20_000))  # no NUL: not caught as binary
    path = tmp_path / "noise.txt"
    path.write_bytes(noise)
    error = refused(path)
    assert (error.kind, error.detail) == (source.NOT_UTF8, "")
    with_nul = tmp_path / "data.txt"
    with_nul.write_bytes(noise[:100] + b"\x00" + noise)
    assert (refused(with_nul).kind, refused(with_nul).detail) == (source.BINARY, "binary data")


def test_a_reading_with_control_characters_is_refused_not_attached(tmp_path, monkeypatch):
    """Windows-1252 decodes nearly any byte: a reading with control or replacement characters in
    more than 1 character in 200 is a wrong guess and is refused, even when detection chose it."""
    from app.engine.documents import text as text_module

    path = tmp_path / "odd.txt"
    path.write_bytes(("Größe \x01\x02\x03\x04 " * 50).encode("latin-1"))
    assert refused(path).kind == source.NOT_UTF8  # detection alone does not trust it
    monkeypatch.setattr(text_module, "legacy_encoding", lambda data: "cp1252")
    assert refused(path).kind == source.NOT_UTF8  # nor does the check of the text decoded
    path.write_bytes(("Größe der Straße. " * 199 + "\x01").encode("latin-1"))  # 1 in 3,582: a stray one
    assert extract_file(path).text.startswith("Größe der Straße. ")


RUSSIAN = ("Вчера на заседании совета директоров было принято решение о расширении производства. "
           "Выручка компании выросла на двенадцать процентов, а расходы на логистику снизились.\r\n")


@pytest.mark.parametrize(("text", "codec"), [
    (RUSSIAN * 20, "cp1251"),  # old Russian Notepad's "ANSI"
    ("Привет, мир!", "cp1251"),  # charset-normalizer alone says cp1125
    ("Привет", "cp1251"),  # one word: charset-normalizer alone says big5
    ("Report for Q3: выручка выросла на 12%, расходы снизились.", "cp1251"),
    ("Привіт, світ! Це тестовий файл українською мовою. Їжак і ґанок.", "cp1251"),  # Ukrainian
    ("Всички хора се раждат свободни и равни по достойнство и права. Те са надарени с разум и съвест.",
     "cp1251"),  # Bulgarian (ъ: a vowel there, a rare letter in Russian)
    ("Здраво свете! Ово је тестна датотека на српском језику. Љубав, њива.", "cp1251"),  # Serbian
    (RUSSIAN * 20, "koi8_r"),
    ("Привет, мир!", "koi8_r"),  # charset-normalizer alone says shift_jis_2004
])
def test_a_cyrillic_file_in_an_older_encoding_is_read_as_detected(tmp_path, text, codec):
    """A Russian cp1251 file was refused while cp949 and cp1252 files were read; short Cyrillic
    text was not even refused but read as Chinese or Japanese (charset-normalizer's pick)."""
    path = tmp_path / "протокол.txt"
    path.write_bytes(text.encode(codec))
    doc = extract_file(path)
    assert (doc.text, doc.encoding) == (text.replace("\r\n", "\n"), codec)


@pytest.mark.parametrize(("text", "codec"), [
    (MINUTES, "cp949"),
    ("회의록: 월요일 오전 열 시", "cp949"),
    ("Le café de la gare est très agréable; nous avons mangé une crème brûlée à Noël.\n" * 10, "cp1252"),
    ("café\n", "cp1252"),
    (RUSSIAN * 20, "cp1251"),
    ("Привет", "cp1251"),
    (MINUTES + "Привет, café", "utf-8"),
    (MINUTES + "Привет, café", "utf-16"),  # with its BOM
])
def test_korean_western_and_cyrillic_files_are_told_apart(tmp_path, text, codec):
    """The same check for each: cp949 stays Korean and cp1252 stays Western now that cp1251 and
    KOI8-R are read too (both decode any byte over 0x7F); Unicode needs no guess."""
    path = tmp_path / "any.txt"
    path.write_bytes(text.encode(codec))
    doc = extract_file(path)
    assert (doc.text, doc.encoding) == (text.replace("\r\n", "\n"), codec)


@pytest.mark.parametrize(("text", "codec"), [
    ("Καλημέρα κόσμε! Αυτό είναι ένα δοκιμαστικό αρχείο στα ελληνικά. ", "cp1253"),  # lower-case Cyrillic in cp1251
    ("ΟΛΟΙ ΟΙ ΑΝΘΡΩΠΟΙ ΓΕΝΝΙΟΥΝΤΑΙ ΕΛΕΥΘΕΡΟΙ ΚΑΙ ΙΣΟΙ ", "cp1253"),  # lower-case Cyrillic in KOI8-R
    ("כל בני האדם נולדו בני חורין ושווים בערכם ובזכויותיהם. ", "cp1255"),  # Cyrillic words in both
    ("ВНИМАНИЕ! ОТЧЁТ ГОТОВ. ", "cp1251"),  # all capitals: which code page cannot be told
])
def test_other_single_byte_scripts_are_still_refused_naming_the_family(tmp_path, text, codec):
    """Windows-1252, Windows-1251 and KOI8-R are the single-byte code pages read; Greek and Hebrew
    text in theirs reads as Cyrillic letters in both Cyrillic code pages ("щмен" for "שלום") and
    is refused rather than garbled."""
    path = tmp_path / "old.txt"
    path.write_bytes((text * 5).encode(codec))
    error = refused(path)
    assert (error.kind, error.detail, error.facts) == (source.NOT_UTF8, source.SINGLE_BYTE, {"byte": 0})
    assert str(error) == ("old.txt: not UTF-8 text (an older single-byte encoding such as Latin-1 or a Windows code "
                          "page, byte 0); save it as UTF-8 and attach it again")


def test_utf8_text_with_a_few_broken_bytes_is_not_called_an_older_encoding(tmp_path):
    """New-user trial: "Hello café", three stray bytes and "끝" was refused as text "in an older
    single-byte encoding", to be saved as UTF-8, which it already was. Text of an older encoding
    is still told as such (none of these reads as mostly UTF-8)."""
    path = tmp_path / "mixed.txt"
    path.write_bytes("Hello café ".encode() + b"\xff\xfe\x80" + " 끝 4729\n".encode())
    error = refused(path)
    assert (error.kind, error.detail, error.facts) == (source.NOT_UTF8, source.MIXED_UTF8, {"byte": 12})
    assert str(error) == ("mixed.txt: mostly UTF-8, but byte 12 is not: the file may be damaged or mix encodings; fix "
                          "or remove those bytes and attach it again")
    from app.engine.documents.text import _mostly_utf8

    for text, codec in (("가나다라마바사아자차카타파하", "cp949"), ("안녕하세요, 회의록입니다. ", "cp949"),
                        ("café résumé naïve", "cp1252"), ("Привет, мир!", "cp1251"), ("Привет, мир!", "koi8-r"),
                        ("こんにちは、世界。", "shift_jis"), ("你好，世界。会议记录。", "gb18030"),
                        ("你好，世界。會議記錄。", "big5")):
        assert not _mostly_utf8((text * 20).encode(codec)), codec


@pytest.mark.parametrize(("name", "named"), [("report.pdf", "PDF"), ("REPORT.PDF", "PDF"), ("letter.docx", "DOCX")])
def test_text_named_as_pdf_or_docx_is_refused_as_not_that_format(tmp_path, name, named):
    """New-user trial: a text file named .pdf was attached as text with no word that it was not a PDF."""
    path = tmp_path / name
    path.write_text("Quarterly figures: revenue up 4 %.\n", encoding="utf-8")
    error = refused(path)
    assert (error.kind, error.detail) == (source.MISNAMED, named)
    assert str(error) == (f"{name}: its name says {named}, but it is not a {named} file; if it holds text, rename it "
                          "to .txt and attach it again")


def test_a_pdf_named_otherwise_is_still_read_as_a_pdf(tmp_path):
    path = write_text_pdf(tmp_path / "report.txt", [["A PDF is read by its content, whatever its name says"]])
    assert extract_file(path).kind == "pdf"


@pytest.mark.parametrize(("head", "looks_like"), [
    (b"\x89PNG\r\n\x1a\n" + bytes(100), "a PNG image"),
    (b"\x7fELF\x02\x01\x01" + bytes(100), "a Linux program"),
    (b"some text\x00\x01\x02 then binary", "binary data"),
])
def test_binary_files_are_refused_with_what_they_look_like(tmp_path, head, looks_like):
    path = tmp_path / "data.txt"
    path.write_bytes(head)
    error = refused(path)
    assert (error.kind, error.detail) == (source.BINARY, looks_like)
    assert f"not a text file (looks like {looks_like})" in str(error)


def test_a_100_mb_file_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "huge.log"
    with path.open("wb") as f:  # sparse: no 100 MB written to disk
        f.truncate(100_000_000)
    calls = []
    error = refused(path, progress=calls.append)
    assert error.kind == source.TOO_LARGE and error.detail == "100000000"
    assert "the file is 95 MiB; files up to 64 MiB can be attached" in str(error)
    assert calls == [] and MAX_FILE_BYTES == 64 * 2**20


def test_missing_file_and_folder_are_unreadable(tmp_path):
    assert refused(tmp_path / "gone.txt").kind == source.UNREADABLE
    assert refused(tmp_path).kind == source.UNREADABLE


def test_empty_text_file_is_refused(tmp_path):
    path = tmp_path / "blank.txt"
    path.write_text("\n \n")
    assert refused(path).kind == source.EMPTY


def test_pdf_text_layer_with_page_offsets(tmp_path):
    path = write_text_pdf(tmp_path / "report.pdf", [["Page one: intro"], ["Page two: the answer is 42"]])
    doc = extract_file(path)
    assert doc.kind == "pdf" and doc.pages == 2
    assert doc.text == "Page one: intro\n\nPage two: the answer is 42"
    assert doc.page_at(doc.text.index("answer")) == 2 and doc.page_at(0) == 1


def test_pdf_with_empty_user_password_opens(tmp_path):
    path = write_text_pdf(tmp_path / "restricted.pdf", [["Owner password only, text is readable"]], password="")
    assert extract_file(path).text == "Owner password only, text is readable"


def test_password_protected_pdf_is_refused(tmp_path):
    path = write_text_pdf(tmp_path / "secret.pdf", [["classified"]], password="hunter2")
    error = refused(path)
    assert error.kind == source.ENCRYPTED and "protected by a password" in str(error)


def test_image_only_pdf_is_refused_as_having_no_text_layer(tmp_path):
    error = refused(write_image_pdf(tmp_path / "scan.pdf", pages=4))
    assert (error.kind, error.detail) == (source.NO_TEXT_LAYER, "4")
    assert "no text layer (4 pages of images or blank pages)" in str(error)


def test_a_one_page_scan_is_one_page_in_the_log(tmp_path):
    """New-user trial 11: "1 pages of images or blank pages"."""
    error = refused(write_image_pdf(tmp_path / "scan.pdf", pages=1))
    assert "no text layer (1 page of images or a blank page);" in str(error)


def test_damaged_pdf_is_refused(tmp_path):
    path = tmp_path / "broken.pdf"
    path.write_bytes(b"%PDF-1.7\n" + bytes(range(256)) * 4)
    assert refused(path).kind == source.DAMAGED


def test_pdf_progress_rises_to_one_and_cancel_stops_it(tmp_path):
    path = write_text_pdf(tmp_path / "long.pdf", [[f"page {i} text long enough to count"] for i in range(10)])
    seen = []
    extract_file(path, progress=seen.append)
    assert seen == sorted(seen) and seen[-1] == 1.0 and len(seen) >= 11
    cancel = threading.Event()

    def cancel_at_half(fraction):
        if fraction > 0.5:
            cancel.set()

    assert refused(path, progress=cancel_at_half, cancel=cancel).kind == source.CANCELLED


W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


def write_docx(path, body: str):
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("word/document.xml", f'<?xml version="1.0"?><w:document {W}><w:body>{body}</w:body></w:document>')
    return path


def test_docx_paragraphs_headings_and_tables(tmp_path):
    body = (
        '<w:p><w:pPr><w:pStyle w:val="Heading2"/></w:pPr><w:r><w:t>Budget</w:t></w:r></w:p>'
        '<w:p><w:r><w:t xml:space="preserve">KV cache </w:t></w:r><w:r><w:t>grows</w:t></w:r>'
        '<w:r><w:tab/><w:t>linearly.</w:t></w:r></w:p>'
        '<w:tbl><w:tr><w:tc><w:p><w:r><w:t>layers</w:t></w:r></w:p></w:tc>'
        '<w:tc><w:p><w:r><w:t>32</w:t></w:r></w:p></w:tc></w:tr></w:tbl>'
    )
    doc = extract_file(write_docx(tmp_path / "notes.docx", body))
    assert (doc.kind, doc.text) == ("docx", "## Budget\nKV cache grows\tlinearly.\nlayers | 32")


def test_docx_without_text_and_plain_zip(tmp_path):
    assert refused(write_docx(tmp_path / "empty.docx", "<w:p/>")).kind == source.EMPTY
    path = tmp_path / "bundle.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("a.txt", "hello")
    error = refused(path)
    assert (error.kind, error.detail) == (source.BINARY, "a ZIP archive")


def test_text_too_long_to_rank_is_refused_before_the_turn(tmp_path):
    """A 50 MB text file took a new user's process past 12 GB while the turn was prepared, and
    Stop could not reach it: text beyond MAX_TEXT_CHARS is refused at attach time, in one line."""
    from app.engine.documents.extract import MAX_TEXT_CHARS, extract_file
    from app.engine.documents.source import TOO_LARGE, DocumentError

    big = tmp_path / "log.txt"
    big.write_text("word " * (MAX_TEXT_CHARS // 5 + 10))  # just over, and under the up-front size check
    with pytest.raises(DocumentError) as refused:
        extract_file(big)
    assert refused.value.kind == TOO_LARGE and "can be attached" in str(refused.value)
    fits = tmp_path / "notes.txt"
    fits.write_text("word " * 1000)
    assert len(extract_file(fits).text) == 5000


def _write_log(path, size: int, line: bytes) -> None:
    """A text file of exactly `size` bytes of `line` repeated, written 1 MiB at a time."""
    block = line * ((1 << 20) // len(line))
    with path.open("wb") as f:
        left = size
        while left:
            f.write(block[:left])
            left -= min(left, len(block))


def test_a_50_mb_ascii_log_is_refused_with_its_real_character_count_without_reading_it(tmp_path):
    """New-user trial: a 52,428,844-byte ASCII file was said to hold "about 13,107,211 characters"
    (size // 4, the fewest UTF-8 can hold): 4× too few. The count comes from the first 64 KiB,
    and the file is not read into memory to say it."""
    import tracemalloc

    from app.engine.documents.extract import MAX_TEXT_CHARS

    big = tmp_path / "server.log"
    _write_log(big, 52_428_844, b"2026-12-01 03:12:45 INFO request served in 12 ms\n")
    tracemalloc.start()
    error = refused(big)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert (error.kind, error.facts) == (source.TOO_LARGE, {"chars": 52_428_844, "limit_chars": MAX_TEXT_CHARS})
    assert str(error) == ("server.log: its text is about 52,428,844 characters; up to 2,000,000 can be attached "
                          "(split it, or attach the part you need)")
    assert peak < 4 << 20  # bytes: the head and charset detection, not 50 MB


@pytest.mark.parametrize(("line", "codec", "chars_per_line"), [
    ("회의록: 다음 회의는 월요일입니다.\r\n", "utf-8", 20),  # 3 bytes a syllable; CRLF counts as one
    ("회의록: 다음 회의는 월요일입니다.\r\n", "cp949", 20),  # 2 bytes a syllable
])
def test_a_large_korean_text_is_counted_in_its_own_encoding(tmp_path, line, codec, chars_per_line):
    data = line.encode(codec)
    lines = 9_000_000 // len(data) + 1
    big = tmp_path / "big.txt"
    _write_log(big, lines * len(data), data)
    error = refused(big)
    assert error.kind == source.TOO_LARGE
    real = lines * chars_per_line  # 9 MB: 5.1 million characters in cp949, 3.7 million in UTF-8, not size // 4
    assert abs(error.facts["chars"] - real) <= real // 10_000  # the head ends mid-line: "about"


def test_a_large_binary_file_is_refused_as_binary_not_as_too_much_text(tmp_path):
    big = tmp_path / "dump.txt"
    _write_log(big, 9_000_000, b"\x00\x01\x02 binary \xff")
    assert (refused(big).kind, refused(big).detail) == (source.BINARY, "binary data")
