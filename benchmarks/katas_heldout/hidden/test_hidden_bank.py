import pytest
from bank import Account, InsufficientFunds, transfer


def test_new_account():
    acct = Account("ana")
    assert acct.owner == "ana"
    assert acct.balance == 0
    assert acct.history() == []
    with pytest.raises(ValueError):
        Account("")


def test_deposit_and_withdraw_return_balance():
    acct = Account("ana")
    assert acct.deposit(500) == 500
    assert acct.withdraw(200) == 300
    assert acct.deposit(1) == 301
    assert acct.balance == 301


def test_history_doc_example_and_copy():
    acct = Account("ana")
    acct.deposit(500)
    acct.withdraw(200)
    assert acct.history() == [("deposit", 500), ("withdraw", 200)]
    acct.history().append(("deposit", 1))
    assert acct.history() == [("deposit", 500), ("withdraw", 200)]


def test_balance_is_read_only():
    acct = Account("ana")
    acct.deposit(40)
    with pytest.raises(AttributeError):
        acct.balance = 100
    assert acct.balance == 40


def test_bad_amounts_refused():
    acct = Account("ana")
    acct.deposit(100)
    for bad in [0, -5, 2.5]:
        with pytest.raises(ValueError):
            acct.deposit(bad)
        with pytest.raises(ValueError):
            acct.withdraw(bad)
    assert acct.balance == 100
    assert acct.history() == [("deposit", 100)]


def test_insufficient_funds():
    acct = Account("ana")
    acct.deposit(100)
    with pytest.raises(InsufficientFunds) as info:
        acct.withdraw(101)
    assert info.value.balance == 100
    assert info.value.amount == 101
    assert acct.balance == 100
    assert acct.history() == [("deposit", 100)]


def test_withdraw_whole_balance():
    acct = Account("ana")
    acct.deposit(250)
    assert acct.withdraw(250) == 0
    with pytest.raises(InsufficientFunds):
        acct.withdraw(1)


def test_insufficient_funds_is_exception():
    err = InsufficientFunds(5, 9)
    assert isinstance(err, Exception)
    assert (err.balance, err.amount) == (5, 9)


def test_transfer():
    a, b = Account("ana"), Account("ben")
    a.deposit(1000)
    assert transfer(a, b, 300) is None
    assert (a.balance, b.balance) == (700, 300)
    assert a.history() == [("deposit", 1000), ("withdraw", 300)]
    assert b.history() == [("deposit", 300)]


def test_transfer_refused_changes_nothing():
    a, b = Account("ana"), Account("ben")
    a.deposit(100)
    with pytest.raises(InsufficientFunds):
        transfer(a, b, 500)
    with pytest.raises(ValueError):
        transfer(a, b, -1)
    with pytest.raises(ValueError):
        transfer(a, a, 10)
    assert (a.balance, b.balance) == (100, 0)
    assert a.history() == [("deposit", 100)]
    assert b.history() == []
