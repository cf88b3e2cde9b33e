"""Declared sources: a source named in `sources.toml`, no code (docs/sources.md#declared-sources)."""
