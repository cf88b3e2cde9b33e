"""Human review in Label Studio: which pairs go to people (selection), how a task shows a pair (sides drawn at
random, the judge's verdict hidden), how a reviewer's choice maps back onto the pair, how several reviewers
resolve, and what versions and the calibration do with the outcome. Pure functions, except `label_studio`
(the HTTP client) and `sync` (the client and the warehouse together)."""
