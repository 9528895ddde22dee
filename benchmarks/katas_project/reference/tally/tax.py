"""Tax by category."""

RATES = {"standard": 20, "reduced": 5, "zero": 0}


def tax_cents(amount_cents: int, category: str) -> int:
    rate = RATES[category]
    if amount_cents < 0:
        raise ValueError(f"negative amount: {amount_cents}")
    return (amount_cents * rate * 2 + 100) // 200
