"""The command groups of `curate`, one module each; `curator.cli` assembles them."""
