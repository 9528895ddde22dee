"""Reference solution for specs/bank.md (validates the hidden tests only)."""


class InsufficientFunds(Exception):
    def __init__(self, balance: int, amount: int) -> None:
        super().__init__(f"balance {balance} is less than {amount}")
        self.balance = balance
        self.amount = amount


def _check(amount: int) -> None:
    if isinstance(amount, bool) or not isinstance(amount, int) or amount <= 0:
        raise ValueError(f"amount must be a positive int of cents, not {amount!r}")


class Account:
    def __init__(self, owner: str) -> None:
        if not owner:
            raise ValueError("an account needs an owner")
        self.owner = owner
        self._balance = 0
        self._history: list[tuple[str, int]] = []

    @property
    def balance(self) -> int:
        return self._balance

    def deposit(self, amount: int) -> int:
        _check(amount)
        self._balance += amount
        self._history.append(("deposit", amount))
        return self._balance

    def withdraw(self, amount: int) -> int:
        _check(amount)
        if amount > self._balance:
            raise InsufficientFunds(self._balance, amount)
        self._balance -= amount
        self._history.append(("withdraw", amount))
        return self._balance

    def history(self) -> list[tuple[str, int]]:
        return list(self._history)


def transfer(source: Account, target: Account, amount: int) -> None:
    if source is target:
        raise ValueError("cannot transfer to the same account")
    source.withdraw(amount)
    target.deposit(amount)
