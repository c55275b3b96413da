"""What the scripted tests share: the failures their checks collect, and their verdict."""

failures = []


def check(condition, message):
    """Keeps `message` as a failure unless `condition` holds; returns `condition`."""
    if not condition:
        failures.append(message)
    return condition


def verdict():
    """Prints the failures and their count; the exit status (1 on any failure)."""
    for failure in failures:
        print("FAILED:", failure)
    print(f"{len(failures)} failures")
    return 1 if failures else 0
