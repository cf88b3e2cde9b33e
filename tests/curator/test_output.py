"""What the CLI prints is the text it was given: brackets in paths, positions and TOML headers are not markup."""

from __future__ import annotations

from curator.output import err, out


def test_brackets_in_printed_text_are_kept_as_they_are():
    lines = ["quarantined at pairs.jsonl[train][3]", "#   [sources.my-pairs]", "a [bold] word and [/] a slash"]
    for console in (out, err):
        with console.capture() as captured:
            for line in lines:
                console.print(line, highlight=False)
        assert captured.get().splitlines() == lines


def test_markup_is_applied_only_where_a_call_asks_for_it():
    with err.capture() as captured:
        err.print("[bold red]error:[/] x", markup=True, highlight=False)
    assert captured.get().strip() == "error: x"
