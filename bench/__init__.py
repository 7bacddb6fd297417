"""Benchmarks and demo data: measured figures next to peers, kept out of the product packages."""
