"""An invoice as text."""

from tally.invoice import Invoice
from tally.money import format_amount


def render(invoice: Invoice) -> str:
    out = [f"{item.description} x{item.quantity} @ {format_amount(item.unit_cents)} = "
           f"{format_amount(item.total())}" for item, _ in invoice.lines]
    gross = invoice.subtotal() + invoice.tax()
    out.append(f"Subtotal: {format_amount(invoice.subtotal())}")
    out.append(f"Tax: {format_amount(invoice.tax())}")
    if invoice.code is not None:
        out.append(f"Discount: {format_amount(invoice.total() - gross)}")
    out.append(f"Total: {format_amount(invoice.total())}")
    return "\n".join(out)
