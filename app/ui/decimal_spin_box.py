"""A spin box for decimals (temperature, top-p, min-p, repetition penalty) that never turns a
typed "-2" into 2 or "99" into nothing."""

from PySide6.QtWidgets import QDoubleSpinBox

from app.ui.typed_bounds import TypedBounds


class DecimalSpinBox(TypedBounds, QDoubleSpinBox):
    """QDoubleSpinBox that settles a typed number outside its range as CountSpinBox does.

    Qt's own QDoubleSpinBox drops the '-' key when the minimum is not negative (new-user trial:
    Repetition penalty -2 was saved as 2.00, the strongest penalty; Top-p -0.5 as 0.50; Min-p -0.2
    as -0.0) and every key past its maximum (Temperature 99 left the field as it was). Here a minus
    sign puts the value from before back, and a number above the maximum becomes the maximum, at
    Enter or when the field is left (app.ui.typed_bounds). No signals beyond QDoubleSpinBox's."""
