from tasks.judge.outcome import failure_line


def test_no_failure_says_nothing():
    assert failure_line({"judged": 3, "failed": {}}) == (None, False)
    assert failure_line({}) == (None, False)


def test_partial_failures_are_one_line_by_count():
    line, all_failed = failure_line({"judged": 5, "failed": {"http_500": 1, "no_json": 3}})
    assert (line, all_failed) == ("4 failed (no_json: 3, http_500: 1)", False)


def test_every_judgment_failed_names_the_top_reason_its_count_and_the_first_error_cut():
    long = "max_tokens=16384 cannot be greater than max_model_len=4096. " * 10
    line, all_failed = failure_line({"judged": 0, "failed": {"too_long": 53, "timeout": 2},
                                     "first_errors": {"too_long": long, "timeout": "t"}})
    assert all_failed
    assert line.startswith("every judgment of this run failed (55): 53 too_long, first error: max_tokens=16384")
    assert line.endswith("...; others: too_long: 53, timeout: 2") and len(line) < 300
