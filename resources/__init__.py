"""Bundled resources (stylesheet, icons, pictures), importable as `app.resources` so that
`importlib.resources` finds them the same way in a checkout, a wheel and a PyInstaller bundle."""
