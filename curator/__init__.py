"""preference-curator: raw human-preference data to versioned, high-confidence preference datasets."""

__version__ = "0.1.0"
