"""One module per benchmark client's result format; see `advisor.fit.bench_results`."""
