"""The memory panel's painted text follows the window's font (trial notes: fixed 11-12 px text beside a
14-point UI), and keeps its 12 px layout at the usual 9-point one."""

from PySide6.QtGui import QFont, QFontInfo


def _panel_at(qapp, make_window, point_size):
    old = qapp.font()
    font = QFont(old)
    font.setPointSize(point_size)
    qapp.setFont(font)
    try:
        window = make_window()
        panel = window.vram_panel
        return (QFontInfo(font).pixelSize(), QFontInfo(panel.gauge._font).pixelSize(),
                QFontInfo(panel.legend._font).pixelSize(), panel.bar.sizeHint().height(),
                panel.gauge.sizeHint().height(), panel.legend._line_h)
    finally:
        qapp.setFont(old)


def test_the_panel_text_grows_with_a_larger_ui_font_and_keeps_its_size_at_the_usual_one(qapp, make_window):
    ui_px, gauge_px, legend_px, bar_h, gauge_h, line_h = _panel_at(qapp, make_window, 9)
    assert ui_px <= 12 and (gauge_px, legend_px, bar_h, gauge_h, line_h) == (12, 12, 80, 36, 17)
    ui_px, gauge_px, legend_px, bar_h, gauge_h, line_h = _panel_at(qapp, make_window, 16)
    assert ui_px >= 20 and gauge_px == legend_px == ui_px  # never smaller than the window's text
    assert bar_h >= 80 * ui_px / 12 - 3 and gauge_h == round(36 * ui_px / 12) and line_h == round(17 * ui_px / 12)
