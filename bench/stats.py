"""Small helpers the benchmark scripts share."""


def percentile(samples, q: float):
    """The q-quantile (0..1) of `samples`, nearest rank."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]
