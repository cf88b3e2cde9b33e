"""Test doubles that speak the real protocols over real HTTP: the GenRM stand-in (verdicts SIMULATED).
Installed with the product so that the demo, the tests and the benchmarks can start it; never the product."""
