"""Conformance: run the anchors' own test cases, as data, through the real core and policy code."""
