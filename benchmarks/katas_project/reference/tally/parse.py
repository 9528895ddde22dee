"""An invoice read from text."""

from tally.invoice import Invoice
from tally.items import parse_item


def parse_invoice(text: str) -> Invoice:
    invoice = Invoice()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            if line.lower().startswith("code "):
                invoice.apply_code(line[5:].strip())
                continue
            entry, _, category = line.partition(";")
            category = category.strip().lower() or "standard"
            invoice.add(parse_item(entry), category)
        except (ValueError, KeyError) as exc:
            raise ValueError(f"line {number}: {exc}") from exc
    return invoice
